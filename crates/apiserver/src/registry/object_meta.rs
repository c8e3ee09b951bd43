//! ObjectMeta handling common to every resource (upstream's
//! `rest.BeforeCreate`/`rest.BeforeUpdate` and `FillObjectMetaSystemFields`).

use apimachinery::field_errors::FieldError;
use apimachinery::validation::object_meta::{validate_object_meta, validate_object_meta_update};
use apimachinery::validation::NameValidator;
use chrono::{SecondsFormat, Utc};
use rand::Rng;
use serde_json::{json, Value};

pub fn name(obj: &Value) -> &str {
    str_at(obj, "/metadata/name").unwrap_or_default()
}

pub fn namespace(obj: &Value) -> Option<&str> {
    str_at(obj, "/metadata/namespace").filter(|ns| !ns.is_empty())
}

pub fn uid(obj: &Value) -> Option<&str> {
    str_at(obj, "/metadata/uid")
}

pub fn resource_version(obj: &Value) -> Option<&str> {
    str_at(obj, "/metadata/resourceVersion").filter(|rv| !rv.is_empty())
}

pub fn has_finalizers(obj: &Value) -> bool {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

pub fn is_terminating(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

fn str_at<'a>(obj: &'a Value, pointer: &str) -> Option<&'a str> {
    obj.pointer(pointer).and_then(Value::as_str)
}

/// The current time as API timestamps are written (RFC 3339, seconds).
pub fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Mutable access to `metadata`, creating it (and turning `obj` into an
/// object) when missing.
pub fn metadata_mut(obj: &mut Value) -> &mut serde_json::Map<String, Value> {
    let meta = ensure_object(obj)
        .entry("metadata")
        .or_insert_with(|| json!({}));
    ensure_object(meta)
}

fn ensure_object(v: &mut Value) -> &mut serde_json::Map<String, Value> {
    if !v.is_object() {
        *v = Value::Object(serde_json::Map::new());
    }
    match v {
        Value::Object(map) => map,
        _ => unreachable!("just made an object"),
    }
}

/// Sets the system fields of a new object: uid, creationTimestamp, a name
/// from generateName; clears what a client may not set on create. Returns
/// whether the name was generated.
pub fn fill_on_create(obj: &mut Value, namespaced: bool) -> bool {
    let meta = metadata_mut(obj);
    let mut generated = false;
    let has_name = meta
        .get("name")
        .and_then(Value::as_str)
        .is_some_and(|n| !n.is_empty());
    if !has_name {
        if let Some(base) = meta
            .get("generateName")
            .and_then(Value::as_str)
            .filter(|b| !b.is_empty())
        {
            let name = generate_name(base);
            meta.insert("name".into(), Value::String(name));
            generated = true;
        }
    }
    if !namespaced {
        meta.remove("namespace");
    }
    meta.insert(
        "uid".into(),
        Value::String(uuid::Uuid::new_v4().to_string()),
    );
    meta.insert("creationTimestamp".into(), Value::String(now()));
    for field in [
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "resourceVersion",
        "selfLink",
    ] {
        meta.remove(field);
    }
    generated
}

/// Upstream's SimpleNameGenerator: the base (cut to leave room) plus five
/// random characters from an alphabet without vowels or confusable digits.
pub fn generate_name(base: &str) -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    const MAX_NAME_LENGTH: usize = 63;
    const RANDOM_LENGTH: usize = 5;
    let keep = MAX_NAME_LENGTH - RANDOM_LENGTH;
    let mut name: String = base.chars().take(keep).collect();
    let mut rng = rand::rng();
    for _ in 0..RANDOM_LENGTH {
        name.push(ALPHABET[rng.random_range(0..ALPHABET.len())] as char);
    }
    name
}

/// Keeps what an update may not change: uid (when omitted), creation time,
/// deletion timestamp once set.
pub fn carry_over_on_update(new: &mut Value, old: &Value) {
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let meta = metadata_mut(new);
    let uid_missing = meta
        .get("uid")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    if uid_missing {
        if let Some(uid) = old_meta.get("uid") {
            meta.insert("uid".into(), uid.clone());
        }
    }
    for field in [
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
    ] {
        match old_meta.get(field) {
            Some(v) if !v.is_null() => {
                meta.insert(field.into(), v.clone());
            }
            _ => {
                meta.remove(field);
            }
        }
    }
}

/// Metadata validation common to every resource on create (upstream's
/// ValidateObjectMeta with the resource's name rule).
pub fn validate(obj: &Value, namespaced: bool, name_fn: NameValidator) -> Vec<FieldError> {
    validate_object_meta(obj, namespaced, name_fn)
}

/// Metadata validation common to every resource on update.
pub fn validate_update(
    new: &Value,
    old: &Value,
    namespaced: bool,
    name_fn: NameValidator,
) -> Vec<FieldError> {
    let mut errors = validate_object_meta(new, namespaced, name_fn);
    errors.extend(validate_object_meta_update(new, old));
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use apimachinery::validation::name_is_dns_subdomain;

    #[test]
    fn generated_names_keep_the_base_and_add_five_characters() {
        let name = generate_name("web-");
        assert!(name.starts_with("web-"));
        assert_eq!(name.len(), 9);
        let long = generate_name(&"a".repeat(80));
        assert_eq!(long.len(), 63);
    }

    #[test]
    fn create_fills_system_fields_and_clears_client_ones() {
        let mut obj = json!({"metadata": {"generateName": "x-", "resourceVersion": "5",
            "deletionTimestamp": "2020-01-01T00:00:00Z", "namespace": "ns"}});
        assert!(fill_on_create(&mut obj, false));
        assert!(name(&obj).starts_with("x-"));
        assert!(uid(&obj).is_some());
        assert!(obj.pointer("/metadata/creationTimestamp").is_some());
        assert!(resource_version(&obj).is_none());
        assert!(!is_terminating(&obj));
        assert_eq!(namespace(&obj), None);
    }

    #[test]
    fn update_keeps_identity_and_creation_time() {
        let old = json!({"metadata": {"name": "a", "uid": "u1", "creationTimestamp": "t0"}});
        let mut new = json!({"metadata": {"name": "a", "creationTimestamp": "t9"}});
        carry_over_on_update(&mut new, &old);
        assert_eq!(uid(&new), Some("u1"));
        assert_eq!(new["metadata"]["creationTimestamp"], "t0");
        let mut changed = json!({"metadata": {"name": "a", "uid": "u2"}});
        carry_over_on_update(&mut changed, &old);
        let errors = validate_update(&changed, &old, false, name_is_dns_subdomain);
        assert!(
            errors
                .iter()
                .any(|e| e.to_string().contains("metadata.uid")),
            "{errors:?}"
        );
    }
}
