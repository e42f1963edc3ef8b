//! Why a dashboard could not start.

use std::fmt;
use std::net::SocketAddr;

/// Why a dashboard could not start.
#[derive(Debug)]
#[non_exhaustive]
pub enum DashboardError {
    /// The address is not loopback and [`Dashboard::allow_remote`](crate::dashboard::Dashboard::allow_remote) was not called.
    NotLoopback(SocketAddr),
    /// The token given to [`Dashboard::token`](crate::dashboard::Dashboard::token) is unfit (the reason).
    Token(&'static str),
    /// No random token could be made (no `/dev/urandom`): give one with [`Dashboard::token`](crate::dashboard::Dashboard::token).
    Random(std::io::Error),
    /// The address could not be bound.
    Bind(SocketAddr, std::io::Error),
    /// The server's thread or runtime could not be started.
    Runtime(std::io::Error),
    /// The rules file given to [`Dashboard::rules_file`](crate::dashboard::Dashboard::rules_file) is
    /// there but was refused (nothing was loaded): its path and the reasons, by field.
    RulesFile(std::path::PathBuf, crate::rules::RuleSetError),
    /// A setting is out of its range: the setting's name and the range.
    Setting {
        /// The setting (the builder method's name).
        field: &'static str,
        /// What it must be.
        why: &'static str,
    },
}

impl fmt::Display for DashboardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DashboardError::NotLoopback(addr) => write!(
                f,
                "dashboard: {addr} is not a loopback address; call allow_remote() to bind it \
                 (and put TLS in front)"
            ),
            DashboardError::Token(why) => write!(f, "dashboard: bad token: {why}"),
            DashboardError::Random(e) => {
                write!(
                    f,
                    "dashboard: no random source for a token ({e}); set token()"
                )
            }
            DashboardError::Bind(addr, e) => write!(f, "dashboard: cannot bind {addr}: {e}"),
            DashboardError::Runtime(e) => write!(f, "dashboard: cannot start the server: {e}"),
            DashboardError::RulesFile(path, e) => {
                write!(
                    f,
                    "dashboard: the rules file {} was refused: {e}",
                    path.display()
                )
            }
            DashboardError::Setting { field, why } => write!(f, "dashboard: `{field}` {why}"),
        }
    }
}

impl std::error::Error for DashboardError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DashboardError::Random(e) | DashboardError::Bind(_, e) | DashboardError::Runtime(e) => {
                Some(e)
            }
            DashboardError::RulesFile(_, e) => Some(e),
            _ => None,
        }
    }
}
