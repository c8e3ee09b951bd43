//! The AdmissionReview sent to a webhook (upstream's `webhook/request`):
//! the version the webhook accepts and the request at the version the
//! webhook is called for.

use serde_json::{json, Value};

use super::predicates;
use super::versioned::{Converted, Target};
use crate::admission::{Attributes, GroupVersionKind, GroupVersionResource};

pub(crate) fn user_info(a: &Attributes) -> Value {
    let user = a.user();
    let mut info = json!({"username": user.name, "groups": user.groups});
    if !user.uid.is_empty() {
        info["uid"] = json!(user.uid);
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}

/// The AdmissionReview version to send: the first of the webhook's
/// `admissionReviewVersions` this server speaks.
pub(super) fn review_version(webhook: &Value) -> Option<&'static str> {
    predicates::strings(webhook.get("admissionReviewVersions")).find_map(|v| match v {
        "v1" => Some("v1"),
        "v1beta1" => Some("v1beta1"),
        _ => None,
    })
}

pub(crate) fn gvk(kind: &GroupVersionKind) -> Value {
    json!({"group": kind.group, "version": kind.version, "kind": kind.kind})
}

pub(crate) fn gvr(resource: &GroupVersionResource) -> Value {
    json!({"group": resource.group, "version": resource.version, "resource": resource.resource})
}

/// The AdmissionReview request of one call, in `version` (v1 and v1beta1
/// carry the same fields): the objects at the version the webhook is
/// called for (`converted` when that is not the request's), the request's
/// own kind and resource as `requestKind` and `requestResource`.
pub(super) fn review(
    a: &Attributes,
    invocation: &Target,
    converted: Option<&Converted>,
    version: &str,
) -> Value {
    let uid = uuid::Uuid::new_v4().to_string();
    let (object, old_object) = match converted {
        Some(c) => (c.object.clone(), c.old_object.clone()),
        None => (
            a.object.clone(),
            a.old_object.as_deref().map(|o| o.to_value()),
        ),
    };
    let mut request = json!({
        "uid": uid,
        "kind": gvk(&invocation.kind),
        "resource": gvr(&invocation.resource),
        "requestKind": gvk(&a.kind),
        "requestResource": gvr(&a.resource),
        "name": a.name,
        "operation": a.operation.as_str(),
        "userInfo": user_info(a),
        "object": object.unwrap_or(Value::Null),
        "oldObject": old_object.unwrap_or(Value::Null),
        "dryRun": a.dry_run,
        "options": a.options,
    });
    if !a.subresource.is_empty() {
        request["subResource"] = json!(a.subresource);
        request["requestSubResource"] = json!(a.subresource);
    }
    if !a.namespace.is_empty() {
        request["namespace"] = json!(a.namespace);
    }
    json!({"apiVersion": format!("admission.k8s.io/{version}"), "kind": "AdmissionReview", "request": request})
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::client;
    use super::*;

    #[test]
    fn the_first_known_review_version_is_sent() {
        let hook = |versions: Value| json!({"admissionReviewVersions": versions});
        assert_eq!(
            review_version(&hook(json!(["v2", "v1beta1", "v1"]))),
            Some("v1beta1")
        );
        assert_eq!(review_version(&hook(json!(["v1", "v1beta1"]))), Some("v1"));
        assert_eq!(review_version(&hook(json!(["v2"]))), None);
        assert_eq!(
            client::CallError::NoKnownVersion.to_string(),
            "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)"
        );
    }
}
