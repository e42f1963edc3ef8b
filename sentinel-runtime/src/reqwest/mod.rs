//! A [`reqwest_middleware`] middleware guarding the calls a process makes with reqwest
//! (feature `reqwest`): see [`SentinelMiddleware`].
//!
//! Both crates are re-exported, as [`reqwest`] and [`middleware`]: build the
//! client with these so that its types are the versions the middleware is built against (a
//! project with another version of either gets a type error otherwise).

mod block;
mod sentinel;
#[cfg(test)]
mod tests;

pub use block::block_error;
pub use sentinel::SentinelMiddleware;

/// The `reqwest` crate (0.13) the middleware is built against.
pub use ::reqwest;
/// The `reqwest-middleware` crate (0.5) the middleware is built against: its `ClientBuilder`
/// puts [`SentinelMiddleware`] in front of a reqwest client.
pub use ::reqwest_middleware as middleware;
