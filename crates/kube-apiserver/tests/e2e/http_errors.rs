//! Every error class over raw HTTPS (curl with the admin certificate):
//! status code, Status reason and message as upstream.

use crate::harness::TestServer;
use crate::support::http::{request, Answer};

pub(crate) fn assert_status(a: &Answer, code: u16, reason: &str, message: &str) {
    assert_eq!(a.code, code, "{}", a.body);
    assert_eq!(a.body["kind"], "Status", "{}", a.body);
    assert_eq!(a.body["code"], code, "{}", a.body);
    assert_eq!(a.body["reason"], reason, "{}", a.body);
    let got = a.body["message"].as_str().unwrap_or("");
    assert!(got.contains(message), "message {got:?} lacks {message:?}");
}

const JSON: &str = "Content-Type: application/json";
const CM: &str = "/api/v1/namespaces/default/configmaps";

#[test]
fn error_classes_match_upstream() {
    let s = TestServer::start();
    let created = request(
        &s,
        "POST",
        CM,
        &[JSON],
        Some(r#"{"metadata":{"name":"a"},"data":{"k":"v"}}"#),
    );
    assert_eq!(created.code, 201, "{}", created.body);
    let rv = created.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or("")
        .to_owned();

    let a = request(&s, "GET", &format!("{CM}/missing"), &[], None);
    assert_status(&a, 404, "NotFound", "configmaps \"missing\" not found");
    let a = request(
        &s,
        "POST",
        CM,
        &[JSON],
        Some(r#"{"metadata":{"name":"a"}}"#),
    );
    assert_status(&a, 409, "AlreadyExists", "configmaps \"a\" already exists");
    request(
        &s,
        "PUT",
        &format!("{CM}/a"),
        &[JSON],
        Some(r#"{"metadata":{"name":"a"},"data":{"k":"w"}}"#),
    );
    let stale =
        format!(r#"{{"metadata":{{"name":"a","resourceVersion":"{rv}"}},"data":{{"k":"x"}}}}"#);
    let a = request(&s, "PUT", &format!("{CM}/a"), &[JSON], Some(&stale));
    assert_status(&a, 409, "Conflict", "the object has been modified; please apply your changes to the latest version and try again");
    let a = request(
        &s,
        "POST",
        CM,
        &[JSON],
        Some(r#"{"metadata":{"name":"Bad_Name"}}"#),
    );
    assert_status(
        &a,
        422,
        "Invalid",
        "ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\"",
    );
    assert_eq!(a.body["details"]["causes"][0]["field"], "metadata.name");
    let a = request(
        &s,
        "POST",
        CM,
        &[JSON],
        Some(r#"{"metadata":{"name":"b","namespace":"other"}}"#),
    );
    assert_status(
        &a,
        400,
        "BadRequest",
        "the namespace of the provided object does not match the namespace sent on the request",
    );
    let a = request(&s, "PUT", CM, &[JSON], Some("{}"));
    assert_status(
        &a,
        405,
        "MethodNotAllowed",
        "the server does not allow this method on the requested resource",
    );
    let a = request(&s, "POST", CM, &["Content-Type: text/plain"], Some("x"));
    assert_status(
        &a,
        415,
        "UnsupportedMediaType",
        "the body of the request was in an unknown format",
    );
    let a = request(&s, "GET", &format!("{CM}/a"), &["Accept: text/html"], None);
    assert_status(
        &a,
        406,
        "NotAcceptable",
        "only the following media types are accepted",
    );
    let a = request(&s, "GET", "/apis/nothing.example.com/v1/things", &[], None);
    assert_status(
        &a,
        404,
        "NotFound",
        "the server could not find the requested resource",
    );
    let a = request(
        &s,
        "PATCH",
        &format!("{CM}/a"),
        &["Content-Type: application/json-patch+json"],
        Some(r#"[{"op":"test","path":"/data/k","value":"nope"}]"#),
    );
    assert_eq!(a.code, 422, "{}", a.body);
}

#[test]
fn dry_run_and_field_validation() {
    let s = TestServer::start();
    let a = request(
        &s,
        "POST",
        &format!("{CM}?dryRun=All"),
        &[JSON],
        Some(r#"{"metadata":{"name":"dry"}}"#),
    );
    assert_eq!(a.code, 201, "{}", a.body);
    let a = request(&s, "GET", &format!("{CM}/dry"), &[], None);
    assert_eq!(a.code, 404, "a dry-run create was persisted");
    let a = request(
        &s,
        "POST",
        &format!("{CM}?fieldValidation=Strict"),
        &[JSON],
        Some(r#"{"metadata":{"name":"s"},"bogus":1}"#),
    );
    assert_status(
        &a,
        400,
        "BadRequest",
        "strict decoding error: unknown field \"bogus\"",
    );
    let a = request(
        &s,
        "POST",
        CM,
        &[JSON],
        Some(r#"{"metadata":{"name":"w"},"bogus":1}"#),
    );
    assert_eq!(a.code, 201, "{}", a.body);
    assert!(a.body.get("bogus").is_none(), "unknown field stored");
}
