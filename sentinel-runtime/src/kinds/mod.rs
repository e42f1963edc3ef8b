//! One folder per kind of rule: its rule data and validation, its check and its stage, its
//! section of the rule files. Beside them: the table of kinds (`table`) and what every kind
//! supplies to it (`kind`), a resource's chain of checks (`chain`), what a call carries through
//! the stages (`call`), the kinds' per-call tickets (`tickets`) and the admission that carries
//! them to the call's exit (`admission`), and the stage runner (`stages`). Shared building
//! blocks (the QPS ring, the parameter table, the cluster's leases) are in
//! [`slot`](crate::slot).
//!
//! Adding a kind: its folder (its rule, its `Kind` in `kind.rs`, its stage and checks, its file
//! section), its module line below, one line in `table.rs`, its section in the rule files'
//! format. A kind that keeps state from a call's check to its exit names it as its
//! `Kind::Ticket` and reports it in `Kind::on_exit`; the others say `type Ticket = ();`.

pub(crate) mod admission;
pub(crate) mod authority;
pub(crate) mod call;
pub(crate) mod chain;
pub(crate) mod circuit_breaker;
pub(crate) mod defaults;
pub(crate) mod flow;
pub(crate) mod hotspot;
pub(crate) mod kind;
pub(crate) mod outlier;
pub(crate) mod public;
pub(crate) mod stages;
pub(crate) mod succession;
pub(crate) mod system;
pub(crate) mod table;
pub(crate) mod tickets;
pub(crate) mod validate;

pub(crate) use admission::{Admission, ShadowPass};
pub(crate) use call::{BuildContext, Exit, Target, INBOUND_CALL};
pub(crate) use chain::{Chain, ChainRules};
pub(crate) use stages::{cancel, check, check_shadow};
