//! Hotspot rules (Sentinel's parameter flow rules): limits per value of a call's parameter.

pub(crate) mod gate;
pub(crate) mod hot_top;
pub(crate) mod rule;
pub(crate) mod stage;

pub(crate) use gate::{BlockedValues, HotPass, HotspotGate};
