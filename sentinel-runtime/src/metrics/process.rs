//! What the system rules read: the process's CPU usage and load ([`system`]).

use crate::system_load::CpuSourceKind;

/// What the system rules' CPU and load limits compare against: the process's CPU usage (0..=1
/// of its effective cores, smoothed) and the 1-minute load average per core. Both are 0 while
/// no system rule is loaded (the sampler runs only then) and where they cannot be read.
pub fn system_load() -> (f64, f64) {
    (
        crate::system_load::cpu_usage(),
        crate::system_load::load_per_core(),
    )
}

/// What the system rules' CPU and load limits read, and where from
/// ([`system`]).
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct SystemStats {
    /// The process's CPU usage, 0..=1 of its effective cores, smoothed (0 until sampled).
    pub cpu_usage: f64,
    /// The 1-minute load average per effective core (0 until sampled, or where unknown).
    pub load_per_core: f64,
    /// Where the CPU usage is read from: the process's own cgroup, or the process's own CPU
    /// time when it has no cgroup of its own (the root cgroup's usage is the whole host's);
    /// `None` until the sampler has run (it runs while a system rule is loaded).
    pub cpu_source: Option<CpuSourceKind>,
    /// The cores the usage is a share of (a cgroup's quota, its cpuset, or the process's
    /// available parallelism); 0 while `cpu_source` is `None`.
    pub effective_cores: f64,
}

/// What the system rules compare against, and which source the CPU usage comes from.
///
/// ```
/// let system = sentinel_runtime::metrics::system();
/// if let Some(source) = system.cpu_source {
///     println!("cpu {:.0}% of {} cores, from {}", system.cpu_usage * 100.0, system.effective_cores, source.label());
/// }
/// ```
pub fn system() -> SystemStats {
    let (cpu_usage, load_per_core) = system_load();
    let (cpu_source, effective_cores) = match crate::system_load::source() {
        Some((kind, cores)) => (Some(kind), cores),
        None => (None, 0.0),
    };
    SystemStats {
        cpu_usage,
        load_per_core,
        cpu_source,
        effective_cores,
    }
}
