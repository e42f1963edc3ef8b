//! What the kinds of rules share below them: cluster settings, resource names and windows as
//! plain validated data, and (`file`) the parsed rule document and its readers' helpers. Each
//! kind's own rule is in its folder under `kinds/`; the public paths are in
//! [`rules`](crate::rules).

pub(crate) mod cluster;
#[cfg(feature = "rule-files")]
pub(crate) mod file;
pub(crate) mod resource;
pub(crate) mod window;
