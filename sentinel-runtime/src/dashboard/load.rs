//! The process's CPU usage and load for the page, sampled by the dashboard's own sampler once
//! a second while the page is open (a `GET /api/system` in the last [`OPEN_FOR`]), whether or
//! not a system rule is loaded: the system rules' sampler runs only while one is, and the page
//! showed "CPU 0.0%" while the process used most of a core.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::system_load::cpu::{CpuReading, CpuSource};

/// How long after the page's last `GET /api/system` sampling goes on.
pub(crate) const OPEN_FOR: Duration = Duration::from_secs(10);

/// The latest readings and what they were computed from.
#[derive(Default)]
pub(crate) struct ProcessLoad {
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Found on the first sample (`Some(None)`: nothing readable here).
    source: Option<Option<CpuSource>>,
    last: Option<(CpuReading, Instant)>,
    asked: Option<Instant>,
    reading: Reading,
}

/// What the page shows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Reading {
    /// The process's CPU usage over the last second, 0..=1 of its effective cores.
    pub(crate) cpu: Option<f64>,
    /// The 1-minute load average per effective core.
    pub(crate) load: Option<f64>,
    /// Where the CPU usage is read from (`cgroup_v2`, `process`, ...).
    pub(crate) source: Option<&'static str>,
    /// The cores the usage is a share of.
    pub(crate) cores: Option<f64>,
}

impl ProcessLoad {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The page asked: sample for the next [`OPEN_FOR`]; the latest reading.
    pub(crate) fn asked(&self) -> Reading {
        let mut s = self.state();
        s.asked = Some(Instant::now());
        s.reading
    }

    /// One sample (the sampler's tick), if the page is open.
    pub(crate) fn sample(&self) {
        let mut guard = self.state();
        let s = &mut *guard;
        if s.asked.is_none_or(|t| t.elapsed() > OPEN_FOR) {
            s.last = None;
            return;
        }
        let source = s.source.get_or_insert_with(|| {
            let host = std::thread::available_parallelism().map_or(1, usize::from);
            CpuSource::detect(std::path::Path::new("/"), host)
        });
        let Some(source) = source.as_ref() else {
            return;
        };
        let now = Instant::now();
        let reading = source.read();
        let mut out = Reading {
            load: source.load_per_core(),
            source: Some(source.kind().label()),
            cores: Some(source.effective_cores()),
            cpu: None,
        };
        if let (Some((before, at)), Some(after)) = (s.last, reading) {
            let wall = u64::try_from(now.duration_since(at).as_nanos()).unwrap_or(u64::MAX);
            out.cpu = source.usage(before, after, wall);
        }
        if out.cpu.is_none() {
            out.cpu = s.reading.cpu;
        }
        s.last = reading.map(|r| (r, now));
        s.reading = out;
    }
}
