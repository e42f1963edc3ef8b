//! Rules as plain validated data, one module per kind: what a rule says, its builder methods and
//! its `validate()`. Nothing here knows how rules are checked, loaded or read from files; the
//! public paths are in [`rules`](crate::rules).

pub(crate) mod cluster;
pub(crate) mod resource;
pub(crate) mod window;
