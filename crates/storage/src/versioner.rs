//! Stamps `metadata.resourceVersion` on objects read from storage
//! (upstream's `APIObjectVersioner.UpdateObject`): in the Go `ObjectMeta`
//! the field sits after `name`, `generateName`, `namespace`, `selfLink`
//! and `uid`, so it goes there, and the object keeps Go's field order.

use serde_json::{Map, Value};

/// The `ObjectMeta` fields Go writes before `resourceVersion`.
const BEFORE: [&str; 5] = ["name", "generateName", "namespace", "selfLink", "uid"];

/// Sets `resourceVersion` in an object's metadata map, in place when it is
/// there, else after the fields that precede it.
pub fn stamp(meta: &mut Map<String, Value>, revision: i64) {
    let value = Value::String(revision.to_string());
    if let Some(existing) = meta.get_mut("resourceVersion") {
        *existing = value;
        return;
    }
    let at = meta
        .keys()
        .position(|k| !BEFORE.contains(&k.as_str()))
        .unwrap_or(meta.len());
    // Rebuilt at its final size: a decoded map is built exactly full (see
    // go_json's normalize), so inserting into it would double its room for
    // as long as the object is cached.
    let mut entries: Vec<(String, Value)> = std::mem::take(meta).into_iter().collect();
    entries.insert(at, ("resourceVersion".to_owned(), value));
    *meta = entries.into_iter().collect();
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn resource_version_goes_where_go_writes_it() {
        let mut meta = json!({"name": "a", "namespace": "n", "uid": "u", "creationTimestamp": "t", "labels": {}});
        stamp(meta.as_object_mut().unwrap(), 7);
        let keys: Vec<&String> = meta.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "name",
                "namespace",
                "uid",
                "resourceVersion",
                "creationTimestamp",
                "labels"
            ]
        );
        stamp(meta.as_object_mut().unwrap(), 8);
        assert_eq!(meta["resourceVersion"], "8");
        let mut bare = Map::new();
        stamp(&mut bare, 1);
        assert_eq!(Value::Object(bare), json!({"resourceVersion": "1"}));
    }
}
