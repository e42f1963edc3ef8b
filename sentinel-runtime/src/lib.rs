//! Sentinel-style flow control for Rust: sliding-window statistics, flow rules and RAII entries,
//! put around any function with one attribute.
//!
//! ```
//! use sentinel_runtime::{entry, metrics, rules::{self, FlowRule}};
//!
//! rules::load_flow_rules(vec![FlowRule::qps("crate-doc", 2.0)])?;
//! let first = entry("crate-doc");
//! let second = entry("crate-doc");
//! let third = entry("crate-doc");
//! assert!(first.is_ok() && second.is_ok());
//! assert!(third.is_err()); // at most 2 per second
//! drop((first, second));
//! assert_eq!(metrics::snapshot("crate-doc").unwrap().block_qps, 1.0);
//! # rules::load_flow_rules(vec![])?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Layers
//!
//! Bottom up: [`clock`] and the errors; [`stat`] ([`stat::LeapArray`], [`stat::MetricBucket`]);
//! [`rules`] as plain validated data; [`ResourceNode`] (windows plus the rules in force); the
//! registry of nodes by name; the rule loader; the [`slot`] chain and [`Entry`]; [`metrics`].
//! Each layer uses only those below it.
#![warn(missing_docs)]

pub mod clock;
mod entry;
mod error;
pub mod metrics;
mod node;
mod registry;
pub mod rules;
pub mod slot;
pub mod stat;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

pub use entry::{entry, Entry, EntryBuilder};
pub use error::{BlockError, BlockKind, RuleError};
pub use node::ResourceNode;

#[cfg(feature = "macros")]
pub use sentinel_macros::sentinel;
