//! Response bytes as upstream's Go serializers write them: `kind` first,
//! the fields of the Go struct in declaration order, zero values of fields
//! without `omitempty`, `<`, `>` and `&` escaped, one trailing newline
//! (none when pretty), YAML in go-yaml's key order.

use std::process::Command;

use serde_json::Value;

use crate::harness::{on_both_backends, TestServer};

const CM: &str = "/api/v1/namespaces/default/configmaps";

/// The raw body of a GET (curl with the admin certificate, not pretty
/// unless asked).
fn get_raw(s: &TestServer, path: &str, accept: &str) -> String {
    let pki = s.dir.path().join("pki");
    let out = Command::new("curl")
        .args(["-sS", "--max-time", "3", "-A", "go-shape-test", "-H"])
        .arg(format!("Accept: {accept}"))
        .arg("--cacert")
        .arg(pki.join("ca.crt"))
        .arg("--cert")
        .arg(pki.join("admin.crt"))
        .arg("--key")
        .arg(pki.join("admin.key"))
        .arg(format!("https://127.0.0.1:{}{path}", s.port))
        .output()
        .expect("curl runs");
    String::from_utf8(out.stdout).expect("UTF-8 body")
}

fn create_raw(s: &TestServer, path: &str, body: &str) -> String {
    let out = s.kubectl_stdin(&["create", "--raw", path, "-f", "-"], body);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 body")
}

fn text<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn configmap_bytes_are_gos(s: &TestServer) {
    let body = r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"v"},
        "metadata":{"name":"c","annotations":{"z":"1","a":"x<y>&z"}}}"#;
    let created = create_raw(s, CM, body);
    let v: Value = serde_json::from_str(&created).expect("JSON");
    let (uid, rv, ts) = (
        text(&v, "/metadata/uid"),
        text(&v, "/metadata/resourceVersion"),
        text(&v, "/metadata/creationTimestamp"),
    );
    let managed = serde_json::to_string(&v["metadata"]["managedFields"]).expect("JSON");
    let want = format!(
        "{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"name\":\"c\",\
         \"namespace\":\"default\",\"uid\":\"{uid}\",\"resourceVersion\":\"{rv}\",\
         \"creationTimestamp\":\"{ts}\",\"annotations\":{{\"a\":\"x\\u003cy\\u003e\\u0026z\",\
         \"z\":\"1\"}},\"managedFields\":{managed}}},\"data\":{{\"k\":\"v\"}}}}\n"
    );
    assert_eq!(created, want);
    assert_eq!(get_raw(s, &format!("{CM}/c"), "application/json"), want);

    let pretty = get_raw(s, &format!("{CM}/c?pretty=true"), "application/json");
    assert!(
        pretty.starts_with("{\n  \"kind\": \"ConfigMap\",\n  \"apiVersion\": \"v1\",\n"),
        "{pretty}"
    );
    assert!(
        pretty.ends_with("\n  }\n}"),
        "MarshalIndent adds no newline: {pretty:?}"
    );

    let yaml = get_raw(s, &format!("{CM}/c"), "application/yaml");
    assert!(
        yaml.starts_with("apiVersion: v1\ndata:\n  k: v\nkind: ConfigMap\nmetadata:\n  annotations:\n    a: x<y>&z\n"),
        "{yaml}"
    );

    let list = get_raw(s, CM, "application/json");
    assert!(
        list.starts_with("{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\""),
        "{list}"
    );
    assert!(
        list.contains("\"items\":[{\"metadata\":{\"name\":"),
        "{list}"
    );
    assert!(list.ends_with("}]}\n"), "{list:?}");
}

fn missing_object_status_bytes_are_gos(s: &TestServer) {
    let got = get_raw(s, &format!("{CM}/missing"), "application/json");
    assert_eq!(
        got,
        "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\
         \"message\":\"configmaps \\\"missing\\\" not found\",\"reason\":\"NotFound\",\
         \"details\":{\"name\":\"missing\",\"kind\":\"configmaps\"},\"code\":404}\n"
    );
}

fn workload_status_zeros_are_written(s: &TestServer) {
    let template = r#"{"metadata":{"labels":{"app":"w"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}"#;
    let ds = create_raw(
        s,
        "/apis/apps/v1/namespaces/default/daemonsets",
        &format!(
            r#"{{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{{"name":"d"}},
            "spec":{{"selector":{{"matchLabels":{{"app":"w"}}}},"template":{template}}}}}"#
        ),
    );
    assert!(
        ds.ends_with(
            ",\"status\":{\"currentNumberScheduled\":0,\"numberMisscheduled\":0,\
             \"desiredNumberScheduled\":0,\"numberReady\":0}}\n"
        ),
        "{ds}"
    );
    assert!(
        ds.contains("\"containers\":[{\"name\":\"c\",\"image\":\"nginx\",\"resources\":{},"),
        "{ds}"
    );
    let rc = create_raw(
        s,
        "/api/v1/namespaces/default/replicationcontrollers",
        &format!(
            r#"{{"apiVersion":"v1","kind":"ReplicationController","metadata":{{"name":"r"}},
            "spec":{{"selector":{{"app":"w"}},"template":{template}}}}}"#
        ),
    );
    assert!(rc.ends_with(",\"status\":{\"replicas\":0}}\n"), "{rc}");
    assert!(rc.starts_with("{\"kind\":\"ReplicationController\",\"apiVersion\":\"v1\","));
}

/// The groups, versions and resources an aggregated discovery document
/// lists, in order.
fn discovered(doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for group in doc["items"].as_array().into_iter().flatten() {
        for version in group["versions"].as_array().into_iter().flatten() {
            for r in version["resources"].as_array().into_iter().flatten() {
                out.push(format!(
                    "{}/{}/{} {}",
                    text(group, "/metadata/name"),
                    text(version, "/version"),
                    text(r, "/resource"),
                    r["responseKind"]["kind"].as_str().unwrap_or("")
                ));
            }
        }
    }
    out
}

/// Aggregated discovery in protobuf, as upstream's handler negotiates it
/// for `application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;
/// as=APIGroupDiscoveryList`: the same document as its JSON, the same ETag.
fn aggregated_discovery_in_protobuf(s: &TestServer) {
    const AS: &str = ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
    let pb_type = format!("application/vnd.kubernetes.protobuf{AS}");
    let (code, pb_headers, pb) = crate::openapi_v2::get(
        s,
        "/apis",
        &[&format!("Accept: {pb_type},application/json")],
    );
    assert_eq!(code, 200, "{pb_headers}");
    assert!(
        pb_headers.contains(&format!("content-type: {}\r\n", pb_type.to_lowercase())),
        "{pb_headers}"
    );
    assert!(pb_headers.contains("cache-control: public"), "{pb_headers}");
    let decoded = protobuf_codec::decode(&pb).expect("a protobuf APIGroupDiscoveryList");
    assert_eq!(decoded["kind"], "APIGroupDiscoveryList");
    let (code, json_headers, json) =
        crate::openapi_v2::get(s, "/apis", &[&format!("Accept: application/json{AS}")]);
    assert_eq!(code, 200);
    let json: Value = serde_json::from_slice(&json).expect("JSON");
    let resources = discovered(&json);
    assert!(resources.contains(&"apps/v1/deployments Deployment".to_owned()));
    assert_eq!(discovered(&decoded), resources);
    let etag = |h: &str| {
        h.lines()
            .find(|l| l.starts_with("etag:"))
            .map(str::to_owned)
    };
    assert!(etag(&pb_headers).is_some());
    assert_eq!(etag(&pb_headers), etag(&json_headers));
}

on_both_backends!(
    aggregated_discovery_in_protobuf,
    configmap_bytes_are_gos,
    missing_object_status_bytes_are_gos,
    workload_status_zeros_are_written
);
