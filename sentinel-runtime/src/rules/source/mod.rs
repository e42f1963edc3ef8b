//! Rule sources: the places a rule document comes from, watched by
//! [`watch_source`] (or [`watch_file`] for a file).
//!
//! A [`RuleSource`] holds one document in the [rule-file format](crate::rules::files) with a
//! version, says when it may have changed, and may be written with compare-and-set. These come
//! with the crate: [`FileSource`], a file on disk, and with the feature `redis`,
//! `RedisSource`, one document in Redis or Redis Cluster that every instance of a service
//! watches, so an edit made anywhere reaches the whole fleet; with the feature `etcd`,
//! `EtcdSource`, the same at one key in etcd. A source for another store needs only the
//! [`RuleSource`] trait: its documentation says what a source must do.

mod document;
mod error;
#[cfg(feature = "etcd")]
mod etcd_api;
#[cfg(feature = "etcd")]
mod etcd_http;
#[cfg(feature = "etcd")]
mod etcd_source;
#[cfg(feature = "etcd")]
mod etcd_watch;
mod file;
#[cfg(feature = "redis")]
mod in_force;
#[cfg(any(feature = "redis", feature = "etcd"))]
mod listener;
pub(crate) mod notices;
#[cfg(feature = "redis")]
mod redis_scripts;
#[cfg(feature = "redis")]
mod redis_source;
mod rule_source;
#[cfg(feature = "redis")]
mod subscribe;
mod watcher;

#[cfg(feature = "dashboard")]
pub(crate) use document::parse_text;
pub use document::{Document, DocumentFormat, MAX_DOCUMENT_BYTES};
pub use error::SourceError;
#[cfg(feature = "etcd")]
#[cfg_attr(docsrs, doc(cfg(feature = "etcd")))]
pub use etcd_source::EtcdSource;
pub use file::{watch_file, FileSource};
#[cfg(feature = "redis")]
pub(crate) use in_force::version_in_force;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use redis_source::{RedisSource, DEFAULT_POLL};
pub use rule_source::{Changes, Read, RuleSource};
pub use watcher::{watch_source, RuleWatcher, WatchStatus};
