//! The built-in checks' order numbers, Sentinel's: custom slots run between them by theirs.

/// Order of the built-in authority (origin) checks, as in Sentinel.
pub const AUTHORITY_SLOT_ORDER: i32 = -6_000;
/// Order of the built-in system checks (inbound entries), as in Sentinel.
pub const SYSTEM_SLOT_ORDER: i32 = -5_000;
/// Order of the built-in flow checks (concurrency and QPS), as in Sentinel.
pub const FLOW_SLOT_ORDER: i32 = -2_000;
/// Order of the built-in hotspot (per-parameter-value) checks: after the flow checks, before
/// the circuit breakers.
pub const HOTSPOT_SLOT_ORDER: i32 = -1_500;
/// Order of the built-in circuit breakers, as in Sentinel's degrade slot.
pub const CIRCUIT_BREAKER_SLOT_ORDER: i32 = -1_000;
