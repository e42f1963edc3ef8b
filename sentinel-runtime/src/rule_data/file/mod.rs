//! What reading rule files needs below the kinds: the parsed document value with its lines
//! (`value`), durations as text (`duration`), the rule types' serde impls through their file
//! shapes (`through`), the cluster settings' shapes (`cluster`), how a kind's rules are read
//! (`reader`), and the helpers of Sentinel's names (`sentinel_fields`, `sentinel_cluster`).
//! Each kind's own section is in its folder under `kinds/`.

pub(crate) mod cluster;
pub(crate) mod duration;
pub(crate) mod reader;
pub(crate) mod sentinel_cluster;
pub(crate) mod sentinel_fields;
pub(crate) mod through;
pub(crate) mod value;
