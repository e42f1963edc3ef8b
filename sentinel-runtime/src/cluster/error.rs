//! [`ClusterError`]: why a cluster did not start.

use std::fmt;

/// Why [`ClusterBuilder::start`](super::ClusterBuilder::start) failed. Cluster rules keep
/// limiting locally (see the [module docs](super)).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClusterError {
    /// A URL is not a Redis URL (`redis://`, `rediss://` needs TLS support, which is not built
    /// in; `redis+unix://`/`unix://` for a socket).
    Url {
        /// The URL as given (its password hidden).
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// Redis could not be reached within the connect timeout (refused, unreachable, no answer).
    Connect {
        /// The URL(s) tried (passwords hidden).
        url: String,
        /// The client's error.
        message: String,
    },
    /// Redis refused the credentials (wrong password or user, or a password is required).
    Auth {
        /// Redis's answer.
        message: String,
    },
    /// Redis answers but does not run Lua scripts (`EVAL`, `EVALSHA` or `SCRIPT` disabled or
    /// renamed): the leases are granted by a script.
    ScriptsDisabled {
        /// Redis's answer.
        message: String,
    },
    /// Redis answered something else unexpected.
    Redis {
        /// Redis's answer.
        message: String,
    },
    /// A cluster is already started in this process (one at a time).
    AlreadyStarted {
        /// The cluster already started.
        first: String,
    },
    /// The background thread could not be started.
    Thread {
        /// The system's error.
        message: String,
    },
    /// A setting is out of range.
    Setting {
        /// The setting's name.
        field: &'static str,
        /// What is wrong with it.
        message: String,
    },
}

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClusterError::Url { url, message } => {
                write!(f, "cluster: bad Redis URL `{url}`: {message}")
            }
            ClusterError::Connect { url, message } => {
                write!(f, "cluster: cannot reach Redis at {url}: {message}")
            }
            ClusterError::Auth { message } => {
                write!(f, "cluster: Redis refused the credentials: {message}")
            }
            ClusterError::ScriptsDisabled { message } => write!(
                f,
                "cluster: Redis does not run Lua scripts (EVAL/EVALSHA/SCRIPT disabled?): {message}"
            ),
            ClusterError::Redis { message } => write!(f, "cluster: Redis error: {message}"),
            ClusterError::AlreadyStarted { first } => write!(
                f,
                "cluster: one cluster per process, and one is already started: {first}"
            ),
            ClusterError::Thread { message } => {
                write!(f, "cluster: cannot start the background thread: {message}")
            }
            ClusterError::Setting { field, message } => {
                write!(f, "cluster: setting `{field}` {message}")
            }
        }
    }
}

impl std::error::Error for ClusterError {}
