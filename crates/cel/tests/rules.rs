//! End-to-end behaviour of compiled rule sets: compile errors as CRD field
//! errors, and validation failures as object field errors.

use apimachinery::field_errors::{ErrorType, FieldError};
use kube_cel::RuleSet;
use serde_json::{json, Value};

/// A CRD-like root schema with `spec` declared by `spec`.
fn root(spec: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec}})
}

fn compile(schema: Value) -> RuleSet {
    match RuleSet::compile(&schema) {
        Ok(rules) => rules,
        Err(errors) => panic!("unexpected compile errors: {errors:#?}"),
    }
}

fn compile_err(schema: Value) -> Vec<FieldError> {
    match RuleSet::compile(&schema) {
        Ok(_) => panic!("expected compile errors"),
        Err(errors) => errors,
    }
}

fn messages(errors: &[FieldError]) -> Vec<String> {
    errors.iter().map(ToString::to_string).collect()
}

fn replicas_schema() -> Value {
    root(json!({
        "type": "object",
        "properties": {
            "minReplicas": {"type": "integer"},
            "maxReplicas": {"type": "integer"}
        },
        "x-kubernetes-validations": [{
            "rule": "self.minReplicas <= self.maxReplicas",
            "message": "minReplicas must not exceed maxReplicas"
        }]
    }))
}

#[test]
fn min_not_above_max() {
    let rules = compile(replicas_schema());
    let ok = json!({"spec": {"minReplicas": 1, "maxReplicas": 3}});
    assert!(rules.validate(&ok, None).is_empty());
    let bad = json!({"spec": {"minReplicas": 5, "maxReplicas": 3}});
    assert_eq!(
        messages(&rules.validate(&bad, None)),
        ["spec: Invalid value: minReplicas must not exceed maxReplicas"]
    );
}

#[test]
fn integers_compare_as_ints() {
    // `5 <= 3.0` would not type in CEL: JSON numbers of integer fields
    // must become ints, even when written as 3.0.
    let rules = compile(replicas_schema());
    let doubles = json!({"spec": {"minReplicas": 1.0, "maxReplicas": 3.0}});
    assert!(rules.validate(&doubles, None).is_empty());
}

#[test]
fn immutability_transition_rule() {
    let schema = root(json!({
        "type": "object",
        "properties": {"name": {
            "type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "name is immutable"}]
        }}
    }));
    let rules = compile(schema);
    let old = json!({"spec": {"name": "a"}});
    let new = json!({"spec": {"name": "b"}});
    // Transition rules don't run on create.
    assert!(rules.validate(&new, None).is_empty());
    assert!(rules.validate(&old, Some(&old)).is_empty());
    assert_eq!(
        messages(&rules.validate(&new, Some(&old))),
        [r#"spec.name: Invalid value: "b": name is immutable"#]
    );
}

#[test]
fn default_message_names_the_rule() {
    let schema = root(json!({
        "type": "object",
        "properties": {"count": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > 0"}]}}
    }));
    let rules = compile(schema);
    assert_eq!(
        messages(&rules.validate(&json!({"spec": {"count": 0}}), None)),
        ["spec.count: Invalid value: 0: failed rule: self > 0"]
    );
}

#[test]
fn message_expression_is_evaluated() {
    let schema = root(json!({
        "type": "object",
        "properties": {"replicas": {"type": "integer"}},
        "x-kubernetes-validations": [{
            "rule": "self.replicas < 10",
            "message": "too many",
            "messageExpression": "'replicas ' + string(self.replicas) + ' exceeds 9'"
        }]
    }));
    let rules = compile(schema);
    assert_eq!(
        messages(&rules.validate(&json!({"spec": {"replicas": 12}}), None)),
        ["spec: Invalid value: replicas 12 exceeds 9"]
    );
}

#[test]
fn message_expression_is_checked_against_the_schema() {
    let schema = root(json!({
        "type": "object",
        "properties": {"replicas": {"type": "integer"}},
        "x-kubernetes-validations": [{
            "rule": "self.replicas < 10",
            "message": "too many",
            "messageExpression": "self.missing"
        }]
    }));
    let errors = compile_err(schema);
    assert!(
        errors[0].to_string().contains("undefined field 'missing'"),
        "{errors:?}"
    );
}

#[test]
fn reason_and_field_path() {
    let schema = root(json!({
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}},
        "x-kubernetes-validations": [{
            "rule": "self.a.b != 'x'",
            "message": "b may not be x",
            "reason": "FieldValueForbidden",
            "fieldPath": ".a.b"
        }]
    }));
    let rules = compile(schema);
    let errors = rules.validate(&json!({"spec": {"a": {"b": "x"}}}), None);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].error_type, ErrorType::Forbidden);
    assert_eq!(errors[0].to_string(), "spec.a.b: Forbidden: b may not be x");
}

#[test]
fn required_and_duplicate_reasons() {
    let schema = root(json!({
        "type": "object",
        "properties": {"items": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}}},
        "x-kubernetes-validations": [
            {"rule": "has(self.items)", "message": "items are required", "reason": "FieldValueRequired"},
            {"rule": "!has(self.items) || self.items.all(i, self.items.exists_one(j, j == i))",
             "message": "dup", "reason": "FieldValueDuplicate"}
        ]
    }));
    let rules = compile(schema);
    assert_eq!(
        messages(&rules.validate(&json!({"spec": {}}), None)),
        ["spec: Required value: items are required"]
    );
    let errors = rules.validate(&json!({"spec": {"items": ["a", "a"]}}), None);
    assert_eq!(errors.len(), 1);
    assert_eq!(errors[0].error_type, ErrorType::Duplicate);
}

#[test]
fn list_item_rules_run_per_item() {
    let schema = root(json!({
        "type": "object",
        "properties": {"ports": {
            "type": "array",
            "maxItems": 10,
            "items": {
                "type": "object",
                "properties": {"port": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.port > 0 && self.port < 65536", "message": "bad port"}]
            }
        }}
    }));
    let rules = compile(schema);
    let obj = json!({"spec": {"ports": [{"port": 80}, {"port": 0}, {"port": 70000}]}});
    assert_eq!(
        messages(&rules.validate(&obj, None)),
        [
            "spec.ports[1]: Invalid value: bad port",
            "spec.ports[2]: Invalid value: bad port"
        ]
    );
}

#[test]
fn list_map_items_correlate_by_key() {
    let schema = root(json!({
        "type": "object",
        "properties": {"entries": {
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "maxItems": 10,
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "value": {"type": "string"}},
                "x-kubernetes-validations": [{"rule": "self.value == oldSelf.value", "message": "value is immutable"}]
            }
        }}
    }));
    let rules = compile(schema);
    let old =
        json!({"spec": {"entries": [{"name": "a", "value": "1"}, {"name": "b", "value": "2"}]}});
    // Reordered, with a new entry: only the changed existing one fails.
    let new = json!({"spec": {"entries": [
        {"name": "c", "value": "9"},
        {"name": "b", "value": "3"},
        {"name": "a", "value": "1"}
    ]}});
    assert_eq!(
        messages(&rules.validate(&new, Some(&old))),
        ["spec.entries[1]: Invalid value: value is immutable"]
    );
}

#[test]
fn map_values_are_validated() {
    let schema = root(json!({
        "type": "object",
        "properties": {"labels": {
            "type": "object",
            "additionalProperties": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() <= 3"}]}
        }}
    }));
    let rules = compile(schema);
    let errors = rules.validate(
        &json!({"spec": {"labels": {"a": "ok", "b": "toolong"}}}),
        None,
    );
    assert_eq!(
        messages(&errors),
        [r#"spec.labels[b]: Invalid value: "toolong": failed rule: self.size() <= 3"#]
    );
}

#[test]
fn root_rules_report_nil_path() {
    let schema = json!({
        "type": "object",
        "properties": {"spec": {"type": "object", "properties": {"x": {"type": "integer"}}}},
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('ok')", "message": "bad name"}]
    });
    let rules = compile(schema);
    let errors = rules.validate(
        &json!({"metadata": {"name": "nope"}, "spec": {"x": 1}}),
        None,
    );
    assert_eq!(messages(&errors), ["<nil>: Invalid value: bad name"]);
}

#[test]
fn syntax_errors_are_reported_at_the_rule() {
    let errors = compile_err(root(json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.a <", "message": "m"}]
    })));
    assert_eq!(errors.len(), 1);
    let text = errors[0].to_string();
    assert!(
        text.starts_with(
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: {\"Rule\":\"self.a \\u003c\",\"Message\":\"m\",\"MessageExpression\":\"\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:9: Syntax error: "
        ),
        "{text}"
    );
}

#[test]
fn undefined_fields_fail_to_compile() {
    let errors = compile_err(replicas_schema_with_rule("self.minReplica <= 1"));
    let text = errors[0].to_string();
    assert!(
        text.contains("compilation failed: ERROR: <input>:1:"),
        "{text}"
    );
    assert!(text.contains("undefined field 'minReplica'"), "{text}");
}

fn replicas_schema_with_rule(rule: &str) -> Value {
    root(json!({
        "type": "object",
        "properties": {"minReplicas": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": rule}]
    }))
}

#[test]
fn undeclared_variables_fail_to_compile() {
    let errors = compile_err(replicas_schema_with_rule("foo > 1"));
    assert!(
        errors[0]
            .to_string()
            .contains("undeclared reference to 'foo' (in container '')"),
        "{errors:?}"
    );
}

#[test]
fn runtime_errors_are_reported() {
    let schema = root(json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.a / self.b > 0"}]
    }));
    let rules = compile(schema);
    assert_eq!(
        messages(&rules.validate(&json!({"spec": {"a": 1, "b": 0}}), None)),
        [r#"spec: Invalid value: "object": division by zero evaluating rule: self.a / self.b > 0"#]
    );
    // A missing field is a runtime error unless guarded with has().
    assert_eq!(
        messages(&rules.validate(&json!({"spec": {"a": 1}}), None)),
        [r#"spec: Invalid value: "object": no such key: b evaluating rule: self.a / self.b > 0"#]
    );
}

#[test]
fn optional_old_self_runs_on_create() {
    let schema = root(json!({
        "type": "object",
        "properties": {"name": {
            "type": "string",
            "x-kubernetes-validations": [{
                "rule": "oldSelf.hasValue() ? self == oldSelf.value() : self.startsWith('new-')",
                "message": "bad name",
                "optionalOldSelf": true
            }]
        }}
    }));
    let rules = compile(schema);
    assert!(rules
        .validate(&json!({"spec": {"name": "new-x"}}), None)
        .is_empty());
    assert_eq!(
        messages(&rules.validate(&json!({"spec": {"name": "x"}}), None)),
        [r#"spec.name: Invalid value: "x": bad name"#]
    );
    let old = json!({"spec": {"name": "x"}});
    assert!(rules.validate(&old, Some(&old)).is_empty());
    assert_eq!(
        rules
            .validate(&json!({"spec": {"name": "y"}}), Some(&old))
            .len(),
        1
    );
}

#[test]
fn optional_old_self_requires_old_self() {
    let errors = compile_err(root(json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "true", "optionalOldSelf": true}]
    })));
    assert_eq!(
        messages(&errors),
        ["spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"]
    );
}

#[test]
fn old_self_is_forbidden_inside_atomic_lists() {
    let errors = compile_err(root(json!({
        "type": "object",
        "properties": {"xs": {"type": "array", "maxItems": 5, "items": {
            "type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}]
        }}}
    })));
    assert_eq!(
        messages(&errors),
        ["spec.validation.openAPIV3Schema.properties[spec].properties[xs].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[spec].properties[xs]"]
    );
}

#[test]
fn unbounded_nested_comprehension_exceeds_cost_budget() {
    let errors = compile_err(root(json!({
        "type": "object",
        "properties": {"xs": {"type": "array", "items": {"type": "string"}}},
        "x-kubernetes-validations": [{"rule": "self.xs.all(a, self.xs.all(b, a == b))"}]
    })));
    let rule = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";
    let hint = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    assert_eq!(
        messages(&errors),
        [
            format!("{rule}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {hint}"),
            format!("{rule}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"),
            format!("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {hint}"),
        ]
    );
    assert!(errors.iter().all(|e| e.error_type == ErrorType::Forbidden));
}

#[test]
fn bounded_nested_comprehension_fits_the_budget() {
    let rules = compile(root(json!({
        "type": "object",
        "properties": {"xs": {"type": "array", "maxItems": 20, "items": {"type": "string", "maxLength": 10}}},
        "x-kubernetes-validations": [{"rule": "self.xs.all(a, self.xs.exists_one(b, a == b))", "message": "unique"}]
    })));
    assert!(rules
        .validate(&json!({"spec": {"xs": ["a", "b"]}}), None)
        .is_empty());
    assert_eq!(
        messages(&rules.validate(&json!({"spec": {"xs": ["a", "a"]}}), None)),
        ["spec: Invalid value: unique"]
    );
}

#[test]
fn runtime_budget_is_enforced() {
    let rules = compile(replicas_schema());
    let obj = json!({"spec": {"minReplicas": 1, "maxReplicas": 3}});
    let outcome = rules.validate_with_budget(&obj, None, 1);
    assert_eq!(
        messages(&outcome.errors),
        [
            r#"spec: Invalid value: "object": validation failed due to running out of cost budget, no further validation rules will be run"#
        ]
    );
    assert!(outcome.remaining_budget < 0);
}

#[test]
fn unchanged_values_ratchet_to_warnings() {
    let rules = compile(replicas_schema());
    let bad = json!({"spec": {"minReplicas": 5, "maxReplicas": 3}});
    let outcome = rules.validate_with_budget(&bad, Some(&bad), 1_000_000);
    assert!(outcome.errors.is_empty());
    assert_eq!(outcome.warnings.len(), 1);
}

#[test]
fn declarative_checks_of_rules() {
    let errors = compile_err(root(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": " "},
            {"rule": "true", "reason": "Bogus"},
            {"rule": "true", "fieldPath": ".nope"}
        ]
    })));
    assert_eq!(
        messages(&errors),
        [
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Required value: rule is not specified",
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[1].reason: Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\"",
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[2].fieldPath: Invalid value: \".nope\": must be a valid path"
        ]
    );
}

#[test]
fn rule_sets_are_shareable_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<RuleSet>();
}

#[test]
fn rules_must_produce_bools() {
    for rule in ["self.minReplicas", "1 + 1", "'text'"] {
        let errors = compile_err(replicas_schema_with_rule(rule));
        assert!(
            errors[0]
                .to_string()
                .ends_with(": cel expression must evaluate to a bool"),
            "{rule}: {errors:?}"
        );
    }
}

#[test]
fn message_expressions_must_produce_strings() {
    let errors = compile_err(root(json!({
        "type": "object",
        "properties": {"n": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.n > 0", "messageExpression": "self.n"}]
    })));
    assert_eq!(
        messages(&errors),
        ["spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].messageExpression: Invalid value: {\"Rule\":\"self.n \\u003e 0\",\"Message\":\"\",\"MessageExpression\":\"self.n\",\"Reason\":null,\"FieldPath\":\"\",\"OptionalOldSelf\":null}: messageExpression must evaluate to a string"]
    );
}

#[test]
fn out_of_range_index_is_an_evaluation_error() {
    let rules = compile(root(json!({
        "type": "object",
        "properties": {"xs": {"type": "array", "maxItems": 5, "items": {"type": "integer"}}},
        "x-kubernetes-validations": [{"rule": "self.xs[3] == 1"}]
    })));
    assert_eq!(
        messages(&rules.validate(&json!({"spec": {"xs": [1]}}), None)),
        [
            r#"spec: Invalid value: "object": index '3' out of range evaluating rule: self.xs[3] == 1"#
        ]
    );
}

#[test]
fn per_call_cost_limit_is_enforced_at_runtime() {
    // Within the static budget (at most 1000 items), but the nested loop
    // over 600 actual items costs more than one call may.
    let rules = compile(root(json!({
        "type": "object",
        "properties": {"xs": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}}},
        "x-kubernetes-validations": [
            {"rule": "self.xs.all(a, self.xs.all(b, a >= 0))", "message": "nested"},
            {"rule": "size(self.xs) < 1000", "message": "never reached"}
        ]
    })));
    let small = json!({"spec": {"xs": [1, 2, 3]}});
    assert!(rules.validate(&small, None).is_empty());
    let big = json!({"spec": {"xs": vec![1; 600]}});
    let outcome = rules.validate_with_budget(&big, None, 10_000_000);
    assert_eq!(
        messages(&outcome.errors),
        [
            r#"spec: Invalid value: "object": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: nested"#
        ]
    );
    assert!(outcome.remaining_budget < 0);
}

#[test]
fn escaped_property_names() {
    let rules = compile(root(json!({
        "type": "object",
        "properties": {
            "namespace": {"type": "string"},
            "x-prop": {"type": "integer"},
            "a.b": {"type": "integer"}
        },
        "x-kubernetes-validations": [{
            "rule": "self.__namespace__ == 'ns' && self.x__dash__prop == 1 && self.a__dot__b == 2",
            "message": "escaped"
        }]
    })));
    let ok = json!({"spec": {"namespace": "ns", "x-prop": 1, "a.b": 2}});
    assert!(rules.validate(&ok, None).is_empty());
    let bad = json!({"spec": {"namespace": "other", "x-prop": 1, "a.b": 2}});
    assert_eq!(
        messages(&rules.validate(&bad, None)),
        ["spec: Invalid value: escaped"]
    );
}

#[test]
fn runtime_cost_follows_actual_sizes() {
    // Each rule's static estimate assumes 4096-character names; charging
    // that for 1000 short names would exhaust the object's budget.
    let rules = compile(root(json!({
        "type": "object",
        "properties": {"names": {"type": "array", "maxItems": 1000, "items": {
            "type": "string",
            "maxLength": 4096,
            "x-kubernetes-validations": [
                {"rule": "self.matches('^[a-z0-9-]+$')", "message": "bad name"},
                {"rule": "!self.matches('^-|-$')", "message": "bad edge"}
            ]
        }}}
    })));
    let names: Vec<String> = (0..1000).map(|i| format!("name-{i}")).collect();
    let obj = json!({"spec": {"names": names}});
    let outcome = rules.validate_with_budget(&obj, None, kube_cel::limits::RUNTIME_CEL_COST_BUDGET);
    assert!(outcome.errors.is_empty(), "{:?}", outcome.errors.first());
    assert!(outcome.remaining_budget > 0);
}

#[test]
fn old_self_is_forbidden_inside_atomic_maps() {
    let errors = compile_err(root(json!({
        "type": "object",
        "x-kubernetes-map-type": "atomic",
        "properties": {"name": {
            "type": "string",
            "x-kubernetes-validations": [{"rule": "self == oldSelf"}]
        }}
    })));
    assert_eq!(
        messages(&errors),
        ["spec.validation.openAPIV3Schema.properties[spec].properties[name].x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.validation.openAPIV3Schema.properties[spec]"]
    );
}
