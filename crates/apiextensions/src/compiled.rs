//! A version's schema prepared once for serving custom resources:
//! validation, pruning and defaulting as upstream's custom resource
//! handler applies them.

use apimachinery::{FieldError, Path};
use serde_json::Value;
use structured_merge::schema::Schema;

use crate::openapi::{self, Patterns};
use crate::props::Props;
use crate::{defaulting, embedded, listtype, objectmeta, prune, smd, structural};

/// The OpenAPI v3 schema of one served version, decoded and with its
/// patterns compiled.
#[derive(Debug, Clone)]
pub struct CompiledSchema {
    schema: Props,
    patterns: Patterns,
}

impl CompiledSchema {
    /// Prepares `open_api_v3_schema` (a version's `schema.openAPIV3Schema`).
    /// Fails with the structural schema errors when it is not structural
    /// (CRD validation refuses such schemas before they are served).
    pub fn new(open_api_v3_schema: &Value) -> Result<CompiledSchema, Vec<FieldError>> {
        let schema = Props::from_value(open_api_v3_schema);
        let errs = structural::validate_structural(&Path::new("openAPIV3Schema"), &schema);
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(CompiledSchema::from_props(schema))
    }

    /// Wraps a decoded schema without the structural checks.
    pub(crate) fn from_props(schema: Props) -> CompiledSchema {
        let patterns = Patterns::collect(&schema);
        CompiledSchema { schema, patterns }
    }

    /// The decoded schema.
    pub fn props(&self) -> &Props {
        &self.schema
    }

    /// Validates a custom resource as upstream's strategy does with the
    /// schema: OpenAPI v3 validation (errors named by their dotted path,
    /// composition failures under `<nil>`), embedded resources' type and
    /// object meta, and the uniqueness of list-type set items and map keys.
    /// Object metadata at the root is not checked here.
    pub fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = openapi::validate(&self.schema, &self.patterns, obj, None);
        errs.extend(embedded::validate(None, &self.schema, obj));
        if let Value::Object(map) = obj {
            errs.extend(listtype::validate(None, &self.schema, map));
        }
        errs
    }

    /// Validates an update as upstream's strategy does: the OpenAPI
    /// validation ratchets (values unchanged from `old` keep no errors),
    /// embedded resources are checked, and list uniqueness only when the
    /// old object had no such violation.
    pub fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = openapi::validate_update(&self.schema, &self.patterns, new, old, None);
        errs.extend(embedded::validate(None, &self.schema, new));
        if let (Value::Object(new_map), Value::Object(old_map)) = (new, old) {
            if listtype::validate(None, &self.schema, old_map).is_empty() {
                errs.extend(listtype::validate(None, &self.schema, new_map));
            }
        }
        errs
    }

    /// Validates a write to the status subresource: only `status`, against
    /// the schema of the `status` property, ratcheted against the old
    /// status, with errors under `status` (messages name the path inside
    /// status, as upstream's).
    pub fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let (Some(status), Some(schema)) =
            (new.get("status"), self.schema.properties.get("status"))
        else {
            return Vec::new();
        };
        let base = Path::new("status");
        match old.get("status") {
            Some(old_status) => {
                openapi::validate_update(schema, &self.patterns, status, old_status, Some(&base))
            }
            None => openapi::validate(schema, &self.patterns, status, Some(&base)),
        }
    }

    /// Validates only against the OpenAPI schema, reporting under `base`.
    pub fn validate_value(&self, value: &Value, base: Option<&Path>) -> Vec<FieldError> {
        openapi::validate(&self.schema, &self.patterns, value, base)
    }

    /// Decodes a custom resource as upstream's handler does before
    /// defaulting: the resource's `metadata` keeps only well-formed
    /// ObjectMeta fields, fields the schema does not specify are pruned
    /// (`apiVersion`, `kind`, `metadata` kept), nulls of non-nullable
    /// fields without a default are dropped, and embedded resources get the
    /// same metadata treatment (their `apiVersion`/`kind` kept only as
    /// strings). Returns the unknown fields' paths for `fieldValidation`, in
    /// upstream's order: root metadata (`metadata.foo`), pruned fields
    /// sorted (`spec.foo`, `spec.items[0].bar`), embedded metadata sorted.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        let mut unknown = objectmeta::coerce_root(obj);
        unknown.extend(prune::prune(obj, &self.schema, true));
        defaulting::prune_non_nullable_nulls(obj, Some(&self.schema));
        unknown.extend(objectmeta::coerce_embedded(obj, &self.schema));
        unknown
    }

    /// Applies schema defaults: missing fields and nulls of non-nullable
    /// fields get their `default`, recursively.
    pub fn apply_defaults(&self, obj: &mut Value) {
        defaulting::apply(obj, &self.schema);
    }

    /// The structured-merge schema of the resource for server-side apply
    /// and strategic merge patch, and the name of its root type
    /// ([`crate::model_name`] of the group, version and kind).
    pub fn structured(&self, group: &str, version: &str, kind: &str) -> (Schema, String) {
        let root = smd::model_name(group, version, kind);
        (smd::structured(&self.schema, &root), root)
    }
}

/// The messages upstream uses for pruned fields under `fieldValidation`
/// (`unknown field "spec.foo"`).
pub fn unknown_field_messages(paths: &[String]) -> Vec<String> {
    paths
        .iter()
        .map(|p| format!("unknown field \"{p}\""))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn compiled() -> CompiledSchema {
        let schema = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "default": 1, "minimum": 0},
                "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
            }}
        }});
        match CompiledSchema::new(&schema) {
            Ok(c) => c,
            Err(errs) => panic!("schema refused: {errs:?}"),
        }
    }

    #[test]
    fn non_structural_schema_is_refused() {
        let errs = CompiledSchema::new(&json!({"properties": {"a": {}}}))
            .err()
            .unwrap_or_default();
        assert_eq!(errs.len(), 2);
        assert_eq!(
            errs[1].to_string(),
            "openAPIV3Schema.type: Required value: must not be empty at the root"
        );
    }

    #[test]
    fn prune_default_validate_round() {
        let c = compiled();
        let mut obj = json!({"apiVersion": "a.io/v1", "kind": "K", "metadata": {"name": "x", "colour": 1},
                             "spec": {"bogus": true, "tags": ["a", "a"]}});
        let unknown = c.prune(&mut obj);
        assert_eq!(
            unknown_field_messages(&unknown),
            vec![
                "unknown field \"metadata.colour\"",
                "unknown field \"spec.bogus\""
            ]
        );
        c.apply_defaults(&mut obj);
        assert_eq!(obj["spec"]["replicas"], json!(1));
        let errs: Vec<String> = c.validate(&obj).iter().map(|e| e.to_string()).collect();
        assert_eq!(errs, vec![r#"spec.tags[1]: Duplicate value: "a""#]);
    }

    #[test]
    fn updates_ratchet_and_status_is_validated_alone() {
        let c = compiled();
        let old = json!({"spec": {"replicas": -1, "tags": ["a", "a"]}});
        assert!(c.validate_update(&old, &old).is_empty());
        let errs: Vec<String> = c
            .validate_update(&json!({"spec": {"replicas": -2, "tags": ["a", "a"]}}), &old)
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            errs,
            vec!["spec.replicas: Invalid value: -2: spec.replicas in body should be greater than or equal to 0"]
        );

        let schema = json!({"type": "object", "properties": {
            "status": {"type": "object", "properties": {"ready": {"type": "integer"}}}}});
        let c = CompiledSchema::new(&schema).unwrap_or_else(|e| panic!("{e:?}"));
        let errs: Vec<String> = c
            .validate_status_update(&json!({"status": {"ready": "yes"}}), &json!({}))
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            errs,
            vec![
                r#"status.ready: Invalid value: "string": ready in body must be of type integer: "string""#
            ]
        );
    }

    #[test]
    fn validation_reports_bounds() {
        let c = compiled();
        let errs: Vec<String> = c
            .validate(&json!({"spec": {"replicas": -1}}))
            .iter()
            .map(|e| e.to_string())
            .collect();
        assert_eq!(
            errs,
            vec!["spec.replicas: Invalid value: -1: spec.replicas in body should be greater than or equal to 0"]
        );
    }
}
