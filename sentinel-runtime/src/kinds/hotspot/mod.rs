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
