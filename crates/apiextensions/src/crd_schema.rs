//! Validation of a CRD version's `openAPIV3Schema` (upstream's
//! `validateCustomResourceDefinitionValidation` and
//! `ValidateCustomResourceDefinitionOpenAPISchema`): supported keywords,
//! `x-kubernetes-*` consistency, the structural rules, and `default`s that
//! must validate against their schema and survive pruning.

use apimachinery::{FieldError, Path};
use serde_json::Value;

use crate::fieldpath;
use crate::openapi::{self, Patterns};
use crate::props::{Items, Props};
use crate::{embedded, prune, structural};

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The JSON spellings of the fields allowed at the root with a status
/// subresource, and the Go names upstream lists in its message.
const ROOT_FIELDS_WITH_STATUS: &[&str] = &[
    "description",
    "type",
    "format",
    "title",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "required",
    "items",
    "properties",
    "externalDocs",
    "example",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
];
const ROOT_FIELDS_GO: &str = "[Description Type Format Title Maximum ExclusiveMaximum Minimum ExclusiveMinimum MaxLength MinLength Pattern MaxItems MinItems UniqueItems MultipleOf Required Items Properties ExternalDocs Example XPreserveUnknownFields XValidations]";

const SUPPORTED_RULE_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// Rules upstream enforces on new CRDs but waives on updates of CRDs that
/// already broke them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    /// `type` must be one of the OpenAPI v3 types.
    pub valid_property_type: bool,
    /// Items of `x-kubernetes-list-type: set` must be atomic.
    pub atomic_set_type: bool,
    /// Map-list keys required or defaulted, set/map items not nullable.
    pub map_list_keys: bool,
    /// Defaults must survive pruning.
    pub pruned_defaults: bool,
}

impl Rules {
    /// Everything enforced (create).
    pub const STRICT: Rules = Rules {
        valid_property_type: true,
        atomic_set_type: true,
        map_list_keys: true,
        pruned_defaults: true,
    };

    /// The rules for updating a CRD whose versions had `old_schemas`.
    pub fn for_update(old_schemas: &[Props]) -> Rules {
        let probe = Path::new("");
        let any = |pred: &mut dyn FnMut(&Props) -> bool| old_schemas.iter().any(|s| s.any(pred));
        let invalid_type =
            any(&mut |s| !s.ty.is_empty() && !OPENAPI_V3_TYPES.contains(&s.ty.as_str()));
        let non_atomic_set = any(&mut |s| {
            let mut errs = Vec::new();
            if s.x_list_type.as_deref() == Some("set") {
                if let Some(items) = s.items_schema() {
                    atomic_set_items(items, &probe, &mut errs);
                }
            }
            !errs.is_empty()
        });
        let bad_map_list = any(&mut |s| {
            let mut errs = Vec::new();
            map_set_key_rules(s, &probe, &mut errs);
            !errs.is_empty()
        });
        let unpruned_defaults = old_schemas.iter().any(|root| {
            structural::validate_structural(&probe, root).is_empty()
                && has_unpruned_default(root, true)
        });
        Rules {
            valid_property_type: !invalid_type,
            atomic_set_type: !non_atomic_set,
            map_list_keys: !bad_map_list,
            pruned_defaults: !unpruned_defaults,
        }
    }
}

fn has_unpruned_default(s: &Props, is_root: bool) -> bool {
    let own = s.default.as_ref().is_some_and(|d| {
        let mut pruned = d.clone();
        let _ = prune::prune(&mut pruned, s, s.x_embedded_resource || is_root);
        pruned != *d
    });
    own || s
        .items_schema()
        .is_some_and(|i| has_unpruned_default(i, false))
        || s.properties
            .values()
            .any(|p| has_unpruned_default(p, false))
}

/// Validates `validation` (a `{openAPIV3Schema: …}` object) at `path`.
pub fn validate_schema_holder(
    validation: &Value,
    status_enabled: bool,
    path: &Path,
    rules: Rules,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(raw) = validation.get("openAPIV3Schema").filter(|v| !v.is_null()) else {
        return errs;
    };
    let schema = Props::from_value(raw);
    let root = path.child("openAPIV3Schema");
    if status_enabled {
        status_root_rules(raw, &schema, path, &mut errs);
    }
    if schema.nullable {
        errs.push(FieldError::forbidden(
            &path.child("openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let structural_errs = structural::validate_structural(&root, &schema);
    if structural_errs.is_empty() {
        validate_defaults(
            &root,
            &schema,
            false,
            true,
            rules.pruned_defaults,
            &mut errs,
        );
    } else {
        errs.extend(structural_errs);
    }
    let ssv = Ssv {
        allow_defaults: true,
        disallow_reason: String::new(),
        inside_meta: false,
        rules,
    };
    openapi_schema(&schema, &root, &ssv, true, &mut errs);
    errs
}

fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
        Value::Number(_) => false,
    }
}

fn status_root_rules(raw: &Value, schema: &Props, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(map) = raw.as_object() else {
        return;
    };
    for (k, _) in map.iter().filter(|(_, v)| !is_zero(v)) {
        if k == "type" {
            if schema.ty != "object" {
                errs.push(FieldError::invalid(
                    &path.child("openAPIV3Schema.type"),
                    schema.ty.as_str(),
                    r#"only "object" is allowed as the type at the root of the schema if the status subresource is enabled"#,
                ));
                return;
            }
            continue;
        }
        if !ROOT_FIELDS_WITH_STATUS.contains(&k.as_str()) {
            errs.push(FieldError::invalid(
                &path.child("openAPIV3Schema"),
                raw.clone(),
                format!("only {ROOT_FIELDS_GO} fields are allowed at the root of the schema if the status subresource is enabled"),
            ));
            return;
        }
    }
}

/// Upstream's `specStandardValidator` state while walking the schema.
#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    disallow_reason: String,
    inside_meta: bool,
    rules: Rules,
}

impl Ssv {
    fn forbid_defaults(&self, reason: String) -> Ssv {
        Ssv {
            allow_defaults: false,
            disallow_reason: reason,
            inside_meta: self.inside_meta,
            rules: self.rules,
        }
    }

    fn validate(&self, s: &Props, path: &Path, errs: &mut Vec<FieldError>) {
        let forbid = |errs: &mut Vec<FieldError>, f: &str, d: &str| {
            errs.push(FieldError::forbidden(&path.child(f), d))
        };
        if self.rules.valid_property_type
            && !s.ty.is_empty()
            && !OPENAPI_V3_TYPES.contains(&s.ty.as_str())
        {
            errs.push(FieldError::not_supported(
                &path.child("type"),
                s.ty.as_str(),
                &OPENAPI_V3_TYPES,
            ));
        }
        if s.default.is_some() && !self.allow_defaults {
            let mut detail = "must not be set".to_owned();
            if !self.disallow_reason.is_empty() {
                detail.push(' ');
                detail.push_str(&self.disallow_reason);
            }
            forbid(errs, "default", &detail);
        }
        if !s.id.is_empty() {
            forbid(errs, "id", "id is not supported");
        }
        if s.additional_items.is_some() {
            forbid(errs, "additionalItems", "additionalItems is not supported");
        }
        if !s.pattern_properties.is_empty() {
            forbid(
                errs,
                "patternProperties",
                "patternProperties is not supported",
            );
        }
        if !s.definitions.is_empty() {
            forbid(errs, "definitions", "definitions is not supported");
        }
        if !s.dependencies.is_empty() {
            forbid(errs, "dependencies", "dependencies is not supported");
        }
        if s.reference.is_some() {
            forbid(errs, "$ref", "$ref is not supported");
        }
        if s.ty == "null" {
            forbid(
                errs,
                "type",
                "type cannot be set to null, use nullable as an alternative",
            );
        }
        if matches!(&s.items, Some(Items::Array(a)) if !a.is_empty()) {
            forbid(
                errs,
                "items",
                "items must be a schema object and not an array",
            );
        }
        if self.inside_meta && s.x_embedded_resource {
            forbid(
                errs,
                "x-kubernetes-embedded-resource",
                "must not be used inside of resource meta",
            );
        }
    }
}

fn openapi_schema(s: &Props, path: &Path, ssv: &Ssv, is_root: bool, errs: &mut Vec<FieldError>) {
    ssv.validate(s, path, errs);
    if s.unique_items {
        errs.push(FieldError::forbidden(
            &path.child("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(ap) = &s.additional_properties {
        if !s.properties.is_empty() && (!ap.allows() || ap.schema().is_some()) {
            errs.push(FieldError::forbidden(
                &path.child("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if let Some(schema) = ap.schema() {
            let sub = if ssv.inside_meta {
                ssv.forbid_defaults(
                    "inside additionalProperties applying to object metadata".to_owned(),
                )
            } else {
                ssv.clone()
            };
            openapi_schema(
                schema,
                &path.child("additionalProperties"),
                &sub,
                false,
                errs,
            );
        }
    }
    for (name, prop) in &s.properties {
        let mut sub = ssv.clone();
        if (is_root || s.x_embedded_resource) && META_FIELDS.contains(&name.as_str()) {
            sub.inside_meta = true;
            if is_root {
                sub = sub.forbid_defaults(format!("in top-level {name}"));
            }
        }
        openapi_schema(prop, &path.child("properties").key(name), &sub, false, errs);
    }
    if let Some(not) = &s.not {
        openapi_schema(not, &path.child("not"), ssv, false, errs);
    }
    for (field, list) in [
        ("allOf", &s.all_of),
        ("oneOf", &s.one_of),
        ("anyOf", &s.any_of),
    ] {
        for (i, sub) in list.iter().enumerate() {
            openapi_schema(sub, &path.child(field).index(i), ssv, false, errs);
        }
    }
    for (name, def) in &s.definitions {
        openapi_schema(def, &path.child("definitions").key(name), ssv, false, errs);
    }
    match &s.items {
        Some(Items::Schema(items)) => openapi_schema(items, &path.child("items"), ssv, false, errs),
        Some(Items::Array(list)) => {
            for (i, sub) in list.iter().enumerate() {
                openapi_schema(sub, &path.child("items").index(i), ssv, false, errs);
            }
        }
        None => {}
    }
    for (name, dep) in &s.dependencies {
        if let Some(dep) = dep {
            openapi_schema(dep, &path.child("dependencies").key(name), ssv, false, errs);
        }
    }
    extension_rules(s, path, ssv.rules, errs);
    list_map_rules(s, path, errs);
    if ssv.rules.map_list_keys {
        map_set_key_rules(s, path, errs);
    }
    validation_rules(s, path, errs);
}

fn type_must_be(s: &Props, path: &Path, detail: &str, errs: &mut Vec<FieldError>) {
    if s.ty.is_empty() {
        errs.push(FieldError::required(&path.child("type"), detail));
    } else {
        errs.push(FieldError::invalid(
            &path.child("type"),
            s.ty.as_str(),
            detail,
        ));
    }
}

fn extension_rules(s: &Props, path: &Path, rules: Rules, errs: &mut Vec<FieldError>) {
    if s.x_preserve_unknown_fields == Some(false) {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    if let Some(map_type) = &s.x_map_type {
        if s.ty != "object" {
            type_must_be(
                s,
                path,
                "must be object if x-kubernetes-map-type is specified",
                errs,
            );
        }
        if map_type != "atomic" && map_type != "granular" {
            errs.push(FieldError::not_supported(
                &path.child("x-kubernetes-map-type"),
                map_type.as_str(),
                &["atomic", "granular"],
            ));
        }
    }
    if let Some(list_type) = &s.x_list_type {
        if s.ty != "array" {
            type_must_be(
                s,
                path,
                "must be array if x-kubernetes-list-type is specified",
                errs,
            );
        } else if list_type == "set" && rules.atomic_set_type {
            if let Some(items) = s.items_schema() {
                atomic_set_items(items, path, errs);
            }
        }
        if !matches!(list_type.as_str(), "atomic" | "set" | "map") {
            errs.push(FieldError::not_supported(
                &path.child("x-kubernetes-list-type"),
                list_type.as_str(),
                &["atomic", "set", "map"],
            ));
        }
    }
    if !s.x_list_map_keys.is_empty() {
        match s.x_list_type.as_deref() {
            None => errs.push(FieldError::required(
                &path.child("x-kubernetes-list-type"),
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
            Some("map") => {}
            Some(other) => errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-type"),
                other,
                "must be map if x-kubernetes-list-map-keys is non-empty",
            )),
        }
    }
}

fn atomic_set_items(items: &Props, path: &Path, errs: &mut Vec<FieldError>) {
    let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
    match items.ty.as_str() {
        "array" => {
            if let Some(lt) = items.x_list_type.as_deref().filter(|lt| *lt != "atomic") {
                errs.push(FieldError::invalid(
                    &path.child("items").child("x-kubernetes-list-type"),
                    lt,
                    detail,
                ));
            }
        }
        "object" if items.x_map_type.as_deref() != Some("atomic") => {
            // Upstream shows the (absent) list type as the bad value.
            let shown = items.x_list_type.clone().map_or(Value::Null, Value::from);
            errs.push(FieldError::invalid(
                &path.child("items").child("x-kubernetes-map-type"),
                shown,
                detail,
            ));
        }
        _ => {}
    }
}

fn list_map_rules(s: &Props, path: &Path, errs: &mut Vec<FieldError>) {
    if s.x_list_type.as_deref() != Some("map") {
        return;
    }
    if s.x_list_map_keys.is_empty() {
        errs.push(FieldError::required(
            &path.child("x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    let items = match &s.items {
        None => {
            errs.push(FieldError::required(
                &path.child("items"),
                "must have a schema if x-kubernetes-list-type is map",
            ));
            return;
        }
        Some(Items::Array(_)) => {
            errs.push(FieldError::invalid(
                &path.child("items"),
                Value::Null,
                "must only have a single schema if x-kubernetes-list-type is map",
            ));
            return;
        }
        Some(Items::Schema(items)) => items,
    };
    if items.ty != "object" {
        errs.push(FieldError::invalid(
            &path.child("items").child("type"),
            items.ty.as_str(),
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return;
    }
    let keys: Vec<Value> = s
        .x_list_map_keys
        .iter()
        .map(|k| Value::from(k.as_str()))
        .collect();
    for (i, k) in s.x_list_map_keys.iter().enumerate() {
        match items.properties.get(k) {
            Some(p) if p.ty == "array" || p.ty == "object" => errs.push(FieldError::invalid(
                &path.child("items").child("properties").key(k).child("type"),
                items.ty.as_str(),
                "must be a scalar type if parent array's x-kubernetes-list-type is map",
            )),
            Some(_) => {}
            None => errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-map-keys"),
                keys.clone(),
                "entries must all be names of item properties",
            )),
        }
        if s.x_list_map_keys[..i].contains(k) {
            errs.push(FieldError::invalid(
                &path.child("x-kubernetes-list-map-keys"),
                keys.clone(),
                "must not contain duplicate entries",
            ));
        }
    }
}

fn map_set_key_rules(s: &Props, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(items) = s.items_schema() else {
        return;
    };
    let Some(list_type) = s
        .x_list_type
        .as_deref()
        .filter(|t| *t == "set" || *t == "map")
    else {
        return;
    };
    if items.nullable {
        errs.push(FieldError::forbidden(
            &path.child("items").child("nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
        ));
    }
    if list_type != "map" {
        return;
    }
    for k in &s.x_list_map_keys {
        let Some(p) = items.properties.get(k) else {
            continue;
        };
        let at = path.child("items").child("properties").key(k);
        if !items.required.contains(k) && p.default.is_none() {
            errs.push(FieldError::required(
                &at.child("default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if p.nullable {
            errs.push(FieldError::forbidden(
                &at.child("nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
}

fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

/// The static checks of `x-kubernetes-validations` (compiling the CEL
/// expressions is the CEL crate's business).
fn validation_rules(s: &Props, path: &Path, errs: &mut Vec<FieldError>) {
    for (i, rule) in s.x_validations.iter().enumerate() {
        let at = path.child("x-kubernetes-validations").index(i);
        let text = |k: &str| rule.get(k).and_then(Value::as_str).unwrap_or("");
        let (expr, message, message_expr) =
            (text("rule"), text("message"), text("messageExpression"));
        let (trimmed_rule, trimmed_msg) = (expr.trim(), message.trim());
        if trimmed_rule.is_empty() {
            errs.push(FieldError::required(
                &at.child("rule"),
                "rule is not specified",
            ));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            errs.push(FieldError::invalid(
                &at.child("message"),
                message,
                "must be non-empty if specified",
            ));
        } else if has_newlines(trimmed_msg) {
            errs.push(FieldError::invalid(
                &at.child("message"),
                message,
                "must not contain line breaks",
            ));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            errs.push(FieldError::required(
                &at.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !message_expr.is_empty() && message_expr.trim().is_empty() {
            errs.push(FieldError::required(
                &at.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = rule.get("reason").and_then(Value::as_str) {
            if !SUPPORTED_RULE_REASONS.contains(&reason) {
                errs.push(FieldError::not_supported(
                    &at.child("reason"),
                    reason,
                    &SUPPORTED_RULE_REASONS,
                ));
            }
        }
        let field_path = text("fieldPath");
        if !field_path.is_empty() && field_path.trim().is_empty() {
            errs.push(FieldError::invalid(
                &at.child("fieldPath"),
                field_path,
                "must be non-empty if specified",
            ));
        }
        if has_newlines(field_path) {
            errs.push(FieldError::invalid(
                &at.child("fieldPath"),
                field_path,
                "must not contain line breaks",
            ));
        }
        if !field_path.is_empty() && fieldpath::resolve(field_path, s, true).is_err() {
            errs.push(FieldError::invalid(
                &at.child("fieldPath"),
                field_path,
                "must be a valid path",
            ));
        }
    }
}

/// Upstream's `defaulting.ValidateDefaults`: every `default` must survive
/// pruning, form valid embedded object meta and validate against its own
/// schema. `inside_meta` marks the type/object meta of a resource.
fn validate_defaults(
    path: &Path,
    s: &Props,
    inside_meta: bool,
    is_resource_root: bool,
    require_pruned: bool,
    errs: &mut Vec<FieldError>,
) {
    let embedded = s.x_embedded_resource || is_resource_root;
    if let Some(default) = &s.default {
        let at = path.child("default");
        if inside_meta {
            check_default_value(s, default, &at, errs);
        } else {
            let mut pruned = default.clone();
            let _ = prune::prune(&mut pruned, s, s.x_embedded_resource);
            if require_pruned && pruned != *default {
                errs.push(FieldError::invalid(
                    &at,
                    default.clone(),
                    "must not have unknown fields",
                ));
            }
            let meta_errs = embedded::validate(Some(&at), s, default);
            if !meta_errs.is_empty() {
                errs.extend(meta_errs);
            } else {
                check_default_value(s, default, &at, errs);
            }
        }
    }
    if let Some(items) = s.items_schema() {
        validate_defaults(
            &path.child("items"),
            items,
            inside_meta,
            false,
            require_pruned,
            errs,
        );
    }
    for (k, prop) in &s.properties {
        let sub_meta = inside_meta || (embedded && META_FIELDS.contains(&k.as_str()));
        validate_defaults(
            &path.child("properties").key(k),
            prop,
            sub_meta,
            false,
            require_pruned,
            errs,
        );
    }
}

fn check_default_value(s: &Props, default: &Value, at: &Path, errs: &mut Vec<FieldError>) {
    let patterns = Patterns::collect(s);
    errs.extend(openapi::validate(s, &patterns, default, Some(at)));
}

#[cfg(test)]
mod tests;
