//! Strategic merge patch (`application/strategic-merge-patch+json`) of
//! built-in objects: the merge of `structured_merge::strategic` on the
//! generated schema of the object's kind, and its errors answered as
//! upstream's API server answers them. Kinds without a built-in schema
//! (custom resources) do not accept the patch type (415).

use apimachinery::status::{ApiError, StatusDetails, StatusReason};
use serde_json::Value;
use structured_merge::builtin;
use structured_merge::strategic::{self, ErrorClass, SmpError};

/// The patch types a resource without strategic merge metadata accepts
/// (upstream's list for custom resources).
const WITHOUT_STRATEGIC: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

/// The root type of an object by its own `apiVersion` and `kind`, so that
/// a subresource (a `Scale`) is patched as what it is.
fn root_of(object: &Value) -> Option<&'static str> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let kind = object.get("kind")?.as_str()?;
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    builtin::root(group, version, kind)
}

/// The 415 answer for a kind without strategic merge metadata.
fn unsupported() -> ApiError {
    ApiError::unsupported_media_type(WITHOUT_STRATEGIC)
}

/// Applies `patch` to `current`.
pub fn apply(current: Value, patch: &Value) -> Result<Value, ApiError> {
    let root = root_of(&current).ok_or_else(unsupported)?;
    let (Value::Object(original), Value::Object(patch)) = (current, patch) else {
        return Err(ApiError::bad_request("invalid JSON document"));
    };
    strategic::apply(original, patch, builtin::schema(), root)
        .map(Value::Object)
        .map_err(to_api_error)
}

/// Upstream maps the malformed-directive errors to 400, lists of lists to
/// a generic 422, and passes the others through as plain errors, which
/// become a 500 with no reason.
fn to_api_error(e: SmpError) -> ApiError {
    match e.status_class() {
        ErrorClass::BadRequest => ApiError::bad_request(e.to_string()),
        ErrorClass::Unprocessable => ApiError {
            details: Some(Box::new(StatusDetails::default())),
            ..ApiError::new(
                422,
                StatusReason::Invalid,
                "the server rejected our request due to an error in our request",
            )
        },
        ErrorClass::Internal => ApiError::new(500, StatusReason::Unknown, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod() -> Value {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"x": "1", "y": "2"}, "finalizers": []},
            "spec": {"containers": [
                {"name": "a", "image": "a:1", "ports": [{"containerPort": 80, "protocol": "TCP"}]},
                {"name": "b", "image": "b:1"}]}})
    }

    #[test]
    fn patches_by_the_objects_kind() {
        let patch = json!({"metadata": {"labels": {"x": null}},
            "spec": {"$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"name": "a", "image": "a:2"}]}});
        let out = apply(pod(), &patch).unwrap();
        assert_eq!(out["metadata"]["labels"], json!({"y": "2"}));
        assert_eq!(out["spec"]["containers"][0]["image"], "a:2");
        assert_eq!(
            out["spec"]["containers"][0]["ports"][0]["containerPort"],
            80
        );
        assert_eq!(out["spec"]["containers"][1]["image"], "b:1");
        let scale =
            json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "spec": {"replicas": 1}});
        let out = apply(scale, &json!({"spec": {"replicas": 3}})).unwrap();
        assert_eq!(out["spec"]["replicas"], 3);
    }

    #[test]
    fn kinds_without_schema_answer_415() {
        let cr = json!({"apiVersion": "stable.example.com/v1", "kind": "CronTab", "spec": {}});
        let err = apply(cr, &json!({"spec": {"a": 1}})).unwrap_err();
        assert_eq!(err.code, 415);
        assert_eq!(err.reason, StatusReason::UnsupportedMediaType);
    }

    #[test]
    fn errors_are_answered_as_upstream() {
        let err = apply(pod(), &json!({"spec": {"containers": [{"image": "x"}]}})).unwrap_err();
        assert_eq!(err.code, 500);
        assert_eq!(err.reason, StatusReason::Unknown);
        assert_eq!(
            err.message,
            "map: map[image:x] does not contain declared merge key: name"
        );
        let err = apply(pod(), &json!({"metadata": {"$retainKeys": "x"}})).unwrap_err();
        assert_eq!(
            (err.code, err.message.as_str()),
            (400, "invalid patch format of retainKeys")
        );
        let err = apply(pod(), &json!({"metadata": {"finalizers": [["x"]]}})).unwrap_err();
        assert_eq!((err.code, err.reason), (422, StatusReason::Invalid));
        let err = apply(
            pod(),
            &json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}),
        )
        .unwrap_err();
        assert_eq!(
            err.message,
            "merging lists cannot yet be specified in the patch"
        );
    }
}
