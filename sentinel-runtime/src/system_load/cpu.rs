//! Where the process's CPU time is read from, and how many cores it may use.
//!
//! The CPU a system rule compares against is what the **process** can be blamed for. Sources,
//! in order:
//!
//! 1. cgroup v2 (`cpu.stat` `usage_usec`, `cpu.max`, `cpuset.cpus.effective`) or cgroup v1
//!    (`cpuacct.usage`, `cpu.cfs_quota_us` / `cpu.cfs_period_us`, `cpuset.cpus`), when the
//!    process has a cgroup of its own (a container, a systemd service): the group's usage;
//! 2. otherwise, and always when the process sits in the **root** cgroup (whose usage is the
//!    whole host's, neighbours' builds included), the process's own CPU time from
//!    `/proc/self/stat` (`utime + stime`, every thread) over its effective cores;
//! 3. the host's `/proc/stat` only when neither can be read.
//!
//! The process's cgroup is found in `/proc/self/cgroup`; inside a container that path often
//! does not exist in the container's view of `/sys/fs/cgroup`, which is then the cgroup
//! itself. A cgroup directory is the root when it lacks the files only non-root groups have
//! (v2: `cgroup.type` and `cpu.max`) or has those only the root has (v1: `release_agent`,
//! `cgroup.sane_behavior`).
//!
//! **Effective cores** are the quota over the period as a fraction (a 1.25-core quota is 1.25,
//! not 2), bounded by the cores of the cpuset and by the host's. Every path is taken under a
//! root directory, `/` in production and a fixture directory in tests.

use std::fs;
use std::path::{Path, PathBuf};

/// Which counters the CPU usage of the system rules is read from
/// ([`metrics::system`](crate::metrics::system)).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CpuSourceKind {
    /// The process's own cgroup, v2: `cpu.stat`'s `usage_usec`.
    CgroupV2,
    /// The process's own cgroup, v1: `cpuacct.usage`.
    CgroupV1,
    /// The process's own CPU time (`/proc/self/stat`), every thread: the process has no cgroup
    /// of its own (it sits in the root cgroup, or there are none).
    Process,
    /// The whole host's busy share (`/proc/stat`): nothing else could be read.
    Host,
}

impl CpuSourceKind {
    /// The name used in metrics: `cgroup_v2`, `cgroup_v1`, `process` or `host`.
    pub fn label(self) -> &'static str {
        match self {
            CpuSourceKind::CgroupV2 => "cgroup_v2",
            CpuSourceKind::CgroupV1 => "cgroup_v1",
            CpuSourceKind::Process => "process",
            CpuSourceKind::Host => "host",
        }
    }
}

/// The cumulative counters at one instant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum CpuReading {
    /// CPU time used by the cgroup or the process, in nanoseconds.
    Used { used_ns: u64 },
    /// Busy and total jiffies of the host.
    Host { busy: u64, total: u64 },
}

/// The process's CPU counters and effective cores, found once.
#[derive(Clone, Debug)]
pub(crate) struct CpuSource {
    kind: CpuSourceKind,
    /// `cpu.stat`, `cpuacct.usage`, `/proc/self/stat` or `/proc/stat`.
    counter: PathBuf,
    cores: f64,
    loadavg: PathBuf,
}

impl CpuSource {
    /// Finds the source under `root`: the process's own cgroup (v2, then v1), then the
    /// process's CPU time, then `/proc/stat`; `None` if nothing can be read. `host_cpus` bounds
    /// the effective cores (the process's available parallelism).
    pub(crate) fn detect(root: &Path, host_cpus: usize) -> Option<CpuSource> {
        let host = host_cpus.max(1) as f64;
        let cgroups = fs::read_to_string(root.join("proc/self/cgroup")).unwrap_or_default();
        let loadavg = root.join("proc/loadavg");
        if let Some(path) = v2_path(&cgroups) {
            let mount = root.join("sys/fs/cgroup");
            if let Some(dir) = cgroup_dir(&mount, path, "cpu.stat")
                && !is_v2_root(&dir)
                && read_usage_usec(&dir.join("cpu.stat")).is_some()
            {
                let quota = read(&dir.join("cpu.max")).and_then(|t| parse_cpu_max(&t));
                let cpuset = read(&dir.join("cpuset.cpus.effective"))
                    .or_else(|| read(&mount.join("cpuset.cpus.effective")))
                    .and_then(|t| count_cpus(&t));
                return Some(CpuSource {
                    kind: CpuSourceKind::CgroupV2,
                    counter: dir.join("cpu.stat"),
                    cores: effective_cores(quota.flatten(), cpuset, host),
                    loadavg,
                });
            }
        }
        if let Some(source) = detect_v1(root, &cgroups, host, &loadavg) {
            return Some(source);
        }
        let own = root.join("proc/self/stat");
        if read(&own).and_then(|t| parse_self_stat(&t)).is_some() {
            return Some(CpuSource {
                kind: CpuSourceKind::Process,
                counter: own,
                cores: host,
                loadavg,
            });
        }
        let stat = root.join("proc/stat");
        read(&stat).and_then(|t| parse_proc_stat(&t))?;
        Some(CpuSource {
            kind: CpuSourceKind::Host,
            counter: stat,
            cores: host,
            loadavg,
        })
    }

    /// Which counters this source reads.
    pub(crate) fn kind(&self) -> CpuSourceKind {
        self.kind
    }

    /// The cores the process may use (a fraction for a fractional quota).
    pub(crate) fn effective_cores(&self) -> f64 {
        self.cores
    }

    /// The counters now.
    pub(crate) fn read(&self) -> Option<CpuReading> {
        match self.kind {
            CpuSourceKind::CgroupV2 => read_usage_usec(&self.counter).map(|us| CpuReading::Used {
                used_ns: us.saturating_mul(1_000),
            }),
            CpuSourceKind::CgroupV1 => read(&self.counter)
                .and_then(|t| t.trim().parse().ok())
                .map(|ns| CpuReading::Used { used_ns: ns }),
            CpuSourceKind::Process => {
                read(&self.counter)
                    .and_then(|t| parse_self_stat(&t))
                    .map(|ticks| CpuReading::Used {
                        used_ns: ticks.saturating_mul(1_000_000_000 / clock_ticks_per_second()),
                    })
            }
            CpuSourceKind::Host => read(&self.counter)
                .and_then(|t| parse_proc_stat(&t))
                .map(|(busy, total)| CpuReading::Host { busy, total }),
        }
    }

    /// The usage between two readings `wall_ns` apart, 0..=1 of the effective cores (the host's
    /// busy share for `/proc/stat`); `None` if the counters went backwards or no time passed.
    pub(crate) fn usage(&self, before: CpuReading, after: CpuReading, wall_ns: u64) -> Option<f64> {
        let share = match (before, after) {
            (CpuReading::Used { used_ns: a }, CpuReading::Used { used_ns: b }) => {
                if b < a || wall_ns == 0 {
                    return None;
                }
                (b - a) as f64 / (wall_ns as f64 * self.cores)
            }
            (CpuReading::Host { busy: a, total: t }, CpuReading::Host { busy: b, total: u }) => {
                if b < a || u <= t {
                    return None;
                }
                (b - a) as f64 / (u - t) as f64
            }
            _ => return None,
        };
        Some(share.clamp(0.0, 1.0))
    }

    /// The 1-minute load average over the effective cores.
    pub(crate) fn load_per_core(&self) -> Option<f64> {
        let load = read(&self.loadavg).and_then(|t| parse_loadavg(&t))?;
        Some(load / self.cores)
    }
}

fn read(path: &Path) -> Option<String> {
    fs::read_to_string(path).ok()
}

/// cgroup v1: `cpuacct.usage` with the quota of the `cpu` controller and the `cpuset`'s cores.
fn detect_v1(root: &Path, cgroups: &str, host: f64, loadavg: &Path) -> Option<CpuSource> {
    let mount = root.join("sys/fs/cgroup");
    let acct_path = v1_path(cgroups, "cpuacct").unwrap_or("/");
    let acct = ["cpuacct", "cpu,cpuacct", "cpuacct,cpu"]
        .iter()
        .find_map(|m| cgroup_dir(&mount.join(m), acct_path, "cpuacct.usage"))?;
    if is_v1_root(&acct) {
        // The root group's usage is the whole host's: not the process's to answer for.
        return None;
    }
    let counter = acct.join("cpuacct.usage");
    read(&counter)?.trim().parse::<u64>().ok()?;
    let cpu_path = v1_path(cgroups, "cpu").unwrap_or(acct_path);
    let quota = ["cpu", "cpu,cpuacct", "cpuacct,cpu"]
        .iter()
        .find_map(|m| cgroup_dir(&mount.join(m), cpu_path, "cpu.cfs_quota_us"))
        .and_then(|dir| {
            let quota: i64 = read(&dir.join("cpu.cfs_quota_us"))?.trim().parse().ok()?;
            let period: i64 = read(&dir.join("cpu.cfs_period_us"))?.trim().parse().ok()?;
            (quota > 0 && period > 0).then(|| quota as f64 / period as f64)
        });
    let cpuset_path = v1_path(cgroups, "cpuset").unwrap_or("/");
    let cpuset = cgroup_dir(&mount.join("cpuset"), cpuset_path, "cpuset.cpus")
        .and_then(|dir| read(&dir.join("cpuset.cpus")))
        .and_then(|t| count_cpus(&t));
    Some(CpuSource {
        kind: CpuSourceKind::CgroupV1,
        counter,
        cores: effective_cores(quota, cpuset, host),
        loadavg: loadavg.to_path_buf(),
    })
}

/// The directory of the cgroup at `path` under `mount` that has `file`; the mount itself if the
/// path is not visible (a container sees its own cgroup as the root).
fn cgroup_dir(mount: &Path, path: &str, file: &str) -> Option<PathBuf> {
    let nested = mount.join(path.trim_start_matches('/'));
    [nested, mount.to_path_buf()]
        .into_iter()
        .find(|dir| dir.join(file).is_file())
}

/// Whether a cgroup v2 directory is the hierarchy's root: only non-root groups have
/// `cgroup.type` and `cpu.max`. (Inside a container with its own cgroup namespace the
/// container's group looks like a root by its path, but still has these files.)
fn is_v2_root(dir: &Path) -> bool {
    !dir.join("cgroup.type").is_file() && !dir.join("cpu.max").is_file()
}

/// Whether a cgroup v1 directory is the hierarchy's root: only the root has `release_agent`
/// and `cgroup.sane_behavior`.
fn is_v1_root(dir: &Path) -> bool {
    dir.join("release_agent").is_file() || dir.join("cgroup.sane_behavior").is_file()
}

/// The kernel's clock ticks per second, the unit of `/proc/self/stat`'s times (100 almost
/// everywhere).
fn clock_ticks_per_second() -> u64 {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: sysconf takes an integer name and touches no memory of ours; -1 or 0 (unknown)
        // is handled below.
        let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if ticks > 0 && ticks <= 1_000_000_000 {
            return ticks as u64;
        }
    }
    100
}

/// `utime + stime` of every thread, in clock ticks, from `/proc/self/stat` (fields 14 and 15;
/// the command name in field 2 may hold spaces and parentheses, so fields are counted after its
/// last `)`).
pub(crate) fn parse_self_stat(text: &str) -> Option<u64> {
    let (_, rest) = text.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    utime.checked_add(stime)
}

/// The cgroup v2 path in `/proc/self/cgroup` (`0::/path`).
fn v2_path(cgroups: &str) -> Option<&str> {
    cgroups.lines().find_map(|l| l.strip_prefix("0::"))
}

/// The cgroup v1 path of `controller` in `/proc/self/cgroup` (`N:cpu,cpuacct:/path`).
fn v1_path<'a>(cgroups: &'a str, controller: &str) -> Option<&'a str> {
    cgroups.lines().find_map(|line| {
        let mut fields = line.splitn(3, ':');
        let (_, controllers, path) = (fields.next()?, fields.next()?, fields.next()?);
        controllers
            .split(',')
            .any(|c| c == controller)
            .then_some(path)
    })
}

/// `min(quota, cpuset, host)`, each bound where known.
fn effective_cores(quota: Option<f64>, cpuset: Option<usize>, host: f64) -> f64 {
    let mut cores = host;
    if let Some(set) = cpuset.filter(|&n| n > 0) {
        cores = cores.min(set as f64);
    }
    if let Some(q) = quota.filter(|q| q.is_finite() && *q > 0.0) {
        cores = cores.min(q);
    }
    cores
}

/// `cpu.max`: `Some(Some(cores))` for `"quota period"`, `Some(None)` for `"max period"`.
pub(crate) fn parse_cpu_max(text: &str) -> Option<Option<f64>> {
    let mut fields = text.split_whitespace();
    let quota = fields.next()?;
    let period: f64 = fields.next().map_or(Some(100_000.0), |p| p.parse().ok())?;
    if quota == "max" {
        return Some(None);
    }
    let quota: f64 = quota.parse().ok()?;
    (quota > 0.0 && period > 0.0).then_some(Some(quota / period))
}

/// The number of CPUs in a list such as `0-3,6,8-9`.
pub(crate) fn count_cpus(text: &str) -> Option<usize> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let mut n = 0usize;
    for part in text.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (usize, usize) = (a.parse().ok()?, b.parse().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.parse::<usize>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

/// `usage_usec` from a cgroup v2 `cpu.stat`.
fn read_usage_usec(path: &Path) -> Option<u64> {
    parse_usage_usec(&read(path)?)
}

pub(crate) fn parse_usage_usec(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix("usage_usec "))
        .and_then(|v| v.trim().parse().ok())
}

/// Busy and total jiffies from `/proc/stat`'s `cpu` line (idle and iowait are not busy).
pub(crate) fn parse_proc_stat(text: &str) -> Option<(u64, u64)> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let values: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|v| v.parse().ok())
        .collect::<Option<_>>()?;
    if values.len() < 4 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest time is already in user)
    let total = values
        .iter()
        .take(8)
        .fold(0u64, |t, &v| t.saturating_add(v));
    let idle = values[3].saturating_add(values.get(4).copied().unwrap_or(0));
    Some((total.saturating_sub(idle), total))
}

/// The 1-minute load average from `/proc/loadavg`.
pub(crate) fn parse_loadavg(text: &str) -> Option<f64> {
    text.split_whitespace()
        .next()?
        .parse()
        .ok()
        .filter(|l: &f64| l.is_finite() && *l >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/cgroup")
            .join(name)
    }

    /// A copy of a fixture whose files a test may change.
    struct Scratch(PathBuf);

    impl Scratch {
        fn of(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "sentinel-cgroup-{name}-{}-{:?}",
                std::process::id(),
                std::thread::current().id()
            ));
            let _ = fs::remove_dir_all(&dir);
            copy(&fixture(name), &dir);
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    fn copy(from: &Path, to: &Path) {
        fs::create_dir_all(to).unwrap();
        for entry in fs::read_dir(from).unwrap() {
            let entry = entry.unwrap();
            let target = to.join(entry.file_name());
            if entry.file_type().unwrap().is_dir() {
                copy(&entry.path(), &target);
            } else {
                fs::copy(entry.path(), target).unwrap();
            }
        }
    }

    #[test]
    fn cgroup_v2_quota_over_period_bounded_by_cpuset_and_host() {
        let s = CpuSource::detect(&fixture("v2"), 16).unwrap();
        assert_eq!(s.kind(), CpuSourceKind::CgroupV2, "v2 before /proc/stat");
        assert_eq!(s.effective_cores(), 2.0);
        assert_eq!(
            s.read(),
            Some(CpuReading::Used {
                used_ns: 1_000_000_000
            })
        );
        assert_eq!(s.load_per_core(), Some(1.5), "3.00 over 2 cores");
        // The host bounds it too.
        assert_eq!(
            CpuSource::detect(&fixture("v2"), 1)
                .unwrap()
                .effective_cores(),
            1.0
        );
    }

    #[test]
    fn a_1_25_core_quota_is_1_25_cores_not_2() {
        let s = CpuSource::detect(&fixture("v2_quota_1_25"), 8).unwrap();
        assert_eq!(s.kind(), CpuSourceKind::CgroupV2);
        assert_eq!(s.effective_cores(), 1.25);
        assert_eq!(s.load_per_core(), Some(2.0), "2.50 over 1.25 cores");
        // Half of 1.25 cores over 500 ms: 312 500 us of CPU time.
        let before = s.read().unwrap();
        let after = CpuReading::Used {
            used_ns: 5_000_000_000 + 312_500_000,
        };
        assert_eq!(s.usage(before, after, 500_000_000), Some(0.5));
    }

    #[test]
    fn no_quota_is_bounded_by_the_cpuset_then_the_host() {
        let s = CpuSource::detect(&fixture("v2_no_limit"), 16).unwrap();
        assert_eq!(s.effective_cores(), 6.0, "cpuset 0-5");
        let s = CpuSource::detect(&fixture("v2_no_limit"), 4).unwrap();
        assert_eq!(s.effective_cores(), 4.0, "the host has 4");
        let s = CpuSource::detect(&fixture("v1_no_limit"), 3).unwrap();
        assert_eq!(s.kind(), CpuSourceKind::CgroupV1);
        assert_eq!(s.effective_cores(), 3.0, "quota -1: no limit");
        assert_eq!(s.load_per_core(), None, "no /proc/loadavg in the fixture");
    }

    #[test]
    fn cgroup_v1_reads_cpuacct_and_the_cfs_quota() {
        let s = CpuSource::detect(&fixture("v1"), 8).unwrap();
        assert_eq!(s.kind(), CpuSourceKind::CgroupV1);
        assert_eq!(
            s.effective_cores(),
            1.5,
            "quota 150000 / 100000, under cpuset 0-1,4"
        );
        assert_eq!(
            s.read(),
            Some(CpuReading::Used {
                used_ns: 2_000_000_000
            })
        );
        assert_eq!(s.load_per_core(), Some(0.5));
    }

    #[test]
    fn without_cgroups_the_host_share_from_proc_stat() {
        let scratch = Scratch::of("proc_only");
        let s = CpuSource::detect(&scratch.0, 4).unwrap();
        assert_eq!(s.kind(), CpuSourceKind::Host);
        let before = s.read().unwrap();
        assert_eq!(
            before,
            CpuReading::Host {
                busy: 400,
                total: 1_000
            }
        );
        // 100 more jiffies, 30 of them busy.
        fs::write(
            scratch.0.join("proc/stat"),
            "cpu  320 0 110 560 110 0 0 0 0 0\n",
        )
        .unwrap();
        let after = s.read().unwrap();
        assert_eq!(s.usage(before, after, 0), Some(0.3));
        assert_eq!(s.load_per_core(), Some(0.25));
    }

    #[test]
    fn in_the_root_cgroup_v2_the_process_is_measured_not_the_host() {
        // The root group's cpu.stat counts every process of the host: a neighbour's build
        // would read as this process's load. Its own CPU time is read instead.
        let scratch = Scratch::of("v2_root");
        let s = CpuSource::detect(&scratch.0, 2).unwrap();
        assert_eq!(s.kind(), CpuSourceKind::Process);
        assert_eq!(s.effective_cores(), 2.0, "the process's parallelism");
        let ticks = clock_ticks_per_second();
        let before = s.read().unwrap();
        assert_eq!(
            before,
            CpuReading::Used {
                used_ns: 200 * (1_000_000_000 / ticks)
            },
            "utime 150 + stime 50 ticks, every thread"
        );
        // Half a core of 2 for one second: 0.25.
        let stat = scratch.0.join("proc/self/stat");
        let text = fs::read_to_string(&stat).unwrap();
        let half_second = (ticks / 2).to_string();
        let later = text.replacen(" 150 50 ", &format!(" {} 50 ", 150 + ticks / 2), 1);
        assert_ne!(later, text, "{half_second} ticks more of user time");
        fs::write(&stat, later).unwrap();
        let after = s.read().unwrap();
        assert_eq!(s.usage(before, after, 1_000_000_000), Some(0.25));
        assert_eq!(s.load_per_core(), Some(0.25), "0.50 over 2 cores");
    }

    #[test]
    fn in_the_root_cgroup_v1_the_process_is_measured_not_the_host() {
        // This is how a process started from a shell of a cgroup v1 host (or a VM) looks:
        // `cpuacct:/`, whose `cpuacct.usage` is the whole host's.
        let s = CpuSource::detect(&fixture("v1_root"), 4).unwrap();
        assert_eq!(s.kind(), CpuSourceKind::Process);
        assert_eq!(s.effective_cores(), 4.0);
    }

    #[test]
    fn a_container_seeing_its_own_group_as_the_root_still_reads_its_group() {
        // With a cgroup namespace, `0::/` and the group at the mount's root; its `cpu.max`
        // (only non-root groups have one) tells it apart from the host's root.
        let s = CpuSource::detect(&fixture("v2_no_limit"), 16).unwrap();
        assert_eq!(s.kind(), CpuSourceKind::CgroupV2);
        let s = CpuSource::detect(&fixture("v2_quota_1_25"), 8).unwrap();
        assert_eq!(s.kind(), CpuSourceKind::CgroupV2);
    }

    #[test]
    fn proc_self_stat_is_read_after_the_command_names_last_parenthesis() {
        let line = "7 (a) b) (c) R 1 7 7 0 -1 0 0 0 0 0 30 12 0 0 20 0 1 0 5 0 0";
        assert_eq!(parse_self_stat(line), Some(42));
        assert_eq!(parse_self_stat("7 (x) R 1 2"), None, "too short");
        assert_eq!(parse_self_stat("garbage"), None);
        assert_eq!(
            parse_self_stat("7 (x) R 1 7 7 0 -1 0 0 0 0 0 x 12"),
            None,
            "not a number"
        );
        assert!(clock_ticks_per_second() > 0);
    }

    #[test]
    fn usage_between_two_readings_of_a_changing_file() {
        let scratch = Scratch::of("v2");
        let s = CpuSource::detect(&scratch.0, 16).unwrap();
        let before = s.read().unwrap();
        // 2 cores for 250 ms hold 500 ms of CPU time; 400 ms were used: 80%.
        let stat = scratch.0.join("sys/fs/cgroup/app.slice/svc/cpu.stat");
        fs::write(&stat, "usage_usec 1400000\n").unwrap();
        let after = s.read().unwrap();
        assert_eq!(s.usage(before, after, 250_000_000), Some(0.8));
        // Over the cores (a burst, or rounding): clamped.
        assert_eq!(s.usage(before, after, 100_000_000), Some(1.0));
        // Counters going backwards or no time: nothing.
        assert_eq!(s.usage(after, before, 1), None);
        assert_eq!(s.usage(before, after, 0), None);
    }

    #[test]
    fn malformed_files_read_as_nothing_never_a_panic() {
        assert_eq!(parse_cpu_max("max 100000"), Some(None));
        assert_eq!(parse_cpu_max("150000 100000"), Some(Some(1.5)));
        assert_eq!(parse_cpu_max("garbage"), None);
        assert_eq!(parse_cpu_max("0 100000"), None);
        assert_eq!(parse_cpu_max(""), None);
        assert_eq!(count_cpus("0-3,6,8-9"), Some(7));
        assert_eq!(count_cpus("5"), Some(1));
        assert_eq!(count_cpus("3-1"), None);
        assert_eq!(count_cpus("a-b"), None);
        assert_eq!(count_cpus(""), None);
        assert_eq!(parse_usage_usec("user_usec 5\n"), None);
        assert_eq!(parse_usage_usec("usage_usec x\n"), None);
        assert_eq!(parse_proc_stat("cpu  1 2\n"), None);
        assert_eq!(parse_proc_stat("cpu  1 2 x 4\n"), None);
        assert_eq!(parse_proc_stat("intr 5\n"), None);
        assert_eq!(parse_loadavg("-1 0 0"), None);
        assert_eq!(parse_loadavg("nan"), None);
        assert_eq!(parse_loadavg(""), None);
        // A root with nothing readable: no source.
        assert!(CpuSource::detect(Path::new("/nonexistent-sentinel-root"), 4).is_none());
        // A v2 cgroup whose cpu.stat is garbage falls through to the next source.
        let scratch = Scratch::of("v2");
        fs::write(
            scratch.0.join("sys/fs/cgroup/app.slice/svc/cpu.stat"),
            "oops",
        )
        .unwrap();
        let s = CpuSource::detect(&scratch.0, 4).unwrap();
        assert_eq!(s.kind(), CpuSourceKind::Host);
    }
}
