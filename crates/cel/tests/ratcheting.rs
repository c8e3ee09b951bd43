//! The CEL scenarios of upstream's CRDValidationRatcheting conformance
//! tests: failures on unchanged correlatable values are ratcheted, those
//! on uncorrelatable or changed values and those of transition rules are
//! not.

use kube_cel::RuleSet;
use serde_json::{json, Value};

/// `field`, `struct.field`, `list[*].field` (a list-map keyed by `key`)
/// and `map[*].field`, each `field` carrying `rule` (and `optional` as
/// its optionalOldSelf).
fn correlatable_schema(rule: &str, optional: bool) -> Value {
    let mut validation = json!({"rule": rule});
    if optional {
        validation["optionalOldSelf"] = json!(true);
    }
    let field = json!({"type": "string", "maxLength": 5, "x-kubernetes-validations": [validation]});
    let other = json!({"type": "string", "maxLength": 16});
    json!({
        "type": "object",
        "properties": {
            "field": field,
            "otherField": other,
            "struct": {"type": "object", "properties": {"field": field, "otherField": other}},
            "list": {
                "type": "array",
                "maxItems": 5,
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["key"],
                "items": {"type": "object", "required": ["key"], "properties": {
                    "key": {"type": "string", "maxLength": 5}, "field": field, "otherField": other
                }}
            },
            "map": {
                "type": "object",
                "maxProperties": 5,
                "additionalProperties": {"type": "object", "properties": {"field": field, "otherField": other}}
            }
        }
    })
}

/// An object whose every `field` holds `value`, with `labels`.
fn instance(value: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Test",
        "metadata": {"name": "test-resource", "namespace": "default", "labels": labels},
        "field": value,
        "struct": {"field": value},
        "list": [{"key": "foo", "field": value}, {"key": "bar", "field": value}],
        "map": {"foo": {"field": value}, "bar": {"field": value}}
    })
}

const FIELD_PATHS: [&str; 6] = [
    "field",
    "struct.field",
    "list[0].field",
    "list[1].field",
    "map[foo].field",
    "map[bar].field",
];

fn compile(schema: &Value) -> RuleSet {
    match RuleSet::compile(schema) {
        Ok(rules) => rules,
        Err(errors) => panic!("unexpected compile errors: {errors:#?}"),
    }
}

fn error_fields(rules: &RuleSet, new: &Value, old: &Value) -> Vec<String> {
    let mut fields: Vec<String> = rules
        .validate(new, Some(old))
        .into_iter()
        .map(|e| e.field)
        .collect();
    fields.sort();
    fields
}

fn sorted_paths() -> Vec<String> {
    let mut paths: Vec<String> = FIELD_PATHS.iter().map(|p| (*p).to_owned()).collect();
    paths.sort();
    paths
}

#[test]
fn unchanged_correlatable_values_are_ratcheted() {
    let rules = compile(&correlatable_schema("self == \"foo\"", false));
    let old = instance("notfoo", json!({}));
    let mut new = instance("notfoo", json!({"foo": "bar"}));
    new["otherField"] = json!("doesntmatter");
    new["struct"]["otherField"] = json!("doesntmatter");
    new["list"][0]["otherField"] = json!("doesntmatter");
    if let Some(list) = new["list"].as_array_mut() {
        list.push(json!({"key": "baz", "field": "foo"}));
    }
    new["map"]["foo"]["otherField"] = json!("doesntmatter");
    let outcome = rules.validate_with_budget(&new, Some(&old), 10_000_000);
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors);
    assert!(!outcome.warnings.is_empty());
}

#[test]
fn changed_values_are_not_ratcheted() {
    let rules = compile(&correlatable_schema("self == \"foo\"", false));
    let old = instance("foo", json!({}));
    let new = instance("notfoo", json!({}));
    assert_eq!(error_fields(&rules, &new, &old), sorted_paths());
}

#[test]
fn uncorrelatable_values_are_not_ratcheted() {
    let item = json!({"type": "string", "x-kubernetes-validations": [{"rule": "self != \"foo\""}]});
    let rules = compile(&json!({
        "type": "object",
        "properties": {
            "atomicArray": {"type": "array", "maxItems": 10, "items": item},
            "setArray": {"type": "array", "maxItems": 10, "x-kubernetes-list-type": "set", "items": item}
        }
    }));
    let old = json!({"metadata": {"name": "t"}, "setArray": ["foo", "bar", "baz"], "atomicArray": ["foo", "bar", "baz"]});
    let new = json!({
        "metadata": {"name": "t", "labels": {"foo": "bar"}},
        "setArray": ["foo", "bar", "baz", "notfoo"],
        "atomicArray": ["foo", "bar", "baz", "notfoo"]
    });
    assert_eq!(
        error_fields(&rules, &new, &old),
        ["atomicArray[0]", "setArray[0]"]
    );
}

#[test]
fn transition_rules_are_not_ratcheted() {
    let rules = compile(&correlatable_schema("self != oldSelf", false));
    let old = instance("foo", json!({}));
    let new = instance("foo", json!({"foo": "bar"}));
    assert_eq!(error_fields(&rules, &new, &old), sorted_paths());
}

#[test]
fn optional_old_self_rules_see_new_values() {
    let rules = compile(&correlatable_schema(
        "!oldSelf.hasValue() || self != oldSelf.value()",
        true,
    ));
    let created = instance("foo", json!({}));
    assert!(rules.validate(&created, None).is_empty());
    let relabelled = instance("foo", json!({"foo": "bar"}));
    assert_eq!(error_fields(&rules, &relabelled, &created), sorted_paths());
    let changed = instance("new", json!({}));
    assert!(rules.validate(&changed, Some(&created)).is_empty());
}
