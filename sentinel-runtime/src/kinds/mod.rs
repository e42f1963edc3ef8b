//! One folder per kind of rule: its rule data and validation, its check and its stage, its
//! section of the rule files. The chain of checks a resource runs, the stage runner and the
//! table of kinds sit beside them; shared building blocks (the QPS ring, the parameter table,
//! the cluster's leases) are in [`slot`](crate::slot).

pub(crate) mod authority;
pub(crate) mod chain;
pub(crate) mod circuit_breaker;
pub(crate) mod defaults;
pub(crate) mod flow;
pub(crate) mod hotspot;
pub(crate) mod stages;
pub(crate) mod system;

pub(crate) use chain::{Admission, BuildContext, Chain, ChainRules, Target, INBOUND_CALL};
pub(crate) use stages::{build, cancel, check};
