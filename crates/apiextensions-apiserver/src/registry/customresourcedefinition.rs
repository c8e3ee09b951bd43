//! The CustomResourceDefinition resource's own behaviour beyond the typed
//! built-in strategy (upstream's `registry/customresourcedefinition`):
//! v1 defaults, preparation and validation from the apiextensions library
//! (`status.storedVersions` records every storage version), rules compiled
//! at creation, and a delete that first adds the cleanup finalizer and the
//! Terminating condition so the custom resources go before the definition.

use std::sync::Arc;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::NameValidator;
use apiserver::admission::RequestContext;
use apiserver::registry::object_meta;
use apiserver::registry::rest::{CreateStrategy, Decoded, DeleteStrategy, Scheme, UpdateStrategy};
use apiserver::registry::store::Strategies;
use serde_json::{json, Value};

use crate::apis::helpers::{self, Condition, TERMINATING};

/// The finalizer that holds a deleted CRD until its resources are gone.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The CRD's strategies as the apiextensions server serves it, over the
/// typed built-in ones (`inner`: decoding, table, field selectors).
pub fn strategies(inner: Strategies) -> Strategies {
    let s = Arc::new(CrdStrategy {
        inner: inner.clone(),
    });
    Strategies {
        scheme: s.clone(),
        create: s.clone(),
        update: s.clone(),
        delete: s,
        ..inner
    }
}

/// The CRD's scheme, create, update and delete strategies over the
/// built-in ones (`inner`); its table and fields are the built-in ones.
struct CrdStrategy {
    inner: Strategies,
}

/// Adds warnings to the response of the request being served (none for
/// the server's own writes).
pub fn warn(messages: Vec<String>) {
    if let Some(request) = RequestContext::current() {
        for message in messages {
            request.add_warning(message);
        }
    }
}

/// Compile errors (and cost budget violations) of every version's
/// `x-kubernetes-validations` rules. When every version has the same schema
/// upstream validates it once, as `spec.validation`, and reports it there.
fn rule_errors(crd: &Value) -> Vec<FieldError> {
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    let schemas: Vec<Option<&Value>> = versions
        .into_iter()
        .flatten()
        .map(|v| v.pointer("/schema/openAPIV3Schema"))
        .collect();
    if let [Some(first), rest @ ..] = schemas.as_slice() {
        if rest.iter().all(|s| *s == Some(*first)) {
            return kube_cel::RuleSet::compile(first).err().unwrap_or_default();
        }
    }
    let mut errors = Vec::new();
    for (i, schema) in schemas.into_iter().enumerate() {
        let Some(schema) = schema else {
            continue;
        };
        let path = Path::new("spec")
            .child("versions")
            .index(i)
            .child("schema")
            .child("openAPIV3Schema");
        if let Err(e) = kube_cel::RuleSet::compile_at(schema, &path) {
            errors.extend(e);
        }
    }
    errors
}

impl Scheme for CrdStrategy {
    fn decode(&self, obj: Value) -> Result<Decoded, String> {
        self.inner.scheme.decode(obj)
    }
    fn apply_defaults(&self, obj: &mut Value) {
        self.inner.scheme.apply_defaults(obj);
        ::apiextensions::apply_crd_defaults(obj);
    }
}

impl CreateStrategy for CrdStrategy {
    fn prepare_for_create(&self, obj: &mut Value) {
        self.inner.create.prepare_for_create(obj);
        ::apiextensions::prepare_for_create(obj);
    }
    fn name_validator(&self) -> NameValidator {
        self.inner.create.name_validator()
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        // The store checks metadata itself; the library repeats those checks.
        let generic = object_meta::validate(obj, false, self.name_validator());
        let mut errors = self.inner.create.validate(obj);
        errors.extend(
            ::apiextensions::validate_crd(obj)
                .into_iter()
                .filter(|e| !generic.contains(e)),
        );
        if errors.is_empty() {
            errors.extend(rule_errors(obj));
        }
        if errors.is_empty() {
            warn(::apiextensions::warnings_on_create(obj));
        }
        errors
    }
    fn canonicalize(&self, obj: &mut Value) {
        self.inner.create.canonicalize(obj)
    }
}

impl UpdateStrategy for CrdStrategy {
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.inner.update.prepare_for_update(new, old);
        ::apiextensions::prepare_for_update(new, old);
    }
    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        self.inner.update.prepare_for_status_update(new, old)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let generic = object_meta::validate_update(new, old, false, self.name_validator());
        let mut errors = self.inner.update.validate_update(new, old);
        errors.extend(
            ::apiextensions::validate_crd_update(new, old)
                .into_iter()
                .filter(|e| !generic.contains(e)),
        );
        if errors.is_empty() {
            errors.extend(rule_errors(new));
        }
        if errors.is_empty() {
            warn(::apiextensions::warnings_on_update(new, old));
        }
        errors
    }
}

impl DeleteStrategy for CrdStrategy {
    fn prepare_for_delete(&self, obj: &mut Value) -> bool {
        if obj
            .pointer("/metadata/deletionTimestamp")
            .is_some_and(|t| !t.is_null())
        {
            return false;
        }
        let meta = object_meta::metadata_mut(obj);
        let finalizers = meta.entry("finalizers").or_insert(json!([]));
        if !finalizers.is_array() {
            *finalizers = json!([]);
        }
        if let Some(list) = finalizers.as_array_mut() {
            if !list.iter().any(|f| f == CLEANUP_FINALIZER) {
                list.push(json!(CLEANUP_FINALIZER));
            }
        }
        helpers::set(
            obj,
            &Condition::new(
                TERMINATING,
                "True",
                "InstanceDeletionPending",
                "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
            ),
        );
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn invalid_crds_and_rules_are_refused() {
        let s = strategies(Strategies::default());
        let mut crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                        "type": "object", "x-kubernetes-validations": [{"rule": "self.size > 0"}],
                        "properties": {"size": {"type": "integer"}}}}}}}]}});
        s.create.prepare_for_create(&mut crd);
        let errors = s.create.validate(&crd);
        assert!(errors.is_empty(), "{errors:?}");
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["x-kubernetes-validations"][0]["rule"] = json!("self.nope > 0");
        let errors = s.create.validate(&crd);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0]
                .to_string()
                .starts_with("spec.validation.openAPIV3Schema.properties[spec]"),
            "{}",
            errors[0]
        );
        crd["metadata"]["name"] = json!("wrong.example.com");
        assert!(!s.create.validate(&crd).is_empty());
    }

    #[test]
    fn storage_versions_are_recorded_and_delete_adds_the_finalizer() {
        let s = strategies(Strategies::default());
        let mut crd = json!({"metadata": {"name": "widgets.example.com"},
            "spec": {"versions": [{"name": "v1", "storage": true}]}});
        s.create.prepare_for_create(&mut crd);
        assert_eq!(crd["status"]["storedVersions"], json!(["v1"]));
        assert!(s.delete.prepare_for_delete(&mut crd));
        assert_eq!(crd["metadata"]["finalizers"], json!([CLEANUP_FINALIZER]));
        assert_eq!(
            crd["status"]["conditions"][0]["reason"],
            "InstanceDeletionPending"
        );
        crd["metadata"]["deletionTimestamp"] = json!("2020-01-01T00:00:00Z");
        assert!(!s.delete.prepare_for_delete(&mut crd));
    }
}
