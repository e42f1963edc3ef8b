//! The client side of the tower integration: [`SentinelClientLayer`] around the services a
//! process calls others through (hyper-util's client, a tonic `Channel`, any tower stack).

mod block;
mod layer;
mod service;
#[cfg(test)]
mod tests;

pub use block::block_error;
pub use layer::SentinelClientLayer;
pub use service::{BoxError, ClientResponseFuture, SentinelClientService};
