//! The `required` lists and `default`s of the built-in definitions
//! against upstream's published v3 documents (an extract of
//! `api/openapi-spec/v3` kept in `fixtures/openapi_v3_defaults.json`,
//! which names the files and commits it was copied from): v3 schemas
//! carry openapi-gen's defaults (`{}` for structs held by value, Go's zero
//! for non-`omitempty` scalars, `+default=` markers), wrapped in `allOf`
//! beside a reference; `/openapi/v2` carries none (upstream prunes them);
//! and kubectl applies what upstream accepts, such as an empty
//! `imagePullSecrets` entry (`LocalObjectReference.name` is optional).

use serde_json::Value;

use crate::harness::TestServer;
use crate::openapi_v2::get;

/// Fields whose markers changed in 1.37's Go types after the extract's
/// commits (kubernetes/api "kal: add optional or required tags on apps
/// API group": `+required` on `spec` and `ControllerRevision.data`,
/// `+optional` on conditions' `type`/`status` and on
/// `ControllerRevision.revision`), with the `required` list 1.37's
/// openapi-gen writes for them.
const CHANGED_IN_1_37: [(&str, &[&str]); 5] = [
    ("io.k8s.api.apps.v1.ControllerRevision", &["data"]),
    ("io.k8s.api.apps.v1.DaemonSet", &["spec"]),
    ("io.k8s.api.apps.v1.DaemonSetCondition", &[]),
    ("io.k8s.api.apps.v1.Deployment", &["spec"]),
    ("io.k8s.api.apps.v1.DeploymentCondition", &[]),
];

fn document(s: &TestServer, path: &str) -> Value {
    let (code, _, body) = get(s, path, &[]);
    assert_eq!(code, 200, "{path}");
    serde_json::from_slice(&body).expect("OpenAPI document")
}

#[test]
fn v3_defaults_and_required_match_upstream() {
    let fixture: Value =
        serde_json::from_str(include_str!("fixtures/openapi_v3_defaults.json")).expect("fixture");
    let s = TestServer::start();
    let core = document(&s, "/openapi/v3/api/v1");
    let apps = document(&s, "/openapi/v3/apis/apps/v1");
    let mut problems = Vec::new();
    let definitions = fixture["definitions"].as_object().expect("definitions");
    for (name, want) in definitions {
        let doc = if name.starts_with("io.k8s.api.apps.") {
            &apps
        } else {
            &core
        };
        let got = &doc["components"]["schemas"][name.as_str()];
        let required = got
            .get("required")
            .cloned()
            .unwrap_or(Value::Array(Vec::new()));
        let changed = CHANGED_IN_1_37.iter().find(|(n, _)| n == name);
        let want_required =
            changed.map_or_else(|| want["required"].clone(), |(_, r)| r.to_vec().into());
        if required != want_required {
            problems.push(format!(
                "{name} required: want {want_required}, got {required}"
            ));
        }
        let props = got["properties"].as_object().expect("properties");
        for (prop, schema) in props {
            let default = schema.get("default");
            if default != want["defaults"].get(prop.as_str()) {
                problems.push(format!(
                    "{name}.{prop} default: want {}, got {default:?}",
                    want["defaults"][prop.as_str()]
                ));
            }
            if default.is_some() && schema.get("$ref").is_some() {
                problems.push(format!("{name}.{prop}: a reference beside its default"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    let template = &apps["components"]["schemas"]["io.k8s.api.apps.v1.DaemonSetSpec"]["properties"]
        ["template"];
    assert_eq!(
        template["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.api.core.v1.PodTemplateSpec"
    );
    let (code, _, body) = get(&s, "/openapi/v2", &[]);
    assert_eq!(code, 200);
    let v2: Value = serde_json::from_slice(&body).expect("v2");
    let defaulted = defaulted_schemas(&v2["definitions"], false);
    assert!(defaulted.is_empty(), "v2 carries defaults: {defaulted:?}");
    let reference = &v2["definitions"]["io.k8s.api.core.v1.LocalObjectReference"];
    assert!(reference.get("required").is_none(), "{reference}");
}

/// The schemas below `v` that carry a `default` (not counting properties
/// named `default`, as `LimitRangeItem`'s).
fn defaulted_schemas(v: &Value, properties: bool) -> Vec<String> {
    match v {
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, child)| {
                let mut found = defaulted_schemas(child, !properties && k == "properties");
                if k == "default" && !properties {
                    found.push(child.to_string());
                }
                found
            })
            .collect(),
        Value::Array(items) => items
            .iter()
            .flat_map(|i| defaulted_schemas(i, false))
            .collect(),
        _ => Vec::new(),
    }
}

const POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: pull
spec:
  imagePullSecrets:
  - {}
  containers:
  - name: app
    image: registry.example/app:1
";

#[test]
fn kubectl_applies_an_empty_image_pull_secret() {
    let s = TestServer::start();
    for validate in ["--validate=strict", "--validate=warn"] {
        let out = s.kubectl_stdin(&["apply", validate, "--dry-run=server", "-f", "-"], POD);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{validate}: {stderr}");
        assert!(!stderr.contains("name"), "{validate}: {stderr}");
    }
    s.apply_yaml(POD);
    let secrets = s.ok(&[
        "get",
        "pod",
        "pull",
        "-o",
        "jsonpath={.spec.imagePullSecrets}",
    ]);
    assert_eq!(secrets.trim(), "[{}]");
}
