//! The strategy of one served version of a custom resource (upstream's
//! `registry/customresource` strategy): status and scale subresources,
//! generation bumps, selectable fields and printer columns, with the
//! version's schema deciding pruning, defaulting and validation.

pub mod codec;
pub mod tableconvertor;

use std::collections::BTreeMap;
use std::sync::Arc;

use ::apiextensions::CompiledSchema;
use apimachinery::field_errors::FieldError;
use apiserver::registry::rest::{
    CreateStrategy, Decoded, Scheme, SelectableFields, TableConvertor, UpdateStrategy,
};
use apiserver::registry::store::{ScalePaths, Strategies};
use kube_cel::RuleSet;
use serde_json::{json, Value};
use structured_merge::schema::Schema;

use crate::registry::customresourcedefinition::warn;
use client_go::util::jsonpath::JsonPath;
use tableconvertor::Printer;

/// A version's schema: OpenAPI validation, pruning and defaulting, and
/// its `x-kubernetes-validations` rules.
pub struct VersionSchema {
    pub compiled: CompiledSchema,
    /// `None` when the schema has no rules.
    pub rules: Option<RuleSet>,
    /// Whether any `default` is declared (reads are defaulted only then).
    has_defaults: bool,
}

/// Whether a schema declares a default anywhere.
fn declares_default(schema: &Value) -> bool {
    match schema {
        Value::Object(map) => map.contains_key("default") || map.values().any(declares_default),
        Value::Array(items) => items.iter().any(declares_default),
        _ => false,
    }
}

impl VersionSchema {
    /// Compiles a version's `openAPIV3Schema`; `None` when it cannot be
    /// served with validation (not structural, or rules that do not
    /// compile: CRD validation refuses both).
    pub fn new(schema: &Value) -> Option<Self> {
        let compiled = CompiledSchema::new(schema).ok()?;
        let rules = RuleSet::compile(schema).ok()?;
        Some(VersionSchema {
            compiled,
            rules: (!rules.is_empty()).then_some(rules),
            has_defaults: declares_default(schema),
        })
    }

    pub fn has_defaults(&self) -> bool {
        self.has_defaults
    }

    /// The object with defaults applied, `None` when they change nothing.
    pub fn defaulted(&self, obj: &Value) -> Option<Value> {
        let mut copy = obj.clone();
        self.compiled.apply_defaults(&mut copy);
        (copy != *obj).then_some(copy)
    }

    /// Schema validation (ratcheted against `old` on update) and rules.
    fn validate(&self, new: &Value, old: Option<&Value>) -> Vec<FieldError> {
        let mut errors = match old {
            Some(old) => self.compiled.validate_update(new, old),
            None => self.compiled.validate(new),
        };
        errors.extend(self.rules(new, old));
        errors
    }

    fn rules(&self, new: &Value, old: Option<&Value>) -> Vec<FieldError> {
        self.rules
            .as_ref()
            .map(|r| r.validate(new, old))
            .unwrap_or_default()
    }
}

/// The served kind, which objects' `apiVersion` and `kind` must name.
pub struct ServedKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// The scale subresource as the CRD declares it (`.spec.replicas` paths).
pub struct ScaleFields {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// `.spec.replicas` as the JSON pointer `/spec/replicas`.
pub fn pointer(path: &str) -> String {
    path.split('.')
        .filter(|s| !s.is_empty())
        .map(|s| format!("/{}", s.replace('~', "~0").replace('/', "~1")))
        .collect()
}

/// What a custom resource version's strategy is built from.
pub struct CustomResourceStrategy {
    pub served: ServedKind,
    /// `None`: the version has no usable schema; objects are kept as sent.
    pub schema: Option<Arc<VersionSchema>>,
    /// The version's structured-merge schema and root type name for
    /// server-side apply, built once from `schema` (`None` without one).
    pub type_schema: Option<Arc<(Schema, String)>>,
    /// Whether the version has the status subresource.
    pub status: bool,
    /// The scale subresource, when the version has one.
    pub scale: Option<ScaleFields>,
    pub printer: Printer,
    /// `selectableFields`: the field name (path without the leading dot)
    /// and how to read it.
    pub selectable: Vec<(String, JsonPath)>,
}

impl CustomResourceStrategy {
    /// The store's strategies: a custom resource is never deleted
    /// gracefully and its dependents go in the background.
    pub fn into_strategies(self) -> Strategies {
        let scale = self.scale_paths();
        let s = Arc::new(self);
        Strategies {
            scheme: s.clone(),
            create: s.clone(),
            update: s.clone(),
            table: s.clone(),
            fields: s,
            scale,
            ..Strategies::default()
        }
    }

    /// Where the scale subresource reads and writes replicas.
    fn scale_paths(&self) -> ScalePaths {
        match &self.scale {
            Some(s) => ScalePaths {
                spec_replicas: pointer(&s.spec_replicas),
                status_replicas: pointer(&s.status_replicas),
                label_selector: Some(s.label_selector.as_deref().map(pointer).unwrap_or_default()),
            },
            None => ScalePaths::default(),
        }
    }

    fn type_meta(&self, obj: &Value) -> Vec<FieldError> {
        let k = &self.served;
        ::apiextensions::validate_type_meta(obj, &k.group, &k.version, &k.kind)
    }

    /// The replicas (and selector) the scale subresource reads must be
    /// well formed; `spec` false checks only the status ones.
    fn scale_errors(&self, obj: &Value, spec: bool) -> Vec<FieldError> {
        let Some(scale) = &self.scale else {
            return Vec::new();
        };
        let mut errors = Vec::new();
        if spec {
            errors.extend(::apiextensions::validate_scale_spec(
                obj,
                &scale.spec_replicas,
            ));
        }
        errors.extend(::apiextensions::validate_scale_status(
            obj,
            &scale.status_replicas,
            scale.label_selector.as_deref(),
        ));
        errors
    }
}

fn generation(obj: &Value) -> i64 {
    obj.pointer("/metadata/generation")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn set_generation(obj: &mut Value, generation: i64) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("generation".into(), json!(generation));
    }
}

/// Whether anything besides metadata differs.
fn non_metadata_changed(new: &Value, old: &Value) -> bool {
    let (Some(new), Some(old)) = (new.as_object(), old.as_object()) else {
        return new != old;
    };
    let differs = |a: &serde_json::Map<String, Value>, b: &serde_json::Map<String, Value>| {
        a.iter()
            .filter(|(k, _)| *k != "metadata")
            .any(|(k, v)| b.get(k) != Some(v))
    };
    differs(new, old) || differs(old, new)
}

impl Scheme for CustomResourceStrategy {
    fn list_items_keep_type_meta(&self) -> bool {
        true
    }

    /// Prunes fields the schema does not specify; they are the unknown
    /// fields `fieldValidation` reports.
    fn decode(&self, mut obj: Value) -> Result<Decoded, String> {
        let unknown_fields = match &self.schema {
            Some(schema) => schema.compiled.prune(&mut obj),
            None => Vec::new(),
        };
        Ok(Decoded {
            object: obj,
            unknown_fields,
        })
    }

    fn apply_defaults(&self, obj: &mut Value) {
        if let Some(schema) = &self.schema {
            schema.compiled.apply_defaults(obj);
        }
    }

    fn type_schema(&self) -> Option<Arc<(Schema, String)>> {
        self.type_schema.clone()
    }

    fn supports_strategic_merge(&self) -> bool {
        false
    }
}

impl CreateStrategy for CustomResourceStrategy {
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errors = self.type_meta(obj);
        if let Some(schema) = &self.schema {
            errors.extend(schema.validate(obj, None));
        }
        errors.extend(self.scale_errors(obj, true));
        if errors.is_empty() {
            warn(::apiextensions::finalizer_warnings(obj, None));
        }
        errors
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if self.status {
            if let Some(map) = obj.as_object_mut() {
                map.remove("status");
            }
        }
        set_generation(obj, 1);
    }
}

impl UpdateStrategy for CustomResourceStrategy {
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errors = self.type_meta(new);
        if let Some(schema) = &self.schema {
            errors.extend(schema.validate(new, Some(old)));
        }
        errors.extend(self.scale_errors(new, true));
        if errors.is_empty() {
            warn(::apiextensions::finalizer_warnings(new, Some(old)));
        }
        errors
    }

    /// Only the status is checked (ratcheted), with the rules.
    fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errors = self.type_meta(new);
        if let Some(schema) = &self.schema {
            errors.extend(schema.compiled.validate_status_update(new, old));
            errors.extend(schema.rules(new, Some(old)));
        }
        errors.extend(self.scale_errors(new, false));
        errors
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if self.status {
            match (old.get("status"), new.as_object_mut()) {
                (Some(status), Some(map)) => {
                    map.insert("status".into(), status.clone());
                }
                (None, Some(map)) => {
                    map.remove("status");
                }
                _ => {}
            }
        }
        let old_generation = generation(old);
        let bumped = if non_metadata_changed(new, old) {
            old_generation + 1
        } else {
            old_generation
        };
        set_generation(new, bumped);
    }

    fn prepare_for_status_update(&self, new: &mut Value, old: &Value) {
        // Only status changes; managedFields follow the request.
        let status = new.get("status").cloned();
        let managed = new.pointer("/metadata/managedFields").cloned();
        let mut merged = old.clone();
        if let Some(map) = merged.as_object_mut() {
            match status {
                Some(s) => map.insert("status".into(), s),
                None => map.remove("status"),
            };
        }
        if let (Some(m), Some(meta)) = (
            managed,
            merged.get_mut("metadata").and_then(Value::as_object_mut),
        ) {
            meta.insert("managedFields".into(), m);
        }
        *new = merged;
    }
}

impl SelectableFields for CustomResourceStrategy {
    fn is_selectable_field(&self, field: &str) -> bool {
        self.selectable.iter().any(|(name, _)| name == field)
    }

    fn selectable_fields(&self, obj: &Value, fields: &mut BTreeMap<String, String>) {
        for (name, path) in &self.selectable {
            let value = match path.first(obj) {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Null) | None => String::new(),
                Some(other) => other.to_string(),
            };
            fields.insert(name.clone(), value);
        }
    }
}

impl TableConvertor for CustomResourceStrategy {
    fn table_column_definitions(&self) -> Vec<Value> {
        self.printer.definitions()
    }

    fn table_row(&self, obj: &Value) -> Vec<Value> {
        self.printer.row(obj)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strategy(status: bool) -> CustomResourceStrategy {
        CustomResourceStrategy {
            served: ServedKind {
                group: "example.com".into(),
                version: "v1".into(),
                kind: "W".into(),
            },
            schema: VersionSchema::new(&json!({"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "color": {"type": "string", "default": "blue"},
                    "size": {"type": "integer", "minimum": 1,
                        "x-kubernetes-validations": [{"rule": "self < 10", "message": "too big"}]},
                }},
                "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            }}))
            .map(Arc::new),
            type_schema: None,
            status,
            scale: Some(ScaleFields {
                spec_replicas: ".spec.size".into(),
                status_replicas: ".status.replicas".into(),
                label_selector: None,
            }),
            printer: Printer::new(&[]),
            selectable: vec![(
                "spec.color".into(),
                JsonPath::parse(".spec.color").expect("valid path"),
            )],
        }
    }

    #[test]
    fn create_drops_status_and_sets_generation() {
        let mut obj = json!({"metadata": {"name": "a"}, "spec": {}, "status": {"x": 1}});
        strategy(true).prepare_for_create(&mut obj);
        assert!(obj.get("status").is_none());
        assert_eq!(obj["metadata"]["generation"], 1);
        let mut obj = json!({"metadata": {"name": "a"}, "status": {"x": 1}});
        strategy(false).prepare_for_create(&mut obj);
        assert_eq!(obj["status"]["x"], 1);
    }

    #[test]
    fn generation_bumps_only_on_non_metadata_changes() {
        let s = strategy(true);
        let old = json!({"metadata": {"name": "a", "generation": 1}, "spec": {"n": 1}, "status": {"r": 1}});
        let mut relabel = json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"n": 1}, "status": {"r": 9}});
        s.prepare_for_update(&mut relabel, &old);
        assert_eq!(relabel["metadata"]["generation"], 1);
        assert_eq!(relabel["status"]["r"], 1);
        let mut respec = json!({"metadata": {"name": "a"}, "spec": {"n": 2}});
        s.prepare_for_update(&mut respec, &old);
        assert_eq!(respec["metadata"]["generation"], 2);
        let mut status = json!({"metadata": {"name": "a", "labels": {"x": "y"}}, "spec": {"n": 5}, "status": {"r": 3}});
        s.prepare_for_status_update(&mut status, &old);
        assert_eq!(status["spec"]["n"], 1);
        assert_eq!(status["status"]["r"], 3);
        assert!(status["metadata"].get("labels").is_none());
    }

    #[test]
    fn schema_prunes_defaults_and_validates() {
        let s = strategy(true);
        let decoded = s
            .decode(json!({"apiVersion": "example.com/v1", "kind": "W",
                "metadata": {"name": "a"}, "spec": {"size": 2, "extra": 1}}))
            .expect("decodes");
        assert_eq!(decoded.unknown_fields, vec!["spec.extra"]);
        let mut obj = decoded.object;
        s.apply_defaults(&mut obj);
        assert_eq!(obj["spec"]["color"], "blue");
        assert!(s.validate(&obj).is_empty());
        let schema = s.schema.as_ref().expect("schema");
        assert!(schema.has_defaults());
        assert!(schema.defaulted(&obj).is_none());
        let read = schema.defaulted(&json!({"spec": {}})).expect("defaulted");
        assert_eq!(read["spec"]["color"], "blue");
        obj["spec"]["size"] = json!(0);
        let errors = s.validate(&obj);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].to_string().contains("spec.size"), "{}", errors[0]);
        let old = obj.clone();
        obj["spec"]["size"] = json!(12);
        let errors = s.validate_update(&obj, &old);
        assert!(
            errors.iter().any(|e| e.to_string().contains("too big")),
            "{errors:?}"
        );
    }

    #[test]
    fn type_meta_scale_and_status_writes_are_checked() {
        let s = strategy(true);
        let obj = json!({"apiVersion": "example.com/v1", "kind": "Other",
            "metadata": {"name": "a"}, "spec": {"size": 2}});
        assert!(s
            .validate(&obj)
            .iter()
            .any(|e| e.to_string().starts_with("kind")));
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "W",
            "metadata": {"name": "a"}, "spec": {"size": 2}, "status": {"replicas": "x"}});
        let errors = s.validate(&obj);
        assert!(
            errors
                .iter()
                .any(|e| e.to_string().contains("status.replicas")),
            "{errors:?}"
        );
        // A status write checks the status only: a bad spec kept from the old object passes.
        let old = json!({"apiVersion": "example.com/v1", "kind": "W",
            "metadata": {"name": "a"}, "spec": {"size": 0}});
        obj["spec"]["size"] = json!(0);
        obj["status"] = json!({"replicas": 1});
        assert_eq!(s.validate_status_update(&obj, &old), Vec::new());
    }

    #[test]
    fn selectable_fields_read_their_paths() {
        let s = strategy(false);
        assert!(s.is_selectable_field("spec.color"));
        assert!(!s.is_selectable_field("spec.size"));
        let mut fields = BTreeMap::new();
        s.selectable_fields(&json!({"spec": {"color": "red"}}), &mut fields);
        assert_eq!(fields.get("spec.color").map(String::as_str), Some("red"));
    }
}
