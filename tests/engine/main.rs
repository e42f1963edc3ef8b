//! The runtime's behaviour in one test binary: entries, the attribute, flow, breakers, hotspot,
//! system, authority and adaptive rules, reloads and hardening cases. Tests that load rules or
//! need a still clock install the MockClock, which also runs them one after another.

// Support code shared by several modules (declared once: a file may be one module only).
#[path = "../support/reload_rounds.rs"]
mod reload_rounds;

mod adaptive_concurrency;
mod adaptive_overload;
mod async_entry;
mod attribute;
mod attribute_hotspot;
mod attribute_patterns;
mod attribute_results;
mod authority;
mod authority_origins;
mod checked_order;
mod circuit_breaker;
mod circuit_breaker_reload;
mod cluster_label;
mod entry_threads;
mod exit_threads;
mod guarded_unwinding;
mod hardening_counts;
mod hardening_defects;
mod hardening_idle;
mod hardening_reload;
mod hardening_threads;
mod hotspot;
mod hotspot_flood;
mod hotspot_names;
mod hotspot_strict;
mod lone_gate;
mod lone_pinned;
mod lone_pinned_order;
mod outlier;
mod outlier_share;
mod reports_order;
mod runtime;
mod sentinel_parity;
mod sentinel_parity_acquire;
mod sentinel_parity_origin;
mod sentinel_parity_validity;
mod shadow;
mod shaping;
mod shared_resource;
mod system_rules;
mod window_model;
