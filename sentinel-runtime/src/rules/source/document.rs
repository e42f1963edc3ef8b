//! A rule document as a source holds it: its bytes, its version and its format, and how it is
//! read into a rule set (the file layer's parser, so errors carry each field's line).

use crate::manager::set::{RuleSet, RuleSetError};
use crate::rules::files::format::Format;
use crate::rules::files::text;

/// The most bytes a document kept in a shared store (`RedisSource`, feature `redis`) may
/// have: 1 MiB. A larger one is refused, unread, and never written.
pub const MAX_DOCUMENT_BYTES: usize = 1 << 20;

/// The format of a rule document: the formats of [rule files](crate::rules::files).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DocumentFormat {
    /// JSON (comments allowed), our names or Sentinel's.
    Json,
    /// YAML.
    Yaml,
    /// TOML.
    Toml,
}

impl DocumentFormat {
    /// The format of a document with no name to tell it, from its first bytes: JSON if it
    /// starts (after white space) with `{`, `[` or a JSON comment (`//`, `/*`), else YAML. A
    /// top-level YAML flow mapping (`{flow: [...]}`) is thus read as JSON: write block YAML.
    ///
    /// ```
    /// use sentinel_runtime::rules::source::DocumentFormat;
    ///
    /// assert_eq!(DocumentFormat::sniff(b"  {\"flow\": []}"), DocumentFormat::Json);
    /// assert_eq!(DocumentFormat::sniff(b"// rules\n{}"), DocumentFormat::Json);
    /// assert_eq!(DocumentFormat::sniff(b"flow:\n  - resource: a\n"), DocumentFormat::Yaml);
    /// ```
    pub fn sniff(bytes: &[u8]) -> DocumentFormat {
        let start = bytes
            .iter()
            .position(|b| !b.is_ascii_whitespace())
            .map_or(&[][..], |i| &bytes[i..]);
        if start.starts_with(b"{")
            || start.starts_with(b"[")
            || start.starts_with(b"//")
            || start.starts_with(b"/*")
        {
            DocumentFormat::Json
        } else {
            DocumentFormat::Yaml
        }
    }

    pub(crate) fn from_file(format: Format) -> DocumentFormat {
        match format {
            Format::Json => DocumentFormat::Json,
            Format::Yaml => DocumentFormat::Yaml,
            Format::Toml => DocumentFormat::Toml,
        }
    }

    fn file_format(self) -> Format {
        match self {
            DocumentFormat::Json => Format::Json,
            DocumentFormat::Yaml => Format::Yaml,
            DocumentFormat::Toml => Format::Toml,
        }
    }
}

/// A rule document read from a [`RuleSource`](super::RuleSource): its bytes (read as UTF-8 when
/// loaded), the source's version of it, and its format.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Document {
    /// The document's bytes, as the source holds them.
    pub bytes: Vec<u8>,
    /// The source's version of this content: a file's is a hash of its bytes, a Redis
    /// source's is the counter its writes advance. A watcher loads a version once.
    pub version: u64,
    /// How the bytes are written.
    pub format: DocumentFormat,
}

impl Document {
    /// A document of `bytes` at `version`, written in `format`.
    ///
    /// ```
    /// use sentinel_runtime::rules::source::{Document, DocumentFormat};
    ///
    /// let doc = Document::new(b"flow: []\n".to_vec(), 7, DocumentFormat::Yaml);
    /// assert_eq!(doc.version, 7);
    /// ```
    pub fn new(bytes: Vec<u8>, version: u64, format: DocumentFormat) -> Document {
        Document {
            bytes,
            version,
            format,
        }
    }

    /// The document's rules, checked: errors name each bad rule's field and line (the error
    /// names no source: the caller adds it).
    pub(crate) fn parse(&self) -> Result<RuleSet, RuleSetError> {
        let text = std::str::from_utf8(&self.bytes)
            .map_err(|e| RuleSetError::whole(format!("the document is not UTF-8: {e}")))?;
        parse_text(text, self.format)
    }
}

/// `text`'s rules, checked as a load would check them; errors name each field and its line.
pub(crate) fn parse_text(text: &str, format: DocumentFormat) -> Result<RuleSet, RuleSetError> {
    let set = text::parse(text, format.file_format())?;
    set.validate()?;
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sniffing_tells_json_from_yaml() {
        assert_eq!(DocumentFormat::sniff(b""), DocumentFormat::Yaml);
        assert_eq!(DocumentFormat::sniff(b"\n\t[1]"), DocumentFormat::Json);
        assert_eq!(DocumentFormat::sniff(b"/* c */ {}"), DocumentFormat::Json);
        assert_eq!(
            DocumentFormat::sniff(b"# c\nflow: []"),
            DocumentFormat::Yaml
        );
    }

    #[test]
    fn documents_are_refused_with_the_field_and_line() {
        let doc = Document::new(
            b"flow:\n  - resource: a\n    threshold: -1\n".to_vec(),
            1,
            DocumentFormat::Yaml,
        );
        let err = doc.parse().unwrap_err();
        let entry = &err.entries()[0];
        assert_eq!(
            (entry.line, entry.field.as_deref()),
            (Some(3), Some("threshold")),
            "{err}"
        );
        let bad = Document::new(vec![b'{', 0xff, b'}'], 2, DocumentFormat::Json);
        assert!(bad.parse().unwrap_err().to_string().contains("not UTF-8"));
    }
}
