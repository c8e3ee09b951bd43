//! Hostile query parameters, bearer tokens and CEL expressions against the
//! built server on both backends: each gets its 4xx (401 for tokens) within
//! a stated bound, and the server keeps serving after every one. Inputs stay
//! under 60 KB of URL (larger ones are unit-tested in their parsers): label
//! selectors with thousands of set values (upstream parses them linearly
//! and so do we), field selectors of thousands of terms, continue tokens of
//! deeply nested JSON, integers past 64 bits, a 100 KB garbage bearer token
//! and JWT-shaped ones of nested JSON, and CEL rules past cel-go's parser
//! limits (100000 code points, depth 250) in a ValidatingAdmissionPolicy and
//! a CRD's `x-kubernetes-validations`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{json, Value};

use crate::harness::{on_both_backends, TestServer};

on_both_backends!(hostile_queries_tokens_and_rules);

/// What each refusal must come within: a debug build on 2 busy cores.
const BOUND: Duration = Duration::from_secs(5);
const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";

/// An answer: status code, body as JSON (null when not JSON), time taken.
struct Answer {
    code: u16,
    body: Value,
    took: Duration,
}

impl Answer {
    /// Asserts a Status of `code` and `reason` whose message contains `text`,
    /// given within [`BOUND`].
    fn refused(&self, code: u16, reason: &str, text: &str) {
        assert_eq!(self.code, code, "{}", self.body);
        assert_eq!(self.body["kind"], "Status", "{}", self.body);
        assert_eq!(self.body["reason"], reason, "{}", self.body);
        let message = self.body["message"].as_str().unwrap_or_default();
        assert!(message.contains(text), "{text:?} not in {message:.300}");
        assert!(self.took < BOUND, "took {:?}", self.took);
    }
}

/// How a request authenticates.
enum Auth<'a> {
    Cert(&'a (PathBuf, PathBuf)),
    /// A file holding the whole `Authorization` header line (curl reads
    /// headers from a file, so they can exceed an argument's length).
    HeaderFile(&'a Path),
}

fn curl(s: &TestServer, method: &str, path: &str, auth: Auth, body: Option<&Value>) -> Answer {
    curl_within(s, 30, method, path, auth, body)
}

/// Like [`curl`], ending the request after `max_secs` (a watch, say).
fn curl_within(
    s: &TestServer,
    max_secs: u64,
    method: &str,
    path: &str,
    auth: Auth,
    body: Option<&Value>,
) -> Answer {
    let ca = s.dir.path().join("pki").join("ca.crt");
    let mut cmd = Command::new("curl");
    let max_time = max_secs.to_string();
    cmd.args(["-s", "--http1.1", "--max-time", &max_time])
        .args(["-w", "\n%{http_code}"])
        .arg("--cacert")
        .arg(&ca)
        .args(["-X", method]);
    match auth {
        Auth::Cert((cert, key)) => cmd.arg("--cert").arg(cert).arg("--key").arg(key),
        Auth::HeaderFile(file) => cmd.arg("-H").arg(format!("@{}", file.display())),
    };
    let body_file = s.dir.path().join("hostile-body.json");
    if let Some(body) = body {
        std::fs::write(&body_file, body.to_string()).expect("write body");
        cmd.args(["-H", "Content-Type: application/json", "--data-binary"])
            .arg(format!("@{}", body_file.display()));
    }
    let start = Instant::now();
    let out = cmd
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl runs");
    let took = start.elapsed();
    let text = String::from_utf8_lossy(&out.stdout);
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
    Answer {
        code: code.trim().parse().unwrap_or(0),
        body: serde_json::from_str(body).unwrap_or(Value::Null),
        took,
    }
}

/// The server still lists and creates.
fn still_serving(s: &TestServer, admin: &(PathBuf, PathBuf), round: usize) {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("alive-{round}")}});
    let created = curl(s, "POST", CONFIGMAPS, Auth::Cert(admin), Some(&cm));
    assert_eq!(created.code, 201, "{}", created.body);
    let listed = curl(s, "GET", CONFIGMAPS, Auth::Cert(admin), None);
    assert_eq!(listed.code, 200, "{}", listed.body);
}

/// One group of hostile inputs, sent as the admin's certificate allows.
type Check = fn(&TestServer, &(PathBuf, PathBuf));

fn hostile_queries_tokens_and_rules(s: &TestServer) {
    let admin = s.client_cert("hostile-admin", "system:masters");
    let checks: [Check; 5] = [
        selectors,
        continue_tokens,
        integers,
        bearer_tokens,
        cel_rules,
    ];
    for (round, check) in checks.iter().enumerate() {
        check(s, &admin);
        still_serving(s, &admin, round);
    }
}

/// Label selectors of 5,000 set values (about 55 KB) and field selectors of
/// 3,000 terms: parsed and matched, or refused, within the bound.
fn selectors(s: &TestServer, admin: &(PathBuf, PathBuf)) {
    let values: Vec<String> = (0..5_000).map(|i| format!("v{i}")).collect();
    let set = values.join(",");
    let list = curl(
        s,
        "GET",
        &format!("{CONFIGMAPS}?labelSelector=a+in+({set}),b+notin+({set})"),
        Auth::Cert(admin),
        None,
    );
    assert_eq!(list.code, 200, "{}", list.body);
    assert!(list.took < BOUND, "took {:?}", list.took);
    // The last value is not a label value.
    let bad = curl(
        s,
        "GET",
        &format!("{CONFIGMAPS}?labelSelector=a+in+({set},-x-)"),
        Auth::Cert(admin),
        None,
    );
    bad.refused(400, "BadRequest", "unable to parse requirement");
    // A set that never closes.
    let open = curl(
        s,
        "GET",
        &format!("{CONFIGMAPS}?labelSelector=a+in+({set}"),
        Auth::Cert(admin),
        None,
    );
    open.refused(400, "BadRequest", "found '', expected: ',' or ')'");
    let terms = vec!["metadata.name!=x"; 3_000].join(",");
    let fields = curl(
        s,
        "GET",
        &format!("{CONFIGMAPS}?fieldSelector={terms}"),
        Auth::Cert(admin),
        None,
    );
    assert_eq!(fields.code, 200, "{}", fields.body);
    assert!(fields.took < BOUND, "took {:?}", fields.took);
    let unsupported = vec!["spec.x=1"; 5_000].join(",");
    let refused = curl(
        s,
        "GET",
        &format!("{CONFIGMAPS}?fieldSelector={unsupported}"),
        Auth::Cert(admin),
        None,
    );
    refused.refused(400, "BadRequest", "spec.x");
}

/// Continue tokens of 45 KB: base64 of JSON nested 30,000 deep, and of
/// garbage.
fn continue_tokens(s: &TestServer, admin: &(PathBuf, PathBuf)) {
    let nested = format!("{}{}", "[".repeat(17_000), "]".repeat(17_000));
    let tokens = [
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(nested),
        "!".repeat(45_000),
    ];
    for token in tokens {
        let answer = curl(
            s,
            "GET",
            &format!("{CONFIGMAPS}?limit=1&continue={token}"),
            Auth::Cert(admin),
            None,
        );
        answer.refused(
            400,
            "BadRequest",
            "invalid continue token: continue key is not valid: ",
        );
    }
}

/// Integers past 64 bits in `limit`, `timeoutSeconds` and
/// `resourceVersion`, and the largest ones that fit.
fn integers(s: &TestServer, admin: &(PathBuf, PathBuf)) {
    let huge = "9".repeat(40_000);
    for query in [
        format!("limit={huge}"),
        format!("timeoutSeconds=-{huge}"),
        format!("resourceVersion={huge}"),
    ] {
        let answer = curl(
            s,
            "GET",
            &format!("{CONFIGMAPS}?{query}"),
            Auth::Cert(admin),
            None,
        );
        assert_eq!(answer.code, 400, "{query:.40}: {}", answer.body);
        assert_eq!(answer.body["reason"], "BadRequest", "{}", answer.body);
        assert!(answer.took < BOUND, "took {:?}", answer.took);
    }
    let max = curl(
        s,
        "GET",
        &format!("{CONFIGMAPS}?limit={}", i64::MAX),
        Auth::Cert(admin),
        None,
    );
    assert_eq!(max.code, 200, "{}", max.body);
    // A watch that would run for 292 billion years: it starts (curl's own
    // time limit ends it) and the server stays up.
    let path = format!("{CONFIGMAPS}?watch=true&timeoutSeconds={}", i64::MAX);
    let watch = curl_within(s, 2, "GET", &path, Auth::Cert(admin), None);
    assert_eq!(watch.code, 200);
}

/// A 100 KB garbage bearer token, JWT-shaped tokens whose header and
/// claims are JSON nested 15,000 and 30,000 deep, and one of 100,000 dots:
/// 401 each. (Headers past about 128 KB get no answer from the HTTP layer
/// today, before authentication, so the 1 MB cases are unit-tested in the
/// service-account and OIDC authenticators.)
fn bearer_tokens(s: &TestServer, _admin: &(PathBuf, PathBuf)) {
    let b64 = |v: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v);
    let nested = format!("{}{}", "[".repeat(15_000), "]".repeat(15_000));
    let object = format!(r#"{{"alg":"RS256","iss":{}}}"#, "[".repeat(30_000));
    let tokens = [
        "a".repeat(100_000),
        format!("{}.{}.{}", b64(&nested), b64(&nested), "x".repeat(1000)),
        format!("{}.{}.sig", b64(&object), b64(&object)),
        ".".repeat(100_000),
    ];
    let file = s.dir.path().join("hostile-authorization");
    for token in tokens {
        std::fs::write(&file, format!("Authorization: Bearer {token}\n")).expect("write");
        let answer = curl(s, "GET", CONFIGMAPS, Auth::HeaderFile(&file), None);
        answer.refused(401, "Unauthorized", "Unauthorized");
    }
}

/// CEL past cel-go's parser limits, in an admission policy and in a CRD's
/// validation rules: refused with cel-go's messages (these chains used to
/// overflow the stack and take the server down).
fn cel_rules(s: &TestServer, admin: &(PathBuf, PathBuf)) {
    let chain = format!("1{} == 5001", "+1".repeat(5_000));
    let parens = format!("{}true{}", "(".repeat(10_000), ")".repeat(10_000));
    let long = format!("'{}' == ''", "a".repeat(100_000));
    let cases = [
        (chain, "max recursion depth exceeded"),
        (parens, "expression recursion limit exceeded: 250"),
        (
            long,
            "expression code point size exceeds limit: size: 100008, limit 100000",
        ),
    ];
    for (i, (expression, want)) in cases.iter().enumerate() {
        let policy = json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": format!("hostile-{i}")},
            "spec": {
                "matchConstraints": {"resourceRules": [{
                    "apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["configmaps"],
                }]},
                "validations": [{"expression": expression}],
            },
        });
        let answer = curl(
            s,
            "POST",
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
            Auth::Cert(admin),
            Some(&policy),
        );
        answer.refused(422, "Invalid", want);
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("hostiles{i}.example.com")},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": format!("hostiles{i}"), "kind": format!("Hostile{i}")},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-validations": [{"rule": expression}],
                    },
                }}],
            },
        });
        let answer = curl(
            s,
            "POST",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            Auth::Cert(admin),
            Some(&crd),
        );
        answer.refused(422, "Invalid", want);
    }
}
