//! A parsed file's values read into rules: each kind's list, each rule with our names or
//! Sentinel's (by its fields), every bad rule a problem at its kind and position.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use super::sentinel;
use super::value::{Value, ValueError};
use crate::error::RuleError;
use crate::kinds::authority::rule::AuthorityRule;
use crate::kinds::circuit_breaker::rule::CircuitBreakerRule;
use crate::kinds::flow::rule::FlowRule;
use crate::kinds::hotspot::rule::HotspotRule;
use crate::kinds::system::rule::SystemRule;
use crate::manager::set;
use crate::manager::set::{RuleSet, RuleSetErrorEntry};

/// The rule kinds a file can hold: their names in errors and their keys in files.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum RuleKind {
    Flow,
    CircuitBreaker,
    Hotspot,
    System,
    Authority,
}

impl RuleKind {
    pub(super) fn name(self) -> &'static str {
        match self {
            RuleKind::Flow => set::FLOW,
            RuleKind::CircuitBreaker => set::CIRCUIT_BREAKER,
            RuleKind::Hotspot => set::HOTSPOT,
            RuleKind::System => set::SYSTEM,
            RuleKind::Authority => set::AUTHORITY,
        }
    }

    pub(super) fn keys(self) -> &'static [&'static str] {
        match self {
            RuleKind::Flow => &["flow"],
            RuleKind::CircuitBreaker => &["circuit_breaker", "degrade"],
            RuleKind::Hotspot => &["hotspot", "paramFlow"],
            RuleKind::System => &["system"],
            RuleKind::Authority => &["authority"],
        }
    }

    fn of(name: &str) -> RuleKind {
        match name {
            set::FLOW => RuleKind::Flow,
            set::HOTSPOT => RuleKind::Hotspot,
            set::SYSTEM => RuleKind::System,
            set::AUTHORITY => RuleKind::Authority,
            _ => RuleKind::CircuitBreaker,
        }
    }
}

pub(super) const EMPTY: &str =
    "the file has no rules (it is empty or only comments): an empty file never \
                     clears the rules in force; to clear them, load an explicitly empty set (`{}`, \
                     or `flow = []` in TOML)";

const TOP_LEVEL_LIST: &str = "the top level is a list, which does not say its kind: a rule file \
                              is a map of kinds, so put Sentinel's FlowRule.json list under \
                              `flow`, its DegradeRule.json list under `degrade`, \
                              ParamFlowRule.json under `paramFlow`, SystemRule.json under \
                              `system` and AuthorityRule.json under `authority`";

/// A parsed document: the kinds it lists, each as unread rules.
pub(super) enum RawDoc {
    /// No document at all (an empty YAML file, or `null`).
    Empty,
    Fields(RawFields),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFields {
    #[serde(default, deserialize_with = "rule_list")]
    flow: Option<Vec<Value>>,
    #[serde(default, alias = "degrade", deserialize_with = "rule_list")]
    circuit_breaker: Option<Vec<Value>>,
    #[serde(default, alias = "paramFlow", deserialize_with = "rule_list")]
    hotspot: Option<Vec<Value>>,
    #[serde(default, deserialize_with = "rule_list")]
    system: Option<Vec<Value>>,
    #[serde(default, deserialize_with = "rule_list")]
    authority: Option<Vec<Value>>,
}

impl RawFields {
    pub(super) fn lists_no_kind(&self) -> bool {
        self.flow.is_none()
            && self.circuit_breaker.is_none()
            && self.hotspot.is_none()
            && self.system.is_none()
            && self.authority.is_none()
    }
}

/// A kind's list of rules: a list (`null`, as from `flow:` with nothing after it, is refused).
fn rule_list<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Vec<Value>>, D::Error> {
    match Value::deserialize(d)? {
        Value::Seq(rules) => Ok(Some(rules)),
        Value::Null => Err(de::Error::custom(
            "a rule kind with no value: list its rules, or write `[]` to clear that kind",
        )),
        _ => Err(de::Error::custom("a rule kind must be a list of rules")),
    }
}

impl<'de> Deserialize<'de> for RawDoc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<RawDoc, D::Error> {
        struct DocVisitor;
        impl<'de> Visitor<'de> for DocVisitor {
            type Value = RawDoc;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a map of rule kinds (`flow`, `circuit_breaker`, `hotspot`, `system`, \
                     `authority`)",
                )
            }
            fn visit_unit<E: de::Error>(self) -> Result<RawDoc, E> {
                Ok(RawDoc::Empty)
            }
            fn visit_none<E: de::Error>(self) -> Result<RawDoc, E> {
                Ok(RawDoc::Empty)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<RawDoc, A::Error> {
                Err(de::Error::custom(TOP_LEVEL_LIST))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RawDoc, A::Error> {
                RawFields::deserialize(de::value::MapAccessDeserializer::new(map))
                    .map(RawDoc::Fields)
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

fn resource_of(value: &Value) -> Option<String> {
    match value.get("resource") {
        Some(Value::Str(s)) => Some(s.clone()),
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
    // A system rule is process-wide: it names no resource (Sentinel's unused `resource` aside).
    let resource = match kind {
        RuleKind::System => None,
        _ => resource_of(&value),
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

/// How one kind's rules are read: the test for Sentinel's names, a reader for each naming, and
/// how each naming spells a field the rule's validation names (by our name, flat).
struct Reader<R> {
    is_sentinel: fn(&Value) -> Option<&'static str>,
    ours: fn(Value) -> Result<R, ValueError>,
    sentinel: fn(Value) -> Result<R, ValueError>,
    our_field: fn(&str) -> &str,
    sentinel_field: for<'a> fn(&R, &'a str) -> &'a str,
}

const FLOW: Reader<FlowRule> = Reader {
    is_sentinel: sentinel::sentinel_flow_key,
    ours: FlowRule::deserialize,
    sentinel: sentinel::flow_rule,
    our_field: |field| match field {
        "warm_up" => "warm_up.period",
        "cold_factor" => "warm_up.cold_factor",
        other => other,
    },
    sentinel_field: |_, field| sentinel::flow_field(field),
};

const CIRCUIT_BREAKER: Reader<CircuitBreakerRule> = Reader {
    is_sentinel: sentinel::sentinel_degrade_key,
    ours: CircuitBreakerRule::deserialize,
    sentinel: sentinel::degrade_rule,
    our_field: |field| match field {
        "threshold" => "strategy.threshold",
        "max_rt" => "strategy.max_rt",
        other => other,
    },
    sentinel_field: sentinel::degrade_field,
};

const HOTSPOT: Reader<HotspotRule> = Reader {
    is_sentinel: sentinel::sentinel_param_flow_key,
    ours: HotspotRule::deserialize,
    sentinel: sentinel::param_flow_rule,
    our_field: |field| field,
    sentinel_field: |_, field| sentinel::param_flow_field(field),
};

const SYSTEM: Reader<SystemRule> = Reader {
    is_sentinel: sentinel::sentinel_system_key,
    ours: SystemRule::deserialize,
    sentinel: sentinel::system_rule,
    our_field: |field| field,
    sentinel_field: |_, field| sentinel::system_field(field),
};

const AUTHORITY: Reader<AuthorityRule> = Reader {
    is_sentinel: sentinel::sentinel_authority_key,
    ours: authority_rule,
    sentinel: sentinel::authority_rule,
    our_field: |field| field,
    sentinel_field: |_, field| sentinel::authority_field(field),
};

/// Reads one kind's rules: those that read, each with its position in the file's list and its
/// naming; a problem for each that does not.
fn read_kind<R>(
    kind: RuleKind,
    values: Option<Vec<Value>>,
    reader: &Reader<R>,
    problems: &mut Vec<Problem>,
) -> (Vec<R>, Vec<(usize, Naming)>) {
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

/// Reads and checks every rule of every kind: the set of the rules that read, and every problem.
pub(super) fn read_rules(fields: RawFields) -> (RuleSet, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut set = RuleSet::new();
    // For each rule read: its position in the file's list, and its naming.
    let flow_at;
    let breaker_at;
    let hotspot_at;
    let system_at;
    let authority_at;
    (set.flow, flow_at) = read_kind(RuleKind::Flow, fields.flow, &FLOW, &mut problems);
    (set.circuit_breaker, breaker_at) = read_kind(
        RuleKind::CircuitBreaker,
        fields.circuit_breaker,
        &CIRCUIT_BREAKER,
        &mut problems,
    );
    (set.hotspot, hotspot_at) =
        read_kind(RuleKind::Hotspot, fields.hotspot, &HOTSPOT, &mut problems);
    (set.system, system_at) = read_kind(RuleKind::System, fields.system, &SYSTEM, &mut problems);
    (set.authority, authority_at) = read_kind(
        RuleKind::Authority,
        fields.authority,
        &AUTHORITY,
        &mut problems,
    );
    for (kind, j, e) in set::problems(&set) {
        let kind = RuleKind::of(kind);
        problems.push(match kind {
            RuleKind::Flow => invalid(kind, &FLOW, &set.flow, &flow_at, j, &e),
            RuleKind::CircuitBreaker => invalid(
                kind,
                &CIRCUIT_BREAKER,
                &set.circuit_breaker,
                &breaker_at,
                j,
                &e,
            ),
            RuleKind::Hotspot => invalid(kind, &HOTSPOT, &set.hotspot, &hotspot_at, j, &e),
            RuleKind::System => invalid(kind, &SYSTEM, &set.system, &system_at, j, &e),
            RuleKind::Authority => invalid(kind, &AUTHORITY, &set.authority, &authority_at, j, &e),
        });
    }
    problems.sort_by_key(|p| (p.kind.name(), p.index));
    (set, problems)
}

/// The problem of the `j`th rule read of a kind that its validation refused, at the rule's
/// position in the file and naming the field as the file spells it.
fn invalid<R>(
    kind: RuleKind,
    reader: &Reader<R>,
    rules: &[R],
    at: &[(usize, Naming)],
    j: usize,
    e: &RuleError,
) -> Problem {
    let (index, naming) = at[j];
    let field = match naming {
        Naming::Ours => (reader.our_field)(e.field()),
        Naming::Sentinel => (reader.sentinel_field)(&rules[j], e.field()),
    };
    let mut entry = RuleSetErrorEntry::from_rule_error(kind.name(), index, e);
    entry.field = Some(field.to_owned());
    if kind == RuleKind::System {
        entry.resource = None;
    }
    Problem { kind, index, entry }
}

/// Reads an authority rule with our names; origins are trimmed, as the constructors do.
fn authority_rule(value: Value) -> Result<AuthorityRule, ValueError> {
    let mut rule = AuthorityRule::deserialize(value)?;
    for origin in &mut rule.origins {
        *origin = origin.trim().to_owned();
    }
    Ok(rule)
}
