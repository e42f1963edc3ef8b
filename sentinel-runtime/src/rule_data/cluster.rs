//! How a flow or hotspot rule is shared across the instances of a service: plain data, read by
//! the cluster integration (`cluster::Cluster`, Cargo feature `redis`).

/// What a cluster rule's threshold counts: every instance together, or each instance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ClusterThreshold {
    /// The threshold holds for all instances together (1000/s in all, however many run).
    Global,
    /// The threshold is per instance: the limit in all is the threshold times the instances
    /// live.
    PerInstance,
}

/// What a cluster rule does while its instance cannot reach the cluster's store.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ClusterFallback {
    /// Limit locally: a [`ClusterThreshold::Global`] rule enforces its threshold divided by the
    /// instances last seen live, a [`ClusterThreshold::PerInstance`] rule its own threshold.
    #[default]
    Local,
    /// Admit every call the rule would have checked.
    Pass,
}
