//! [`SystemRule`]: limits on the whole process's inbound traffic (system adaptive protection).

use std::time::Duration;

use crate::error::RuleError;

/// The resource name system rules report in errors (they name no resource).
pub(crate) const SYSTEM_RESOURCE: &str = "<system>";

/// Largest `avg_rt` a system rule takes (a minute).
pub const MAX_SYSTEM_RT: Duration = Duration::from_secs(60);

/// A system rule: limits on the process as a whole, checked on every **inbound** entry
/// ([`EntryBuilder::inbound`](crate::EntryBuilder::inbound), the attribute's `inbound = true`,
/// the tower layer's requests), as in Sentinel. Exceeding any limit blocks new inbound entries
/// with [`BlockKind::System`](crate::BlockKind::System); outbound entries are never blocked by it.
///
/// Each limit is optional; several rules combine to the strictest value of each field. A rule
/// in shadow mode ([`SystemRule::shadow`]) is combined only with the other shadow rules, into
/// limits that count what they would refuse and refuse nothing.
///
/// * `cpu_usage` (0..=1) and `load_per_core` are checked adaptively (Sentinel's BBR check): while
///   the process is over the limit, a call is blocked only if the inbound calls inside exceed
///   what the process has shown it can finish (the largest completions per second in the last
///   second × the smallest response time), so a busy but healthy process keeps its throughput.
///   As in go-kratos/aegis's BBR, that check stays on for 1 s after the first block even if the
///   CPU has dropped meanwhile. The CPU usage is what the process can be blamed for: its own
///   cgroup's (v2, then v1) over its effective cores (a 1.25-core quota counts as 1.25) when it
///   has one of its own (a container, a systemd service), else, and always in the root cgroup
///   (whose usage is the whole host's), the process's own CPU time (`/proc/self/stat`) over its
///   available cores; [`metrics::system`](crate::metrics::system) says which. It is sampled every 500 ms by a background thread that runs only while a system rule is loaded
///   (Linux; elsewhere the readings are 0 and these two limits never block).
/// * `avg_rt`, `concurrency` and `qps` are checked directly against the inbound traffic's
///   statistics over the last second (average response time, calls inside, passes per second).
///
/// ```
/// use sentinel_runtime::rules::{self, SystemRule};
/// use std::time::Duration;
///
/// let rule = SystemRule::new()
///     .cpu_usage(0.8)
///     .concurrency(500)
///     .avg_rt(Duration::from_millis(200));
/// rules::load_system_rules(vec![rule])?;
/// # rules::load_system_rules(vec![])?;
/// # Ok::<(), sentinel_runtime::RuleError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SystemRule {
    /// The process's CPU usage above which inbound calls may be blocked (0..=1, of its effective
    /// cores). Sentinel's `highestCpuUsage`.
    pub cpu_usage: Option<f64>,
    /// The 1-minute load average per effective core above which inbound calls may be blocked
    /// (positive). Sentinel's `highestSystemLoad` is the whole machine's: divide it by the cores.
    pub load_per_core: Option<f64>,
    /// The inbound calls' average response time over the last second above which inbound calls
    /// are blocked (up to [`MAX_SYSTEM_RT`]). Sentinel's `avgRt`.
    pub avg_rt: Option<Duration>,
    /// The most inbound calls inside at once. Sentinel's `maxThread`.
    pub concurrency: Option<u64>,
    /// The most inbound passes per second (finite, non-negative). Sentinel's `qps`.
    pub qps: Option<f64>,
    /// Shadow mode: the rule is evaluated for every inbound call the enforced checks admitted,
    /// against limits of its own, and a call it would refuse goes on and is counted; see
    /// [`SystemRule::shadow`].
    pub shadow: bool,
}

impl SystemRule {
    /// A rule with no limit yet (add them with the builder methods).
    pub fn new() -> SystemRule {
        SystemRule::default()
    }

    /// Limits the process's CPU usage (0..=1), checked adaptively.
    pub fn cpu_usage(mut self, usage: f64) -> SystemRule {
        self.cpu_usage = Some(usage);
        self
    }

    /// Limits the 1-minute load average per core, checked adaptively.
    pub fn load_per_core(mut self, load: f64) -> SystemRule {
        self.load_per_core = Some(load);
        self
    }

    /// Limits the inbound calls' average response time.
    pub fn avg_rt(mut self, rt: Duration) -> SystemRule {
        self.avg_rt = Some(rt);
        self
    }

    /// Limits the inbound calls inside at once.
    pub fn concurrency(mut self, calls: u64) -> SystemRule {
        self.concurrency = Some(calls);
        self
    }

    /// Shadow mode (`true`): the rule is evaluated for every inbound call once the enforced
    /// checks admitted it, and a call it would refuse is counted as a shadow block of the
    /// called resource (`shadow_block_total`, by kind `system`) but goes on. Shadow system
    /// rules combine among themselves (the strictest value of each field) into limits of their
    /// own, with their own QPS window, count of inbound calls inside and adaptive episode, so
    /// the enforced system rules see exactly what they would see without them. The same rule
    /// reloaded without `shadow` is enforced and keeps its QPS window's counts.
    ///
    /// ```
    /// use sentinel_runtime::rules::{self, SystemRule};
    ///
    /// rules::load_system_rules(vec![
    ///     SystemRule::new().concurrency(500),
    ///     SystemRule::new().concurrency(200).shadow(true), // would 200 be enough?
    /// ])?;
    /// # rules::load_system_rules(vec![])?;
    /// # Ok::<(), sentinel_runtime::RuleError>(())
    /// ```
    pub fn shadow(mut self, shadow: bool) -> SystemRule {
        self.shadow = shadow;
        self
    }

    /// Limits the inbound passes per second.
    pub fn qps(mut self, qps: f64) -> SystemRule {
        self.qps = Some(qps);
        self
    }

    /// Checks every field; the error names the first bad one.
    pub fn validate(&self) -> Result<(), RuleError> {
        let err = |field, message: &str| Err(RuleError::new(SYSTEM_RESOURCE, field, message));
        if let Some(cpu) = self.cpu_usage
            && !(0.0..=1.0).contains(&cpu)
        {
            return err(
                "cpu_usage",
                "must be a fraction of the process's cores, 0..=1 (not a percentage)",
            );
        }
        if let Some(load) = self.load_per_core
            && (!load.is_finite() || load <= 0.0)
        {
            return err("load_per_core", "must be finite and positive");
        }
        if let Some(rt) = self.avg_rt
            && (rt.is_zero() || rt > MAX_SYSTEM_RT)
        {
            return err("avg_rt", "must be positive and at most a minute");
        }
        if let Some(qps) = self.qps
            && (!qps.is_finite() || qps < 0.0)
        {
            return err("qps", "must be finite and non-negative");
        }
        if self == &SystemRule::default().shadow(self.shadow) {
            return err(
                "cpu_usage",
                "the rule sets no limit (set at least one field)",
            );
        }
        Ok(())
    }
}

/// The strictest value of each field over `rules` (the limits in force).
pub(crate) fn combine(rules: &[SystemRule]) -> SystemRule {
    fn min<T: PartialOrd + Copy>(a: Option<T>, b: Option<T>) -> Option<T> {
        match (a, b) {
            (Some(a), Some(b)) => Some(if b < a { b } else { a }),
            (a, None) => a,
            (None, b) => b,
        }
    }
    rules
        .iter()
        .fold(SystemRule::default(), |acc, r| SystemRule {
            cpu_usage: min(acc.cpu_usage, r.cpu_usage),
            load_per_core: min(acc.load_per_core, r.load_per_core),
            avg_rt: min(acc.avg_rt, r.avg_rt),
            concurrency: min(acc.concurrency, r.concurrency),
            qps: min(acc.qps, r.qps),
            shadow: false,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bad_field_is_named() {
        let field = |r: SystemRule| r.validate().unwrap_err().field();
        assert_eq!(field(SystemRule::new().cpu_usage(80.0)), "cpu_usage");
        assert_eq!(field(SystemRule::new().cpu_usage(f64::NAN)), "cpu_usage");
        assert_eq!(field(SystemRule::new().load_per_core(0.0)), "load_per_core");
        assert_eq!(
            field(SystemRule::new().load_per_core(f64::INFINITY)),
            "load_per_core"
        );
        assert_eq!(field(SystemRule::new().avg_rt(Duration::ZERO)), "avg_rt");
        assert_eq!(
            field(SystemRule::new().avg_rt(Duration::from_secs(61))),
            "avg_rt"
        );
        assert_eq!(field(SystemRule::new().qps(-1.0)), "qps");
        assert_eq!(field(SystemRule::new()), "cpu_usage", "no limit at all");
        assert!(SystemRule::new().concurrency(0).validate().is_ok());
        assert!(SystemRule::new().cpu_usage(1.0).qps(0.0).validate().is_ok());
    }

    #[test]
    fn rules_combine_to_the_strictest_of_each_field() {
        let combined = combine(&[
            SystemRule::new().cpu_usage(0.9).qps(100.0),
            SystemRule::new().cpu_usage(0.7).concurrency(10),
        ]);
        assert_eq!(
            combined,
            SystemRule::new().cpu_usage(0.7).qps(100.0).concurrency(10)
        );
        assert_eq!(combine(&[]), SystemRule::default());
    }
}
