//! Evaluating one policy for one binding and parameter (upstream's
//! `k8s.io/apiserver/pkg/admission/plugin/cel` filters and the validating
//! policy `validator`): match conditions, variables, validations with
//! their messages, each failure shaped into a decision. Compiled
//! expressions are kept, keyed by their text.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube_cel::{CompileError, EvalError, Expression};
use serde_json::{Map, Value};

use crate::admission::initializer::text;

/// Every variable a policy expression may use.
const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "params",
    "namespaceObject",
    "variables",
];
/// Beyond this many distinct expressions the cache starts over, so edited
/// policies cannot grow it without bound.
const CACHE_LIMIT: usize = 4096;
/// Longest message a `messageExpression` may produce (upstream's limit).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;
/// Longest audit annotation value; longer ones are cut (as upstream).
const MAX_AUDIT_ANNOTATION_BYTES: usize = 10 * 1024;

/// The values the expressions of one evaluation see.
#[derive(Clone, Copy)]
pub struct Inputs<'a> {
    pub object: &'a Value,
    pub old_object: &'a Value,
    pub request: &'a Value,
    pub params: &'a Value,
    pub namespace_object: &'a Value,
}

/// One failed validation (or failed evaluation).
#[derive(Debug, PartialEq, Eq)]
pub struct Failure {
    /// The validation's place in the policy (upstream's expression index).
    pub index: usize,
    pub message: String,
    /// The validation's reason (None: Invalid, or an evaluation error).
    pub reason: Option<String>,
}

/// Which policies' expressions: mutating ones may also construct
/// `Object{...}` and `JSONPatch{...}` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Validating,
    Mutating,
}

/// Compiled expressions, by their text.
pub struct Compiled {
    mode: Mode,
    cache: Mutex<HashMap<String, Arc<Result<Expression, CompileError>>>>,
}

impl Compiled {
    pub fn new(mode: Mode) -> Self {
        Compiled {
            mode,
            cache: Mutex::default(),
        }
    }

    fn get(&self, source: &str) -> Arc<Result<Expression, CompileError>> {
        if let Some(e) = self.cache.lock().ok().and_then(|c| c.get(source).cloned()) {
            return e;
        }
        let compiled = Arc::new(match self.mode {
            Mode::Validating => Expression::compile(source, VARIABLES),
            Mode::Mutating => Expression::compile_mutation(source, VARIABLES),
        });
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(source.to_owned(), compiled.clone());
        }
        compiled
    }

    /// Evaluates `source`: compilation errors as upstream reports them
    /// (`compilation failed: …`), evaluation errors as `expression '…'
    /// resulted in error: …`.
    pub fn run(
        &self,
        source: &str,
        inputs: &Inputs<'_>,
        variables: &Value,
    ) -> Result<Value, String> {
        let compiled = self.get(source);
        let expr = compiled.as_ref().as_ref().map_err(|e| e.to_string())?;
        expr.evaluate(&[
            ("object", inputs.object),
            ("oldObject", inputs.old_object),
            ("request", inputs.request),
            ("params", inputs.params),
            ("namespaceObject", inputs.namespace_object),
            ("variables", variables),
        ])
        .map_err(|e| match e {
            // Upstream finds these checking the value built, not evaluating.
            EvalError::TypeMismatch(_) => e.to_string(),
            e => format!("expression '{source}' resulted in error: {e}"),
        })
    }

    /// The policy's match conditions: Ok(false) when one is false, an
    /// error when none is false but one could not be evaluated.
    pub fn conditions_hold(&self, spec: &Value, inputs: &Inputs<'_>) -> Result<bool, String> {
        let mut errors = Vec::new();
        for condition in array(spec, "matchConditions") {
            let source = text(condition, "/expression").unwrap_or_default();
            match self.run(source, inputs, &Value::Null) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => return Ok(false),
                Ok(other) => errors.push(format!(
                    "matchCondition '{}': expected a boolean result, got {other}",
                    text(condition, "/name").unwrap_or_default()
                )),
                Err(e) => errors.push(e),
            }
        }
        // Several errors are aggregated as upstream prints them: `[a, b]`.
        match errors.len() {
            0 => Ok(true),
            1 => Err(errors.concat()),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// The policy's variables, in order (each may use the earlier ones);
    /// one that fails is left out, so expressions using it fail.
    pub fn variables(&self, spec: &Value, inputs: &Inputs<'_>) -> Value {
        let mut vars = Value::Object(Map::new());
        for var in array(spec, "variables") {
            let (Some(name), Some(source)) = (text(var, "/name"), text(var, "/expression")) else {
                continue;
            };
            if let Ok(value) = self.run(source, inputs, &vars) {
                if let Value::Object(map) = &mut vars {
                    map.insert(name.to_owned(), value);
                }
            }
        }
        vars
    }

    /// The failures of `spec`'s validations; evaluation errors are
    /// returned apart (the failure policy decides on those).
    pub fn evaluate(&self, spec: &Value, inputs: &Inputs<'_>) -> Evaluation {
        match self.conditions_hold(spec, inputs) {
            Ok(true) => {}
            Ok(false) => return Evaluation::default(),
            Err(e) => {
                return Evaluation {
                    errors: vec![(0, e)],
                    ..Evaluation::default()
                }
            }
        }
        let vars = self.variables(spec, inputs);
        let mut out = Evaluation::default();
        for (index, validation) in array(spec, "validations").enumerate() {
            let source = text(validation, "/expression").unwrap_or_default();
            match self.run(source, inputs, &vars) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => out.failures.push(Failure {
                    index,
                    message: self.message(validation, inputs, &vars),
                    reason: text(validation, "/reason").map(str::to_owned),
                }),
                Ok(other) => out.errors.push((index, format!(
                    "expression '{source}' resulted in error: expected a boolean result, got {other}"
                ))),
                Err(e) => out.errors.push((index, e)),
            }
        }
        out.audit_annotations = self.audit_annotations(spec, inputs, &vars);
        out
    }

    /// The policy's `auditAnnotations`: each key with its value (None when
    /// the expression gives null or an empty string), or why it failed.
    fn audit_annotations(
        &self,
        spec: &Value,
        inputs: &Inputs<'_>,
        vars: &Value,
    ) -> Vec<AuditAnnotation> {
        let annotations = array(spec, "auditAnnotations");
        annotations
            .map(|annotation| {
                let key = text(annotation, "/key").unwrap_or_default().to_owned();
                let source = text(annotation, "/valueExpression").unwrap_or_default();
                let value = match self.run(source, inputs, vars) {
                    Ok(Value::String(s)) if s.is_empty() => Ok(None),
                    Ok(Value::String(mut s)) => {
                        truncate(&mut s, MAX_AUDIT_ANNOTATION_BYTES);
                        Ok(Some(s))
                    }
                    Ok(Value::Null) => Ok(None),
                    Ok(other) => Err(format!(
                        "valueExpression '{source}' resulted in unsupported return type: {}. Return type must be either string or null.",
                        type_name(&other)
                    )),
                    Err(e) => Err(e),
                };
                AuditAnnotation { key, value }
            })
            .collect()
    }

    /// A failed validation's message: its `messageExpression` when that
    /// gives a usable string, else its `message`, else the expression.
    fn message(&self, validation: &Value, inputs: &Inputs<'_>, vars: &Value) -> String {
        let from_expression = text(validation, "/messageExpression")
            .and_then(|source| self.run(source, inputs, vars).ok())
            .and_then(|v| v.as_str().map(|s| s.trim().to_owned()))
            .filter(|m| !m.is_empty() && m.len() <= MAX_MESSAGE_BYTES && !m.contains('\n'));
        if let Some(m) = from_expression {
            return m;
        }
        match text(validation, "/message").map(str::trim) {
            Some(m) if !m.is_empty() => m.to_owned(),
            _ => format!(
                "failed expression: {}",
                text(validation, "/expression").unwrap_or_default().trim()
            ),
        }
    }
}

/// What evaluating a policy gave.
#[derive(Debug, Default)]
pub struct Evaluation {
    pub failures: Vec<Failure>,
    /// Expressions that could not be evaluated, with their index.
    pub errors: Vec<(usize, String)>,
    pub audit_annotations: Vec<AuditAnnotation>,
}

/// One of a policy's `auditAnnotations`, evaluated.
#[derive(Debug, PartialEq, Eq)]
pub struct AuditAnnotation {
    pub key: String,
    pub value: Result<Option<String>, String>,
}

/// Cuts `s` to at most `max` bytes, on a character boundary.
fn truncate(s: &mut String, max: usize) {
    if s.len() > max {
        let cut = (0..=max)
            .rev()
            .find(|i| s.is_char_boundary(*i))
            .unwrap_or(0);
        s.truncate(cut);
    }
}

/// CEL's name of a value's type, for messages.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null_type",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "double",
        Value::Number(n) if n.is_u64() && !n.is_i64() => "uint",
        Value::Number(_) => "int",
        Value::String(_) => "string",
        Value::Array(_) => "list",
        Value::Object(_) => "map",
    }
}

fn array<'a>(v: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    v.get(field).and_then(Value::as_array).into_iter().flatten()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn run(spec: &Value, object: &Value, params: &Value) -> Evaluation {
        let null = Value::Null;
        let request = json!({"operation": "CREATE"});
        Compiled::new(Mode::Validating).evaluate(
            spec,
            &Inputs {
                object,
                old_object: &null,
                request: &request,
                params,
                namespace_object: &null,
            },
        )
    }

    #[test]
    fn validations_report_messages_and_reasons() {
        let spec = json!({
            "variables": [{"name": "max", "expression": "params.max"}],
            "validations": [
                {"expression": "object.spec.replicas <= variables.max"},
                {"expression": "object.spec.replicas < 4", "message": " too many ", "reason": "Forbidden"},
                {"expression": "object.spec.replicas < 3", "messageExpression": "'got ' + string(object.spec.replicas)"}
            ]
        });
        let out = run(&spec, &json!({"spec": {"replicas": 6}}), &json!({"max": 5}));
        assert!(out.errors.is_empty(), "{:?}", out.errors);
        let messages: Vec<_> = out.failures.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "failed expression: object.spec.replicas <= variables.max",
                "too many",
                "got 6"
            ]
        );
        assert_eq!(out.failures[1].reason.as_deref(), Some("Forbidden"));
        let ok = run(&spec, &json!({"spec": {"replicas": 2}}), &json!({"max": 5}));
        assert!(ok.failures.is_empty() && ok.errors.is_empty());
    }

    #[test]
    fn conditions_gate_and_errors_are_apart() {
        let spec = json!({
            "matchConditions": [{"name": "big", "expression": "object.spec.replicas > 1"}],
            "validations": [{"expression": "object.spec.missing == 1"}, {"expression": "1 +"}]
        });
        let skipped = run(&spec, &json!({"spec": {"replicas": 1}}), &Value::Null);
        assert!(skipped.failures.is_empty() && skipped.errors.is_empty());
        let out = run(&spec, &json!({"spec": {"replicas": 2}}), &Value::Null);
        assert_eq!(out.errors.len(), 2, "{:?}", out.errors);
        assert!(out.errors[0]
            .1
            .starts_with("expression 'object.spec.missing == 1' resulted in error"));
        assert_eq!(out.errors[1].0, 1);
        assert!(
            out.errors[1].1.starts_with("compilation failed"),
            "{}",
            out.errors[1].1
        );
    }

    #[test]
    fn audit_annotations_are_strings_or_nothing() {
        let spec = json!({
            "validations": [{"expression": "true"}, {"expression": "object.spec.replicas < 3"}],
            "auditAnnotations": [
                {"key": "replicas", "valueExpression": "'got ' + string(object.spec.replicas)"},
                {"key": "none", "valueExpression": "null"},
                {"key": "empty", "valueExpression": "''"},
                {"key": "number", "valueExpression": "object.spec.replicas"}
            ]
        });
        let out = run(&spec, &json!({"spec": {"replicas": 6}}), &Value::Null);
        assert_eq!(out.failures[0].index, 1);
        let values: Vec<_> = out
            .audit_annotations
            .iter()
            .map(|a| (a.key.as_str(), &a.value))
            .collect();
        assert_eq!(values[0], ("replicas", &Ok(Some("got 6".to_owned()))));
        assert_eq!(values[1], ("none", &Ok(None)));
        assert_eq!(values[2], ("empty", &Ok(None)));
        assert_eq!(
            values[3],
            ("number", &Err("valueExpression 'object.spec.replicas' resulted in unsupported return type: int. Return type must be either string or null.".to_owned()))
        );
        let mut long = "é".repeat(6000);
        truncate(&mut long, MAX_AUDIT_ANNOTATION_BYTES + 1);
        assert_eq!(long.len(), MAX_AUDIT_ANNOTATION_BYTES);
    }
}
