//! `/openapi/v2`: the Swagger 2.0 document (JSON and gnostic protobuf),
//! its ETag, and the kubectl versions that need it (1.27 and 1.28 check
//! the server's field validation support in it before `apply`/`create`).

use std::path::PathBuf;
use std::process::Command;

use crate::harness::TestServer;
use crate::support::crds::crd;

const PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// A GET over HTTPS with the admin certificate: status, headers, body.
pub(crate) fn get(s: &TestServer, path: &str, headers: &[&str]) -> (u16, String, Vec<u8>) {
    let pki = s.dir.path().join("pki");
    let head = s.dir.path().join("headers.txt");
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "--cacert"])
        .arg(pki.join("ca.crt"))
        .arg("--cert")
        .arg(pki.join("admin.crt"))
        .arg("--key")
        .arg(pki.join("admin.key"))
        .arg("-D")
        .arg(&head)
        .args(["-w", "%{http_code}"]);
    for h in headers {
        cmd.args(["-H", h]);
    }
    cmd.arg(format!("https://127.0.0.1:{}{path}", s.port));
    let out = cmd.output().expect("curl runs");
    let mut body = out.stdout;
    let code = body.split_off(body.len().saturating_sub(3));
    let code = String::from_utf8_lossy(&code).parse().unwrap_or(0);
    let headers = std::fs::read_to_string(head).unwrap_or_default();
    (code, headers.to_lowercase(), body)
}

fn header<'a>(headers: &'a str, name: &str) -> Option<&'a str> {
    headers
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .map(str::trim)
}

#[test]
fn json_document_has_definitions_with_extensions_and_etag() {
    let s = TestServer::start();
    let (code, headers, body) = get(&s, "/openapi/v2", &[]);
    assert_eq!(code, 200);
    assert_eq!(header(&headers, "content-type"), Some("application/json"));
    let doc: serde_json::Value = serde_json::from_slice(&body).expect("JSON document");
    assert_eq!(doc["swagger"], "2.0");
    assert_eq!(doc["info"]["title"], "Kubernetes");
    let defs = &doc["definitions"];
    let containers = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(
        defs["io.k8s.api.apps.v1.Deployment"]["x-kubernetes-group-version-kind"][0]["kind"],
        "Deployment"
    );
    assert!(defs
        .get("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition")
        .is_some());
    assert!(
        doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
            .is_object()
    );

    let etag = header(&headers, "etag").expect("etag").to_uppercase();
    let (code, _, body) = get(&s, "/openapi/v2", &[&format!("If-None-Match: {etag}")]);
    assert_eq!(code, 304);
    assert!(body.is_empty());
    let (code, _, _) = get(&s, "/openapi/v2", &["If-None-Match: \"stale\""]);
    assert_eq!(code, 200);
    let (code, _, _) = get(&s, "/openapi/v2", &["Accept: text/html"]);
    assert_eq!(code, 406);
}

#[test]
fn protobuf_document_is_served_for_the_gnostic_media_types() {
    let s = TestServer::start();
    let (code, headers, body) = get(&s, "/openapi/v2", &[&format!("Accept: {PROTOBUF}")]);
    assert_eq!(code, 200);
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/com.github.proto-openapi.spec.v2.v1.0+protobuf")
    );
    // Document.swagger (field 1, length-delimited) = "2.0", then info.
    assert_eq!(&body[..5], b"\x0a\x032.0");
    assert_eq!(body[5], 0x12);
    let json_etag = header(&get(&s, "/openapi/v2", &[]).1, "etag").map(str::to_owned);
    assert_eq!(header(&headers, "etag").map(str::to_owned), json_etag);
}

/// A versioned kubectl beside the default one, if installed.
fn versioned_kubectl(minor: u32) -> Option<PathBuf> {
    let default = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("kubectl"))
            .find(|p| p.is_file())
    })?;
    let real = std::fs::canonicalize(&default).unwrap_or(default);
    let versioned = real.parent()?.join(format!("kubectl.1.{minor}"));
    versioned.is_file().then_some(versioned)
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx:1.25
        resources:
          limits: {cpu: 1, memory: 64Mi}
";

#[test]
fn kubectl_1_27_and_1_28_apply_and_create_with_validation() {
    let s = TestServer::start();
    let file = s.dir.path().join("deployment.yaml");
    std::fs::write(&file, DEPLOYMENT).expect("manifest written");
    let file = file.to_string_lossy().into_owned();
    let run = |bin: &PathBuf, args: &[&str]| {
        let bin = bin.to_string_lossy().into_owned();
        let out = s.kubectl_with(&bin, args, None);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{bin} {args:?}: {stderr}");
        (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
    };
    let Some(k127) = versioned_kubectl(27) else {
        return;
    };
    let (out, _) = run(&k127, &["apply", "-f", &file]);
    assert!(out.contains("deployment.apps/web created"), "{out}");
    let (out, _) = run(&k127, &["explain", "pods.spec.containers"]);
    assert!(out.contains("FIELDS") || out.contains("FIELD"), "{out}");
    // Unknown fields are reported by the server (strict validation).
    let bad = DEPLOYMENT.replace("replicas: 1", "replicas: 1\n  bogus: 1");
    std::fs::write(s.dir.path().join("bad.yaml"), bad).expect("manifest written");
    let bad = s.dir.path().join("bad.yaml").to_string_lossy().into_owned();
    let out = s.kubectl_with(&k127.to_string_lossy(), &["apply", "-f", &bad], None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "bogus field accepted");
    assert!(stderr.contains("bogus"), "{stderr}");
    if let Some(k128) = versioned_kubectl(28) {
        run(&k128, &["delete", "-f", &file]);
        let (out, _) = run(&k128, &["create", "-f", &file]);
        assert!(out.contains("deployment.apps/web created"), "{out}");
    }
}

const SCHEMA: &str = "
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer}
";

#[test]
fn custom_resources_appear_with_their_schemas() {
    let s = TestServer::start();
    let (_, headers, _) = get(&s, "/openapi/v2", &[]);
    let before = header(&headers, "etag").map(str::to_owned);
    s.apply_yaml(&crd("gadgets", "Gadget", "Namespaced", SCHEMA));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let doc = loop {
        let (_, headers, body) = get(
            &s,
            "/openapi/v2",
            &["Accept-Encoding: gzip", "Accept: application/json"],
        );
        assert_eq!(header(&headers, "content-encoding"), Some("gzip"));
        let mut plain = Vec::new();
        std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&body[..]), &mut plain)
            .expect("gzip body");
        let doc: serde_json::Value = serde_json::from_slice(&plain).expect("JSON document");
        if doc["definitions"].get("com.example.v1.Gadget").is_some() {
            assert_ne!(header(&headers, "etag").map(str::to_owned), before);
            break doc;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Gadget never published"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let gadget = &doc["definitions"]["com.example.v1.Gadget"];
    assert_eq!(
        gadget["properties"]["spec"]["properties"]["size"]["type"],
        "integer"
    );
    assert_eq!(
        gadget["x-kubernetes-group-version-kind"][0]["kind"],
        "Gadget"
    );
    assert!(
        doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/gadgets/{name}"]["patch"]
            .is_object()
    );
    if let Some(k127) = versioned_kubectl(27) {
        let cr = "apiVersion: example.com/v1\nkind: Gadget\nmetadata: {name: g, namespace: default}\nspec: {size: 2}\n";
        let out = s.kubectl_with(&k127.to_string_lossy(), &["apply", "-f", "-"], Some(cr));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
