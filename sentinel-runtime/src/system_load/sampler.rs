//! The background thread that samples the CPU usage and load every 500 ms while a system rule
//! is loaded.

use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::cpu::{CpuReading, CpuSource};

/// How often the sampler reads the counters.
pub(crate) const PERIOD: Duration = Duration::from_millis(500);
/// The weight of the previous value in the moving average (go-kratos/aegis's BBR smooths its
/// CPU reading the same way): a step change is 90% reflected after about 5 s.
pub(crate) const DECAY: f64 = 0.8;

/// The running sampler: its stop flag and thread.
struct Running {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: JoinHandle<()>,
}

static SAMPLER: Mutex<Option<Running>> = Mutex::new(None);

/// Starts the sampler thread if it is not running.
pub(crate) fn start() {
    let mut sampler = SAMPLER.lock().unwrap_or_else(PoisonError::into_inner);
    if sampler.is_some() {
        return;
    }
    let stop = Arc::new((Mutex::new(false), Condvar::new()));
    let flag = Arc::clone(&stop);
    let spawned = std::thread::Builder::new()
        .name("sentinel-system-load".into())
        .spawn(move || run(&flag));
    // Without a thread (the process's limit reached) the readings stay as they are.
    if let Ok(thread) = spawned {
        *sampler = Some(Running { stop, thread });
    }
}

/// Stops the sampler thread (promptly: it waits on a condition variable) and joins it.
pub(crate) fn stop() {
    let running = SAMPLER
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .take();
    if let Some(running) = running {
        let (flag, wake) = &*running.stop;
        *flag.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
        let _ = running.thread.join();
    }
}

/// Whether the sampler thread is running.
#[cfg(test)]
pub(crate) fn is_running() -> bool {
    SAMPLER
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .is_some()
}

/// Waits `PERIOD` or until stopped; true if stopped.
fn stopped(stop: &(Mutex<bool>, Condvar)) -> bool {
    let (flag, wake) = stop;
    let guard = flag.lock().unwrap_or_else(PoisonError::into_inner);
    let (guard, _) = wake
        .wait_timeout_while(guard, PERIOD, |stopped| !*stopped)
        .unwrap_or_else(PoisonError::into_inner);
    *guard
}

fn run(stop: &(Mutex<bool>, Condvar)) {
    let host = std::thread::available_parallelism().map_or(1, usize::from);
    let source = CpuSource::detect(Path::new("/"), host);
    if let Some(source) = &source {
        super::readings::publish_source(source.kind(), source.effective_cores());
    }
    let mut last: Option<(CpuReading, Instant)> = None;
    let mut smoothed: Option<f64> = None;
    loop {
        if let Some(source) = &source {
            let now = Instant::now();
            let reading = source.read();
            if let (Some((before, at)), Some(after)) = (last, reading) {
                let wall = u64::try_from(now.duration_since(at).as_nanos()).unwrap_or(u64::MAX);
                if let Some(usage) = source.usage(before, after, wall) {
                    let value = smooth(smoothed, usage);
                    smoothed = Some(value);
                    super::readings::publish(Some(value), None);
                }
            }
            last = reading.map(|r| (r, now));
            super::readings::publish(None, source.load_per_core());
        }
        if stopped(stop) {
            return;
        }
    }
}

/// One step of the moving average (the first sample is taken as it is).
pub(crate) fn smooth(previous: Option<f64>, sample: f64) -> f64 {
    match previous {
        Some(p) => DECAY * p + (1.0 - DECAY) * sample,
        None => sample,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smoothing_takes_the_first_sample_then_moves_a_fifth_of_the_way() {
        assert_eq!(smooth(None, 0.9), 0.9);
        let v = smooth(Some(0.5), 1.0);
        assert!((v - 0.6).abs() < 1e-12, "{v}");
        // A step from 0 to 1 is 90% reflected after 11 samples (5.5 s).
        let mut v = 0.0;
        for _ in 0..11 {
            v = smooth(Some(v), 1.0);
        }
        assert!(v > 0.9, "{v}");
    }
}
