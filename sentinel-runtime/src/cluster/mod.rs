//! Limits that hold across the instances of a service.
//!
//! A [`FlowRule`](crate::rules::FlowRule) or [`HotspotRule`](crate::rules::HotspotRule) marked
//! with `.cluster(ClusterThreshold::Global)` shares its threshold with every instance that runs
//! the same rule. Without a started cluster (Cargo feature `redis`), such a rule limits locally,
//! as its [`ClusterFallback`] says.

pub use crate::rules::{ClusterFallback, ClusterThreshold};
