//! One stored object version as the storage layer hands it out and the
//! watch cache keeps it: its JSON tree, its JSON encoding (what a JSON
//! response writes for it, Go's `json.Encoder` output), or both.
//!
//! Upstream's watch cache holds decoded Go structs and its `CachingObject`
//! adds each version's serializations for watchers. Here a JSON tree
//! (`serde_json::Value` with its map entries and small strings) takes
//! about three times the bytes of the object's JSON, so the watch cache
//! keeps each version as its JSON encoding alone ([`StoredObject::compact`])
//! and a tree is decoded only when something reads the object's fields:
//! responses, watch events and lists in JSON copy the encoding without a
//! tree, and readers that only look ([`StoredObject::peek`], the metadata
//! accessors, which scan for the fields asked for) keep no tree. Dereferencing
//! (`&Value`) decodes the tree once and keeps it for the version's life.

mod fields;

use std::borrow::Cow;
use std::fmt;
use std::ops::Deref;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::Value;

use fields::Level;

/// A stored object version, shared read-only (as [`crate::Object`]).
pub struct StoredObject {
    /// Boxed: most held versions have none, and the cache holds many.
    tree: OnceLock<Box<Value>>,
    /// The JSON encoding, trailing newline included.
    json: OnceLock<Bytes>,
    /// A part of the JSON a reader found once ([`StoredObject::json_part`]),
    /// as `start << 32 | end`; [`UNKNOWN`] until found, [`NO_PART`] when
    /// there is none. In the allocation's padding: the cache's `Arc`s keep
    /// their size class.
    part: AtomicU64,
}

const UNKNOWN: u64 = 0;
const NO_PART: u64 = u64::MAX;

impl StoredObject {
    /// A version held as its JSON encoding only (`json` as
    /// [`StoredObject::json`] gives it: from `go_json::encode::to_vec`).
    pub fn from_json(json: Bytes) -> Self {
        StoredObject {
            tree: OnceLock::new(),
            json: OnceLock::from(json),
            part: AtomicU64::new(UNKNOWN),
        }
    }

    /// The object's JSON tree, decoded from its encoding on first use and
    /// kept from then on.
    pub fn value(&self) -> &Value {
        self.tree.get_or_init(|| Box::new(decode(self.encoded())))
    }

    /// Whether the tree is decoded (or the object was made from one).
    pub fn has_tree(&self) -> bool {
        self.tree.get().is_some()
    }

    /// The object's JSON as a response writes it (Go's `json.Encoder`:
    /// Go's escaping and number format, a trailing newline), encoded from
    /// the tree on first use and kept from then on.
    pub fn json(&self) -> Bytes {
        self.json_bytes().clone()
    }

    /// [`StoredObject::json`], borrowed.
    pub fn json_bytes(&self) -> &Bytes {
        self.json.get_or_init(|| {
            let tree = self.tree.get().expect("a stored object has a tree or JSON");
            let mut json = go_json::encode::to_vec(&**tree).expect("JSON trees always serialize");
            json.shrink_to_fit();
            Bytes::from(json)
        })
    }

    /// The part of [`StoredObject::json`] that `find` picks from it (a
    /// byte range, `None` for none), found on the first call only: later
    /// callers read neither the JSON nor `find`'s result again. One reader
    /// uses it (a typed list's items, written without their leading type
    /// fields), so every caller must pass the same `find`.
    pub fn json_part(
        &self,
        find: impl FnOnce(&[u8]) -> Option<Range<usize>>,
    ) -> Option<Range<usize>> {
        let known = match self.part.load(Ordering::Relaxed) {
            UNKNOWN => {
                let json = self.json_bytes();
                let found = find(json).and_then(|r| {
                    let start = u32::try_from(r.start).ok().filter(|s| *s < u32::MAX)?;
                    let end = u32::try_from(r.end).ok()?;
                    let valid = r.start < r.end && r.end <= json.len();
                    valid.then_some(u64::from(start) << 32 | u64::from(end))
                });
                let known = found.unwrap_or(NO_PART);
                self.part.store(known, Ordering::Relaxed);
                known
            }
            known => known,
        };
        if known == NO_PART {
            return None;
        }
        Some((known >> 32) as usize..(known & u64::from(u32::MAX)) as usize)
    }

    fn encoded(&self) -> &Bytes {
        self.json.get().expect("a stored object has a tree or JSON")
    }

    /// A copy holding only the JSON encoding (encoding it now if needed):
    /// what the watch cache keeps.
    pub fn compact(&self) -> StoredObject {
        StoredObject::from_json(self.json())
    }

    /// The tree, borrowed when decoded, else decoded for the caller alone
    /// (not kept).
    pub fn tree(&self) -> Cow<'_, Value> {
        match self.tree.get() {
            Some(tree) => Cow::Borrowed(&**tree),
            None => Cow::Owned(decode(self.encoded())),
        }
    }

    /// Runs `f` on the tree without keeping one that is not decoded yet:
    /// for readers that look once (selectors, encoders of formats other
    /// than JSON) at objects the cache holds as JSON.
    pub fn peek<R>(&self, f: impl FnOnce(&Value) -> R) -> R {
        f(&self.tree())
    }

    /// `apiVersion` and `kind` (empty when absent), without keeping a tree.
    pub fn type_meta(&self) -> (String, String) {
        let mut read = self.values(Level::Top, &["apiVersion", "kind"]).into_iter();
        let mut next = || match read.next().flatten() {
            Some(Value::String(text)) => text,
            _ => String::new(),
        };
        (next(), next())
    }

    /// `metadata.<field>` as a string, without keeping a tree.
    pub fn metadata_str(&self, field: &str) -> Option<String> {
        self.metadata_strs(&[field]).pop().flatten()
    }

    /// `metadata.<field>` of each of `fields` as a string, in one look that
    /// keeps no tree.
    pub fn metadata_strs(&self, fields: &[&str]) -> Vec<Option<String>> {
        let string = |value: Option<Value>| match value {
            Some(Value::String(text)) => Some(text),
            _ => None,
        };
        self.values(Level::Metadata, fields)
            .into_iter()
            .map(string)
            .collect()
    }

    /// `metadata.<field>` of each of `fields`, in one look that keeps no
    /// tree and decodes no other field.
    pub fn metadata_values(&self, fields: &[&str]) -> Vec<Option<Value>> {
        self.values(Level::Metadata, fields)
    }

    /// `fields` at `level`: copied from the tree when there is one, else
    /// scanned for in the encoding (see [`fields`]).
    fn values(&self, level: Level, fields: &[&str]) -> Vec<Option<Value>> {
        let Some(tree) = self.tree.get() else {
            return fields::values(self.encoded(), level, fields);
        };
        let parent = match level {
            Level::Top => Some(&**tree),
            Level::Metadata => tree.get("metadata"),
        };
        let value = |field: &&str| parent?.get(*field).cloned();
        fields.iter().map(value).collect()
    }

    /// A copy of the tree (without keeping one that is not decoded yet).
    pub fn to_value(&self) -> Value {
        self.peek(Value::clone)
    }

    /// The tree of a shared object: moved out when `obj` is its only
    /// holder, else copied.
    pub fn unwrap_or_clone(obj: Arc<StoredObject>) -> Value {
        match Arc::try_unwrap(obj) {
            Ok(obj) => obj.into_value(),
            Err(shared) => shared.to_value(),
        }
    }

    /// The tree, taken out.
    pub fn into_value(self) -> Value {
        match self.tree.into_inner() {
            Some(tree) => *tree,
            None => decode(self.json.get().expect("a stored object has a tree or JSON")),
        }
    }
}

/// Decodes an encoding this module made: it always decodes, at any depth
/// (see `apimachinery::serializer::json::decode_stored`).
fn decode(json: &[u8]) -> Value {
    decode_as(json)
}

/// Decodes `T` from an encoding this module made.
fn decode_as<T: DeserializeOwned>(json: &[u8]) -> T {
    match apimachinery::serializer::json::decode_stored_as(json) {
        Ok(decoded) => decoded,
        Err(e) => panic!("a stored object's JSON decodes: {e}"),
    }
}

impl From<Value> for StoredObject {
    fn from(tree: Value) -> Self {
        StoredObject {
            tree: OnceLock::from(Box::new(tree)),
            json: OnceLock::new(),
            part: AtomicU64::new(UNKNOWN),
        }
    }
}

impl Deref for StoredObject {
    type Target = Value;

    fn deref(&self) -> &Value {
        self.value()
    }
}

impl AsRef<Value> for StoredObject {
    fn as_ref(&self) -> &Value {
        self.value()
    }
}

impl PartialEq for StoredObject {
    fn eq(&self, other: &Self) -> bool {
        match (self.json.get(), other.json.get()) {
            (Some(a), Some(b)) => a == b,
            _ => self.peek(|a| other.peek(|b| a == b)),
        }
    }
}

impl PartialEq<Value> for StoredObject {
    fn eq(&self, other: &Value) -> bool {
        self.peek(|tree| tree == other)
    }
}

impl fmt::Debug for StoredObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.peek(|tree| fmt::Debug::fmt(tree, f))
    }
}

impl Serialize for StoredObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.peek(|tree| tree.serialize(serializer))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_json_part_is_found_once() {
        let object = StoredObject::from(config_map()).compact();
        let json = object.json();
        let mut calls = 0;
        let mut find = |json: &[u8]| {
            calls += 1;
            let start = json.iter().position(|b| *b == b':')? + 1;
            Some(start..json.len() - 1)
        };
        let first = object.json_part(&mut find).expect("a part");
        let colon = json.iter().position(|b| *b == b':').unwrap();
        assert_eq!(first, colon + 1..json.len() - 1);
        assert_eq!(object.json_part(&mut find), Some(first));
        assert_eq!(calls, 1);
        // None is kept too.
        let other = StoredObject::from(config_map()).compact();
        assert_eq!(other.json_part(|_| None), None);
        assert_eq!(other.json_part(|_| Some(0..1)), None);
    }

    fn config_map() -> Value {
        json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "a", "namespace": "ns", "resourceVersion": "7"},
            "data": {"k": "<v>"}})
    }

    #[test]
    fn a_compact_copy_keeps_the_json_and_decodes_the_same_tree() {
        let written = StoredObject::from(config_map());
        let compact = written.compact();
        assert!(!compact.has_tree());
        assert_eq!(compact.json(), written.json());
        assert_eq!(
            compact.json().as_ptr(),
            written.json().as_ptr(),
            "shared bytes"
        );
        let expected = concat!(
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","#,
            r#""resourceVersion":"7"},"data":{"k":"\u003cv\u003e"}}"#,
            "\n"
        );
        assert_eq!(&compact.json()[..], expected.as_bytes());
        assert_eq!(compact.value(), &config_map());
        assert!(compact.has_tree(), "dereferencing keeps the tree");
    }

    #[test]
    fn a_held_version_without_a_tree_is_small() {
        // The cache holds one per object: its JSON's `Bytes` and an empty
        // slot for a tree, not room for a tree inline; the kept part's
        // position fits the padding (the `Arc` stays in jemalloc's 80-byte
        // class).
        assert!(std::mem::size_of::<StoredObject>() <= 64);
    }

    #[test]
    fn readers_that_look_leave_no_tree_behind() {
        let compact = StoredObject::from(config_map()).compact();
        let labels = compact.metadata_values(&["name", "labels"]);
        assert_eq!(labels, [Some(json!("a")), None]);
        assert_eq!(
            compact.metadata_str("resourceVersion").as_deref(),
            Some("7")
        );
        assert_eq!(
            compact.type_meta(),
            ("v1".to_owned(), "ConfigMap".to_owned())
        );
        assert_eq!(compact.to_value(), config_map());
        assert_eq!(*compact.tree(), config_map());
        assert!(compact.peek(|tree| tree["data"]["k"] == "<v>"));
        assert_eq!(compact, config_map());
        assert!(!compact.has_tree());
        let shared = Arc::new(compact);
        let _other = shared.clone();
        assert_eq!(StoredObject::unwrap_or_clone(shared), config_map());
    }

    #[test]
    fn objects_deeper_than_serde_jsons_default_limit_read_back() {
        let mut deep = json!("leaf");
        for _ in 0..300 {
            deep = json!([deep]);
        }
        let tree = json!({"metadata": {"name": "deep", "annotations": {}}, "spec": deep});
        let compact = StoredObject::from(tree.clone()).compact();
        assert_eq!(compact.metadata_str("name").as_deref(), Some("deep"));
        let spec = Some(tree["spec"].clone());
        assert_eq!(compact.metadata_values(&["annotations"]), [Some(json!({}))]);
        assert_eq!(
            fields::values(&compact.json(), Level::Top, &["spec"]),
            [spec]
        );
        assert_eq!(compact.into_value(), tree);
    }
}
