//! The scenarios of upstream's CustomResourceValidationRules conformance
//! tests, checked at the library level: which CRDs compile, which objects
//! pass, and the words the errors must contain.

use kube_cel::RuleSet;
use serde_json::{json, Value};

fn schema_with_validation_expression() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.x + self.y > 0"},
                    {"rule": "self.firstArray.isSorted() && self.secondArray.isSorted() && ((self.firstArray.sum() + self.secondArray.sum()) % 2 == 0)"},
                    {"rule": "self.largeArray.all(x, self.largeArray.all(y, y == x))"}
                ],
                "properties": {
                    "x": {"type": "integer"},
                    "y": {"type": "integer"},
                    "firstArray": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
                    "secondArray": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
                    "largeArray": {"type": "array", "maxItems": 725, "items": {"type": "integer"}}
                }
            },
            "status": {
                "type": "object",
                "x-kubernetes-validations": [
                    {"rule": "self.health == 'ok' || self.health == 'unhealthy'"}
                ],
                "properties": {"health": {"type": "string"}}
            }
        }
    })
}

fn object(spec: Value) -> Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "E2e",
        "metadata": {"name": "cr-1", "namespace": "default"},
        "spec": spec
    })
}

fn compile(schema: &Value) -> RuleSet {
    match RuleSet::compile(schema) {
        Ok(rules) => rules,
        Err(errors) => panic!("unexpected compile errors: {errors:#?}"),
    }
}

fn compile_error_text(schema: &Value) -> String {
    match RuleSet::compile(schema) {
        Ok(_) => panic!("expected the CRD to be rejected"),
        Err(errors) => errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; "),
    }
}

fn error_text(rules: &RuleSet, new: &Value, old: Option<&Value>) -> String {
    rules
        .validate(new, old)
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

#[test]
fn satisfied_rules_pass() {
    let rules = compile(&schema_with_validation_expression());
    let obj = object(json!({
        "x": 1, "y": 0,
        "firstArray": [3, 4], "secondArray": [5, 10], "largeArray": [2, 2]
    }));
    assert_eq!(error_text(&rules, &obj, None), "");
}

#[test]
fn unsatisfied_rules_fail() {
    let rules = compile(&schema_with_validation_expression());
    let text = error_text(&rules, &object(json!({"x": 0, "y": 0})), None);
    assert!(text.contains("failed rule"), "{text}");
}

#[test]
fn rule_on_a_missing_property_is_rejected() {
    let text = compile_error_text(&json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.z == 100"}],
            "properties": {"x": {"type": "integer"}}
        }}
    }));
    assert!(text.contains("undefined field 'z'"), "{text}");
}

#[test]
fn rule_with_a_syntax_error_is_rejected() {
    let text = compile_error_text(&json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self = 42"}]
        }}
    }));
    assert!(text.contains("Syntax error"), "{text}");
}

#[test]
fn rule_over_the_estimated_cost_limit_is_rejected() {
    let text = compile_error_text(&json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "properties": {"x": {
                "type": "array",
                "items": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-validations": [{"rule": "self.all(s, s == 'string constant')"}]
                }
            }}
        }}
    }));
    assert!(text.contains("exceeds budget"), "{text}");
}

#[test]
fn rule_over_the_runtime_cost_limit_fails() {
    let rules = compile(&schema_with_validation_expression());
    let obj = object(json!({"largeArray": vec![20; 725]}));
    let text = error_text(&rules, &obj, None);
    assert!(text.contains("call cost exceeds limit"), "{text}");
}

#[test]
fn transition_rule_fails_on_update_only() {
    let rules = compile(&json!({
        "type": "object",
        "properties": {"spec": {
            "type": "object",
            "properties": {"num": {
                "type": "integer",
                "x-kubernetes-validations": [{"rule": "self > oldSelf"}]
            }}
        }}
    }));
    let old = object(json!({"num": 10}));
    assert_eq!(error_text(&rules, &old, None), "");
    let new = object(json!({"num": 9}));
    let text = error_text(&rules, &new, Some(&old));
    assert!(text.contains("failed rule"), "{text}");
}
