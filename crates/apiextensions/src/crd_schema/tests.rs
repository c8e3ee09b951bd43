use serde_json::json;

use super::*;

fn errs(schema: Value, status: bool) -> Vec<String> {
    validate_schema_holder(
        &json!({"openAPIV3Schema": schema}),
        status,
        &Path::new("spec").child("validation"),
        Rules::STRICT,
    )
    .iter()
    .map(|e| e.to_string())
    .collect()
}

#[test]
fn good_schema_passes() {
    let schema = json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "default": 1, "minimum": 0},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port"],
                      "items": {"type": "object", "required": ["port"], "properties": {"port": {"type": "integer"}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
        }},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    }});
    assert_eq!(errs(schema, true), Vec::<String>::new());
}

#[test]
fn bad_defaults_are_reported() {
    let schema = json!({"type": "object", "properties": {
        "metadata": {"type": "object", "default": {}},
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "default": "one"},
            "obj": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"b": 1}}
        }}
    }});
    assert_eq!(
        errs(schema, false),
        vec![
            r#"spec.validation.openAPIV3Schema.properties[spec].properties[obj].default: Invalid value: {"b":1}: must not have unknown fields"#,
            r#"spec.validation.openAPIV3Schema.properties[spec].properties[replicas].default: Invalid value: "string":  in body must be of type integer: "string""#,
            "spec.validation.openAPIV3Schema.properties[metadata].default: Forbidden: must not be set in top-level metadata",
        ]
    );
}

#[test]
fn list_type_rules() {
    let schema = json!({"type": "object", "properties": {
        "a": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}},
        "b": {"type": "object", "x-kubernetes-list-type": "set"},
        "c": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
              "items": {"type": "object", "properties": {"k": {"type": "string"}}}},
        "d": {"type": "array", "uniqueItems": true, "items": {"type": "string"}}
    }});
    assert_eq!(
        errs(schema, false),
        vec![
            "spec.validation.openAPIV3Schema.properties[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map",
            r#"spec.validation.openAPIV3Schema.properties[b].type: Invalid value: "object": must be array if x-kubernetes-list-type is specified"#,
            "spec.validation.openAPIV3Schema.properties[c].items.properties[k].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            "spec.validation.openAPIV3Schema.properties[d].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ]
    );
}

#[test]
fn status_subresource_restricts_root() {
    let got = errs(
        json!({"type": "object", "additionalProperties": {"type": "string"}}),
        true,
    );
    assert!(
        got[0].starts_with("spec.validation.openAPIV3Schema: Invalid value: "),
        "{got:?}"
    );
    assert!(got[0].ends_with(
        "fields are allowed at the root of the schema if the status subresource is enabled"
    ));
    assert!(got.contains(&"spec.validation.openAPIV3Schema.additionalProperties: Forbidden: must not be used at the root".to_owned()));
}

#[test]
fn non_structural_and_unsupported_keywords() {
    let got = errs(
        json!({"type": "object", "properties": {"a": {"$ref": "#/x", "type": "null"}, "b": {}}}),
        false,
    );
    assert!(got.contains(&"spec.validation.openAPIV3Schema.properties[b].type: Required value: must not be empty for specified object fields".to_owned()), "{got:?}");
    assert!(
        got.contains(
            &"spec.validation.openAPIV3Schema.properties[a].$ref: Forbidden: $ref is not supported"
                .to_owned()
        ),
        "{got:?}"
    );
    assert!(
        got.iter().any(|e| e.starts_with(
            "spec.validation.openAPIV3Schema.properties[a].type: Unsupported value: \"null\""
        )),
        "{got:?}"
    );
}

#[test]
fn validation_rule_static_checks() {
    let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
    "properties": {"a": {"type": "string"}},
    "x-kubernetes-validations": [
        {"rule": " "},
        {"rule": "self.a != ''", "reason": "FieldValueUnknown"},
        {"rule": "self.a != ''", "fieldPath": ".b"},
        {"rule": "self.a != ''", "fieldPath": ".a"},
        {"rule": "self.a\n != ''"}
    ]}}});
    let at = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(
        errs(schema, false),
        vec![
            format!("{at}[0].rule: Required value: rule is not specified"),
            format!(r#"{at}[1].reason: Unsupported value: "FieldValueUnknown": supported values: "FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired""#),
            format!(r#"{at}[2].fieldPath: Invalid value: ".b": must be a valid path"#),
            format!("{at}[4].message: Required value: message must be specified if rule contains line breaks"),
        ]
    );
}
