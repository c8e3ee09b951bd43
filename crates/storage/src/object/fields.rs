//! Fields read from a stored object's JSON without decoding the object:
//! top-level fields (`apiVersion`, `kind`) or fields of `metadata`, found by
//! one scan that stops as soon as every field asked for is found. Go's
//! field order puts them near the start (`metadata.name` before
//! `managedFields`, `metadata` before `spec` or `data`), so a lookup reads
//! a few dozen bytes and decodes only the fields it returns.
//!
//! Hand-written over serde's visitor API: serde_json decodes a whole value
//! or skips it, and has no way to stop once a field is read, so the scan
//! ends by failing on purpose and keeps what it found.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

/// Where the fields are looked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    /// The object's own fields.
    Top,
    /// The fields of its `metadata`.
    Metadata,
}

/// The value of each of `fields` at `level` of the object encoded as `json`
/// (`None` when absent).
pub(super) fn values(json: &[u8], level: Level, fields: &[&str]) -> Vec<Option<Value>> {
    let mut found = vec![None; fields.len()];
    let mut deserializer = serde_json::Deserializer::from_slice(json);
    deserializer.disable_recursion_limit();
    let scan = Scan {
        level,
        fields,
        found: &mut found,
    };
    // Ends in an error when it stops early; what it found stands either way.
    let _ = scan.deserialize(&mut deserializer);
    found
}

/// Stops the scan once nothing is left to find.
fn done<E: de::Error>() -> E {
    E::custom("every field is found")
}

/// Scans one JSON object for `fields`, or for `metadata` and then its fields.
struct Scan<'a> {
    level: Level,
    fields: &'a [&'a str],
    found: &'a mut [Option<Value>],
}

impl<'de> DeserializeSeed<'de> for Scan<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Scan<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let Scan {
            level,
            fields,
            found,
        } = self;
        let wanted: &[&str] = match level {
            Level::Top => fields,
            Level::Metadata => &["metadata"],
        };
        while let Some(key) = map.next_key_seed(Position(wanted))? {
            match (key, level) {
                (Some(_), Level::Metadata) => {
                    let metadata = Scan {
                        level: Level::Top,
                        fields,
                        found,
                    };
                    map.next_value_seed(metadata)?;
                    return Err(done());
                }
                (Some(i), Level::Top) => {
                    found[i] = Some(map.next_value::<Value>()?);
                    if found.iter().all(Option::is_some) {
                        return Err(done());
                    }
                }
                (None, _) => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

/// A map key, read as its position among the names looked for.
struct Position<'a>(&'a [&'a str]);

impl<'de> DeserializeSeed<'de> for Position<'_> {
    type Value = Option<usize>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Position<'_> {
    type Value = Option<usize>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().position(|name| *name == key))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const OBJECT: &[u8] = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"name":"a\"b","labels":{"name":"x"},"uid":7,"namespace":"ns","managedFields":[{"manager":"m"}]},"spec":{"name":"no"}}"#;

    fn read(level: Level, fields: &[&str]) -> Vec<Option<Value>> {
        values(OBJECT, level, fields)
    }

    #[test]
    fn finds_fields_at_either_level() {
        let some = |v: Value| Some(v);
        assert_eq!(
            read(Level::Top, &["apiVersion", "kind"]),
            [some(json!("v1")), some(json!("Pod"))]
        );
        assert_eq!(
            read(
                Level::Metadata,
                &["namespace", "name", "uid", "generateName", "labels"]
            ),
            [
                some(json!("ns")),
                some(json!("a\"b")),
                some(json!(7)),
                None,
                some(json!({"name": "x"}))
            ]
        );
        // `name` inside labels or spec is not metadata's own.
        assert_eq!(read(Level::Top, &["name"]), [None]);
    }

    #[test]
    fn stops_at_the_last_field_found() {
        // What follows the fields found is never read: here it is not JSON.
        let cut = br#"{"metadata":{"name":"a","namespace":"ns", oops"#;
        assert_eq!(
            values(cut, Level::Metadata, &["name", "namespace"]),
            [Some(json!("a")), Some(json!("ns"))]
        );
        assert_eq!(values(b"[1]", Level::Top, &["kind"]), [None]);
        assert_eq!(values(b"", Level::Metadata, &["name"]), [None]);
    }
}
