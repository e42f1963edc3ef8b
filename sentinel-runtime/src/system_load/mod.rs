//! The process's CPU usage and load, for system rules: read from the process's cgroup (v2, then
//! v1) or the host's `/proc`, sampled by a background thread while a system rule is loaded.
//!
//! The entry path reads a reading with two relaxed loads ([`cpu_usage`], [`load_per_core`]): the
//! reading a test may have put in place of the sampler's, then the sampler's. Outside Linux
//! nothing can be read and both stay 0.

pub(crate) mod cpu;
mod readings;
mod sampler;

pub use cpu::CpuSourceKind;

#[cfg(feature = "__test-hooks")]
pub(crate) use readings::override_readings;
pub(crate) use readings::{cpu_usage, load_per_core, source};
#[cfg(test)]
pub(crate) use sampler::is_running;
pub(crate) use sampler::{start, stop};
