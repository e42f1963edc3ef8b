//! The cluster rules' part of the slot chain: the leases they spend
//! ([`lease`], [`table`]), what they share with the cluster's background work ([`shared`]) and
//! what it found wrong ([`health`]).

pub(crate) mod health;
pub(crate) mod lease;
pub(crate) mod shared;
pub(crate) mod spend;
pub(crate) mod table;
