//! A parsed file's values read into rules: each kind's list, each rule with our names or
//! Sentinel's (by its fields), every bad rule a problem at its kind and position.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::error::RuleError;
use crate::kinds::kind::Kind;
use crate::kinds::table::kinds_table;
use crate::manager::set;
use crate::manager::set::{RuleSet, RuleSetErrorEntry};
use crate::rule_data::file::reader::Reader;
use crate::rule_data::file::value::{Budget, Budgeted, Value, ValueError};

/// A kind of rule a file can hold: its name in errors and its keys in files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct RuleKind {
    name: &'static str,
    sentinel_name: &'static str,
    keys: &'static [&'static str],
    process_wide: bool,
}

impl RuleKind {
    pub(super) fn name(self) -> &'static str {
        self.name
    }

    pub(super) fn keys(self) -> &'static [&'static str] {
        self.keys
    }

    fn of<K: Kind>() -> RuleKind {
        RuleKind {
            name: K::NAME,
            sentinel_name: K::SENTINEL_NAME,
            keys: K::KEYS,
            process_wide: K::PROCESS_WIDE,
        }
    }

    /// The kind named `name`, if a file can hold it.
    #[cfg(test)]
    pub(super) fn named(name: &str) -> Option<RuleKind> {
        KINDS.iter().copied().find(|k| k.name == name)
    }
}

pub(super) const EMPTY: &str =
    "the file has no rules (it is empty or only comments): an empty file never \
                     clears the rules in force; to clear them, load an explicitly empty set (`{}`, \
                     or `flow = []` in TOML)";

/// The error of a document whose top level is a list: where each of Sentinel's lists goes.
fn top_level_list() -> String {
    let places: Vec<String> = KINDS
        .iter()
        .map(|k| {
            let key = k.keys.last().copied().unwrap_or(k.name);
            format!("its {}.json list under `{key}`", k.sentinel_name)
        })
        .collect();
    format!(
        "the top level is a list, which does not say its kind: a rule file is a map of kinds, so \
         put {}",
        places.join(", ")
    )
}

/// A parsed document: the kinds it lists, each as unread rules.
pub(super) enum RawDoc {
    /// No document at all (an empty YAML file, or `null`).
    Empty,
    Fields(RawFields),
}

/// A document's lists of rules, by kind (in the table's order), each as unread rules.
pub(super) struct RawFields {
    lists: Vec<Option<Vec<Value>>>,
}

impl RawFields {
    pub(super) fn lists_no_kind(&self) -> bool {
        self.lists.iter().all(Option::is_none)
    }
}

/// A kind's list of rules: a list (`null`, as from `flow:` with nothing after it, is refused).
fn rule_list<E: de::Error>(value: Value) -> Result<Vec<Value>, E> {
    match value {
        Value::Seq(rules) => Ok(rules),
        Value::Null => Err(E::custom(
            "a rule kind with no value: list its rules, or write `[]` to clear that kind",
        )),
        _ => Err(E::custom("a rule kind must be a list of rules")),
    }
}

/// Reads the map of kinds: each key one kind's (by its name or Sentinel's), at most once.
/// The whole document is read within one [`Budget`] on what it expands to.
fn raw_fields<'de, A: MapAccess<'de>>(mut map: A) -> Result<RawFields, A::Error> {
    let mut lists: Vec<Option<Vec<Value>>> = KINDS.iter().map(|_| None).collect();
    let budget = Budget::new();
    while let Some(at) = map.next_key_seed(KindKey)? {
        if lists[at].is_some() {
            return Err(de::Error::duplicate_field(KINDS[at].name));
        }
        lists[at] = Some(rule_list(map.next_value_seed(Budgeted(&budget))?)?);
    }
    Ok(RawFields { lists })
}

/// A key of the map of kinds, read as the kind's position in [`KINDS`]: an unknown key is
/// refused as it is read, so the error is at the key.
struct KindKey;

impl<'de> de::DeserializeSeed<'de> for KindKey {
    type Value = usize;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<usize, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for KindKey {
    type Value = usize;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a kind of rule")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<usize, E> {
        KINDS
            .iter()
            .position(|k| k.keys.contains(&key))
            .ok_or_else(|| E::unknown_field(key, NAMES))
    }
}

/// The hint a syntax error about a kind given twice gets, when the kind has two names.
pub(super) fn duplicate_hint(message: &str) -> Option<String> {
    KINDS.iter().find_map(|k| {
        let other = k.keys.get(1)?;
        message
            .contains(&format!("duplicate field `{}`", k.name))
            .then(|| format!(" (`{other}` is another name for it: use one)"))
    })
}

impl<'de> Deserialize<'de> for RawDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawDoc, D::Error> {
        struct DocVisitor;
        impl<'de> Visitor<'de> for DocVisitor {
            type Value = RawDoc;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a map of rule kinds (`{}`)", NAMES.join("`, `"))
            }
            fn visit_unit<E: de::Error>(self) -> Result<RawDoc, E> {
                Ok(RawDoc::Empty)
            }
            fn visit_none<E: de::Error>(self) -> Result<RawDoc, E> {
                Ok(RawDoc::Empty)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<RawDoc, A::Error> {
                Err(de::Error::custom(top_level_list()))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawDoc, A::Error> {
                raw_fields(map).map(RawDoc::Fields)
            }
        }
        d.deserialize_any(DocVisitor)
    }
}

/// Reads a rule set from any serde format (with our names or Sentinel's, rule by rule), and
/// checks every rule: the error lists every bad rule (without lines: use
/// [`RuleSet::from_json`] and friends for those).
impl<'de> Deserialize<'de> for RuleSet {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RuleSet, D::Error> {
        match RawDoc::deserialize(d)? {
            RawDoc::Empty => Err(de::Error::custom(EMPTY)),
            RawDoc::Fields(fields) => {
                let (set, problems) = read_rules(fields);
                if problems.is_empty() {
                    Ok(set)
                } else {
                    let entries: Vec<String> =
                        problems.into_iter().map(|p| p.entry.to_string()).collect();
                    Err(de::Error::custom(entries.join("; ")))
                }
            }
        }
    }
}

// ----- reading rules -----------------------------------------------------------------------------

/// A bad rule, by kind and position in the file's list of that kind.
pub(super) struct Problem {
    pub(super) kind: RuleKind,
    pub(super) index: usize,
    pub(super) entry: RuleSetErrorEntry,
}

/// The resource a rule names, as errors show it (a name too long, cut).
fn resource_of(value: &Value) -> Option<String> {
    match value.get("resource") {
        Some(Value::Str(s)) => Some(crate::rule_data::resource::shown(s)),
        _ => None,
    }
}

fn value_problem(
    kind: RuleKind,
    index: usize,
    resource: Option<String>,
    e: &ValueError,
) -> Problem {
    let message = match e.field() {
        Some(_) => e.message().to_owned(),
        None => format!("the rule {}", e.message()),
    };
    Problem {
        kind,
        index,
        entry: RuleSetErrorEntry {
            kind: Some(kind.name()),
            index: Some(index),
            resource,
            field: e.field(),
            message,
            ..RuleSetErrorEntry::whole("")
        },
    }
}

/// How a rule was written, to name its fields as the file does.
#[derive(Clone, Copy)]
enum Naming {
    Ours,
    Sentinel,
}

/// Reads one rule with our names or, if it has a field only Sentinel uses, Sentinel's.
fn read_rule<R>(
    kind: RuleKind,
    index: usize,
    value: Value,
    reader: &Reader<R>,
) -> Result<(R, Naming), Box<Problem>> {
    // A process-wide rule names no resource (Sentinel's unused `resource` aside).
    let resource = match kind.process_wide {
        true => None,
        false => resource_of(&value),
    };
    let (result, naming) = match (reader.is_sentinel)(&value) {
        Some(key) => {
            let result = (reader.sentinel)(value).map_err(|mut e| {
                if e.is_unknown_field() {
                    e.add_to_message(&format!(
                        "; this rule is read with Sentinel's names, since it has `{key}` (use \
                         one naming per rule)"
                    ));
                }
                e
            });
            (result, Naming::Sentinel)
        }
        None => ((reader.ours)(value), Naming::Ours),
    };
    match result {
        Ok(rule) => Ok((rule, naming)),
        Err(e) => Err(Box::new(value_problem(kind, index, resource, &e))),
    }
}

/// Reads one kind's rules: those that read, each with its position in the file's list and its
/// naming; a problem for each that does not.
fn read_kind<K: Kind>(
    values: Option<Vec<Value>>,
    problems: &mut Vec<Problem>,
) -> (Vec<K::Rule>, Vec<(usize, Naming)>) {
    let (kind, reader) = (RuleKind::of::<K>(), &K::READER);
    let mut rules = Vec::new();
    let mut at = Vec::new();
    for (i, value) in values.unwrap_or_default().into_iter().enumerate() {
        match read_rule(kind, i, value, reader) {
            Ok((rule, naming)) => {
                rules.push(rule);
                at.push((i, naming));
            }
            Err(problem) => problems.push(*problem),
        }
    }
    (rules, at)
}

/// Defines the kinds a file holds and the reading of every kind, from the table of kinds.
macro_rules! define_reading {
    ($( $(#[$doc:meta])* $name:ident: $kind:ty { $($more:tt)* }, )*) => {
        /// The rule kinds a file can hold, in the table's order.
        const KINDS: &[RuleKind] = &[$( RuleKind {
            name: <$kind as Kind>::NAME,
            sentinel_name: <$kind as Kind>::SENTINEL_NAME,
            keys: <$kind as Kind>::KEYS,
            process_wide: <$kind as Kind>::PROCESS_WIDE,
        }, )*];

        /// The kinds' names, for errors.
        const NAMES: &[&str] = &[$( <$kind as Kind>::NAME, )*];

        /// Reads and checks every rule of every kind: the set of the rules that read, and
        /// every problem.
        pub(super) fn read_rules(fields: RawFields) -> (RuleSet, Vec<Problem>) {
            let mut problems = Vec::new();
            let mut lists = fields.lists.into_iter();
            // Per kind: the rules read, and for each its position in the file's list and its
            // naming.
            $( let $name = read_kind::<$kind>(lists.next().flatten(), &mut problems); )*
            let set = RuleSet { $( $name: $name.0, )* };
            for (kind, j, e) in set::problems(&set) {
                $(
                    if kind == <$kind as Kind>::NAME {
                        problems.push(invalid::<$kind>(&set.$name, &$name.1, j, &e));
                    }
                )*
            }
            problems.sort_by_key(|p| (p.kind.name(), p.index));
            (set, problems)
        }
    };
}

kinds_table!(define_reading);

/// The problem of the `j`th rule read of a kind that its validation refused, at the rule's
/// position in the file and naming the field as the file spells it.
fn invalid<K: Kind>(rules: &[K::Rule], at: &[(usize, Naming)], j: usize, e: &RuleError) -> Problem {
    let (kind, reader) = (RuleKind::of::<K>(), &K::READER);
    let (index, naming) = at[j];
    let field = match naming {
        Naming::Ours => (reader.our_field)(e.field()),
        Naming::Sentinel => (reader.sentinel_field)(&rules[j], e.field()),
    };
    let mut entry = RuleSetErrorEntry::from_rule_error(kind.name(), index, e);
    entry.field = Some(field.to_owned());
    if kind.process_wide {
        entry.resource = None;
    }
    Problem { kind, index, entry }
}
