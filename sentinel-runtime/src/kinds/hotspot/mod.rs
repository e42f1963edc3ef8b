//! Hotspot rules (Sentinel's parameter flow rules): limits per value of a call's parameter.

pub(crate) mod attribute;
pub(crate) mod budget;
pub(crate) mod cluster;
#[cfg(feature = "rule-files")]
pub(crate) mod exceptions;
#[cfg(feature = "rule-files")]
pub(crate) mod file;
pub(crate) mod gate;
pub(crate) mod hot_top;
pub(crate) mod kind;
pub(crate) mod rule;
#[cfg(feature = "rule-files")]
pub(crate) mod sentinel;
pub(crate) mod stage;

pub(crate) use gate::{BlockedValues, HotPass, HotspotGate};

/// What this kind adds to the public [`rules`](crate::rules) module (through the table of
/// kinds: `kinds/public.rs`).
pub(crate) mod public {
    pub use super::rule::{
        HotspotException, HotspotMetric, HotspotRule, DEFAULT_HOTSPOT_CAPACITY,
        MAX_HOTSPOT_CAPACITY, MAX_HOTSPOT_RULES_PER_RESOURCE, MAX_HOTSPOT_WINDOW, PARAM_BY_NAME,
    };
}
