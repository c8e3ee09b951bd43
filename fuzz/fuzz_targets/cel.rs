//! CEL inputs (`kube-cel`, upstream's `apiserver/pkg/cel`): an expression
//! (the first part of the input) compiles or is refused, never panics,
//! as a standalone admission-policy expression, as a mutation expression
//! and as a CRD `x-kubernetes-validations` rule; what compiles is
//! evaluated against an object (the JSON second part) within the cost
//! limits, and returns a value or an error.
#![no_main]

use kube_cel::{Expression, RuleSet};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const VARIABLES: &[&str] = &["object", "oldObject", "params"];

fuzz_target!(|data: &[u8]| {
    let (mode, data) = kube_fuzz::choose(data, 3);
    let (source, object) = kube_fuzz::halves(data);
    let Ok(source) = std::str::from_utf8(source) else {
        return;
    };
    let object: Value = serde_json::from_slice(object).unwrap_or(Value::Null);
    let bindings = [("object", &object), ("oldObject", &Value::Null)];
    match mode {
        0 => {
            if let Ok(expression) = Expression::compile(source, VARIABLES) {
                let _ = expression.evaluate(&bindings);
            }
        }
        1 => {
            if let Ok(expression) = Expression::compile_mutation(source, VARIABLES) {
                let _ = expression.evaluate(&bindings);
            }
        }
        _ => {
            let schema = json!({
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": true,
                "x-kubernetes-validations": [{"rule": source}],
            });
            if let Ok(rules) = RuleSet::compile(&schema) {
                let _ = rules.validate(&object, None);
            }
        }
    }
});
