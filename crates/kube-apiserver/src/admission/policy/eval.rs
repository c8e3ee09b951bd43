//! Evaluating one policy for one binding and parameter (upstream's
//! validating policy `validator`): match conditions, variables,
//! validations with their messages, each failure shaped into a decision.
//! Compiled expressions are kept, keyed by their text.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube_cel::{CompileError, EvalError, Expression};
use serde_json::{Map, Value};

use crate::admission::lookup::text;

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
                    errors: vec![e],
                    ..Evaluation::default()
                }
            }
        }
        let vars = self.variables(spec, inputs);
        let mut out = Evaluation::default();
        for validation in array(spec, "validations") {
            let source = text(validation, "/expression").unwrap_or_default();
            match self.run(source, inputs, &vars) {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => out.failures.push(Failure {
                    message: self.message(validation, inputs, &vars),
                    reason: text(validation, "/reason").map(str::to_owned),
                }),
                Ok(other) => out.errors.push(format!(
                    "expression '{source}' resulted in error: expected a boolean result, got {other}"
                )),
                Err(e) => out.errors.push(e),
            }
        }
        out
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
    pub errors: Vec<String>,
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
        assert!(
            out.errors[0].starts_with("expression 'object.spec.missing == 1' resulted in error")
        );
        assert!(
            out.errors[1].starts_with("compilation failed"),
            "{}",
            out.errors[1]
        );
    }
}
