//! A webhook's `matchConditions` (upstream's `webhook/matchconditions`): CEL expressions over `object`,
//! `oldObject` and `request` that must all be true for the webhook to be
//! called. Compiled expressions are kept, keyed by their text.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use kube_cel::Expression;
use serde_json::Value;

use crate::admission::initializer::text;

const VARIABLES: &[&str] = &["object", "oldObject", "request"];

/// What the conditions say about one request.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    Match,
    NoMatch,
    /// A condition could not be evaluated (the failure policy decides).
    Error(String),
}

#[derive(Default)]
pub struct Conditions {
    compiled: Mutex<HashMap<String, Arc<Expression>>>,
}

impl Conditions {
    fn compile(&self, source: &str) -> Result<Arc<Expression>, String> {
        if let Some(e) = self
            .compiled
            .lock()
            .ok()
            .and_then(|c| c.get(source).cloned())
        {
            return Ok(e);
        }
        let expr = Arc::new(Expression::compile(source, VARIABLES).map_err(|e| e.to_string())?);
        if let Ok(mut cache) = self.compiled.lock() {
            cache.insert(source.to_owned(), expr.clone());
        }
        Ok(expr)
    }

    /// Evaluates the webhook's conditions against an AdmissionRequest; the
    /// first false one decides, errors are reported once all are tried.
    pub fn evaluate(&self, webhook: &Value, request: &Value) -> Verdict {
        let Some(conditions) = webhook.get("matchConditions").and_then(Value::as_array) else {
            return Verdict::Match;
        };
        let null = Value::Null;
        let object = request.get("object").unwrap_or(&null);
        let old = request.get("oldObject").unwrap_or(&null);
        let bindings = [("object", object), ("oldObject", old), ("request", request)];
        let mut errors = Vec::new();
        for condition in conditions {
            let name = text(condition, "/name").unwrap_or_default();
            let source = text(condition, "/expression").unwrap_or_default();
            let result = self
                .compile(source)
                .and_then(|e| e.evaluate(&bindings).map_err(|e| e.to_string()));
            match result {
                Ok(Value::Bool(true)) => {}
                Ok(Value::Bool(false)) => return Verdict::NoMatch,
                Ok(other) => errors.push(format!(
                    "matchCondition {name:?}: expected a boolean result, got {other}"
                )),
                Err(e) => errors.push(format!("matchCondition {name:?}: {e}")),
            }
        }
        if errors.is_empty() {
            Verdict::Match
        } else {
            Verdict::Error(errors.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn all_conditions_must_hold() {
        let conditions = Conditions::default();
        let hook = json!({"matchConditions": [
            {"name": "labelled", "expression": "has(object.metadata.labels) && 'team' in object.metadata.labels"},
            {"name": "not-system", "expression": "!request.userInfo.username.startsWith('system:')"}
        ]});
        let request = |labels: Value, user: &str| {
            json!({"object": {"metadata": {"labels": labels}}, "oldObject": null,
                   "userInfo": {"username": user}})
        };
        assert_eq!(
            conditions.evaluate(&hook, &request(json!({"team": "a"}), "alice")),
            Verdict::Match
        );
        assert_eq!(
            conditions.evaluate(&hook, &request(json!({}), "alice")),
            Verdict::NoMatch
        );
        assert_eq!(
            conditions.evaluate(&hook, &request(json!({"team": "a"}), "system:admin")),
            Verdict::NoMatch
        );
        let broken =
            json!({"matchConditions": [{"name": "bad", "expression": "object.spec.replicas > 1"}]});
        assert!(matches!(
            conditions.evaluate(&broken, &request(json!({}), "alice")),
            Verdict::Error(_)
        ));
        assert_eq!(
            conditions.evaluate(&json!({}), &request(json!({}), "alice")),
            Verdict::Match
        );
    }
}
