//! Rules as plain validated data, one module per kind: what a rule says, its builder methods and
//! its `validate()`. Nothing here knows how rules are checked, loaded or read from files; the
//! public paths are in [`rules`](crate::rules).

pub(crate) mod adaptive;
pub(crate) mod authority;
pub(crate) mod circuit_breaker;
pub(crate) mod cluster;
pub(crate) mod defaults;
pub(crate) mod flow;
pub(crate) mod hotspot;
pub(crate) mod origin;
pub(crate) mod resource;
pub(crate) mod system;
pub(crate) mod window;
