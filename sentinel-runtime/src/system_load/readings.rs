//! The latest readings: the sampler's (published here), or a test's put in their place, read by
//! the entry path with two relaxed loads.

use std::sync::atomic::{AtomicU64, AtomicU8, Ordering::Relaxed};

use super::cpu::CpuSourceKind;

/// The smoothed CPU usage (f64 bits; 0.0 before the first sample).
static CPU_USAGE: AtomicU64 = AtomicU64::new(0);
/// The 1-minute load average per effective core (f64 bits).
static LOAD_PER_CORE: AtomicU64 = AtomicU64::new(0);

/// Readings put in place of the sampler's (f64 bits; NaN: none), for tests.
static CPU_OVERRIDE: AtomicU64 = AtomicU64::new(NO_READING);
static LOAD_OVERRIDE: AtomicU64 = AtomicU64::new(NO_READING);
const NO_READING: u64 = 0x7ff8_0000_0000_0000; // f64::NAN

/// The process's CPU usage over its effective cores, 0..=1, smoothed (0 until sampled).
#[inline]
pub(crate) fn cpu_usage() -> f64 {
    match f64::from_bits(CPU_OVERRIDE.load(Relaxed)) {
        reading if reading.is_nan() => f64::from_bits(CPU_USAGE.load(Relaxed)),
        reading => reading,
    }
}

/// The 1-minute load average per effective core (0 until sampled, or where unknown).
#[inline]
pub(crate) fn load_per_core() -> f64 {
    match f64::from_bits(LOAD_OVERRIDE.load(Relaxed)) {
        reading if reading.is_nan() => f64::from_bits(LOAD_PER_CORE.load(Relaxed)),
        reading => reading,
    }
}

/// Puts readings in place of the sampler's (`None`: the sampler's again), for tests.
#[cfg_attr(not(feature = "__test-hooks"), allow(dead_code))]
pub(crate) fn override_readings(cpu: Option<f64>, load: Option<f64>) {
    CPU_OVERRIDE.store(cpu.map_or(NO_READING, f64::to_bits), Relaxed);
    LOAD_OVERRIDE.store(load.map_or(NO_READING, f64::to_bits), Relaxed);
}

/// The source the sampler found (0: none yet; else 1 + its index in [`SOURCES`]).
static SOURCE: AtomicU8 = AtomicU8::new(0);
/// The effective cores of that source (f64 bits).
static CORES: AtomicU64 = AtomicU64::new(0);

const SOURCES: [CpuSourceKind; 4] = [
    CpuSourceKind::CgroupV2,
    CpuSourceKind::CgroupV1,
    CpuSourceKind::Process,
    CpuSourceKind::Host,
];

/// Where the CPU usage is read from and the effective cores it is divided by; `None` until the
/// sampler has run once (it runs while a system rule is loaded), or where nothing is readable.
pub(crate) fn source() -> Option<(CpuSourceKind, f64)> {
    let code = usize::from(SOURCE.load(Relaxed));
    let kind = *SOURCES.get(code.checked_sub(1)?)?;
    Some((kind, f64::from_bits(CORES.load(Relaxed))))
}

pub(super) fn publish_source(kind: CpuSourceKind, cores: f64) {
    if let Some(index) = SOURCES.iter().position(|&k| k == kind) {
        CORES.store(cores.to_bits(), Relaxed);
        SOURCE.store(index as u8 + 1, Relaxed);
    }
}

pub(super) fn publish(cpu: Option<f64>, load: Option<f64>) {
    if let Some(cpu) = cpu {
        CPU_USAGE.store(cpu.to_bits(), Relaxed);
    }
    if let Some(load) = load {
        LOAD_PER_CORE.store(load.to_bits(), Relaxed);
    }
}
