//! A JSON list written item by item, as upstream's streaming collection
//! encoder (`runtime/serializer/json/collections.go`, the
//! `StreamingCollectionEncodingToJSON` feature, GA since 1.34) writes it:
//! the list's `kind`, `apiVersion` and `metadata`, then each item. Here the
//! items are copied from their versions' shared encodings
//! ([`caching_object`]), so a LIST from the watch cache encodes only the
//! envelope and the items not listed or watched before.

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use storage::ListResult;

use super::caching_object;
use super::negotiation::Encoding;
use super::response::{encode, list_metadata, WithoutTypeMeta};

/// The bytes `encode` writes for the whole list (compact, with Go's
/// trailing newline). Typed (built-in) items are written without
/// `apiVersion` and `kind`, which only the list carries; custom resources'
/// items with them (`type_meta`).
pub fn json(list: &ListResult, kind: &str, api_version: &str, type_meta: bool) -> Bytes {
    let Ok(items) = caching_object::encoded_each(&list.items, Encoding::Json) else {
        unreachable!("JSON encoding does not fail")
    };
    let size: usize = items.iter().map(Bytes::len).sum();
    let mut out = Vec::with_capacity(size + 256);
    out.extend_from_slice(b"{\"kind\":");
    fragment(kind, &mut out);
    out.extend_from_slice(b",\"apiVersion\":");
    fragment(api_version, &mut out);
    out.extend_from_slice(b",\"metadata\":");
    fragment(&list_metadata(list), &mut out);
    out.extend_from_slice(b",\"items\":[");
    for (i, (encoded, object)) in items.iter().zip(&list.items).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let body = encoded.strip_suffix(b"\n").unwrap_or(encoded);
        if type_meta {
            out.extend_from_slice(body);
        } else if let Some(fields) = after_type_meta(body, object) {
            out.push(b'{');
            out.extend_from_slice(fields);
        } else {
            fragment(&WithoutTypeMeta(object), &mut out);
        }
    }
    out.extend_from_slice(b"]}\n");
    Bytes::from(out)
}

/// Appends `value` as `encode` writes it, without the trailing newline.
fn fragment<T: Serialize + ?Sized>(value: &T, out: &mut Vec<u8>) {
    let encoded = encode(value, Encoding::Json, false);
    out.extend_from_slice(encoded.strip_suffix(b"\n").unwrap_or(&encoded));
}

/// The rest of `body` (the object's JSON) after its opening
/// `{"kind":…,"apiVersion":…,` when it starts so, as a typed object's
/// encoding does (`TypeMeta` first); `None` for any other layout, which is
/// then encoded again without those fields.
fn after_type_meta<'a>(body: &'a [u8], object: &Value) -> Option<&'a [u8]> {
    let mut rest = body.strip_prefix(b"{")?;
    for field in ["kind", "apiVersion"] {
        let Some(value) = object.get(field) else {
            continue;
        };
        let value = value.as_str().filter(|v| written_as_is(v))?;
        rest = rest
            .strip_prefix(b"\"")?
            .strip_prefix(field.as_bytes())?
            .strip_prefix(b"\":\"")?
            .strip_prefix(value.as_bytes())?
            .strip_prefix(b"\",")?;
    }
    Some(rest)
}

/// A string JSON writes between its quotes unchanged (no escapes).
fn written_as_is(s: &str) -> bool {
    s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'-' | b'_'))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    fn list(items: Vec<Value>) -> ListResult {
        ListResult {
            items: items.into_iter().map(Arc::new).collect(),
            resource_version: 12,
            continue_token: Some("next".into()),
            remaining_item_count: Some(3),
        }
    }

    #[test]
    fn item_by_item_matches_the_whole_list() {
        let items = vec![
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}, "data": {"k": "<&>"}}),
            json!({"metadata": {"name": "no-type-meta"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other-order"}}),
            json!({"kind": "ConfigMap", "apiVersion": "v1"}),
            json!({"kind": "Odd\"Kind", "apiVersion": "v1", "metadata": {}}),
        ];
        let list = list(items.clone());
        let without: Vec<Value> = items
            .iter()
            .map(|item| {
                let mut item = item.clone();
                if let Some(map) = item.as_object_mut() {
                    map.shift_remove("kind");
                    map.shift_remove("apiVersion");
                }
                item
            })
            .collect();
        for (type_meta, written) in [(true, &items), (false, &without)] {
            let whole = json!({"kind": "ConfigMapList", "apiVersion": "v1",
                "metadata": {"resourceVersion": "12", "continue": "next", "remainingItemCount": 3},
                "items": written});
            let expected = encode(&whole, Encoding::Json, false);
            assert_eq!(json(&list, "ConfigMapList", "v1", type_meta), expected);
        }
        let empty = json(&self::list(Vec::new()), "ConfigMapList", "v1", false);
        assert!(empty.ends_with(b",\"items\":[]}\n"));
    }
}
