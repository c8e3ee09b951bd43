//! Create validation of the plain core/v1 kinds through real kubectl and
//! one raw request: ConfigMaps, Secrets, Endpoints, Namespaces and Events
//! with bad input are refused with upstream's 422 Invalid Status.

use serde_json::json;

use crate::harness::TestServer;
use crate::support::http::request;

fn refused(s: &TestServer, yaml: &str) -> String {
    let out = s.kubectl_stdin(&["create", "-f", "-"], yaml);
    assert!(!out.status.success(), "created: {yaml}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn bad_core_objects_are_refused_with_upstreams_messages() {
    let s = TestServer::start();
    let cases = [
        (
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {\"a b\": x}\n",
            "The ConfigMap \"cm\" is invalid: data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters",
        ),
        (
            "apiVersion: v1\nkind: Secret\nmetadata: {name: tls}\ntype: kubernetes.io/tls\nstringData: {tls.crt: x}\n",
            "The Secret \"tls\" is invalid: data[tls.key]: Required value",
        ),
        (
            "apiVersion: v1\nkind: Endpoints\nmetadata: {name: ep}\nsubsets:\n- addresses: [{ip: nope}]\n  ports: [{port: 70000}]\n",
            "subsets[0].ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive",
        ),
        (
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1}\nspec: {finalizers: [custom]}\n",
            "The Namespace \"ns1\" is invalid: spec.finalizers: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified",
        ),
        (
            "apiVersion: v1\nkind: Event\nmetadata: {name: ev}\ninvolvedObject: {kind: Pod, name: p, namespace: other}\n",
            "The Event \"ev\" is invalid: involvedObject.namespace: Invalid value: \"other\": does not match event.namespace",
        ),
    ];
    for (yaml, want) in cases {
        let err = refused(&s, yaml);
        assert!(err.contains(want), "{want}\n{err}");
    }
    // The fixed objects go in.
    let ok = "apiVersion: v1\nkind: Secret\nmetadata: {name: tls}\ntype: kubernetes.io/tls\nstringData: {tls.crt: c, tls.key: k}\n";
    let out = s.kubectl_stdin(&["create", "-f", "-"], ok);
    assert!(out.status.success(), "{out:?}");

    let body = json!({"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "raw"},
        "subsets": [{"addresses": [{"ip": "0.0.0.0"}], "ports": [{"port": 80, "protocol": "ICMP"}]}]});
    let answer = request(
        &s,
        "POST",
        "/api/v1/namespaces/default/endpoints",
        &["Content-Type: application/json"],
        Some(&body.to_string()),
    );
    assert_eq!(answer.code, 422, "{}", answer.body);
    let unspecified = "Invalid value: \"0.0.0.0\": may not be unspecified (0.0.0.0)";
    let protocol = "Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"";
    assert_eq!(
        answer.body,
        json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("Endpoints \"raw\" is invalid: [subsets[0].addresses[0].ip: {unspecified}, subsets[0].ports[0].protocol: {protocol}]"),
            "reason": "Invalid",
            "details": {"name": "raw", "kind": "Endpoints", "causes": [
                {"reason": "FieldValueInvalid", "message": unspecified, "field": "subsets[0].addresses[0].ip"},
                {"reason": "FieldValueNotSupported", "message": protocol, "field": "subsets[0].ports[0].protocol"},
            ]},
            "code": 422,
        })
    );
}
