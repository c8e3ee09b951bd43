//! What validating admission policies leave in the request's audit
//! events, as upstream's policy dispatcher: the first validation failure
//! of a binding with the `Audit` action, and each policy's
//! `auditAnnotations` under `<policy>/<key>` (distinct values of several
//! bindings or parameters joined with `, `).

use crate::admission::Attributes;
use serde::Serialize;
use serde_json::Value;

use crate::admission::initializer::text;
use crate::admission::plugin::policy::generic::name;

const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";

#[derive(Serialize)]
struct FailureValue<'a> {
    message: &'a str,
    policy: &'a str,
    binding: &'a str,
    #[serde(rename = "expressionIndex")]
    expression_index: usize,
    #[serde(rename = "validationActions")]
    validation_actions: Vec<&'a str>,
}

/// Records a failed validation of a binding with the `Audit` action. The
/// annotation keeps its first value, as upstream's does.
pub fn validation_failure(a: &Attributes, binding: &Value, index: usize, message: &str) {
    let actions = binding
        .pointer("/spec/validationActions")
        .and_then(Value::as_array);
    let value = [FailureValue {
        message,
        policy: text(binding, "/spec/policyName").unwrap_or_default(),
        binding: name(binding),
        expression_index: index,
        validation_actions: actions
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect(),
    }];
    if let Ok(value) = serde_json::to_string(&value) {
        a.request.add_audit_annotation(VALIDATION_FAILURE, value);
    }
}

/// The audit annotation values of the policies evaluated for a request.
#[derive(Default)]
pub struct Collector {
    /// Policy, key and the distinct values, in the order first seen.
    values: Vec<(String, String, Vec<String>)>,
}

impl Collector {
    pub fn add(&mut self, policy: &str, key: &str, value: String) {
        let found = self
            .values
            .iter_mut()
            .find(|(p, k, _)| p == policy && k == key);
        match found {
            Some((.., values)) if values.contains(&value) => {}
            Some((.., values)) => values.push(value),
            None => self
                .values
                .push((policy.to_owned(), key.to_owned(), vec![value])),
        }
    }

    /// Adds the annotations to the request's audit events.
    pub fn publish(self, a: &Attributes) {
        for (policy, key, values) in self.values {
            a.request
                .add_audit_annotation(&format!("{policy}/{key}"), values.join(", "));
        }
    }
}
