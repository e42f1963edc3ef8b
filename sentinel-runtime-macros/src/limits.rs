//! The run-time limits the attribute checks at compile time, mirroring `sentinel-runtime`'s
//! (the macro crate cannot depend on the runtime).

/// `rules::MAX_THRESHOLD`: the largest `qps`.
pub(crate) const MAX_THRESHOLD: f64 = 2_147_483_647.0;
/// `rules::MAX_THRESHOLD` for a `concurrency` rule, a whole number.
pub(crate) const MAX_CONCURRENCY: u32 = 2_147_483_647;
/// `rules::MAX_WAIT_LIMIT`: the longest `max_wait`, 1 h.
pub(crate) const MAX_WAIT_MS: u64 = 3_600_000;
/// `rules::MAX_WARM_UP`: the longest `warm_up`, 24 h.
pub(crate) const MAX_WARM_UP_MS: u64 = 86_400_000;
/// `rules::MAX_COLD_FACTOR`: the largest `cold_factor`.
pub(crate) const MAX_COLD_FACTOR: f64 = 100.0;
/// `rules::MAX_RECOVERY`: the longest `recovery`, 24 h.
pub(crate) const MAX_RECOVERY_MS: u64 = 86_400_000;
/// `rules::MAX_MIN_REQUESTS`: the largest `min_requests`.
pub(crate) const MAX_MIN_REQUESTS: u32 = 1_000_000_000;
/// `rules::MAX_PROBES`: the most `probes`.
pub(crate) const MAX_PROBES: u32 = 1_000;
/// The longest statistics `window` (flow or breaker): `u32::MAX` milliseconds.
pub(crate) const MAX_WINDOW_MS: u64 = u32::MAX as u64;
/// `rules::MAX_HOTSPOT_CAPACITY`: the most values one hotspot rule tracks.
pub(crate) const MAX_HOTSPOT_CAPACITY: u32 = 16_777_216;
/// `rules::MAX_HOTSPOT_WINDOW`: the longest hotspot `window`, 24 h.
pub(crate) const MAX_HOTSPOT_WINDOW_MS: u64 = 86_400_000;
/// `rules::MAX_HOTSPOT_RULES_PER_RESOURCE`: the most `hotspot(...)` per function.
pub(crate) const MAX_HOTSPOTS: usize = 8;
/// `param::MAX_PARAMS`: the most parameters an entry carries.
pub(crate) const MAX_PARAMS: usize = 8;
/// `rules::hotspot`'s `MAX_DEBT_NANOS`: what one value of a `qps` hotspot limit may owe from
/// idle, `threshold + burst` calls of `window / threshold` each (2^63 ns, about 292 years).
pub(crate) const MAX_HOTSPOT_DEBT_NANOS: u128 = 1 << 63;
