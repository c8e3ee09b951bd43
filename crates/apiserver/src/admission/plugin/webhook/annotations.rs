//! The audit annotations webhook calls leave (upstream's webhook
//! annotator): which mutating webhook was called in which round and
//! whether it changed the object, the patch it sent (only in events that
//! record the request, since a patch shows the object's content), which
//! webhooks failed open, and the annotations webhooks return themselves.

use std::sync::Arc;

use crate::admission::RequestContext;
use crate::audit::Level;
use apimachinery::validation::is_qualified_name;
use serde::Serialize;
use serde_json::{Map, Value};

const MUTATION_PREFIX: &str = "mutation.webhook.admission.k8s.io/";
const PATCH_PREFIX: &str = "patch.webhook.admission.k8s.io/";
const MUTATION_FAILED_OPEN_PREFIX: &str = "failed-open.mutation.webhook.admission.k8s.io/";
const VALIDATING_FAILED_OPEN_PREFIX: &str = "failed-open.validating.webhook.admission.k8s.io/";

#[derive(Serialize)]
struct MutationValue<'a> {
    configuration: &'a str,
    webhook: &'a str,
    mutated: bool,
}

#[derive(Serialize)]
struct PatchValue<'a> {
    configuration: &'a str,
    webhook: &'a str,
    patch: &'a Value,
    #[serde(rename = "patchType")]
    patch_type: &'static str,
}

/// The annotations of one mutating webhook call: `round` is 1 in
/// admission's second pass, `index` the webhook's place among all
/// mutating webhooks.
pub struct MutationAnnotator<'a> {
    pub request: Arc<RequestContext>,
    pub round: usize,
    pub index: usize,
    pub configuration: &'a str,
    pub webhook: &'a str,
}

impl MutationAnnotator<'_> {
    fn key(&self, prefix: &str) -> String {
        format!("{prefix}round_{}_index_{}", self.round, self.index)
    }

    /// The webhook was called; `mutated` when its patch changed the object.
    pub fn called(&self, mutated: bool) {
        let value = MutationValue {
            configuration: self.configuration,
            webhook: self.webhook,
            mutated,
        };
        if let Ok(value) = serde_json::to_string(&value) {
            let key = self.key(MUTATION_PREFIX);
            self.request.add_audit_annotation(&key, value);
        }
    }

    /// The JSON patch the webhook answered with, as applied.
    pub fn patched(&self, patch: &Value) {
        let value = PatchValue {
            configuration: self.configuration,
            webhook: self.webhook,
            patch: &sorted_operations(patch),
            patch_type: "JSONPatch",
        };
        if let Ok(value) = serde_json::to_string(&value) {
            let key = self.key(PATCH_PREFIX);
            let request = &self.request;
            request.add_audit_annotation_with_level(&key, value, Level::Request);
        }
    }

    /// The call failed and the webhook's failure policy ignored it.
    pub fn failed_open(&self) {
        let key = self.key(MUTATION_FAILED_OPEN_PREFIX);
        self.request.add_audit_annotation(&key, self.webhook);
    }
}

/// A validating webhook (the `index`th of those called) failed open.
pub fn validating_failed_open(request: &RequestContext, index: usize, webhook: &str) {
    let key = format!("{VALIDATING_FAILED_OPEN_PREFIX}round_0_index_{index}");
    request.add_audit_annotation(&key, webhook);
}

/// The patch's operations with their fields in name order, as upstream
/// re-encodes them; the values stay as the webhook sent them.
fn sorted_operations(patch: &Value) -> Value {
    let Some(operations) = patch.as_array() else {
        return patch.clone();
    };
    let sorted = operations.iter().map(|op| match op.as_object() {
        Some(fields) => {
            let mut fields: Vec<_> = fields.iter().collect();
            fields.sort_by_key(|(k, _)| *k);
            let map: Map<String, Value> = fields
                .into_iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            Value::Object(map)
        }
        None => op.clone(),
    });
    Value::Array(sorted.collect())
}

/// The webhook's own `auditAnnotations`, each under `<webhook>/<key>`;
/// keys that do not make a qualified name with exactly one `/` are
/// dropped (and logged), as upstream refuses them.
pub fn record_returned(request: &RequestContext, webhook: &str, annotations: &Map<String, Value>) {
    for (key, value) in annotations {
        let full = format!("{webhook}/{key}");
        match (value.as_str(), annotation_key_problem(&full)) {
            (Some(value), None) => request.add_audit_annotation(&full, value),
            (_, Some(problem)) => {
                tracing::warn!(webhook, key = %full, "dropping webhook audit annotation: {problem}");
            }
            (None, None) => {
                tracing::warn!(webhook, key = %full, "dropping webhook audit annotation: value is not a string");
            }
        }
    }
}

/// Why an admission annotation key is refused, if it is.
fn annotation_key_problem(key: &str) -> Option<String> {
    if key.split('/').count() != 2 {
        return Some(format!(
            "annotation key {key:?} must be a DNS subdomain prefix, '/' and a name"
        ));
    }
    let errors = is_qualified_name(key);
    (!errors.is_empty()).then(|| errors.join(", "))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::audit::{AuditContext, Event};
    use crate::authentication::user::UserInfo;

    fn request() -> (Arc<AuditContext>, Arc<RequestContext>) {
        let audit = Arc::new(AuditContext::default());
        let user = Arc::new(UserInfo::default());
        (audit.clone(), RequestContext::audited(user, Some(audit)))
    }

    fn annotations(audit: &AuditContext, level: Level) -> Vec<(String, String)> {
        let mut event = Event::new(level, "id".into());
        audit.apply(&mut event);
        event.annotations.into_iter().collect()
    }

    #[test]
    fn mutation_and_patch_annotations_are_upstream_shaped() {
        let (audit, request) = request();
        let annotator = MutationAnnotator {
            request,
            round: 1,
            index: 2,
            configuration: "cfg",
            webhook: "hook.example.com",
        };
        annotator.patched(
            &json!([{"path": "/metadata/labels", "op": "add", "value": {"b": "1", "a": "2"}}]),
        );
        annotator.called(true);
        let mutation = (
            "mutation.webhook.admission.k8s.io/round_1_index_2".to_owned(),
            r#"{"configuration":"cfg","webhook":"hook.example.com","mutated":true}"#.to_owned(),
        );
        // The patch shows content: only events at Request level carry it.
        assert_eq!(annotations(&audit, Level::Metadata), vec![mutation.clone()]);
        let patch = (
            "patch.webhook.admission.k8s.io/round_1_index_2".to_owned(),
            r#"{"configuration":"cfg","webhook":"hook.example.com","patch":[{"op":"add","path":"/metadata/labels","value":{"b":"1","a":"2"}}],"patchType":"JSONPatch"}"#.to_owned(),
        );
        assert_eq!(annotations(&audit, Level::Request), vec![mutation, patch]);
    }

    #[test]
    fn returned_annotations_need_a_qualified_key() {
        let (audit, request) = request();
        let returned = json!({"ok": "1", "a/b": "2", "bad key": "3", "num": 4});
        record_returned(&request, "hook.example.com", returned.as_object().unwrap());
        validating_failed_open(&request, 3, "v.example.com");
        assert_eq!(
            annotations(&audit, Level::Metadata),
            vec![
                (
                    "failed-open.validating.webhook.admission.k8s.io/round_0_index_3".to_owned(),
                    "v.example.com".to_owned()
                ),
                ("hook.example.com/ok".to_owned(), "1".to_owned()),
            ]
        );
    }
}
