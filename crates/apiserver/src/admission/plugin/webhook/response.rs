//! A webhook's answer (upstream's `VerifyAdmissionResponse` and the
//! dispatchers' handling of it): the AdmissionReview response checked for
//! the version sent, a denial turned into its status, and a mutating
//! webhook's JSON patch decoded and applied.

use apimachinery::status::{ApiError, StatusReason};
use base64::Engine;
use serde_json::{json, Value};

use super::client;
use crate::admission::initializer::text;

/// Upstream's answer to a denial: the webhook's status, at least 400.
pub(super) fn denied(webhook: &str, status: Option<&Value>) -> ApiError {
    let field = |k: &str| {
        status
            .and_then(|s| text(s, &format!("/{k}")))
            .unwrap_or_default()
    };
    let code = status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let prefix = format!("admission webhook \"{webhook}\" denied the request");
    let message = match (field("message"), field("reason")) {
        (m, _) if !m.is_empty() => format!("{prefix}: {m}"),
        (_, r) if !r.is_empty() => format!("{prefix}: {r}"),
        _ => format!("{prefix} without explanation"),
    };
    let reason = serde_json::from_value::<StatusReason>(json!(field("reason")))
        .unwrap_or(StatusReason::Unknown);
    ApiError::new(code, reason, message)
}

/// A mutating webhook's JSON patch: the operations to apply, and the
/// patch as sent, for the audit annotation.
pub(super) struct WebhookPatch {
    pub operations: json_patch::Patch,
    pub sent: Value,
}

/// The `response` of an AdmissionReview answering `uid`, checked as
/// upstream's `VerifyAdmissionResponse` does for the version sent.
pub(super) fn verify_response(
    review: Value,
    uid: &Value,
    version: &str,
    mutating: bool,
) -> Result<Value, client::CallError> {
    let bad = |m: String| client::CallError::Response(m);
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err(bad("webhook response was absent".into()));
    };
    if version != "v1" {
        // v1beta1 answers were never checked further.
        return Ok(response.clone());
    }
    let got_uid = response
        .get("uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if Some(got_uid) != uid.as_str() {
        return Err(bad(format!(
            "expected response.uid={:?}, got {got_uid:?}",
            uid.as_str().unwrap_or_default()
        )));
    }
    let api_version = text(&review, "/apiVersion").unwrap_or_default();
    let kind = text(&review, "/kind").unwrap_or_default();
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        let (group, ver) = api_version.split_once('/').unwrap_or(("", api_version));
        return Err(bad(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{ver}, Kind={kind}"
        )));
    }
    let patch = response
        .get("patch")
        .and_then(Value::as_str)
        .is_some_and(|p| !p.is_empty());
    let patch_type = response.get("patchType").filter(|t| !t.is_null());
    let problem = match (mutating, patch, patch_type) {
        (true, true, None) => Some("webhook returned response.patch but not response.patchType"),
        (true, false, Some(_)) => {
            Some("webhook returned response.patchType but not response.patch")
        }
        (true, true, Some(t)) if t.as_str().is_none_or(str::is_empty) => {
            return Err(bad(format!(
                "webhook returned invalid response.patchType of {:?}",
                t.as_str().unwrap_or_default()
            )))
        }
        (false, true, _) => Some("validating webhook may not return response.patch"),
        (false, _, Some(_)) => Some("validating webhook may not return response.patchType"),
        _ => None,
    };
    match problem {
        Some(p) => Err(bad(p.to_owned())),
        None => Ok(response.clone()),
    }
}

/// A mutating webhook's JSON patch (none when absent or empty).
pub(super) fn decode_patch(
    response: &Value,
    version: &str,
) -> Result<Option<WebhookPatch>, client::CallError> {
    let Some(patch) = response.get("patch").and_then(Value::as_str) else {
        return Ok(None);
    };
    let undecodable =
        |e: &dyn std::fmt::Display| client::CallError::UndecodablePatch(e.to_string());
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(patch)
        .map_err(|e| undecodable(&e))?;
    if bytes.is_empty() {
        return Ok(None);
    }
    let sent: Value = serde_json::from_slice(&bytes).map_err(|e| undecodable(&e))?;
    let operations: json_patch::Patch =
        serde_json::from_value(sent.clone()).map_err(|e| undecodable(&e))?;
    if operations.0.is_empty() {
        return Ok(None);
    }
    // v1beta1 answers were pinned to JSONPatch.
    let patch_type = if version == "v1" {
        text(response, "/patchType").unwrap_or_default()
    } else {
        "JSONPatch"
    };
    if patch_type != "JSONPatch" {
        return Err(client::CallError::UnsupportedPatchType(
            patch_type.to_owned(),
        ));
    }
    Ok(Some(WebhookPatch { operations, sent }))
}

/// Applies a webhook's JSON patch to the object; returns whether it
/// changed.
pub(super) fn apply_patch(patch: &json_patch::Patch, object: &mut Value) -> Result<bool, String> {
    let mut patched = object.clone();
    json_patch::patch(&mut patched, patch).map_err(|e| e.to_string())?;
    let changed = patched != *object;
    *object = patched;
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_carry_the_webhook_name_and_at_least_400() {
        let e = denied(
            "deny.example.com",
            Some(&json!({"message": "no pods today", "code": 200})),
        );
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "admission webhook \"deny.example.com\" denied the request: no pods today"
        );
        let e = denied("x", Some(&json!({"code": 403, "reason": "Forbidden"})));
        assert_eq!((e.code, e.reason), (403, StatusReason::Forbidden));
        assert_eq!(
            e.message,
            "admission webhook \"x\" denied the request: Forbidden"
        );
        assert_eq!(
            denied("x", None).message,
            "admission webhook \"x\" denied the request without explanation"
        );
    }

    fn encoded(patch: &str) -> String {
        base64::engine::general_purpose::STANDARD.encode(patch)
    }

    #[test]
    fn json_patches_decode_apply_and_report_changes() {
        let patch = encoded(r#"[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]"#);
        let response = json!({"patchType": "JSONPatch", "patch": patch});
        let Ok(Some(patch)) = decode_patch(&response, "v1") else {
            panic!("patch not decoded");
        };
        assert_eq!(patch.sent[0]["value"], json!({"a": "b"}));
        let mut obj = json!({"metadata": {}});
        assert_eq!(apply_patch(&patch.operations, &mut obj), Ok(true));
        assert_eq!(obj["metadata"]["labels"]["a"], "b");
        assert_eq!(apply_patch(&patch.operations, &mut obj), Ok(false));
        let other = json!({"patchType": "Merge", "patch": encoded("[{\"op\":\"remove\",\"path\":\"/a\"}]")});
        assert_eq!(
            decode_patch(&other, "v1")
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Err("unsupported patch type \"Merge\"".to_owned())
        );
        // v1beta1 answers are taken as JSON patches whatever they say.
        assert!(matches!(decode_patch(&other, "v1beta1"), Ok(Some(_))));
        assert!(matches!(
            decode_patch(&json!({"patch": encoded("[]")}), "v1"),
            Ok(None)
        ));
    }

    fn verify(review: Value, mutating: bool) -> Result<(), String> {
        verify_response(review, &json!("u-1"), "v1", mutating)
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    #[test]
    fn responses_are_verified_as_upstream() {
        let ok = |response: Value| json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response});
        assert_eq!(
            verify(ok(json!({"uid": "u-1", "allowed": true})), false),
            Ok(())
        );
        assert_eq!(
            verify(
                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}),
                false
            ),
            Err("received invalid webhook response: webhook response was absent".into())
        );
        assert_eq!(
            verify(ok(json!({"uid": "other", "allowed": true})), false),
            Err(
                "received invalid webhook response: expected response.uid=\"u-1\", got \"other\""
                    .into()
            )
        );
        assert_eq!(
            verify(
                json!({"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview",
                       "response": {"uid": "u-1", "allowed": true}}),
                false
            ),
            Err("received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got admission.k8s.io/v1beta1, Kind=AdmissionReview".into())
        );
        let patched = ok(json!({"uid": "u-1", "allowed": true, "patch": encoded("[]")}));
        assert_eq!(
            verify(patched.clone(), false),
            Err("received invalid webhook response: validating webhook may not return response.patch".into())
        );
        assert_eq!(
            verify(patched, true),
            Err("received invalid webhook response: webhook returned response.patch but not response.patchType".into())
        );
        assert_eq!(
            verify(ok(json!({"uid": "u-1", "allowed": true, "patchType": "JSONPatch"})), true),
            Err("received invalid webhook response: webhook returned response.patchType but not response.patch".into())
        );
        // v1beta1 answers are not checked beyond having a response.
        assert!(verify_response(
            ok(json!({"allowed": true})),
            &json!("u-1"),
            "v1beta1",
            false
        )
        .is_ok());
    }
}
