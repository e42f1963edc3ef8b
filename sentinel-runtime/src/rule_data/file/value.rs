//! [`Value`]: one value of a rule file, whatever its format, and a deserializer over it whose
//! errors say which field (by its path in the rule) is wrong.
//!
//! A file is first parsed into values (syntax errors come from the format's parser, with their
//! line and column); each rule is then read from its value on its own, so every bad rule is
//! reported, not just the first, and each rule can be read with our names or Sentinel's.
//!
//! A document is read into values within a [`Budget`] on what it expands to: YAML's aliases
//! repeat a value without repeating its text (245 KB of YAML aliasing one 100 KiB name 4 000
//! times is 400 MB of names), so the bytes of the text bound nothing. The budget counts every
//! value as it is made (an alias's values each time the alias is read) and refuses the
//! document the moment it is spent, before the value is copied.

use std::cell::Cell;
use std::fmt;
use std::vec;

use serde::de::value::StringDeserializer;
use serde::de::{
    self, DeserializeSeed, Deserializer, Expected, IntoDeserializer, MapAccess, SeqAccess,
    Unexpected, Visitor,
};
use serde::Deserialize;

/// One parsed value; a map keeps its keys in file order, duplicates included (so the rule types
/// refuse a field given twice instead of silently keeping one).
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Value {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Seq(Vec<Value>),
    Map(Vec<(String, Value)>),
}

impl Value {
    /// The value of `key`, if this is a map that has it.
    pub(crate) fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(entries) => entries.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The keys, if this is a map.
    pub(crate) fn keys(&self) -> impl Iterator<Item = &str> {
        let entries: &[(String, Value)] = match self {
            Value::Map(entries) => entries,
            _ => &[],
        };
        entries.iter().map(|(k, _)| k.as_str())
    }

    fn unexpected(&self) -> Unexpected<'_> {
        match self {
            Value::Null => Unexpected::Unit,
            Value::Bool(b) => Unexpected::Bool(*b),
            Value::I64(n) => Unexpected::Signed(*n),
            Value::U64(n) => Unexpected::Unsigned(*n),
            Value::F64(n) => Unexpected::Float(*n),
            Value::Str(s) => Unexpected::Str(s),
            Value::Seq(_) => Unexpected::Seq,
            Value::Map(_) => Unexpected::Map,
        }
    }
}

/// A value read on its own (not as part of a document) has a [`Budget`] of its own.
impl<'de> Deserialize<'de> for Value {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Value, D::Error> {
        Budgeted(&Budget::new()).deserialize(deserializer)
    }
}

/// The most a rule document may expand to once read (aliases resolved): 16 MiB, counted as
/// 32 bytes per value (map, list, key or scalar) plus the bytes of its text. Rules as people
/// write them count a few times their text's bytes (a list of empty rules, `[{}, {}, ...]`,
/// counts the most: about 11 times), so such documents of up to 1 MiB (the most a `PUT` or a
/// rule source takes) are within it; what is read within it takes a few dozen MiB at most.
pub const MAX_EXPANDED_BYTES: usize = 16 << 20;

/// What each value counts against the budget besides its text: about what it takes in memory
/// (a value, or a key and its value's place in a map).
pub(crate) const NODE_COST: usize = 32;

/// How much more a document may expand to; spent as its values are read.
#[derive(Debug)]
pub(crate) struct Budget {
    left: Cell<usize>,
}

impl Budget {
    /// A budget of [`MAX_EXPANDED_BYTES`].
    pub(crate) fn new() -> Budget {
        Budget::of(MAX_EXPANDED_BYTES)
    }

    pub(crate) fn of(bytes: usize) -> Budget {
        Budget {
            left: Cell::new(bytes),
        }
    }

    /// Spends one value of `text` bytes, or refuses the document once the budget is spent.
    fn spend<E: de::Error>(&self, text: usize) -> Result<(), E> {
        let cost = NODE_COST.saturating_add(text);
        match self.left.get().checked_sub(cost) {
            Some(left) => {
                self.left.set(left);
                Ok(())
            }
            None => {
                self.left.set(0);
                Err(E::custom(format_args!(
                    "the document expands to more than {} MiB once read (each value counts {} \
                     bytes plus its text, and a YAML alias counts its value again each time it \
                     is used): refused, nothing read; a rule document needs far less",
                    MAX_EXPANDED_BYTES >> 20,
                    NODE_COST,
                )))
            }
        }
    }
}

/// Reads a [`Value`] within a [`Budget`]: each value is counted before it is made.
#[derive(Clone, Copy)]
pub(crate) struct Budgeted<'a>(pub(crate) &'a Budget);

impl<'de> DeserializeSeed<'de> for Budgeted<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(BudgetedVisitor(self.0))
    }
}

/// Makes a [`Value`] of whatever the deserializer has, spending the budget first.
struct BudgetedVisitor<'a>(&'a Budget);

impl<'de> Visitor<'de> for BudgetedVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a value: a map, a list, a string, a number, a boolean or null")
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        self.0.spend(0)?;
        Ok(Value::Bool(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        self.0.spend(0)?;
        Ok(Value::I64(v))
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        self.0.spend(0)?;
        Ok(Value::U64(v))
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        self.0.spend(0)?;
        Ok(Value::F64(v))
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        self.0.spend(v.len())?;
        Ok(Value::Str(v.to_owned()))
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        self.0.spend(v.len())?;
        Ok(Value::Str(v))
    }

    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        self.0.spend(0)?;
        Ok(Value::Null)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        self.0.spend(0)?;
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Budgeted(self.0).deserialize(d)
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        Budgeted(self.0).deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        self.0.spend(0)?;
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        while let Some(item) = seq.next_element_seed(Budgeted(self.0))? {
            items.push(item);
        }
        Ok(Value::Seq(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        self.0.spend(0)?;
        let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(0).min(1024));
        while let Some(key) = map.next_key_seed(BudgetedKey(self.0))? {
            entries.push((key.0, map.next_value_seed(Budgeted(self.0))?));
        }
        Ok(Value::Map(entries))
    }
}

/// A map key within a [`Budget`].
struct BudgetedKey<'a>(&'a Budget);

impl<'de> DeserializeSeed<'de> for BudgetedKey<'_> {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Key, D::Error> {
        struct KeyVisitor<'a>(&'a Budget);
        impl Visitor<'_> for KeyVisitor<'_> {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string key")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                self.0.spend(v.len())?;
                Ok(Key(v.to_owned()))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key, E> {
                self.0.spend(v.len())?;
                Ok(Key(v))
            }
        }
        d.deserialize_string(KeyVisitor(self.0))
    }
}

/// A map key: a string (keys of other types are refused).
struct Key(String);

/// Why a rule could not be read from its value: the field's path in the rule and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ValueError {
    /// Map keys and list positions from the rule down to the bad value, outermost first.
    path: Vec<String>,
    /// The field the error is about inside the innermost map (an unknown or missing field).
    leaf: Option<String>,
    message: String,
    unknown_field: bool,
}

impl ValueError {
    pub(crate) fn new(field: Option<&str>, message: impl Into<String>) -> ValueError {
        ValueError {
            path: Vec::new(),
            leaf: field.map(str::to_owned),
            message: message.into(),
            unknown_field: false,
        }
    }

    /// The bad field's path in the rule (`threshold`, `warm_up.period`), if it is a field's.
    pub(crate) fn field(&self) -> Option<String> {
        let mut out = String::new();
        for part in self.path.iter().chain(&self.leaf) {
            if !out.is_empty() && !part.starts_with('[') {
                out.push('.');
            }
            out.push_str(part);
        }
        (!out.is_empty()).then_some(out)
    }

    pub(crate) fn message(&self) -> &str {
        &self.message
    }

    /// Whether the error is a field the rule type does not have.
    pub(crate) fn is_unknown_field(&self) -> bool {
        self.unknown_field
    }

    pub(crate) fn add_to_message(&mut self, more: &str) {
        self.message.push_str(more);
    }

    fn inside(mut self, part: String) -> ValueError {
        self.path.insert(0, part);
        self
    }
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.field() {
            Some(field) => write!(f, "field `{field}` {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ValueError {}

fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    quoted.join(", ")
}

impl de::Error for ValueError {
    fn custom<T: fmt::Display>(msg: T) -> ValueError {
        ValueError::new(None, msg.to_string())
    }

    fn invalid_type(unexp: Unexpected<'_>, exp: &dyn Expected) -> ValueError {
        ValueError::new(None, format!("has the wrong type: {unexp}, expected {exp}"))
    }

    fn invalid_value(unexp: Unexpected<'_>, exp: &dyn Expected) -> ValueError {
        ValueError::new(None, format!("has a wrong value: {unexp}, expected {exp}"))
    }

    fn invalid_length(len: usize, exp: &dyn Expected) -> ValueError {
        ValueError::new(None, format!("has {len} items, expected {exp}"))
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> ValueError {
        ValueError::new(
            None,
            format!("is `{variant}`, expected one of {}", one_of(expected)),
        )
    }

    fn unknown_field(field: &str, expected: &'static [&'static str]) -> ValueError {
        ValueError {
            unknown_field: true,
            ..ValueError::new(
                Some(field),
                format!("is not supported (the fields are {})", one_of(expected)),
            )
        }
    }

    fn missing_field(field: &'static str) -> ValueError {
        ValueError::new(Some(field), "is required")
    }

    fn duplicate_field(field: &'static str) -> ValueError {
        ValueError::new(Some(field), "is given twice")
    }
}

impl<'de> Deserializer<'de> for Value {
    type Error = ValueError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self {
            Value::Null => visitor.visit_unit(),
            Value::Bool(v) => visitor.visit_bool(v),
            Value::I64(v) => visitor.visit_i64(v),
            Value::U64(v) => visitor.visit_u64(v),
            Value::F64(v) => visitor.visit_f64(v),
            Value::Str(v) => visitor.visit_string(v),
            Value::Seq(items) => {
                let len = items.len();
                let mut access = Items {
                    items: items.into_iter(),
                    index: 0,
                };
                let value = visitor.visit_seq(&mut access)?;
                if access.items.len() == 0 {
                    Ok(value)
                } else {
                    Err(de::Error::invalid_length(len, &"fewer items"))
                }
            }
            Value::Map(entries) => {
                let mut access = Entries {
                    entries: entries.into_iter(),
                    value: None,
                };
                let value = visitor.visit_map(&mut access)?;
                match access.entries.next() {
                    None => Ok(value),
                    Some((key, _)) => Err(ValueError::new(Some(&key), "is not expected here")),
                }
            }
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        match self {
            Value::Null => visitor.visit_none(),
            other => visitor.visit_some(other),
        }
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        match self {
            Value::Str(s) => {
                let variant: StringDeserializer<ValueError> = s.into_deserializer();
                visitor.visit_enum(variant)
            }
            other => Err(de::Error::invalid_type(other.unexpected(), &visitor)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ValueError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ValueError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf unit
        unit_struct seq tuple tuple_struct map struct identifier
    }
}

impl IntoDeserializer<'_, ValueError> for Value {
    type Deserializer = Value;

    fn into_deserializer(self) -> Value {
        self
    }
}

struct Items {
    items: vec::IntoIter<Value>,
    index: usize,
}

impl<'de> SeqAccess<'de> for Items {
    type Error = ValueError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, ValueError> {
        match self.items.next() {
            None => Ok(None),
            Some(node) => {
                let index = self.index;
                self.index += 1;
                seed.deserialize(node)
                    .map(Some)
                    .map_err(|e| e.inside(format!("[{index}]")))
            }
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.items.len())
    }
}

struct Entries {
    entries: vec::IntoIter<(String, Value)>,
    value: Option<(String, Value)>,
}

impl<'de> MapAccess<'de> for Entries {
    type Error = ValueError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ValueError> {
        match self.entries.next() {
            None => Ok(None),
            Some((key, value)) => {
                let key_de: StringDeserializer<ValueError> = key.clone().into_deserializer();
                self.value = Some((key, value));
                seed.deserialize(key_de).map(Some)
            }
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, ValueError> {
        match self.value.take() {
            Some((key, value)) => seed.deserialize(value).map_err(|e| e.inside(key)),
            None => Err(de::Error::custom("a map value was read twice")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        a: u32,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        name: String,
        inner: Option<Inner>,
        list: Option<Vec<Inner>>,
    }

    fn node(json: &str) -> Value {
        serde_json::from_str(json).expect("test JSON parses")
    }

    fn error(json: &str) -> (Option<String>, String) {
        let e = Outer::deserialize(node(json)).expect_err("should be refused");
        (e.field(), e.message().to_owned())
    }

    #[test]
    fn errors_name_the_field_by_its_path() {
        assert_eq!(
            Outer::deserialize(node(r#"{"name": "x", "inner": {"a": 1}, "list": null}"#)),
            Ok(Outer {
                name: "x".into(),
                inner: Some(Inner { a: 1 }),
                list: None
            })
        );
        assert_eq!(error(r#"{"inner": null}"#).0.as_deref(), Some("name"));
        assert_eq!(
            error(r#"{"name": "x", "inner": {"a": 1, "b": 2}}"#),
            (
                Some("inner.b".into()),
                "is not supported (the fields are `a`)".into()
            )
        );
        assert_eq!(
            error(r#"{"name": "x", "inner": {"a": -1}}"#).0.as_deref(),
            Some("inner.a")
        );
        assert_eq!(
            error(r#"{"name": "x", "list": [{"a": 1}, {"a": "1"}]}"#)
                .0
                .as_deref(),
            Some("list[1].a")
        );
        assert_eq!(
            error(r#"{"name": "x", "name": "y"}"#),
            (Some("name".into()), "is given twice".into())
        );
    }
}
