//! TokenRequest lifetimes and bound objects as upstream's TokenREST, on both
//! storage backends: a lifetime over `--service-account-max-token-expiration`
//! is shortened with a `Warning` header saying so (and the answer's spec and
//! `status.expirationTimestamp` show the shortened lifetime); kubelet's
//! 3607 s pod-bound tokens are extended to a year with a `warnafter` claim
//! while the answer still reports the asked expiry, unless
//! `--service-account-extend-token-expiration=false`; lifetimes under ten
//! minutes or over 2^32 s are 422; bound objects must exist and carry the
//! UID given (409 otherwise); the audit events of a TokenRequest name the
//! issued token (`authentication.kubernetes.io/issued-credential-id`)
//! and admission's warnings reach the response.

use std::process::Output;

use base64::Engine;
use chrono::DateTime;
use serde_json::{json, Value};

use crate::harness::{Backend, TestServer};
use crate::support::kubectl::stderr;

const API_AUDIENCE: &str = "https://kubernetes.default.svc.cluster.local";
const YEAR: i64 = 365 * 24 * 3600;

/// The claims of a JWT.
fn claims(token: &str) -> Value {
    let part = token.split('.').nth(1).expect("jwt payload");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .expect("base64url");
    serde_json::from_slice(&bytes).expect("json claims")
}

/// Seconds from `iat` to the claim `name`.
fn after_iat(claims: &Value, name: &str) -> i64 {
    let at = |c: &Value| {
        c.as_i64()
            .unwrap_or_else(|| panic!("no {name} in {claims}"))
    };
    at(&claims[name]) - at(&claims["iat"])
}

/// POSTs a TokenRequest with `spec` for `account` in `default`, verbosely
/// enough that the response's status line and headers are logged.
fn token_request(server: &TestServer, account: &str, spec: Value) -> Output {
    let path = format!("/api/v1/namespaces/default/serviceaccounts/{account}/token");
    let body =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec});
    server.kubectl_stdin(
        &["create", "--raw", &path, "-f", "-", "-v=8"],
        &body.to_string(),
    )
}

/// A granted TokenRequest's answer.
fn granted(server: &TestServer, account: &str, spec: Value) -> Value {
    let out = token_request(server, account, spec);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("json answer")
}

/// Seconds from the answer's creation to its `status.expirationTimestamp`.
fn reported_lifetime(answer: &Value) -> i64 {
    let time = |v: &Value| {
        let text = v
            .as_str()
            .unwrap_or_else(|| panic!("no timestamp in {answer}"));
        DateTime::parse_from_rfc3339(text)
            .expect("RFC 3339 timestamp")
            .timestamp()
    };
    time(&answer["status"]["expirationTimestamp"]) - time(&answer["metadata"]["creationTimestamp"])
}

fn token_of(answer: &Value) -> Value {
    claims(answer["status"]["token"].as_str().unwrap_or_default())
}

/// A pod running as `runner` (with its account).
fn runner_pod(server: &TestServer) {
    server.ok(&["create", "serviceaccount", "runner"]);
    server.apply_yaml(
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: runner\n  namespace: default\nspec:\n  serviceAccountName: runner\n  containers:\n  - name: c\n    image: busybox\n",
    );
}

fn pod_bound_warn_only() -> Value {
    json!({"expirationSeconds": 3607,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": "runner"}})
}

fn lifetimes_over_the_maximum_are_shortened_with_a_warning(backend: Backend) {
    let server = backend.start_with(&["--service-account-max-token-expiration=2h"]);
    server.ok(&["create", "serviceaccount", "builder"]);

    let out = server.kubectl(&["create", "token", "builder", "--duration", "10h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("Warning: requested expiration of 36000 seconds shortened to 7200 seconds"),
        "{}",
        stderr(&out)
    );
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(after_iat(&claims(&token), "exp"), 7200);

    // Within the maximum: as asked, without a warning.
    let out = server.kubectl(&["create", "token", "builder", "--duration", "90m"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("Warning"), "{}", stderr(&out));
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(after_iat(&claims(&token), "exp"), 5400);

    // The answer shows the shortened lifetime everywhere.
    let out = token_request(&server, "builder", json!({"expirationSeconds": 86400}));
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out)
            .contains("299 - \"requested expiration of 86400 seconds shortened to 7200 seconds\""),
        "{}",
        stderr(&out)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json answer");
    assert_eq!(answer["spec"]["expirationSeconds"], 7200);
    assert_eq!(reported_lifetime(&answer), 7200);
    assert_eq!(after_iat(&token_of(&answer), "exp"), 7200);

    // Kubelet's pod tokens (under the maximum) live a year but the answer
    // reports, and the token warns after, the asked lifetime.
    runner_pod(&server);
    let out = token_request(&server, "runner", pod_bound_warn_only());
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("shortened"), "{}", stderr(&out));
    let answer: Value = serde_json::from_slice(&out.stdout).expect("json answer");
    assert_eq!(answer["spec"]["expirationSeconds"], 3607);
    assert_eq!(reported_lifetime(&answer), 3607);
    let c = token_of(&answer);
    assert_eq!(after_iat(&c, "exp"), YEAR);
    let warnafter = c["kubernetes.io"]["warnafter"].as_i64().expect("warnafter");
    assert_eq!(warnafter - c["iat"].as_i64().unwrap_or_default(), 3607);
    // The same asked through kubectl: the year-long token.
    let token = server.ok(&[
        "create",
        "token",
        "runner",
        "--duration",
        "3607s",
        "--bound-object-kind",
        "Pod",
        "--bound-object-name",
        "runner",
    ]);
    assert_eq!(after_iat(&claims(token.trim()), "exp"), YEAR);
}

fn no_extension_when_the_flag_is_off(backend: Backend) {
    let server = backend.start_with(&["--service-account-extend-token-expiration=false"]);
    runner_pod(&server);
    let answer = granted(&server, "runner", pod_bound_warn_only());
    assert_eq!(reported_lifetime(&answer), 3607);
    let c = token_of(&answer);
    assert_eq!(after_iat(&c, "exp"), 3607);
    assert!(c["kubernetes.io"].get("warnafter").is_none(), "{c}");
    assert_eq!(c["kubernetes.io"]["pod"]["name"], "runner");
}

fn lifetimes_outside_upstreams_bounds_are_invalid(s: &TestServer) {
    s.ok(&["create", "serviceaccount", "builder"]);
    for (seconds, detail) in [
        (599_i64, "may not specify a duration less than 10 minutes"),
        (
            4_294_967_297,
            "may not specify a duration larger than 2^32 seconds",
        ),
    ] {
        let out = token_request(s, "builder", json!({"expirationSeconds": seconds}));
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains("422 Unprocessable Entity"), "{err}");
        let message = format!(
            "TokenRequest \"\" is invalid: spec.expirationSeconds: Invalid value: {seconds}: {detail}"
        );
        assert!(err.contains(&message), "{err}");
    }
    let err = s.fails(&["create", "token", "builder", "--duration", "599s"]);
    assert!(
        err.contains("spec.expirationSeconds: Invalid value: 599: may not specify a duration less than 10 minutes"),
        "{err}"
    );

    // Ten minutes exactly is enough; nothing caps without the flag.
    let answer = granted(s, "builder", json!({"expirationSeconds": 600}));
    assert_eq!(after_iat(&token_of(&answer), "exp"), 600);
    let out = s.kubectl(&["create", "token", "builder", "--duration", "100h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("Warning"), "{}", stderr(&out));
    let token = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    assert_eq!(after_iat(&claims(&token), "exp"), 360_000);

    // Unset: an hour, for the API's audiences.
    let answer = granted(s, "builder", json!({}));
    assert_eq!(answer["spec"]["expirationSeconds"], 3600);
    assert_eq!(answer["spec"]["audiences"], json!([API_AUDIENCE]));
    assert_eq!(reported_lifetime(&answer), 3600);
}

fn bound_objects_must_exist_with_the_uid_given(s: &TestServer) {
    runner_pod(s);
    s.apply_yaml("apiVersion: v1\nkind: Node\nmetadata:\n  name: worker-1\n");
    let bind = |kind: &str, name: &str, uid: &str| json!({"boundObjectRef": {"apiVersion": "v1", "kind": kind, "name": name, "uid": uid}});
    for (kind, name) in [("Pod", "runner"), ("Node", "worker-1")] {
        let out = token_request(s, "runner", bind(kind, name, "0000"));
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains("409 Conflict"), "{err}");
        assert!(
            err.contains(&format!("Operation cannot be fulfilled on {kind} \"{name}\": the UID in the bound object reference (0000) does not match the UID in record. The object might have been deleted and then recreated")),
            "{err}"
        );
    }
    for (kind, resource) in [("Pod", "pods"), ("Node", "nodes"), ("Secret", "secrets")] {
        let out = token_request(s, "runner", bind(kind, "gone", ""));
        assert!(!out.status.success());
        let err = stderr(&out);
        assert!(err.contains("404 Not Found"), "{err}");
        assert!(
            err.contains(&format!("{resource} \"gone\" not found")),
            "{err}"
        );
    }

    // The right UIDs bind, and the claims name the objects.
    let uid = |kind: &str, name: &str| s.ok(&["get", kind, name, "-o", "jsonpath={.metadata.uid}"]);
    let pod_uid = uid("pod", "runner");
    let answer = granted(s, "runner", bind("Pod", "runner", &pod_uid));
    assert_eq!(
        token_of(&answer)["kubernetes.io"]["pod"],
        json!({"name": "runner", "uid": pod_uid})
    );
    let node_uid = uid("node", "worker-1");
    let answer = granted(s, "runner", bind("Node", "worker-1", &node_uid));
    assert_eq!(
        token_of(&answer)["kubernetes.io"]["node"],
        json!({"name": "worker-1", "uid": node_uid})
    );
}

const TOKEN_POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources:\n  - group: \"\"\n    resources: [serviceaccounts/token]\n";

/// The annotations of the ResponseComplete events of token requests.
fn token_request_annotations(log: &std::path::Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["stage"] == "ResponseComplete" && e["objectRef"]["subresource"] == "token")
        .map(|e| e["annotations"].clone())
        .collect()
}

fn audit_events_name_the_issued_token(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let policy = files.path().join("policy.yaml");
    std::fs::write(&policy, TOKEN_POLICY).expect("policy");
    let log = files.path().join("audit.log");
    let server = backend.start_with(&[
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
    ]);
    server.ok(&["create", "serviceaccount", "builder"]);
    let token = server.ok(&["create", "token", "builder"]);
    let jti = claims(token.trim())["jti"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(!jti.is_empty());
    let events = token_request_annotations(&log);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(
        events[0]["authentication.kubernetes.io/issued-credential-id"],
        format!("JTI={jti}")
    );
    // A refused request issued nothing.
    server.fails(&["create", "token", "builder", "--duration", "5m"]);
    let events = token_request_annotations(&log);
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(
        events[1]
            .get("authentication.kubernetes.io/issued-credential-id")
            .is_none(),
        "{events:?}"
    );
}

const WARN_POLICY: &str = r#"apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: short-tokens}
spec:
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: [v1]
      operations: [CREATE]
      resources: [serviceaccounts/token]
  validations:
  - expression: "object.spec.expirationSeconds <= 3600"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: short-tokens-warn}
spec:
  policyName: short-tokens
  validationActions: [Warn]
"#;

fn admission_warnings_reach_the_response(s: &TestServer) {
    s.ok(&["create", "serviceaccount", "builder"]);
    s.apply_yaml(WARN_POLICY);
    let out = s.kubectl(&["create", "token", "builder", "--duration", "2h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "Warning: Validation failed for ValidatingAdmissionPolicy 'short-tokens' with binding \
             'short-tokens-warn': failed expression: object.spec.expirationSeconds <= 3600"
        ),
        "{}",
        stderr(&out)
    );
    let out = s.kubectl(&["create", "token", "builder", "--duration", "1h"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stderr(&out).contains("Warning"), "{}", stderr(&out));
}

crate::harness::on_both_backends!(
    lifetimes_outside_upstreams_bounds_are_invalid,
    bound_objects_must_exist_with_the_uid_given,
    admission_warnings_reach_the_response;
    backend: lifetimes_over_the_maximum_are_shortened_with_a_warning,
    no_extension_when_the_flag_is_off,
    audit_events_name_the_issued_token,
);
