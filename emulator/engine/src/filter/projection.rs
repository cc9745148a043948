//! The part of a record's data the filters read: its JSON is parsed into a `Value` holding only
//! the keys some pattern's path names, so that a filter on `carrier` does not allocate a string
//! for every other field of every record (most of the time a filter spent was building values
//! it never looked at).
//!
//! Matching over the projected value gives what it gives over the whole value: a path is
//! followed only through keys it names (or record keys with dots whose first part it names,
//! which are kept whole), and a value a path ends at is kept whole. The data is still checked to
//! be JSON (and UTF-8) in full, so a record whose data is not JSON is told apart as before.

use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::pattern::Conjunction;

/// The paths under `data` that patterns read, as a tree of keys.
#[derive(Debug, Default, Clone, PartialEq)]
pub(super) struct Projection {
    /// A path ends here: the value is kept whole.
    whole: bool,
    children: BTreeMap<String, Projection>,
}

impl Projection {
    /// The tree of every path under `data` in these conjunctions (their `$or` alternatives
    /// included).
    pub(super) fn of<'a>(conjunctions: impl IntoIterator<Item = &'a Conjunction>) -> Self {
        let mut projection = Self::default();
        for conjunction in conjunctions {
            projection.add(conjunction);
        }
        projection
    }

    fn add(&mut self, conjunction: &Conjunction) {
        for field in &conjunction.fields {
            if let Some((top, under)) = field.path.split_first()
                && top == "data"
            {
                self.insert(under);
            }
        }
        for alternatives in &conjunction.alternatives {
            for alternative in alternatives {
                self.add(alternative);
            }
        }
    }

    fn insert(&mut self, path: &[String]) {
        match path.split_first() {
            None => self.whole = true,
            Some((key, rest)) => self.children.entry(key.clone()).or_default().insert(rest),
        }
    }

    /// The record's data as JSON, projected; `None` when it is not JSON.
    pub(super) fn read(&self, data: &[u8]) -> Option<Value> {
        // Checked first, in one pass: the projection skips the fields it drops without reading
        // their text as strings, so it would not see bad UTF-8 inside them.
        let text = std::str::from_utf8(data).ok()?;
        let mut deserializer = serde_json::Deserializer::from_str(text);
        let value = self.deserialize(&mut deserializer).ok()?;
        deserializer.end().ok()?;
        Some(value)
    }

    /// What to keep of the value under this record key.
    fn child(&self, key: &str) -> Option<&Projection> {
        if let Some(child) = self.children.get(key) {
            return Some(child);
        }
        // A record key with dots (`"a.b"`) stands for nested keys: kept whole if a path
        // starts with its first part.
        let (first, _) = key.split_once('.')?;
        self.children.contains_key(first).then_some(&WHOLE)
    }
}

static WHOLE: Projection = Projection {
    whole: true,
    children: BTreeMap::new(),
};

impl<'de> DeserializeSeed<'de> for &Projection {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        if self.whole {
            return serde::Deserialize::deserialize(deserializer);
        }
        deserializer.deserialize_any(ProjectingVisitor(self))
    }
}

struct ProjectingVisitor<'p>(&'p Projection);

impl<'de> Visitor<'de> for ProjectingVisitor<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut kept = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match self.0.child(&key) {
                Some(child) => {
                    let value = map.next_value_seed(child)?;
                    kept.insert(key, value);
                }
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Value::Object(kept))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        // Arrays are transparent to paths: each element is projected as the array would be.
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(self.0)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_bool<E: de::Error>(self, value: bool) -> Result<Value, E> {
        Ok(Value::Bool(value))
    }

    fn visit_i64<E: de::Error>(self, value: i64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_u64<E: de::Error>(self, value: u64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_f64<E: de::Error>(self, value: f64) -> Result<Value, E> {
        Ok(Value::from(value))
    }

    fn visit_str<E: de::Error>(self, value: &str) -> Result<Value, E> {
        Ok(Value::String(value.to_owned()))
    }

    fn visit_string<E: de::Error>(self, value: String) -> Result<Value, E> {
        Ok(Value::String(value))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::filter::Pattern;

    fn projection(pattern: &str) -> Projection {
        let pattern = Pattern::parse(pattern).expect("the pattern parses");
        Projection::of([&pattern.root])
    }

    #[test]
    fn only_the_keys_a_path_names_are_kept() {
        let projection = projection(r#"{"data": {"order": {"type": ["buy"]}, "id": [1]}}"#);
        let data =
            br#"{"id": 1, "address": "1 Main St", "order": {"type": "buy", "lines": [1, 2]}}"#;
        assert_eq!(
            projection.read(data),
            Some(json!({"id": 1, "order": {"type": "buy"}}))
        );
    }

    #[test]
    fn a_value_a_path_ends_at_is_kept_whole() {
        let projection = projection(r#"{"data": {"order": [{"exists": true}]}}"#);
        let data = br#"{"order": {"type": "buy"}, "other": 2}"#;
        assert_eq!(
            projection.read(data),
            Some(json!({"order": {"type": "buy"}}))
        );
    }

    #[test]
    fn arrays_are_projected_element_by_element() {
        let projection = projection(r#"{"data": {"lines": {"sku": ["a"]}}}"#);
        let data = br#"{"lines": [{"sku": "a", "qty": 1}, {"sku": "b"}, 3]}"#;
        assert_eq!(
            projection.read(data),
            Some(json!({"lines": [{"sku": "a"}, {"sku": "b"}, 3]}))
        );
    }

    #[test]
    fn a_record_key_with_dots_whose_first_part_a_path_names_is_kept_whole() {
        let projection = projection(r#"{"data": {"a": {"b": ["x"]}}}"#);
        let data = br#"{"a.b": "x", "c.d": "y"}"#;
        assert_eq!(projection.read(data), Some(json!({"a.b": "x"})));
    }

    #[test]
    fn paths_of_every_alternative_are_kept() {
        let projection = projection(r#"{"data": {"$or": [{"a": ["x"]}, {"b": ["y"]}]}}"#);
        assert_eq!(
            projection.read(br#"{"a": "x", "b": "y", "c": "z"}"#),
            Some(json!({"a": "x", "b": "y"}))
        );
    }

    #[test]
    fn data_that_is_not_json_is_told_apart_even_in_a_dropped_field() {
        let projection = projection(r#"{"data": {"a": ["x"]}}"#);
        assert_eq!(projection.read(b"not json"), None);
        assert_eq!(projection.read(br#"{"a": "x"} trailing"#), None);
        assert_eq!(projection.read(b"{\"a\": \"x\", \"b\": \"\xff\"}"), None);
        assert_eq!(projection.read(br#"{"a": "x", "b": [1, }"#), None);
        assert_eq!(projection.read(br#""a string""#), Some(json!("a string")));
    }
}
