//! The cluster settings of flow and hotspot rules in our rule files.

use serde::{Deserialize, Serialize};

use crate::rule_data::cluster::{ClusterFallback, ClusterThreshold};
use crate::rule_data::file::through::through;

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "ClusterThreshold",
    rename = "ClusterThreshold",
    rename_all = "snake_case"
)]
pub(crate) enum ClusterThresholdFile {
    Global,
    PerInstance,
}

#[derive(Serialize, Deserialize)]
#[serde(
    remote = "ClusterFallback",
    rename = "ClusterFallback",
    rename_all = "snake_case"
)]
pub(crate) enum ClusterFallbackFile {
    Local,
    Pass,
}

pub(crate) fn is_local_fallback(f: &ClusterFallback) -> bool {
    *f == ClusterFallback::Local
}

through! {
    ClusterThreshold => ClusterThresholdFile,
    ClusterFallback => ClusterFallbackFile,
}
