//! The process's CPU usage and load, for system rules: read from the process's cgroup (v2, then
//! v1) or the host's `/proc`, sampled by a background thread while a system rule is loaded.
//!
//! The entry path reads one relaxed atomic per reading ([`cpu_usage`], [`load_per_core`]).
//! Outside Linux nothing can be read and both stay 0.

pub(crate) mod cpu;
mod sampler;

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

#[cfg(test)]
pub(crate) use sampler::is_running;
pub(crate) use sampler::{start, stop};

/// The smoothed CPU usage (f64 bits; 0.0 before the first sample).
static CPU_USAGE: AtomicU64 = AtomicU64::new(0);
/// The 1-minute load average per effective core (f64 bits).
static LOAD_PER_CORE: AtomicU64 = AtomicU64::new(0);

/// The process's CPU usage over its effective cores, 0..=1, smoothed (0 until sampled).
#[inline]
pub(crate) fn cpu_usage() -> f64 {
    f64::from_bits(CPU_USAGE.load(Relaxed))
}

/// The 1-minute load average per effective core (0 until sampled, or where unknown).
#[inline]
pub(crate) fn load_per_core() -> f64 {
    f64::from_bits(LOAD_PER_CORE.load(Relaxed))
}

fn publish(cpu: Option<f64>, load: Option<f64>) {
    if let Some(cpu) = cpu {
        CPU_USAGE.store(cpu.to_bits(), Relaxed);
    }
    if let Some(load) = load {
        LOAD_PER_CORE.store(load.to_bits(), Relaxed);
    }
}
