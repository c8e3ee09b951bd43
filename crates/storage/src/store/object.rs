//! The object-level rules of the store: what is stripped before storing and
//! how the resourceVersion is stamped on the way out (upstream's
//! `APIObjectVersioner`), plus precondition checks.

use serde_json::{Map, Value};

use crate::codec::Codec;
use crate::error::{Result, StorageError};
use crate::interface::Preconditions;

fn not_an_object(key: &str) -> StorageError {
    StorageError::Corrupt {
        key: key.to_string(),
        message: "object is not a JSON object with metadata".to_string(),
    }
}

fn metadata_mut<'a>(key: &str, obj: &'a mut Value) -> Result<&'a mut Map<String, Value>> {
    obj.as_object_mut()
        .ok_or_else(|| not_an_object(key))?
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| not_an_object(key))
}

/// Removes what is never stored: the resourceVersion (the KV's revision is
/// the truth) and the deprecated selfLink. `shift_remove` keeps field order so
/// re-encoding an unchanged object yields the stored bytes.
pub(super) fn prepare_for_storage(key: &str, obj: &mut Value) -> Result<()> {
    let meta = metadata_mut(key, obj)?;
    meta.shift_remove("resourceVersion");
    meta.shift_remove("selfLink");
    Ok(())
}

pub(super) fn set_resource_version(key: &str, obj: &mut Value, revision: i64) -> Result<()> {
    crate::versioner::stamp(metadata_mut(key, obj)?, revision);
    Ok(())
}

pub(super) fn decode_object(
    codec: &dyn Codec,
    key: &str,
    data: &[u8],
    revision: i64,
) -> Result<Value> {
    let mut obj = codec.decode(key, data)?;
    set_resource_version(key, &mut obj, revision)?;
    Ok(obj)
}

fn meta_str<'a>(obj: Option<&'a Value>, field: &str) -> &'a str {
    obj.and_then(|o| o.get("metadata"))
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

/// Upstream's `Preconditions.Check`; an absent object has empty uid and
/// resourceVersion, so any precondition fails against it.
pub(super) fn check_preconditions(
    key: &str,
    preconditions: Option<&Preconditions>,
    obj: Option<&Value>,
) -> Result<()> {
    let Some(p) = preconditions else {
        return Ok(());
    };
    if let Some(uid) = &p.uid {
        let actual = meta_str(obj, "uid");
        if uid != actual {
            return Err(StorageError::InvalidPrecondition {
                key: key.to_string(),
                message: format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {actual}"
                ),
            });
        }
    }
    if let Some(rv) = &p.resource_version {
        let actual = meta_str(obj, "resourceVersion");
        if rv != actual {
            return Err(StorageError::Conflict {
                key: key.to_string(),
                message: format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {actual}"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::codec::JsonCodec;

    #[test]
    fn storage_form_round_trips_byte_for_byte() {
        let mut obj = json!({"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "9", "selfLink": "/x", "uid": "u"}, "spec": {}});
        prepare_for_storage("/k", &mut obj).unwrap();
        let stored = JsonCodec.encode(&obj).unwrap();
        let mut read = decode_object(&JsonCodec, "/k", &stored, 12).unwrap();
        assert_eq!(read["metadata"]["resourceVersion"], "12");
        assert!(read["metadata"].get("selfLink").is_none());
        prepare_for_storage("/k", &mut read).unwrap();
        assert_eq!(JsonCodec.encode(&read).unwrap(), stored);
    }

    #[test]
    fn refuses_values_without_object_metadata() {
        assert!(prepare_for_storage("/k", &mut json!([1])).is_err());
        assert!(prepare_for_storage("/k", &mut json!({"metadata": 3})).is_err());
        let mut bare = json!({});
        set_resource_version("/k", &mut bare, 4).unwrap();
        assert_eq!(bare, json!({"metadata": {"resourceVersion": "4"}}));
    }

    #[test]
    fn preconditions_report_upstream_messages() {
        let obj = json!({"metadata": {"uid": "u1", "resourceVersion": "5"}});
        let uid = Preconditions {
            uid: Some("u2".into()),
            resource_version: None,
        };
        match check_preconditions("/k", Some(&uid), Some(&obj)) {
            Err(StorageError::InvalidPrecondition { message, .. }) => assert_eq!(
                message,
                "Precondition failed: UID in precondition: u2, UID in object meta: u1"
            ),
            other => panic!("unexpected {other:?}"),
        }
        let rv = Preconditions {
            uid: None,
            resource_version: Some("4".into()),
        };
        assert!(matches!(
            check_preconditions("/k", Some(&rv), Some(&obj)),
            Err(StorageError::Conflict { .. })
        ));
        let ok = Preconditions {
            uid: Some("u1".into()),
            resource_version: Some("5".into()),
        };
        assert!(check_preconditions("/k", Some(&ok), Some(&obj)).is_ok());
        assert!(check_preconditions("/k", Some(&ok), None).is_err());
    }
}
