//! Where the rules and their fields are in a rule file's text, found in **one pass** over it
//! (so a file with thousands of bad rules is refused in time linear in its size), and a bound
//! on nesting depth checked **before** any parser sees the text.
//!
//! The pass builds a [`Tree`]: the document's maps and lists with the position of every key
//! and list item. JSON is scanned directly; TOML comes from the `toml` crate's spanned
//! document; YAML is read once through `serde_yaml_ng` by a deserializer that refuses every
//! scalar on purpose, since its errors are the only way that parser tells a position (a refused
//! scalar is consumed whole, so the reading goes on after it).

use std::cell::Cell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};

use super::format::Format;

/// The deepest nesting a rule file may have (a rule file needs five or six levels); deeper
/// text is refused before it is parsed, since parsers take time (and stack) per level.
pub(crate) const MAX_DEPTH: usize = 64;

/// A position in a file's text: a byte offset (JSON, TOML) or, as YAML's parser reports it, a
/// line and a column (from 1, in characters). One document's positions are all of one form.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Pos {
    Offset(usize),
    LineColumn(usize, usize),
}

/// A parsed value's shape, with where its keys and list items are.
#[derive(Debug, PartialEq)]
pub(crate) enum Tree {
    Leaf,
    /// Each item with its position (`None`: a YAML map or list, which has none of its own).
    Seq(Vec<(Option<Pos>, Tree)>),
    /// Each key with its position and its value.
    Map(Vec<(String, Option<Pos>, Tree)>),
}

/// Where a rule is, and where its bad field is (if the field is in the file).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Located {
    pub(crate) rule: Option<Pos>,
    pub(crate) field: Option<Pos>,
}

impl Located {
    /// The field's position, else the rule's.
    pub(crate) fn best(self) -> Option<Pos> {
        self.field.or(self.rule)
    }
}

impl Tree {
    /// A value's own position, or that of its first key or item (a YAML map has none itself).
    fn first_pos(&self) -> Option<Pos> {
        match self {
            Tree::Leaf => None,
            Tree::Seq(items) => items
                .first()
                .and_then(|(pos, tree)| pos.or_else(|| tree.first_pos())),
            Tree::Map(entries) => entries
                .first()
                .and_then(|(_, pos, tree)| pos.or_else(|| tree.first_pos())),
        }
    }

    /// Rule `index` of the kind written under one of `keys`, and its `field` (a path such as
    /// `threshold`, `warm_up.period` or `paramFlowItemList[0].classType`): the deepest part of
    /// the path found in the file is where the field is.
    pub(crate) fn locate(&self, keys: &[&str], index: usize, field: Option<&str>) -> Located {
        let Tree::Map(kinds) = self else {
            return Located::default();
        };
        let Some((_, _, Tree::Seq(rules))) = kinds.iter().find(|(k, _, _)| keys.contains(&&**k))
        else {
            return Located::default();
        };
        let Some((pos, rule)) = rules.get(index) else {
            return Located::default();
        };
        let mut located = Located {
            rule: pos.or_else(|| rule.first_pos()),
            field: None,
        };
        let mut at = rule;
        for part in field.into_iter().flat_map(path_parts) {
            let found = match (part, at) {
                // The last of a key given twice: where a duplicate is noticed.
                (Part::Key(key), Tree::Map(entries)) => entries
                    .iter()
                    .rev()
                    .find(|(k, _, _)| k == key)
                    .map(|(_, pos, tree)| (*pos, tree)),
                (Part::Index(i), Tree::Seq(items)) => items.get(i).map(|(pos, tree)| (*pos, tree)),
                _ => None,
            };
            let Some((pos, tree)) = found else { break };
            if let Some(pos) = pos.or_else(|| tree.first_pos()) {
                located.field = Some(pos);
            }
            at = tree;
        }
        located
    }
}

#[derive(Clone, Copy)]
enum Part<'a> {
    Key(&'a str),
    Index(usize),
}

/// `a.b[2].c` as `a`, `b`, `[2]`, `c`.
fn path_parts(path: &str) -> impl Iterator<Item = Part<'_>> {
    path.split('.').flat_map(|segment| {
        let (key, indices) = segment.split_once('[').unwrap_or((segment, ""));
        let key = (!key.is_empty()).then_some(Part::Key(key));
        let indices = indices
            .split('[')
            .filter_map(|i| i.trim_end_matches(']').parse().ok().map(Part::Index));
        key.into_iter().chain(indices)
    })
}

/// The document's tree, in one pass over `text` (which its format's parser accepted); `None`
/// if the pass does not manage (positions are then left out, the errors stay).
pub(crate) fn tree(text: &str, format: Format) -> Option<Tree> {
    #[cfg(test)]
    super::parse_counts::count_parse();
    match format {
        Format::Json => JsonScan {
            text,
            bytes: text.as_bytes(),
            i: 0,
        }
        .value(),
        Format::Yaml => TreeSeed
            .deserialize(serde_yaml_ng::Deserializer::from_str(text))
            .ok()
            .map(|(_, tree)| tree),
        Format::Toml => {
            let doc = toml::de::DeTable::parse(text).ok()?;
            Some(toml_table(doc.get_ref()))
        }
    }
}

/// The line and column (from 1; columns in characters) of each position, in one pass over the
/// text: `positions` sorted (offsets), each resolved by walking on from the one before.
pub(crate) fn line_columns(text: &str, positions: &[Pos]) -> Vec<(usize, usize)> {
    let (mut line, mut column, mut at) = (1, 1, 0);
    positions
        .iter()
        .map(|&pos| match pos {
            Pos::LineColumn(l, c) => (l, c),
            Pos::Offset(offset) => {
                let mut offset = offset.min(text.len());
                while !text.is_char_boundary(offset) {
                    offset -= 1;
                }
                if offset < at {
                    (line, column, at) = (1, 1, 0);
                }
                for c in text[at..offset].chars() {
                    #[cfg(test)]
                    super::parse_counts::count_scanned(c.len_utf8());
                    if c == '\n' {
                        line += 1;
                        column = 1;
                    } else {
                        column += 1;
                    }
                }
                at = offset;
                (line, column)
            }
        })
        .collect()
}

// ----- JSON: a scan of text serde_json accepted -------------------------------------------------

struct JsonScan<'a> {
    text: &'a str,
    bytes: &'a [u8],
    i: usize,
}

impl JsonScan<'_> {
    fn space(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.i) {
            self.i += 1;
        }
    }

    fn value(&mut self) -> Option<Tree> {
        self.space();
        match *self.bytes.get(self.i)? {
            b'{' => {
                self.i += 1;
                let mut entries = Vec::new();
                loop {
                    self.space();
                    match *self.bytes.get(self.i)? {
                        b'}' => {
                            self.i += 1;
                            return Some(Tree::Map(entries));
                        }
                        b',' => self.i += 1,
                        b'"' => {
                            let at = self.i;
                            let key = self.string()?;
                            self.space();
                            if self.bytes.get(self.i) != Some(&b':') {
                                return None;
                            }
                            self.i += 1;
                            let value = self.value()?;
                            entries.push((key, Some(Pos::Offset(at)), value));
                        }
                        _ => return None,
                    }
                }
            }
            b'[' => {
                self.i += 1;
                let mut items = Vec::new();
                loop {
                    self.space();
                    match *self.bytes.get(self.i)? {
                        b']' => {
                            self.i += 1;
                            return Some(Tree::Seq(items));
                        }
                        b',' => self.i += 1,
                        _ => {
                            let at = self.i;
                            items.push((Some(Pos::Offset(at)), self.value()?));
                        }
                    }
                }
            }
            b'"' => self.string().map(|_| Tree::Leaf),
            _ => {
                while let Some(&b) = self.bytes.get(self.i) {
                    if matches!(b, b',' | b']' | b'}' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.i += 1;
                }
                Some(Tree::Leaf)
            }
        }
    }

    /// The string at `i` (its opening quote), decoded.
    fn string(&mut self) -> Option<String> {
        let start = self.i;
        self.i += 1;
        let mut escaped = false;
        loop {
            match *self.bytes.get(self.i)? {
                b'\\' => {
                    escaped = true;
                    self.i += 2;
                }
                b'"' => {
                    self.i += 1;
                    break;
                }
                _ => self.i += 1,
            }
        }
        let quoted = self.text.get(start..self.i)?;
        if escaped {
            serde_json::from_str(quoted).ok()
        } else {
            Some(quoted[1..quoted.len() - 1].to_owned())
        }
    }
}

// ----- TOML: the spanned document ----------------------------------------------------------------

fn toml_table(table: &toml::de::DeTable<'_>) -> Tree {
    Tree::Map(
        table
            .iter()
            .map(|(key, value)| {
                (
                    key.get_ref().to_string(),
                    Some(Pos::Offset(key.span().start)),
                    toml_value(value.get_ref()),
                )
            })
            .collect(),
    )
}

fn toml_value(value: &toml::de::DeValue<'_>) -> Tree {
    match value {
        toml::de::DeValue::Table(table) => toml_table(table),
        toml::de::DeValue::Array(items) => Tree::Seq(
            items
                .iter()
                .map(|item| {
                    (
                        Some(Pos::Offset(item.span().start)),
                        toml_value(item.get_ref()),
                    )
                })
                .collect(),
        ),
        _ => Tree::Leaf,
    }
}

// ----- YAML: one reading through serde_yaml_ng, refusing every scalar -----------------------------

/// Reads any value as a [`Tree`]; a scalar is refused on purpose and its position taken from
/// the error (maps and lists are read, and have no position of their own).
struct TreeSeed;

/// Set by [`TreeVisitor`] when it refuses a scalar on purpose (any other error is real).
struct Refused<'a> {
    scalar: &'a Cell<Option<String>>,
}

impl<'de> DeserializeSeed<'de> for TreeSeed {
    type Value = (Option<Pos>, Tree);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(Option<Pos>, Tree), D::Error> {
        let scalar = Cell::new(None);
        match d.deserialize_any(TreeVisitor(Refused { scalar: &scalar })) {
            Ok(tree) => Ok((None, tree)),
            Err(e) => match scalar.take() {
                Some(_) => Ok((yaml_position(&e), Tree::Leaf)),
                None => Err(e),
            },
        }
    }
}

/// A map key: its text and position (refused on purpose, as scalars are).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = (String, Option<Pos>);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(String, Option<Pos>), D::Error> {
        let scalar = Cell::new(None);
        match d.deserialize_any(TreeVisitor(Refused { scalar: &scalar })) {
            // A map or list as a key: the file parsed, so keep its shape out of the way.
            Ok(_) => Ok((String::new(), None)),
            Err(e) => match scalar.take() {
                Some(key) => Ok((key, yaml_position(&e))),
                None => Err(e),
            },
        }
    }
}

/// The position in a serde_yaml_ng error, from its `Debug` form (`Error("...", line: L,
/// column: C)`, the only form that has it whatever the error's type is called here).
fn yaml_position(e: &impl fmt::Debug) -> Option<Pos> {
    let text = format!("{e:?}");
    let at = text.rfind(", line: ")?;
    let (line, column) = text[at + ", line: ".len()..]
        .trim_end_matches(')')
        .split_once(", column: ")?;
    Some(Pos::LineColumn(line.parse().ok()?, column.parse().ok()?))
}

struct TreeVisitor<'a>(Refused<'a>);

impl TreeVisitor<'_> {
    fn refuse<E: de::Error>(self, scalar: String) -> Result<Tree, E> {
        self.0.scalar.set(Some(scalar));
        Err(E::custom("locating"))
    }
}

impl<'de> Visitor<'de> for TreeVisitor<'_> {
    type Value = Tree;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any value")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Tree, E> {
        self.refuse(v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Tree, E> {
        self.refuse(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tree, E> {
        self.refuse(v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Tree, E> {
        self.refuse(v.to_string())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Tree, E> {
        self.refuse(v.to_owned())
    }

    fn visit_unit<E: de::Error>(self) -> Result<Tree, E> {
        self.refuse(String::new())
    }

    fn visit_none<E: de::Error>(self) -> Result<Tree, E> {
        self.refuse(String::new())
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Tree, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Tree, D::Error> {
        d.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Tree, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(TreeSeed)? {
            items.push(item);
        }
        Ok(Tree::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Tree, A::Error> {
        let mut entries = Vec::new();
        while let Some((key, pos)) = map.next_key_seed(KeySeed)? {
            let (_, value) = map.next_value_seed(TreeSeed)?;
            entries.push((key, pos, value));
        }
        Ok(Tree::Map(entries))
    }
}

// ----- nesting depth, before parsing -------------------------------------------------------------

/// Refuses text nested deeper than [`MAX_DEPTH`], naming the line where it gets too deep.
/// Counted without parsing: brackets outside strings and comments (JSON, TOML, YAML's flow
/// style), and for YAML also indentation levels and the `- `, `? ` indicators that open a level
/// on one line. The count may be above what a parser would see, never far below.
pub(crate) fn check_depth(text: &str, format: Format) -> Result<(), String> {
    let deepest = match format {
        Format::Json | Format::Toml => bracket_depth(text, format),
        Format::Yaml => yaml_depth(text),
    };
    match deepest {
        None => Ok(()),
        Some(line) => Err(format!(
            "the file is nested more than {MAX_DEPTH} levels deep at line {line} (a rule file \
             needs a few): refused before parsing"
        )),
    }
}

/// JSON and TOML: the first line where brackets outside strings and comments nest too deep.
/// TOML's table headers (`[[flow]]`, at the start of a line outside any value) open nothing.
fn bracket_depth(text: &str, format: Format) -> Option<usize> {
    let bytes = text.as_bytes();
    let (mut depth, mut line, mut i) = (0usize, 1, 0);
    let mut line_start = true;
    while i < bytes.len() {
        let b = bytes[i];
        if line_start && format == Format::Toml && depth == 0 {
            let rest = &text[i..];
            let trimmed = rest.trim_start_matches([' ', '\t']);
            if trimmed.starts_with('[') {
                // A header: skip to its line's end (a key in it may be quoted: no brackets count).
                i += rest.find('\n').unwrap_or(rest.len());
                continue;
            }
        }
        line_start = false;
        match b {
            b'\n' => {
                line += 1;
                line_start = true;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(line);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            b'#' if format == Format::Toml => {
                while i + 1 < bytes.len() && bytes[i + 1] != b'\n' {
                    i += 1;
                }
            }
            b'"' | b'\'' => {
                let triple = format == Format::Toml && bytes[i..].starts_with(&[b; 3]);
                let close: &[u8] = if triple { &[b; 3] } else { &[b] };
                i += close.len();
                while i < bytes.len() && !bytes[i..].starts_with(close) {
                    match bytes[i] {
                        b'\\' if b == b'"' => i += 1,
                        b'\n' => line += 1,
                        _ => {}
                    }
                    i += 1;
                }
                i += close.len();
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    None
}

/// YAML: the first line whose block indentation levels, one-line indicators and flow brackets
/// together nest too deep. Block scalars (`|`, `>`) and quoted strings are skipped.
fn yaml_depth(text: &str) -> Option<usize> {
    let mut indents: Vec<usize> = Vec::new();
    let mut flow = 0usize;
    // A quote open across lines, and the indentation below which a block scalar ends.
    let mut quote: Option<u8> = None;
    let mut block_scalar: Option<usize> = None;
    for (n, line) in text.lines().enumerate() {
        let number = n + 1;
        let bytes = line.as_bytes();
        let indent = bytes.iter().take_while(|&&b| b == b' ').count();
        let blank = line[indent..].trim().is_empty();
        if let Some(parent) = block_scalar {
            if blank || indent > parent {
                continue;
            }
            block_scalar = None;
        }
        if blank && quote.is_none() {
            continue;
        }
        let mut level = 0;
        let mut i = indent;
        if quote.is_none() && flow == 0 {
            if line[indent..].starts_with('#') {
                continue;
            }
            while indents.last().is_some_and(|&top| top > indent) {
                indents.pop();
            }
            if indents.last().is_none_or(|&top| top < indent) {
                indents.push(indent);
            }
            // `- - - x` and `? ? x` open a level each on one line.
            while i + 1 < bytes.len() && matches!(bytes[i], b'-' | b'?') && bytes[i + 1] == b' ' {
                level += 1;
                i += 2;
                while bytes.get(i) == Some(&b' ') {
                    i += 1;
                }
            }
        }
        let mut value_start = true;
        while i < bytes.len() {
            let b = bytes[i];
            if let Some(q) = quote {
                if b == b'\\' && q == b'"' {
                    i += 2;
                    continue;
                }
                if b == q {
                    if q == b'\'' && bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    quote = None;
                }
                i += 1;
                continue;
            }
            match b {
                b'#' if i == 0 || bytes[i - 1] == b' ' || bytes[i - 1] == b'\t' => break,
                b'"' | b'\'' if value_start || flow > 0 => quote = Some(b),
                b'[' | b'{' if value_start || flow > 0 => {
                    flow += 1;
                    if indents.len() + level + flow > MAX_DEPTH {
                        return Some(number);
                    }
                }
                b']' | b'}' if flow > 0 => flow -= 1,
                b'|' | b'>' if value_start && flow == 0 => {
                    block_scalar = Some(indent);
                    break;
                }
                _ => {}
            }
            // A value starts after `: `, `- ` (in a line's indicators, above), `, ` in flow,
            // an anchor or a tag; anything else is inside a plain scalar.
            value_start = match b {
                b' ' | b'\t' => {
                    value_start || matches!(bytes.get(i.wrapping_sub(1)), Some(b':' | b','))
                }
                b'[' | b'{' | b',' => flow > 0,
                b'&' | b'!' if value_start => {
                    while i + 1 < bytes.len() && bytes[i + 1] != b' ' {
                        i += 1;
                    }
                    true
                }
                _ => false,
            };
            i += 1;
        }
        if indents.len() + level + flow > MAX_DEPTH {
            return Some(number);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn depth_line(text: &str, format: Format) -> Option<usize> {
        match format {
            Format::Yaml => yaml_depth(text),
            _ => bracket_depth(text, format),
        }
    }

    #[test]
    fn nesting_is_bounded_before_parsing() {
        let deep = MAX_DEPTH + 1;
        let cases = [
            (format!("{{\"flow\": {}", "[".repeat(deep)), Format::Json),
            (format!("a = {}", "[".repeat(deep)), Format::Toml),
            (format!("a: {}", "[".repeat(deep)), Format::Yaml),
            (format!("a: {}", "{a: ".repeat(deep)), Format::Yaml),
            (format!("flow:\n{}x", "- ".repeat(deep)), Format::Yaml),
            (
                (0..deep)
                    .map(|n| format!("{}a{n}:\n", " ".repeat(n)))
                    .collect(),
                Format::Yaml,
            ),
        ];
        for (text, format) in cases {
            assert!(depth_line(&text, format).is_some(), "{format:?}: {text:?}");
        }
        // Brackets in strings, comments, plain scalars and block scalars open nothing.
        let wide = "[".repeat(deep);
        let fine = [
            (format!("{{\"a\": \"{wide}\"}}"), Format::Json),
            (
                format!("a = \"{wide}\" # {wide}\nb = '''\n{wide}'''\n[[flow]]\n"),
                Format::Toml,
            ),
            (
                format!("a: x{wide}\nb: '{wide}'\nc: |\n  {wide}\n# {wide}\n"),
                Format::Yaml,
            ),
        ];
        for (text, format) in fine {
            assert_eq!(depth_line(&text, format), None, "{format:?}: {text:?}");
        }
    }

    #[test]
    fn paths_split_into_keys_and_indices() {
        let parts: Vec<String> = path_parts("a.b[2][3].c")
            .map(|p| match p {
                Part::Key(k) => k.to_owned(),
                Part::Index(i) => format!("[{i}]"),
            })
            .collect();
        assert_eq!(parts, ["a", "b", "[2]", "[3]", "c"]);
    }
}
