//! Tests for the `status` module.
use super::*;
use crate::field_errors::Path;
use serde_json::json;

fn json_string(err: &ApiError) -> String {
    err.to_status_json().to_string()
}

#[test]
fn not_found_core_and_grouped() {
    let err = ApiError::not_found("", "pods", "x");
    assert_eq!(err.code, 404);
    assert_eq!(
        json_string(&err),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"pods"},"code":404}"#
    );
    let err = ApiError::not_found("apps", "deployments", "x");
    assert_eq!(err.message, r#"deployments.apps "x" not found"#);
    assert_eq!(
        err.to_status_json()["details"],
        json!({"name":"x","group":"apps","kind":"deployments"})
    );
}

#[test]
fn conflict_and_exists_messages() {
    let err = ApiError::already_exists("", "pods", "x");
    assert_eq!((err.code, err.reason), (409, StatusReason::AlreadyExists));
    assert_eq!(err.message, r#"pods "x" already exists"#);

    let err = ApiError::optimistic_lock_conflict("apps", "deployments", "d");
    assert_eq!((err.code, err.reason), (409, StatusReason::Conflict));
    assert_eq!(
        err.message,
        "Operation cannot be fulfilled on deployments.apps \"d\": the object has been modified; please apply your changes to the latest version and try again"
    );

    let err = ApiError::generate_name_conflict("", "pods", "x-abc", 1);
    assert_eq!(
        err.message,
        "pods \"x-abc\" already exists, the server was not able to generate a unique name for the object"
    );
    assert_eq!(err.retry_after_seconds(), Some(1));
}

#[test]
fn invalid_aggregates_causes() {
    let p = Path::new("metadata");
    let errs = vec![
        FieldError::required(&p.child("name"), "name or generateName is required"),
        FieldError::invalid(&p.child("labels"), "a b", "bad"),
    ];
    let err = ApiError::invalid("", "Pod", "x", &errs);
    assert_eq!(err.code, 422);
    assert_eq!(
        err.message,
        "Pod \"x\" is invalid: [metadata.name: Required value: name or generateName is required, metadata.labels: Invalid value: \"a b\": bad]"
    );
    assert_eq!(
        err.to_status_json()["details"],
        json!({
            "name": "x",
            "kind": "Pod",
            "causes": [
                {"reason": "FieldValueRequired", "message": "Required value: name or generateName is required", "field": "metadata.name"},
                {"reason": "FieldValueInvalid", "message": "Invalid value: \"a b\": bad", "field": "metadata.labels"}
            ]
        })
    );
    let single = ApiError::invalid("apps", "Deployment", "d", &errs[..1]);
    assert_eq!(
        single.message,
        "Deployment.apps \"d\" is invalid: metadata.name: Required value: name or generateName is required"
    );
    assert_eq!(
        ApiError::invalid("", "Pod", "x", &[]).message,
        "Pod \"x\" is invalid"
    );
}

#[test]
fn forbidden_variants() {
    assert_eq!(
        ApiError::forbidden("", "pods", "x", "User \"u\" cannot get resource").message,
        "pods \"x\" is forbidden: User \"u\" cannot get resource"
    );
    assert_eq!(
        ApiError::forbidden("apps", "deployments", "", "nope").message,
        "deployments.apps is forbidden: nope"
    );
    assert_eq!(
        ApiError::forbidden("", "", "", "nope").message,
        "forbidden: nope"
    );
    assert_eq!(ApiError::forbidden("", "pods", "x", "n").code, 403);
}

#[test]
fn simple_errors() {
    let cases: Vec<(ApiError, u16, StatusReason, &str)> = vec![
        (
            ApiError::bad_request("bad"),
            400,
            StatusReason::BadRequest,
            "bad",
        ),
        (
            ApiError::unauthorized(""),
            401,
            StatusReason::Unauthorized,
            "not authorized",
        ),
        (
            ApiError::unauthorized("Unauthorized"),
            401,
            StatusReason::Unauthorized,
            "Unauthorized",
        ),
        (
            ApiError::method_not_supported("", "pods", "watch"),
            405,
            StatusReason::MethodNotAllowed,
            "watch is not supported on resources of kind \"pods\"",
        ),
        (ApiError::gone("gone"), 410, StatusReason::Gone, "gone"),
        (
            ApiError::resource_expired("too old resource version: 1 (5)"),
            410,
            StatusReason::Expired,
            "too old resource version: 1 (5)",
        ),
        (
            ApiError::too_many_requests_error("limit"),
            429,
            StatusReason::TooManyRequests,
            "Too many requests: limit",
        ),
        (
            ApiError::server_timeout("", "pods", "create", 2),
            500,
            StatusReason::ServerTimeout,
            "The create operation against pods could not be completed at this time, please try again.",
        ),
        (
            ApiError::timeout("request did not complete", 0),
            504,
            StatusReason::Timeout,
            "Timeout: request did not complete",
        ),
        (
            ApiError::internal_error("boom"),
            500,
            StatusReason::InternalError,
            "Internal error occurred: boom",
        ),
        (
            ApiError::service_unavailable("down"),
            503,
            StatusReason::ServiceUnavailable,
            "down",
        ),
        (
            ApiError::unsupported_media_type(&["application/json", "application/yaml"]),
            415,
            StatusReason::UnsupportedMediaType,
            "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml",
        ),
        (
            ApiError::not_acceptable(&["application/json"]),
            406,
            StatusReason::NotAcceptable,
            "only the following media types are accepted: application/json",
        ),
        (
            ApiError::not_acceptable_conversion("meta.k8s.io/v1, Kind=Table", &["application/json"]),
            406,
            StatusReason::NotAcceptable,
            "only the following media types are accepted when converting to meta.k8s.io/v1, Kind=Table: application/json",
        ),
        (
            ApiError::request_entity_too_large("limit is 3145728"),
            413,
            StatusReason::RequestEntityTooLarge,
            "Request entity too large: limit is 3145728",
        ),
    ];
    for (err, code, reason, message) in cases {
        assert_eq!(err.code, code, "{message}");
        assert_eq!(err.reason, reason, "{message}");
        assert_eq!(err.message, message);
        assert_eq!(err.to_string(), message);
        assert_eq!(err.status_code().as_u16(), code);
    }
}

#[test]
fn retry_after_and_empty_details() {
    let err = ApiError::too_many_requests("slow down", 5);
    assert_eq!(err.retry_after_seconds(), Some(5));
    assert_eq!(
        err.to_status_json()["details"],
        json!({"retryAfterSeconds": 5})
    );
    // Upstream keeps an empty details object when no retry is given.
    let err = ApiError::timeout("x", 0);
    assert_eq!(err.retry_after_seconds(), None);
    assert_eq!(err.to_status_json()["details"], json!({}));
    assert!(ApiError::bad_request("x")
        .to_status_json()
        .get("details")
        .is_none());
}

#[test]
fn too_large_resource_version_status() {
    let err = ApiError::too_large_resource_version(10, 7, 1);
    assert_eq!(
        json_string(&err),
        r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Timeout: Too large resource version: 10, current: 7","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version"}],"retryAfterSeconds":1},"code":504}"#
    );
}

#[test]
fn internal_error_has_cause() {
    let err = ApiError::internal_error("disk full");
    assert_eq!(
        err.to_status_json()["details"],
        json!({"causes": [{"message": "disk full"}]})
    );
}

#[test]
fn status_round_trips() {
    let err = ApiError::not_found("apps", "deployments", "x");
    let back = ApiError::from_status_json(&err.to_status_json());
    assert_eq!(back, Some(err));
    let ok = serde_json::to_value(Status::success(None)).unwrap_or_default();
    assert_eq!(
        ok,
        json!({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"})
    );
    assert_eq!(ApiError::from_status_json(&ok), None);
    assert_eq!(ApiError::from_status_json(&json!({"kind": "Pod"})), None);
}

#[test]
fn reasons_round_trip_through_wire_form() {
    for reason in StatusReason::ALL {
        assert_eq!(StatusReason::from_wire(reason.as_str()), reason);
    }
    assert_eq!(StatusReason::from_wire("Nope"), StatusReason::Unknown);
}
