//! What a resource does on update (upstream's `rest.RESTUpdateStrategy`
//! in `registry/rest/update.go`: `PrepareForUpdate`, `ValidateUpdate`,
//! `AllowCreateOnUpdate`, `AllowUnconditionalUpdate`), and for writes
//! through `status` and other update subresources (upstream's status
//! strategies, each a `RESTUpdateStrategy` of its own).

use apimachinery::field_errors::FieldError;
use serde_json::Value;

pub trait UpdateStrategy: Send + Sync + 'static {
    /// Carries over fields the user may not change on update (status on the
    /// main resource, generation bump on spec change, …).
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// Type-specific validation of an update (metadata is validated by the
    /// store for every resource).
    fn validate_update(&self, _new: &Value, _old: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Whether PUT of a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether PUT without metadata.resourceVersion is allowed.
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// Like `prepare_for_update`, for writes to the `status` subresource:
    /// only status may change.
    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        let status = new.get("status").cloned();
        let mut merged = old.clone();
        match status {
            Some(status) => merged["status"] = status,
            None => {
                if let Some(map) = merged.as_object_mut() {
                    map.remove("status");
                }
            }
        }
        // Metadata changes other than labels/annotations are ignored, as upstream.
        for field in ["labels", "annotations"] {
            if let Some(v) = new.pointer(&format!("/metadata/{field}")) {
                merged["metadata"][field] = v.clone();
            }
        }
        *new = merged;
    }

    /// Finishes a write to the `status` subresource or another update
    /// subresource (`subresource` names it) once only its fields were
    /// taken: e.g. timestamps the server keeps.
    fn prepare_for_subresource_update(&self, _subresource: &str, _new: &mut Value, _old: &Value) {}

    /// Type-specific validation of a write to the `status` subresource
    /// (custom resources check only the status against their schema).
    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.validate_update(new, old)
    }

    /// Subresources written like `status`, each changing only its own
    /// fields (upstream's `pods/ephemeralcontainers`, `namespaces/finalize`).
    fn update_subresources(&self) -> &'static [UpdateSubresource] {
        &[]
    }
}

/// A subresource an update goes through that may change only some fields
/// of the object: the rest is kept as stored.
#[derive(Debug, Clone, Copy)]
pub struct UpdateSubresource {
    pub name: &'static str,
    /// The fields it writes, as JSON pointers; a `*` segment stands for
    /// every item of an array, matched by position.
    pub fields: &'static [&'static str],
    /// Its rules beyond the resource's update validation (new, old).
    pub validate: fn(&Value, &Value) -> Vec<FieldError>,
    /// The verbs discovery lists for it.
    pub verbs: &'static [&'static str],
}

impl UpdateSubresource {
    /// Turns `new` into the stored object with only this subresource's
    /// fields taken from `new`.
    pub fn prepare(&self, new: &mut Value, old: &Value) {
        let mut merged = old.clone();
        for field in self.fields {
            let segments: Vec<&str> = field.split('/').skip(1).collect();
            copy_field(new, &mut merged, &segments);
        }
        *new = merged;
    }
}

/// Copies the value at `path` from `from` into `to`, creating the objects
/// on the way and removing what `from` lacks.
fn copy_field(from: &Value, to: &mut Value, path: &[&str]) {
    let Some((first, rest)) = path.split_first() else {
        *to = from.clone();
        return;
    };
    if *first == "*" {
        if let (Some(items), Some(targets)) = (from.as_array(), to.as_array_mut()) {
            for (item, target) in items.iter().zip(targets.iter_mut()) {
                copy_field(item, target, rest);
            }
        }
        return;
    }
    match from.get(*first) {
        Some(value) => {
            if !to.is_object() {
                *to = Value::Object(Default::default());
            }
            if let Some(map) = to.as_object_mut() {
                let slot = map.entry(first.to_string()).or_insert(Value::Null);
                copy_field(value, slot, rest);
            }
        }
        None if rest.is_empty() => {
            if let Some(map) = to.as_object_mut() {
                map.remove(*first);
            }
        }
        None => {}
    }
}

#[cfg(test)]
mod update_subresource_tests {
    use serde_json::json;

    use super::*;

    fn none(_: &Value, _: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    #[test]
    fn only_the_subresource_fields_change() {
        let sub = UpdateSubresource {
            name: "resize",
            fields: &["/spec/containers/*/resources", "/spec/ephemeralContainers"],
            validate: none,
            verbs: &["update"],
        };
        let old = json!({"metadata": {"name": "p", "labels": {"a": "1"}},
            "spec": {"nodeName": "n1", "containers": [
                {"name": "c", "image": "old", "resources": {"limits": {"cpu": "1"}}},
                {"name": "d", "image": "old"}]}});
        let mut new = json!({"metadata": {"name": "p", "labels": {"b": "2"}},
            "spec": {"nodeName": "n2", "containers": [
                {"name": "c", "image": "new", "resources": {"limits": {"cpu": "2"}}},
                {"name": "d", "image": "new", "resources": {"requests": {"memory": "1Gi"}}}],
                "ephemeralContainers": [{"name": "debug", "image": "busybox"}]}});
        sub.prepare(&mut new, &old);
        assert_eq!(
            new,
            json!({"metadata": {"name": "p", "labels": {"a": "1"}},
                "spec": {"nodeName": "n1", "containers": [
                    {"name": "c", "image": "old", "resources": {"limits": {"cpu": "2"}}},
                    {"name": "d", "image": "old", "resources": {"requests": {"memory": "1Gi"}}}],
                    "ephemeralContainers": [{"name": "debug", "image": "busybox"}]}})
        );
        // A field the request drops is dropped.
        let mut cleared = json!({"spec": {"containers": [{"name": "c"}, {"name": "d"}]}});
        sub.prepare(&mut cleared, &old);
        assert_eq!(cleared["spec"]["containers"][0].get("resources"), None);
        assert_eq!(cleared["spec"]["nodeName"], "n1");
    }
}
