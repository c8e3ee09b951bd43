use serde_json::json;

use super::*;

fn errors(schema: Value, data: Value) -> Vec<String> {
    let props = Props::from_value(&schema);
    let patterns = Patterns::collect(&props);
    validate(&props, &patterns, &data, None)
        .iter()
        .map(|e| e.to_string())
        .collect()
}

fn spec(props: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}})
}

#[test]
fn type_mismatch_reads_like_upstream() {
    let errs = errors(
        spec(json!({"replicas": {"type": "integer"}})),
        json!({"spec": {"replicas": "three"}}),
    );
    assert_eq!(
        errs,
        vec![
            r#"spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string""#
        ]
    );
}

#[test]
fn integral_float_is_an_integer_and_fraction_is_not() {
    let s = spec(json!({"n": {"type": "integer"}}));
    assert!(errors(s.clone(), json!({"spec": {"n": 2.0}})).is_empty());
    let errs = errors(s, json!({"spec": {"n": 2.5}}));
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(errs[0].contains("must be of type integer: \"number\""));
    assert_eq!(
        errs[1],
        r#"<nil>: Invalid value: "": Checked value must be of type integer (default format) in spec.n"#
    );
}

#[test]
fn null_needs_nullable() {
    let s = spec(json!({"a": {"type": "string"}, "b": {"type": "string", "nullable": true}}));
    let errs = errors(s, json!({"spec": {"a": null, "b": null}}));
    assert_eq!(
        errs,
        vec![r#"spec.a: Invalid value: "null": spec.a in body must be of type string: "null""#]
    );
}

#[test]
fn required_enum_and_bounds() {
    let s = json!({"type": "object", "required": ["spec"], "properties": {
        "spec": {"type": "object", "required": ["mode"], "properties": {
            "mode": {"type": "string", "enum": ["a", "b"]},
            "n": {"type": "integer", "minimum": 1, "maximum": 10, "exclusiveMaximum": true},
            "f": {"type": "number", "multipleOf": 0.5}
        }}
    }});
    assert_eq!(errors(s.clone(), json!({})), vec!["spec: Required value"]);
    let errs = errors(s.clone(), json!({"spec": {"mode": "c", "n": 10, "f": 0.7}}));
    assert_eq!(
        errs,
        vec![
            r#"spec.f: Invalid value: 0.7: spec.f in body should be a multiple of 0.5"#,
            r#"spec.mode: Unsupported value: "c": supported values: "a", "b""#,
            r#"spec.n: Invalid value: 10: spec.n in body should be less than 10"#,
        ]
    );
    let errs = errors(s, json!({"spec": {"n": 0}}));
    assert_eq!(
        errs,
        vec![
            r#"spec.n: Invalid value: 0: spec.n in body should be greater than or equal to 1"#,
            "spec.mode: Required value",
        ]
    );
}

#[test]
fn strings_lists_and_maps() {
    let s = spec(json!({
        "name": {"type": "string", "maxLength": 3, "pattern": "^[a-z]+$"},
        "short": {"type": "string", "minLength": 2},
        "when": {"type": "string", "format": "date-time"},
        "tags": {"type": "array", "maxItems": 1, "minItems": 1, "items": {"type": "string"}},
        "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}}
    }));
    let errs = errors(
        s,
        json!({"spec": {"name": "abcd", "short": "a", "when": "noon", "tags": ["x", 1],
                        "labels": {"a": "1", "b": 2}}}),
    );
    assert_eq!(
        errs,
        vec![
            r#"spec.labels: Too many: 2: must have at most 1 item"#,
            r#"spec.labels.b: Invalid value: "integer": spec.labels.b in body must be of type string: "integer""#,
            "spec.name: Too long: may not be more than 3 bytes",
            r#"spec.short: Invalid value: "a": spec.short in body should be at least 2 chars long"#,
            r#"spec.tags[1]: Invalid value: "integer": spec.tags[1] in body must be of type string: "integer""#,
            "spec.tags: Too many: 2: must have at most 1 item",
            r#"spec.when: Invalid value: "noon": spec.when in body must be of type date-time: "noon""#,
        ]
    );
}

#[test]
fn pattern_mismatch() {
    let s = spec(json!({"name": {"type": "string", "pattern": "^[a-z]+$"}}));
    assert_eq!(
        errors(s, json!({"spec": {"name": "ABC"}})),
        vec![r#"spec.name: Invalid value: "ABC": spec.name in body should match '^[a-z]+$'"#]
    );
}

#[test]
fn int_or_string_and_compositions() {
    let s = spec(json!({
        "port": {"x-kubernetes-int-or-string": true,
                 "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "one": {"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 1}]}
    }));
    assert!(errors(s.clone(), json!({"spec": {"port": 80}})).is_empty());
    assert!(errors(s.clone(), json!({"spec": {"port": "http"}})).is_empty());
    let errs = errors(s, json!({"spec": {"port": true, "one": 3}}));
    assert!(errs.contains(&r#"<nil>: Invalid value: "": "spec.one" must validate one and only one schema (oneOf). Found none valid"#.to_owned()), "{errs:?}");
    assert!(errs.contains(&r#"spec.port: Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#.to_owned()), "{errs:?}");
    assert!(
        errs.contains(
            &r#"<nil>: Invalid value: "": "spec.port" must validate at least one schema (anyOf)"#
                .to_owned()
        ),
        "{errs:?}"
    );
}

#[test]
fn int32_range_is_checked() {
    let s = spec(json!({"n": {"type": "integer", "format": "int32"}}));
    assert_eq!(
        errors(s, json!({"spec": {"n": 4294967296i64}})),
        vec![
            r#"<nil>: Invalid value: "": Checked value must be of type integer with format int32 in spec.n"#
        ]
    );
}

#[test]
fn unsupported_formats_are_ignored() {
    let s = spec(json!({"q": {"type": "string", "format": "quantity"}}));
    assert!(errors(s, json!({"spec": {"q": "anything"}})).is_empty());
}

#[test]
fn multiple_of_uses_relative_error() {
    // 1/0.1*0.3 is 3.0000000000000004: integral within the tolerance.
    let s = spec(json!({"f": {"type": "number", "multipleOf": 0.1}}));
    assert!(errors(s.clone(), json!({"spec": {"f": 0.3}})).is_empty());
    assert_eq!(errors(s, json!({"spec": {"f": 0.35}})).len(), 1);
}

fn update_errors(schema: Value, new: Value, old: Value) -> Vec<String> {
    let props = Props::from_value(&schema);
    let patterns = Patterns::collect(&props);
    validate_update(&props, &patterns, &new, &old, None)
        .iter()
        .map(|e| e.to_string())
        .collect()
}

#[test]
fn ratcheting_keeps_unchanged_invalid_fields() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "required": ["need"], "properties": {
        "a": {"type": "string", "maxLength": 2},
        "b": {"type": "string", "maxLength": 2},
        "need": {"type": "string"},
        "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                  "items": {"type": "object", "properties": {"k": {"type": "string"}, "v": {"type": "integer", "maximum": 1}}}}
    }}}});
    let old = json!({"spec": {"a": "long", "b": "ok", "items": [{"k": "x", "v": 5}, {"k": "y", "v": 5}]}});
    // Unchanged bad values, a reordered map list and a still-missing
    // required field in a changed object: only the newly bad value fails.
    let new = json!({"spec": {"a": "long", "b": "bad!", "items": [{"k": "y", "v": 5}, {"k": "x", "v": 5}]}});
    assert_eq!(
        update_errors(s.clone(), new, old.clone()),
        vec![
            "spec.b: Too long: may not be more than 2 bytes",
            "spec.need: Required value"
        ]
    );
    assert!(update_errors(s.clone(), old.clone(), old.clone()).is_empty());
    let changed_item = json!({"spec": {"a": "long", "b": "ok", "items": [{"k": "x", "v": 6}, {"k": "y", "v": 5}]}});
    assert_eq!(
        update_errors(s, changed_item, old),
        vec![
            "spec.items[0].v: Invalid value: 6: spec.items[0].v in body should be less than or equal to 1",
            "spec.need: Required value",
        ]
    );
}
