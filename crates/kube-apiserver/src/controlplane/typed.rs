//! Built-in resources are checked against their type definitions from the
//! k8s-openapi crate: a request body is decoded into the Rust type (as
//! upstream decodes into the Go type), which rejects wrongly typed fields and
//! drops unknown ones, and encoded back. The fields that did not survive the
//! round trip are the unknown fields `fieldValidation` reports; quantities
//! come back in canonical form (see [`QuantityFields`]).

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock};

use apimachinery::field_errors::FieldError;
use apimachinery::validation::NameValidator;
use apiserver::registry::table::{RowOrder, TableColumn};
use apiserver::registry::{Decoded, GcPolicy, Strategy, UpdateSubresource};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use super::quantities::QuantityFields;

/// The strategy of a built-in resource: decoding through type `K`, every
/// other behaviour from `inner`.
pub struct Typed<K> {
    inner: Arc<dyn Strategy>,
    /// Where `K` holds quantities, learnt on first decode.
    quantities: OnceLock<Option<QuantityFields>>,
    _kind: PhantomData<fn() -> K>,
}

impl<K> Typed<K> {
    pub fn new(inner: Arc<dyn Strategy>) -> Self {
        Typed {
            inner,
            quantities: OnceLock::new(),
            _kind: PhantomData,
        }
    }
}

/// Paths present (and not null) in `input` but missing from `output`.
pub fn unknown_fields(input: &Value, output: &Value, path: &str, found: &mut Vec<String>) {
    match (input, output) {
        (Value::Object(inp), Value::Object(out)) => {
            for (key, value) in inp {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match out.get(key) {
                    None if !value.is_null() => found.push(child),
                    None => {}
                    Some(out_value) => unknown_fields(value, out_value, &child, found),
                }
            }
        }
        (Value::Array(inp), Value::Array(out)) => {
            for (i, (a, b)) in inp.iter().zip(out).enumerate() {
                unknown_fields(a, b, &format!("{path}[{i}]"), found);
            }
        }
        _ => {}
    }
}

impl<K> Strategy for Typed<K>
where
    K: Serialize + DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
{
    fn decode(&self, obj: Value) -> Result<Decoded, String> {
        let typed: K = serde_json::from_value(obj.clone()).map_err(|e| e.to_string())?;
        let mut object = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
        if let Some(fields) = self.quantities.get_or_init(QuantityFields::of::<K>) {
            fields
                .canonicalize(&mut object)
                .map_err(|e| e.to_string())?;
        }
        let mut unknown = Vec::new();
        unknown_fields(&obj, &object, "", &mut unknown);
        Ok(Decoded {
            object,
            unknown_fields: unknown,
        })
    }

    fn apply_defaults(&self, obj: &mut Value) {
        self.inner.apply_defaults(obj)
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        self.inner.prepare_for_create(obj)
    }
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        self.inner.prepare_for_update(new, old)
    }
    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        self.inner.prepare_for_status_update(new, old)
    }
    fn prepare_for_subresource_update(&self, subresource: &str, new: &mut Value, old: &Value) {
        self.inner
            .prepare_for_subresource_update(subresource, new, old)
    }
    fn update_subresources(&self) -> &'static [UpdateSubresource] {
        self.inner.update_subresources()
    }
    fn name_validator(&self) -> NameValidator {
        self.inner.name_validator()
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        self.inner.validate(obj)
    }
    fn validate_create(&self, obj: &Value) -> Vec<FieldError> {
        self.inner.validate_create(obj)
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.inner.validate_update(new, old)
    }
    fn before_create(&self, obj: &mut Value) -> Result<bool, Vec<FieldError>> {
        self.inner.before_create(obj)
    }
    fn release(&self, obj: &Value) {
        self.inner.release(obj)
    }
    fn canonicalize(&self, obj: &mut Value) {
        self.inner.canonicalize(obj)
    }
    fn allow_create_on_update(&self) -> bool {
        self.inner.allow_create_on_update()
    }
    fn allow_unconditional_update(&self) -> bool {
        self.inner.allow_unconditional_update()
    }
    fn selectable_fields(&self, obj: &Value, fields: &mut BTreeMap<String, String>) {
        self.inner.selectable_fields(obj, fields)
    }
    fn selectable_field_names(&self) -> &'static [&'static str] {
        self.inner.selectable_field_names()
    }
    fn deprecation_warning(&self) -> Option<&str> {
        self.inner.deprecation_warning()
    }
    fn table_columns(&self) -> Vec<TableColumn> {
        self.inner.table_columns()
    }
    fn table_row(&self, obj: &Value) -> Vec<Value> {
        self.inner.table_row(obj)
    }
    fn table_order(&self) -> Option<RowOrder> {
        self.inner.table_order()
    }
    fn undeletable(&self, name: &str) -> Option<&'static str> {
        self.inner.undeletable(name)
    }
    fn prepare_for_delete(&self, obj: &mut Value) -> bool {
        self.inner.prepare_for_delete(obj)
    }
    fn holds_deletion(&self, obj: &Value) -> bool {
        self.inner.holds_deletion(obj)
    }
    fn grace_period(&self, obj: &Value, requested: Option<i64>) -> Option<i64> {
        self.inner.grace_period(obj, requested)
    }
    fn gc_policy(&self) -> GcPolicy {
        self.inner.gc_policy()
    }
    fn returns_deleted_object(&self) -> bool {
        self.inner.returns_deleted_object()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use apiserver::registry::DefaultStrategy;
    use k8s_openapi::api::core::v1::ConfigMap;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_dropped_and_reported() {
        let s = Typed::<ConfigMap>::new(Arc::new(DefaultStrategy));
        let decoded = s
            .decode(json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "a", "bogus": 1}, "data": {"k": "v"}, "extra": true}))
            .expect("decodes");
        assert_eq!(decoded.unknown_fields, vec!["metadata.bogus", "extra"]);
        assert!(decoded.object.get("extra").is_none());
        assert_eq!(decoded.object["data"]["k"], "v");
    }

    #[test]
    fn wrongly_typed_fields_are_errors() {
        let s = Typed::<ConfigMap>::new(Arc::new(DefaultStrategy));
        let err = s
            .decode(json!({"metadata": {"name": "a"}, "data": {"k": 5}}))
            .expect_err("bad type");
        assert!(err.contains("invalid type"), "{err}");
    }
}
