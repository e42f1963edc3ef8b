//! Outlier ejection: errors counted per endpoint (an instance of a dependency) of a resource; a
//! failing endpoint is ejected for a while, then probed by one call.

pub(crate) mod detector;
#[cfg(feature = "rule-files")]
pub(crate) mod file;
pub(crate) mod kind;
pub(crate) mod rule;
pub(crate) mod stage;
pub(crate) mod table;

pub(crate) use detector::ejection_counts;
pub(crate) use table::OutlierTicket;
