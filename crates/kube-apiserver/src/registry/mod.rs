//! Strategies of the built-in resources (upstream's `pkg/registry/<group>/<resource>`):
//! a data-driven [`ResourceStrategy`] covers the common behaviour (status
//! reset, generation bumps, printer columns, selectable fields); each
//! resource module fills in only what differs.

pub mod admission_policies;
pub mod apps;
pub mod autoscaling;
pub mod binding;
pub mod certificate_approval;
pub mod componentstatus;
pub mod core;
pub mod defaults;
pub mod eviction;
pub mod kubelet_connect;
pub mod pod_defaults;
pub mod pod_resources;
pub mod pod_subresources;
pub mod printers;
pub mod rbac;
pub mod resource_defaults;
pub mod services;
pub mod validating_policies;
pub mod validation;
pub mod webhook_configurations;

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::field_errors::FieldError;
use apimachinery::validation::{name_is_dns_subdomain, NameValidator};
use apiserver::registry::rest::table::{self, RowOrder, TableColumn};
use apiserver::registry::rest::{
    CreateStrategy, DeleteStrategy, GarbageCollectionDeleteStrategy, GcPolicy,
    GracefulDeleteStrategy, Scheme, SelectableFields, TableConvertor, UpdateStrategy,
    UpdateSubresource,
};
use apiserver::registry::store::Strategies;
use serde_json::{json, Value};

type Columns = fn() -> Vec<TableColumn>;
type Row = fn(&Value) -> Vec<Value>;
type Mutate = fn(&mut Value);
type Fields = fn(&Value, &mut BTreeMap<String, String>);
type Validate = fn(&Value) -> Vec<FieldError>;
type ValidateUpdate = fn(&Value, &Value) -> Vec<FieldError>;
type GracePeriod = fn(&Value, Option<i64>) -> Option<i64>;

/// Behaviour of one built-in resource.
#[derive(Clone)]
pub struct ResourceStrategy {
    /// The resource has a status subresource: status is reset on create and
    /// kept on updates of the main resource.
    pub status: bool,
    /// The status given on create is kept instead (Nodes).
    pub status_on_create: bool,
    /// metadata.generation starts at 1 and grows with every spec change.
    pub generation: bool,
    pub defaults: Mutate,
    /// Extra preparation on create (e.g. a pod's initial phase).
    pub on_create: Mutate,
    /// Extra preparation of an update of the main resource (new, old), after
    /// the status and generation rules (e.g. a CSR's spec kept as stored).
    pub on_update: fn(&mut Value, &Value),
    /// Finishes a write to the status or another update subresource
    /// (its name, new, old).
    pub on_subresource_update: fn(&str, &mut Value, &Value),
    pub validate: Validate,
    /// Rules beside `validate` that hold only when the object is created.
    pub validate_create: Validate,
    /// Update rules (new, old) checked beside `validate` of the new object:
    /// immutable fields and allowed transitions.
    pub validate_update: ValidateUpdate,
    /// Rules of a write to the status subresource (new, old), when not
    /// those of an update (`validate` and `validate_update`).
    pub validate_status_update: Option<ValidateUpdate>,
    pub columns: Columns,
    pub row: Row,
    pub field_names: &'static [&'static str],
    pub fields: Fields,
    pub create_on_update: bool,
    pub name: NameValidator,
    /// Finalizers outside metadata keep a deleted object (namespaces'
    /// `spec.finalizers`): then `on_delete` marks it.
    pub holds_deletion: fn(&Value) -> bool,
    pub on_delete: Mutate,
    /// Names never deleted, and why (see [`DeleteStrategy::undeletable`]).
    pub undeletable: fn(&str) -> Option<&'static str>,
    /// Graceful deletion (pods): the grace period of a deleted object.
    pub grace_period: GracePeriod,
    /// What dependents get when no propagation policy is asked for.
    pub gc_policy: GcPolicy,
    /// A delete answers with the deleted object instead of a Status.
    pub returns_deleted_object: bool,
    /// Subresources updated like status (`pods/ephemeralcontainers`, …).
    pub subresources: &'static [UpdateSubresource],
    /// The warning sent with every answer when the version is deprecated.
    pub deprecation: Option<&'static str>,
    /// Normalizes an object before every write (after validation).
    pub canonicalize: Mutate,
    /// The order of a list's Table rows, when not the list's.
    pub row_order: Option<RowOrder>,
}

fn no_op(_: &mut Value) {}
fn deletes_at_once(_: &Value) -> bool {
    false
}
fn no_update_change(_: &mut Value, _: &Value) {}
fn deletable(_: &str) -> Option<&'static str> {
    None
}
fn not_graceful(_: &Value, _: Option<i64>) -> Option<i64> {
    None
}
fn no_fields(_: &Value, _: &mut BTreeMap<String, String>) {}
fn no_errors(_: &Value) -> Vec<FieldError> {
    Vec::new()
}
fn no_update_errors(_: &Value, _: &Value) -> Vec<FieldError> {
    Vec::new()
}

impl Default for ResourceStrategy {
    fn default() -> Self {
        ResourceStrategy {
            status: false,
            status_on_create: false,
            generation: false,
            defaults: no_op,
            on_create: no_op,
            on_update: no_update_change,
            on_subresource_update: |_, _, _| {},
            validate: no_errors,
            validate_create: no_errors,
            validate_update: no_update_errors,
            validate_status_update: None,
            columns: table::default_columns,
            row: table::default_row,
            field_names: &[],
            fields: no_fields,
            create_on_update: false,
            name: name_is_dns_subdomain,
            holds_deletion: deletes_at_once,
            on_delete: no_op,
            undeletable: deletable,
            grace_period: not_graceful,
            gc_policy: GcPolicy::DeleteDependents,
            returns_deleted_object: false,
            subresources: &[],
            deprecation: None,
            canonicalize: no_op,
            row_order: None,
        }
    }
}

impl ResourceStrategy {
    /// A resource with spec and status (most workload types).
    pub fn spec_status() -> Self {
        ResourceStrategy {
            status: true,
            generation: true,
            ..Default::default()
        }
    }

    pub fn printed(mut self, columns: Columns, row: Row) -> Self {
        self.columns = columns;
        self.row = row;
        self
    }

    /// Orders list Tables' rows (`None`: in list order).
    pub fn ordered(mut self, order: Option<RowOrder>) -> Self {
        self.row_order = order;
        self
    }

    /// The store's strategies: every part is this one.
    pub fn into_strategies(self) -> Strategies {
        let (return_deleted_object, deprecation) = (self.returns_deleted_object, self.deprecation);
        let s = Arc::new(self);
        Strategies {
            scheme: s.clone(),
            create: s.clone(),
            update: s.clone(),
            delete: s.clone(),
            graceful_delete: s.clone(),
            garbage_collection: s.clone(),
            return_deleted_object,
            table: s.clone(),
            fields: s,
            deprecation,
            ..Strategies::default()
        }
    }
}

fn spec_of(obj: &Value) -> Value {
    let mut copy = obj.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("status");
        map.remove("metadata");
    }
    copy
}

impl Scheme for ResourceStrategy {
    fn apply_defaults(&self, obj: &mut Value) {
        (self.defaults)(obj)
    }
}

impl CreateStrategy for ResourceStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        if self.status && !self.status_on_create {
            obj["status"] = json!({});
        }
        if self.generation {
            obj["metadata"]["generation"] = json!(1);
        }
        (self.on_create)(obj)
    }

    fn name_validator(&self) -> NameValidator {
        self.name
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        (self.validate)(obj)
    }

    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        let mut errors = (self.validate)(obj);
        errors.extend((self.validate_create)(obj));
        errors
    }

    fn canonicalize(&self, obj: &mut Value) {
        (self.canonicalize)(obj)
    }
}

impl UpdateStrategy for ResourceStrategy {
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if self.status {
            match old.get("status") {
                Some(status) => new["status"] = status.clone(),
                None => {
                    if let Some(map) = new.as_object_mut() {
                        map.remove("status");
                    }
                }
            }
        }
        if self.generation {
            let old_generation = old
                .pointer("/metadata/generation")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            let bump = spec_of(new) != spec_of(old);
            new["metadata"]["generation"] = json!(old_generation + i64::from(bump));
        }
        (self.on_update)(new, old)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errors = (self.validate)(new);
        errors.extend((self.validate_update)(new, old));
        errors
    }

    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        match self.validate_status_update {
            Some(rules) => rules(new, old),
            None => UpdateStrategy::validate_update(self, new, old),
        }
    }

    fn allow_create_on_update(&self) -> bool {
        self.create_on_update
    }

    fn prepare_for_subresource_update(&self, subresource: &str, new: &mut Value, old: &Value) {
        (self.on_subresource_update)(subresource, new, old)
    }

    fn update_subresources(&self) -> &'static [UpdateSubresource] {
        self.subresources
    }
}

impl DeleteStrategy for ResourceStrategy {
    fn undeletable(&self, name: &str) -> Option<&'static str> {
        (self.undeletable)(name)
    }

    fn prepare_for_delete(&self, obj: &mut Value) -> bool {
        let held = (self.holds_deletion)(obj);
        if held {
            (self.on_delete)(obj);
        }
        held
    }

    fn holds_deletion(&self, obj: &Value) -> bool {
        (self.holds_deletion)(obj)
    }
}

impl GracefulDeleteStrategy for ResourceStrategy {
    fn grace_period(&self, obj: &Value, requested: Option<i64>) -> Option<i64> {
        (self.grace_period)(obj, requested)
    }
}

impl GarbageCollectionDeleteStrategy for ResourceStrategy {
    fn gc_policy(&self) -> GcPolicy {
        self.gc_policy
    }
}

impl SelectableFields for ResourceStrategy {
    fn selectable_fields(&self, obj: &Value, fields: &mut BTreeMap<String, String>) {
        (self.fields)(obj, fields)
    }

    fn selectable_field_names(&self) -> &'static [&'static str] {
        self.field_names
    }
}

impl TableConvertor for ResourceStrategy {
    fn table_columns(&self) -> Vec<TableColumn> {
        (self.columns)()
    }

    fn table_row(&self, obj: &Value) -> Vec<Value> {
        (self.row)(obj)
    }

    fn table_order(&self) -> Option<RowOrder> {
        self.row_order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generation_bumps_only_on_spec_change() {
        let s = ResourceStrategy::spec_status();
        let mut obj =
            json!({"metadata": {"name": "a"}, "spec": {"replicas": 1}, "status": {"x": 1}});
        s.prepare_for_create(&mut obj);
        assert_eq!(obj["metadata"]["generation"], 1);
        assert_eq!(obj["status"], json!({}));
        let old = obj.clone();
        let mut same = old.clone();
        same["metadata"]["labels"] = json!({"a": "b"});
        s.prepare_for_update(&mut same, &old);
        assert_eq!(same["metadata"]["generation"], 1);
        let mut changed = old.clone();
        changed["spec"]["replicas"] = json!(3);
        changed["status"] = json!({"replicas": 9});
        s.prepare_for_update(&mut changed, &old);
        assert_eq!(changed["metadata"]["generation"], 2);
        assert_eq!(changed["status"], json!({}));
    }

    #[test]
    fn status_writes_use_their_own_rules_when_given() {
        fn refuse(_: &Value) -> Vec<FieldError> {
            vec![FieldError::required(
                &apimachinery::field_errors::Path::new("spec"),
                "",
            )]
        }
        let mut s = ResourceStrategy {
            validate: refuse,
            ..ResourceStrategy::spec_status()
        };
        let obj = json!({"spec": {}});
        assert_eq!(
            UpdateStrategy::validate_status_update(&s, &obj, &obj).len(),
            1
        );
        s.validate_status_update = Some(no_update_errors);
        assert!(UpdateStrategy::validate_status_update(&s, &obj, &obj).is_empty());
    }
}
