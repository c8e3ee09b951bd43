//! The structural schema rules (upstream's `schema.ValidateStructural`):
//! every node specifies its type (except under
//! `x-kubernetes-preserve-unknown-fields` / `x-kubernetes-int-or-string`),
//! value validations (`allOf`, `anyOf`, `oneOf`, `not`) only restrict
//! what the structural part already declares, and the root `metadata`
//! says nothing beyond `name` and `generateName`.

use apimachinery::{FieldError, Path};
use regex::Regex;

use crate::props::{Items, Props};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// All structural violations of `schema` (rooted at `path`), sorted by
/// message as upstream sorts them.
pub fn validate_structural(path: &Path, schema: &Props) -> Vec<FieldError> {
    let mut errs = Vec::new();
    invariants(schema, Level::Root, path, &mut errs);
    completeness(schema, path, path, &mut errs);
    errs.sort_by_key(|e| e.to_string());
    errs
}

fn invariants(s: &Props, lvl: Level, path: &Path, errs: &mut Vec<FieldError>) {
    if s.ty == "array" && s.items.is_none() {
        errs.push(FieldError::required(
            &path.child("items"),
            "must be specified",
        ));
    }
    if let Some(Items::Schema(items)) = &s.items {
        invariants(items, Level::Item, &path.child("items"), errs);
    }
    for (k, v) in &s.properties {
        invariants(v, Level::Field, &path.child("properties").key(k), errs);
    }
    if let Some(ap) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                &path.child("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(schema) = ap.schema() {
            invariants(
                schema,
                Level::Field,
                &path.child("additionalProperties"),
                errs,
            );
        }
    }
    extensions(s, path, errs);
    value_validation(
        s,
        is_int_or_string_any_of(s),
        is_int_or_string_all_of(s),
        path,
        errs,
    );
    type_rules(s, lvl, path, errs);
}

fn extensions(s: &Props, path: &Path, errs: &mut Vec<FieldError>) {
    if s.x_int_or_string && s.preserves_unknown() {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if s.x_int_or_string && s.x_embedded_resource {
        errs.push(FieldError::invalid(
            &path.child("x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
}

fn type_rules(s: &Props, lvl: Level, path: &Path, errs: &mut Vec<FieldError>) {
    let check_metadata = lvl == Level::Root || s.x_embedded_resource;
    let ty = path.child("type");
    if s.x_embedded_resource && s.ty != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(if s.ty.is_empty() {
            FieldError::required(&ty, detail)
        } else {
            FieldError::invalid(&ty, s.ty.as_str(), detail)
        });
    } else if s.ty.is_empty() && !s.x_int_or_string && !s.preserves_unknown() {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(&ty, detail));
    }
    if s.x_embedded_resource && s.additional_properties.is_some() {
        errs.push(FieldError::forbidden(
            &path.child("additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !s.ty.is_empty() && s.ty != "object" {
        errs.push(FieldError::invalid(
            &ty,
            s.ty.as_str(),
            "must be object at the root",
        ));
    }
    if check_metadata {
        for name in ["kind", "apiVersion"] {
            if let Some(p) = s.properties.get(name) {
                if p.ty != "string" {
                    let at = path.child("properties").key(name).child("type");
                    errs.push(FieldError::invalid(&at, p.ty.as_str(), "must be string"));
                }
            }
        }
    }
    if let Some(meta) = s.properties.get("metadata") {
        let at = path.child("properties").key("metadata");
        if check_metadata && meta.ty != "object" {
            errs.push(FieldError::invalid(
                &at.child("type"),
                meta.ty.as_str(),
                "must be object",
            ));
        }
        if lvl == Level::Root && !is_plain_metadata(meta) {
            errs.push(FieldError::forbidden(
                &at,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
    if s.x_embedded_resource && !s.preserves_unknown() && s.properties.is_empty() {
        errs.push(FieldError::required(
            &path.child("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Root metadata may carry a type, a default and schemas for `name` and
/// `generateName`; anything else is forbidden.
fn is_plain_metadata(meta: &Props) -> bool {
    let only_names = meta
        .properties
        .keys()
        .all(|k| k == "name" || k == "generateName");
    let mut rest = meta.clone();
    rest.ty.clear();
    rest.default = None;
    if only_names {
        rest.properties.clear();
    }
    rest == Props::default()
}

fn int_or_string_alternatives(alts: &[Props]) -> bool {
    let only = |p: &Props, ty: &str| {
        let expected = Props {
            ty: ty.to_owned(),
            ..Props::default()
        };
        *p == expected
    };
    alts.len() == 2 && only(&alts[0], "integer") && only(&alts[1], "string")
}

fn is_int_or_string_any_of(s: &Props) -> bool {
    int_or_string_alternatives(&s.any_of)
}

fn is_int_or_string_all_of(s: &Props) -> bool {
    s.all_of
        .first()
        .is_some_and(|first| int_or_string_alternatives(&first.any_of))
}

fn value_validation(
    s: &Props,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, v) in s.any_of.iter().enumerate() {
            nested(v, false, &path.child("anyOf").index(i), errs);
        }
    }
    for (i, v) in s.all_of.iter().enumerate() {
        nested(
            v,
            skip_first_all_of_any_of && i == 0,
            &path.child("allOf").index(i),
            errs,
        );
    }
    for (i, v) in s.one_of.iter().enumerate() {
        nested(v, false, &path.child("oneOf").index(i), errs);
    }
    if let Some(not) = &s.not {
        nested(not, false, &path.child("not"), errs);
    }
    if !s.pattern.is_empty() {
        if let Err(e) = Regex::new(&s.pattern) {
            errs.push(FieldError::invalid(
                &path.child("pattern"),
                s.pattern.as_str(),
                format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }
}

/// A schema inside `allOf`/`anyOf`/`oneOf`/`not`: value validations only.
fn nested(v: &Props, skip_any_of: bool, path: &Path, errs: &mut Vec<FieldError>) {
    value_validation(v, skip_any_of, false, path, errs);
    if let Some(Items::Schema(items)) = &v.items {
        nested(items, false, &path.child("items"), errs);
    }
    for (k, p) in &v.properties {
        nested(p, false, &path.child("properties").key(k), errs);
    }
    let empty = "must be empty to be structural";
    let undefined = "must be undefined to be structural";
    let falsy = "must be false to be structural";
    let forbidden: [(bool, &str, &str); 13] = [
        (!v.ty.is_empty(), "type", empty),
        (
            v.additional_properties.is_some(),
            "additionalProperties",
            undefined,
        ),
        (v.default.is_some(), "default", undefined),
        (!v.title.is_empty(), "title", empty),
        (!v.description.is_empty(), "description", empty),
        (v.nullable, "nullable", falsy),
        (
            v.preserves_unknown(),
            "x-kubernetes-preserve-unknown-fields",
            falsy,
        ),
        (
            v.x_embedded_resource,
            "x-kubernetes-embedded-resource",
            falsy,
        ),
        (v.x_int_or_string, "x-kubernetes-int-or-string", falsy),
        (
            !v.x_list_map_keys.is_empty(),
            "x-kubernetes-list-map-keys",
            empty,
        ),
        (v.x_list_type.is_some(), "x-kubernetes-list-type", undefined),
        (v.x_map_type.is_some(), "x-kubernetes-map-type", undefined),
        (
            !v.x_validations.is_empty(),
            "x-kubernetes-validations",
            empty,
        ),
    ];
    for (set, field, detail) in forbidden {
        if set {
            errs.push(FieldError::forbidden(&path.child(field), detail));
        }
    }
    if v.properties.contains_key("metadata") {
        errs.push(FieldError::forbidden(
            &path.child("properties").key("metadata"),
            "must not be specified in a nested context",
        ));
    }
}

/// Value validations may only mention properties and items that the
/// structural part of the same node declares.
fn completeness(s: &Props, s_path: &Path, v_path: &Path, errs: &mut Vec<FieldError>) {
    let mut each = |v: &Props, at: Path| nested_completeness(v, Some(s), s_path, &at, errs);
    if let Some(not) = &s.not {
        each(not, v_path.child("not"));
    }
    for (i, v) in s.all_of.iter().enumerate() {
        each(v, v_path.child("allOf").index(i));
    }
    for (i, v) in s.any_of.iter().enumerate() {
        each(v, v_path.child("anyOf").index(i));
    }
    for (i, v) in s.one_of.iter().enumerate() {
        each(v, v_path.child("oneOf").index(i));
    }
}

fn nested_completeness(
    v: &Props,
    s: Option<&Props>,
    s_path: &Path,
    v_path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(FieldError::required(
            s_path,
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    completeness_of_compositions(v, s, s_path, v_path, errs);
    if let Some(Items::Schema(items)) = &v.items {
        nested_completeness(
            items,
            s.items_schema(),
            &s_path.child("items"),
            &v_path.child("items"),
            errs,
        );
    }
    for (k, vf) in &v.properties {
        let sp = s_path.child("properties").key(k);
        let vp = v_path.child("properties").key(k);
        match s.properties.get(k) {
            Some(sf) => nested_completeness(vf, Some(sf), &sp, &vp, errs),
            None => errs.push(FieldError::required(
                &sp,
                format!("because it is defined in {vp}"),
            )),
        }
    }
}

/// The compositions inside a nested validation check against the same node.
fn completeness_of_compositions(
    v: &Props,
    s: &Props,
    s_path: &Path,
    v_path: &Path,
    errs: &mut Vec<FieldError>,
) {
    if let Some(not) = &v.not {
        nested_completeness(not, Some(s), s_path, &v_path.child("not"), errs);
    }
    for (i, x) in v.all_of.iter().enumerate() {
        nested_completeness(x, Some(s), s_path, &v_path.child("allOf").index(i), errs);
    }
    for (i, x) in v.any_of.iter().enumerate() {
        nested_completeness(x, Some(s), s_path, &v_path.child("anyOf").index(i), errs);
    }
    for (i, x) in v.one_of.iter().enumerate() {
        nested_completeness(x, Some(s), s_path, &v_path.child("oneOf").index(i), errs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errs(schema: serde_json::Value) -> Vec<String> {
        let p = Props::from_value(&schema);
        validate_structural(&Path::new("schema"), &p)
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn structural_schema_passes() {
        assert!(errs(json!({"type": "object", "properties": {
            "metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 5}}},
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "list": {"type": "array", "items": {"type": "string"}}
        }}))
        .is_empty());
    }

    #[test]
    fn missing_types_and_items() {
        assert_eq!(
            errs(json!({"properties": {"a": {}, "b": {"type": "array"}, "c": {"type": "array", "items": {}}}})),
            vec![
                "schema.properties[a].type: Required value: must not be empty for specified object fields",
                "schema.properties[b].items: Required value: must be specified",
                "schema.properties[c].items.type: Required value: must not be empty for specified array items",
                "schema.type: Required value: must not be empty at the root",
            ]
        );
    }

    #[test]
    fn nested_value_validation_rules() {
        assert_eq!(
            errs(json!({"type": "object", "properties": {"a": {"type": "string"}},
                "anyOf": [{"type": "string", "properties": {"b": {"description": "x"}}}]})),
            vec![
                "schema.anyOf[0].properties[b].description: Forbidden: must be empty to be structural",
                "schema.anyOf[0].type: Forbidden: must be empty to be structural",
                "schema.properties[b]: Required value: because it is defined in schema.anyOf[0].properties[b]",
            ]
        );
    }

    #[test]
    fn root_metadata_and_additional_properties() {
        assert_eq!(
            errs(json!({"type": "object", "additionalProperties": {"type": "string"},
                "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}})),
            vec![
                "schema.additionalProperties: Forbidden: must not be used at the root",
                "schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified",
            ]
        );
    }

    #[test]
    fn embedded_resources() {
        assert_eq!(
            errs(json!({"type": "object", "properties": {
                "e": {"x-kubernetes-embedded-resource": true},
                "k": {"type": "object", "x-kubernetes-embedded-resource": true,
                      "x-kubernetes-preserve-unknown-fields": true,
                      "properties": {"kind": {"type": "integer"}}}
            }})),
            vec![
                "schema.properties[e].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
                "schema.properties[e].type: Required value: must be object if x-kubernetes-embedded-resource is true",
                "schema.properties[k].properties[kind].type: Invalid value: \"integer\": must be string",
            ]
        );
    }
}
