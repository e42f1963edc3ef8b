//! Helpers shared by the memory tests (each its own binary, so the RSS is its own).

/// This process's resident set size in kB (VmRSS in /proc/self/status). Panics where there is
/// no such file: a memory test must not pass by reading nothing.
pub fn rss_kb() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("read /proc/self/status");
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("/proc/self/status has VmRSS");
    line.trim_start_matches("VmRSS:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .expect("VmRSS is a number of kB")
}
