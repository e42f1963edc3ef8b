//! [`SourceError`]: why a source could not be made or written.

use std::fmt;

use crate::manager::set::RuleSetError;

/// Why a rule source could not be made (`RedisSource::new`, feature `redis`) or
/// written ([`RuleSource::put`](super::RuleSource::put)). On any of them nothing was written.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum SourceError {
    /// The source's settings cannot work (a bad URL, a bad key); `field` names the setting.
    Config {
        /// The setting: `url` or `key`.
        field: &'static str,
        /// What is wrong, and what is accepted.
        message: String,
    },
    /// The write named a version (`if_version`) that is not the document's version now:
    /// someone else wrote first. Read the document again, then write on top of it.
    Conflict {
        /// The version the write named (0: no document).
        expected: u64,
        /// The document's version now (0: no document).
        current: u64,
    },
    /// The document was refused, each problem with its field and line (too large, not UTF-8,
    /// unparseable, a bad rule).
    Invalid(RuleSetError),
    /// The source could not be reached, or failed to answer.
    Unavailable {
        /// What went wrong.
        message: String,
    },
    /// This source cannot be written (a file source: edit the file).
    ReadOnly,
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SourceError::Config { field, message } => {
                write!(f, "bad rule source setting `{field}`: {message}")
            }
            SourceError::Conflict { expected, current } => write!(
                f,
                "the document changed: the write expected version {expected}, the source holds \
                 version {current}; nothing was written"
            ),
            SourceError::Invalid(e) => write!(f, "{e}; nothing was written"),
            SourceError::Unavailable { message } => {
                write!(f, "the rule source is unavailable: {message}")
            }
            SourceError::ReadOnly => f.write_str("this rule source cannot be written"),
        }
    }
}

impl std::error::Error for SourceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SourceError::Invalid(e) => Some(e),
            _ => None,
        }
    }
}
