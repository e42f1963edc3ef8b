//! A rule file's text to a checked rule set, with lines: comments blanked (JSON), the
//! document parsed by its format's parser (syntax errors at their line and column), its rules
//! read, and every bad rule located at its field in one pass over the text.

use std::path::Path;

use super::format::Format;
use super::locate::{self, Located, Pos};
use super::read::Problem;
use super::read::{read_rules, RawDoc, EMPTY};
use crate::manager::set::{RuleSet, RuleSetError, RuleSetErrorEntry};
use crate::rule_data::file::value::MAX_EXPANDED_BYTES;

/// Parses and checks a rule file's text.
pub(crate) fn parse(text: &str, format: Format) -> Result<RuleSet, RuleSetError> {
    let stripped;
    let text = match format {
        Format::Json => {
            stripped = strip_json_comments(text)?;
            stripped.as_str()
        }
        Format::Yaml | Format::Toml => text,
    };
    if text.trim().is_empty() {
        return Err(RuleSetError::whole(EMPTY));
    }
    locate::check_depth(text, format).map_err(RuleSetError::whole)?;
    let fields = match parse_doc(text, format)? {
        RawDoc::Empty => return Err(RuleSetError::whole(EMPTY)),
        RawDoc::Fields(fields) if format == Format::Toml && fields.lists_no_kind() => {
            return Err(RuleSetError::whole(EMPTY))
        }
        RawDoc::Fields(fields) => fields,
    };
    let (set, problems) = read_rules(fields);
    if problems.is_empty() {
        return Ok(set);
    }
    Err(located_error(text, format, problems))
}

/// At most this many problems of a file are listed (in file order); the others are counted in
/// a last entry.
pub(crate) const MAX_LISTED: usize = 100;

/// The problems of a file that parsed, each at its field's line and column (or its rule's, for
/// a field not in the file): every position found in one pass over the text.
fn located_error(text: &str, format: Format, problems: Vec<Problem>) -> RuleSetError {
    let tree = locate::tree(text, format);
    let mut located: Vec<(Located, Problem)> = problems
        .into_iter()
        .map(|p| {
            let at = tree.as_ref().map_or_else(Located::default, |tree| {
                tree.locate(p.kind.keys(), p.index, p.entry.field.as_deref())
            });
            (at, p)
        })
        .collect();
    located.sort_by_key(|(at, p)| (at.best().is_none(), at.best(), p.kind.name(), p.index));
    let omitted = located.len().saturating_sub(MAX_LISTED);
    located.truncate(MAX_LISTED);
    let mut positions: Vec<Pos> = located
        .iter()
        .flat_map(|(at, _)| [at.rule, at.field])
        .flatten()
        .collect();
    positions.sort_unstable();
    positions.dedup();
    let resolved = locate::line_columns(text, &positions);
    let find = |pos: Option<Pos>| {
        let i = positions.binary_search(&pos?).ok()?;
        resolved.get(i).copied()
    };
    let mut entries: Vec<RuleSetErrorEntry> = located
        .into_iter()
        .map(|(at, p)| {
            let mut entry = p.entry.at(find(at.best()));
            entry.rule_line = find(at.rule).map(|(line, _)| line);
            entry
        })
        .collect();
    if omitted > 0 {
        entries.push(RuleSetErrorEntry::whole(format!(
            "and {omitted} more problems (only the first {MAX_LISTED} are listed)"
        )));
    }
    RuleSetError::new(entries)
}

fn syntax_error(mut message: String, location: Option<(usize, usize)>) -> RuleSetError {
    if let Some(hint) = super::read::duplicate_hint(&message) {
        message.push_str(&hint);
    }
    // The YAML parser's own bound on aliases, met before the budget by aliases of aliases.
    if message.starts_with("repetition limit exceeded") {
        message.push_str(&format!(
            ": the document's aliases repeat its values too many times (aliases of aliases); \
             refused, as a document that expands to more than {} MiB once read is",
            MAX_EXPANDED_BYTES >> 20
        ));
    }
    RuleSetError::new(vec![RuleSetErrorEntry::whole(message).at(location)])
}

/// Drops the " at line L column C" the parsers put in their messages (the entry has it).
fn without_location(message: String, line: usize, column: usize) -> String {
    message.replacen(&format!(" at line {line} column {column}"), "", 1)
}

fn parse_doc(text: &str, format: Format) -> Result<RawDoc, RuleSetError> {
    #[cfg(test)]
    super::parse_counts::count_parse();
    match format {
        Format::Json => serde_json::from_str(text).map_err(|e| {
            let (line, column) = (e.line(), e.column());
            syntax_error(
                without_location(e.to_string(), line, column),
                Some((line, column)),
            )
        }),
        Format::Yaml => serde_yaml_ng::from_str(text).map_err(|e| {
            let location = e.location().map(|l| (l.line(), l.column()));
            let message = match location {
                Some((line, column)) => without_location(e.to_string(), line, column),
                None => e.to_string(),
            };
            syntax_error(message, location)
        }),
        Format::Toml => toml::from_str(text).map_err(|e| {
            let location = e.span().map(|span| line_column(text, span.start));
            syntax_error(e.message().trim_end().to_owned(), location)
        }),
    }
}

/// The line and column (from 1; the column counts characters) of a byte offset.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let offset = floor_char_boundary(text, offset);
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (
        before.matches('\n').count() + 1,
        before[line_start..].chars().count() + 1,
    )
}

fn floor_char_boundary(text: &str, offset: usize) -> usize {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// Blanks out `/* */` and `//` comments (outside strings), keeping every newline so lines and
/// the positions on them stay where they were.
pub(super) fn strip_json_comments(text: &str) -> Result<String, RuleSetError> {
    let bytes = text.as_bytes();
    let mut out = bytes.to_vec();
    let mut i = 0;
    let mut in_string = false;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match b {
                b'\\' => i += 2,
                b'"' => {
                    in_string = false;
                    i += 1;
                }
                _ => i += 1,
            }
            continue;
        }
        match (b, bytes.get(i + 1)) {
            (b'"', _) => {
                in_string = true;
                i += 1;
            }
            (b'/', Some(b'/')) => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    if bytes[i] != b'\r' {
                        out[i] = b' ';
                    }
                    i += 1;
                }
            }
            (b'/', Some(b'*')) => {
                let start = i;
                out[i] = b' ';
                out[i + 1] = b' ';
                i += 2;
                loop {
                    if i + 1 >= bytes.len() {
                        let location = Some(line_column(text, start));
                        return Err(syntax_error(
                            "a `/*` comment is never closed with `*/`".to_owned(),
                            location,
                        ));
                    }
                    if bytes[i] == b'*' && bytes[i + 1] == b'/' {
                        out[i] = b' ';
                        out[i + 1] = b' ';
                        i += 2;
                        break;
                    }
                    if bytes[i] != b'\n' && bytes[i] != b'\r' {
                        out[i] = b' ';
                    }
                    i += 1;
                }
            }
            _ => i += 1,
        }
    }
    // Only whole comments (from an ASCII `/` to an ASCII newline or `*/`) became spaces.
    String::from_utf8(out)
        .map_err(|_| RuleSetError::whole("the file is not valid UTF-8 after its comments"))
}

// ----- the public constructors --------------------------------------------------------------------

impl RuleSet {
    /// Reads and checks a rule set in JSON (with `/* */` and `//` comments allowed), with our
    /// names or Sentinel's: see [the format](crate::rules::files).
    ///
    /// Every rule is checked, as [`load`](crate::rules::load) would: the error lists every bad
    /// rule at its field's line and column (the first 100 in file order, the others counted),
    /// or the syntax error with its line and column.
    pub fn from_json(text: &str) -> Result<RuleSet, RuleSetError> {
        parse(text, Format::Json)
    }

    /// Reads and checks a rule set in YAML, as [`RuleSet::from_json`] does.
    pub fn from_yaml(text: &str) -> Result<RuleSet, RuleSetError> {
        parse(text, Format::Yaml)
    }

    /// Reads and checks a rule set in TOML, as [`RuleSet::from_json`] does.
    pub fn from_toml(text: &str) -> Result<RuleSet, RuleSetError> {
        parse(text, Format::Toml)
    }

    /// Reads and checks a rule file, its format from its extension (`.json`, `.yaml`, `.yml`,
    /// `.toml`); the error names the file.
    pub fn from_path(path: impl AsRef<Path>) -> Result<RuleSet, RuleSetError> {
        let path = path.as_ref();
        let (text, format) = super::file::read_file(path)?;
        parse(&text, format).map_err(|e| e.in_file(path))
    }

    /// The set as pretty JSON, in our names (durations as `"500ms"`).
    pub fn to_json(&self) -> Result<String, RuleSetError> {
        serde_json::to_string_pretty(self).map_err(|e| RuleSetError::whole(e.to_string()))
    }

    /// The set as YAML, in our names.
    pub fn to_yaml(&self) -> Result<String, RuleSetError> {
        serde_yaml_ng::to_string(self).map_err(|e| RuleSetError::whole(e.to_string()))
    }

    /// The set as TOML, in our names.
    pub fn to_toml(&self) -> Result<String, RuleSetError> {
        toml::to_string(self).map_err(|e| RuleSetError::whole(e.to_string()))
    }
}
