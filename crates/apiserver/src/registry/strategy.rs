//! Per-resource behaviour plugged into the generic registry store
//! (upstream's `RESTCreateStrategy`/`RESTUpdateStrategy`/… and table
//! convertors). The generic store implements every verb once; a resource
//! only says how its objects are defaulted, prepared, validated and printed.

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::field_errors::FieldError;
use apimachinery::validation::{name_is_dns_subdomain, NameValidator};
use serde_json::Value;
use structured_merge::schema::Schema;

use super::deletion::GcPolicy;
use super::table::{self, TableColumn};

/// A request body turned into an object of the resource's type.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub object: Value,
    /// Paths of fields the type does not have (dropped from `object`), for
    /// `fieldValidation` warnings or errors.
    pub unknown_fields: Vec<String>,
}

pub trait Strategy: Send + Sync + 'static {
    /// Checks a request body against the resource's type, dropping unknown
    /// fields (upstream decodes into the Go type). `Err` is a decoding error
    /// message (answered with 400).
    fn decode(&self, obj: Value) -> Result<Decoded, String> {
        Ok(Decoded {
            object: obj,
            unknown_fields: Vec::new(),
        })
    }

    /// Fills upstream's defaults (done when decoding a request body).
    fn apply_defaults(&self, _obj: &mut Value) {}

    /// Clears or sets fields the user may not set on create (status reset,
    /// generation = 1, …).
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// Carries over fields the user may not change on update (status on the
    /// main resource, generation bump on spec change, …).
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

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

    /// Why the object named `name` may never be deleted, if it may not
    /// (upstream REST `Delete` overrides, e.g. the system PriorityClasses):
    /// a DELETE of it answers 403 with this reason, before anything else is
    /// checked. Collection deletes are not affected, as upstream.
    fn undeletable(&self, _name: &str) -> Option<&'static str> {
        None
    }

    /// Called when an object is deleted: a resource that must clean up
    /// before its objects go (CRDs remove their custom resources) adds its
    /// finalizer here, so the object is marked for deletion instead of
    /// removed. Returns whether it changed the object.
    fn prepare_for_delete(&self, _obj: &mut Value) -> bool {
        false
    }

    /// Whether finalizers kept outside `metadata.finalizers` (a namespace's
    /// `spec.finalizers`) still hold an object marked for deletion.
    fn holds_deletion(&self, _obj: &Value) -> bool {
        false
    }

    /// Graceful deletion (upstream's `CheckGracefulDelete`): the grace
    /// period, in seconds, of an object deleted with `requested`
    /// (`DeleteOptions.gracePeriodSeconds`); `None` for resources whose
    /// objects are deleted at once (all but pods).
    fn grace_period(&self, _obj: &Value, _requested: Option<i64>) -> Option<i64> {
        None
    }

    /// What happens to dependents when an object is deleted without a
    /// propagation policy (upstream's `DefaultGarbageCollectionPolicy` for
    /// the served group version).
    fn gc_policy(&self) -> GcPolicy {
        GcPolicy::DeleteDependents
    }

    /// Whether the items of a list response keep `apiVersion` and `kind`:
    /// upstream's typed lists leave them to the list, custom resources'
    /// (unstructured) lists keep them.
    fn list_items_keep_type_meta(&self) -> bool {
        false
    }

    /// Whether a delete that removed the object answers with the object
    /// rather than a success Status (upstream's `ReturnDeletedObject`,
    /// set for pods, services, service accounts and a few others).
    fn returns_deleted_object(&self) -> bool {
        false
    }

    /// Whether strategic merge patch applies: it needs the type's patch
    /// metadata, which custom resources do not have (they answer 415).
    fn supports_strategic_merge(&self) -> bool {
        true
    }

    /// The structured-merge schema of the resource and the name of its
    /// root type, for server-side apply and managed fields. `None` (the
    /// default) uses the built-in schema of the kind, or reads objects as
    /// deduced when there is none; custom resources answer with their
    /// version's schema.
    fn type_schema(&self) -> Option<Arc<(Schema, String)>> {
        None
    }

    /// How names of this resource are validated (most resources: a DNS
    /// subdomain; namespaces: a DNS label).
    fn name_validator(&self) -> NameValidator {
        name_is_dns_subdomain
    }

    /// Type-specific validation of a new object (metadata is validated by the
    /// store for every resource).
    fn validate(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Validation of an object being created: `validate` plus rules that
    /// hold only at creation (a pod's ephemeral containers).
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        self.validate(obj)
    }

    /// Type-specific validation of an update.
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate(new)
    }

    /// Subresources written like `status`, each changing only its own
    /// fields (upstream's `pods/ephemeralcontainers`, `namespaces/finalize`).
    fn update_subresources(&self) -> &'static [UpdateSubresource] {
        &[]
    }

    /// Type-specific validation of a write to the `status` subresource
    /// (custom resources check only the status against their schema).
    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.validate_update(new, old)
    }

    /// Takes what a new object reserves outside storage (e.g. a Service's
    /// ClusterIP and NodePorts), after validation passed. Returns whether
    /// anything was reserved; errors are field errors answered with 422.
    fn before_create(&self, _obj: &mut Value) -> Result<bool, Vec<FieldError>> {
        Ok(false)
    }

    /// Gives back what `before_create` reserved: the object was not stored
    /// (dry run or failure) or has been deleted.
    fn release(&self, _obj: &Value) {}

    /// Normalizes an object before it is stored.
    fn canonicalize(&self, _obj: &mut Value) {}

    /// Whether PUT of a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether PUT without metadata.resourceVersion is allowed.
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// Field values a field selector may match, beyond metadata.name and
    /// metadata.namespace (e.g. pods' spec.nodeName and status.phase).
    fn selectable_fields(&self, _obj: &Value, _fields: &mut BTreeMap<String, String>) {}

    /// The names of the extra selectable fields, to reject unknown ones.
    fn selectable_field_names(&self) -> &'static [&'static str] {
        &[]
    }

    /// Whether a field selector may name `field` (beyond metadata.name and
    /// metadata.namespace). Strategies whose fields are only known at run
    /// time (custom resources) answer here instead of by name list.
    fn is_selectable_field(&self, field: &str) -> bool {
        self.selectable_field_names().contains(&field)
    }

    /// Where the `scale` subresource reads and writes replicas.
    fn scale_paths(&self) -> ScalePaths {
        ScalePaths::default()
    }

    /// The `Warning` sent with every answer about the resource when its
    /// version is deprecated (upstream's `APILifecycleDeprecated` types,
    /// e.g. "v1 Endpoints is deprecated in v1.33+; use …").
    fn deprecation_warning(&self) -> Option<&str> {
        None
    }

    /// Columns of `kubectl get` (Table output). The default is upstream's
    /// default table: name and creation time.
    fn table_columns(&self) -> Vec<TableColumn> {
        table::default_columns()
    }

    /// The Table's column definitions; by default `table_columns` as JSON.
    /// Strategies whose columns are only known at run time answer here.
    fn table_column_definitions(&self) -> Vec<Value> {
        self.table_columns()
            .iter()
            .map(TableColumn::to_json)
            .collect()
    }

    /// One row's cells for `table_columns`.
    fn table_row(&self, obj: &Value) -> Vec<Value> {
        table::default_row(obj)
    }

    /// How a list's Table rows are ordered; `None` (most kinds) keeps the
    /// list's order (upstream sorts FlowSchemas by matching precedence).
    fn table_order(&self) -> Option<table::RowOrder> {
        None
    }
}

/// Where a resource keeps what its `scale` subresource shows, as JSON
/// pointers (custom resources name them in their definition).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    /// `None`: the label selector at `spec.selector` (workloads); `Some`:
    /// the pointer of a string selector, empty when the resource has none.
    pub label_selector: Option<String>,
}

impl Default for ScalePaths {
    fn default() -> Self {
        ScalePaths {
            spec_replicas: "/spec/replicas".into(),
            status_replicas: "/status/replicas".into(),
            label_selector: None,
        }
    }
}

/// The strategy of a resource with no behaviour of its own.
pub struct DefaultStrategy;

impl Strategy for DefaultStrategy {}

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
