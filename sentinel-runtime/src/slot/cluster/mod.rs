//! The cluster rules' part of the slot chain: their checks ([`gates`]), the leases they spend
//! ([`lease`], [`table`]), what they share with the cluster's background work ([`shared`]) and
//! what it found wrong ([`health`]).

mod gates;
pub(crate) mod health;
pub(crate) mod lease;
pub(crate) mod shared;
pub(crate) mod table;

pub(crate) use gates::{ClusterGate, ClusterHot};
