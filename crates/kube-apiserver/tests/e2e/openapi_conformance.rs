//! Our OpenAPI documents against upstream's published v2 spec (trimmed to
//! what is compared by `fixtures/openapi_v2_upstream.py`): every path of
//! a served group version with the same operations, operationIds,
//! actions, kinds, media types, parameters and responses; every
//! definition those paths use with the same extensions and property
//! types. Then the v3 documents, `kubectl explain`, and the document
//! kubectl's older versions read.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use serde_json::{json, Map, Value};

use crate::harness::TestServer;
use crate::openapi_v2::get;

/// What is not compared, and why.
const KNOWN_MISSING_PATHS: [(&str, &str); 4] = [
    (
        "/api/v1/componentstatuses",
        "ComponentStatus (deprecated) is not served",
    ),
    (
        "/api/v1/componentstatuses/{name}",
        "ComponentStatus (deprecated) is not served",
    ),
    ("/logs/", "the log file handler is not served"),
    ("/logs/{logpath}", "the log file handler is not served"),
];
/// Properties and definitions that changed in 1.37 (the fixture is of
/// 1.36.0).
const CHANGED_SINCE_FIXTURE: [&str; 4] = [
    "io.k8s.api.resource.v1.NodeAllocatableResourceMapping",
    "io.k8s.api.core.v1.PodStatus.nodeAllocatableResourceClaimStatuses",
    "io.k8s.api.core.v1.NodeAllocatableResourceClaimStatus.resources",
    "io.k8s.api.resource.v1.Device.nodeAllocatableResourceMappings",
];

fn upstream() -> Value {
    let gz = include_bytes!("fixtures/openapi_v2_upstream.json.gz");
    let mut json = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut json)
        .expect("fixture decompresses");
    serde_json::from_str(&json).expect("fixture is JSON")
}

fn ours(s: &TestServer) -> Value {
    let (code, _, body) = get(s, "/openapi/v2", &[]);
    assert_eq!(code, 200);
    serde_json::from_slice(&body).expect("JSON document")
}

fn last(s: &str) -> &str {
    s.rsplit('/').next().unwrap_or(s)
}

/// Our document in the fixture's form (see the fixture's script).
fn trim(doc: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let shared = &doc["parameters"];
    let param = |p: &Value| {
        let p = match p["$ref"].as_str() {
            Some(r) => &shared[last(r)],
            None => p,
        };
        let ty = p["type"]
            .as_str()
            .unwrap_or_else(|| last(p["schema"]["$ref"].as_str().unwrap_or_default()));
        let required = if p["required"] == true {
            ":required"
        } else {
            ""
        };
        json!(format!(
            "{}:{}:{ty}{required}",
            p["in"].as_str().unwrap_or_default(),
            p["name"].as_str().unwrap_or_default()
        ))
    };
    let params = |ps: &Value| {
        let mut out: Vec<Value> = ps.as_array().into_iter().flatten().map(param).collect();
        out.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
        Value::Array(out)
    };
    let schema = |s: &Value| match s["$ref"].as_str() {
        Some(r) => json!(last(r)),
        None => s["type"].clone(),
    };
    let mut paths = Map::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        let mut out = Map::new();
        for (key, op) in item.as_object().into_iter().flatten() {
            if key == "parameters" {
                out.insert(key.clone(), params(op));
                continue;
            }
            let responses: Map<String, Value> = op["responses"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(code, r)| (code.clone(), schema(&r["schema"])))
                .collect();
            let mut o = json!({
                "operationId": op["operationId"], "consumes": op["consumes"],
                "produces": op["produces"], "parameters": params(&op["parameters"]),
                "responses": responses,
            });
            for ext in ["x-kubernetes-action", "x-kubernetes-group-version-kind"] {
                if let Some(v) = op.get(ext) {
                    o[ext] = v.clone();
                }
            }
            out.insert(key.clone(), o);
        }
        paths.insert(path.clone(), Value::Object(out));
    }
    let definitions = doc["definitions"].as_object().cloned().unwrap_or_default();
    (paths, definitions)
}

/// The group version a path belongs to (`""` for `/api/v1`), if any.
fn group_version(path: &str) -> Option<(String, String)> {
    let segments: Vec<&str> = path.split('/').collect();
    match segments.as_slice() {
        ["", "api", v, ..] if !v.is_empty() => Some((String::new(), (*v).into())),
        ["", "apis", g, v, ..] if !v.is_empty() => Some(((*g).into(), (*v).into())),
        _ => None,
    }
}

/// Definition names `v` refers to (in the trimmed fixture: the types).
fn referenced(v: &Value, defs: &Map<String, Value>, found: &mut BTreeSet<String>) {
    match v {
        Value::String(s) => {
            // A type, or a parameter spelling its body type between colons.
            for part in s.split(':') {
                if defs.contains_key(part) && found.insert(part.to_owned()) {
                    referenced(&defs[part], defs, found);
                }
            }
        }
        Value::Object(m) => m.values().for_each(|c| referenced(c, defs, found)),
        Value::Array(a) => a.iter().for_each(|c| referenced(c, defs, found)),
        _ => {}
    }
}

fn compare_paths(
    up: &Map<String, Value>,
    ours: &Map<String, Value>,
    served: &BTreeSet<(String, String)>,
    problems: &mut Vec<String>,
) -> Map<String, Value> {
    let groups: BTreeSet<&str> = served.iter().map(|(g, _)| g.as_str()).collect();
    let mut compared = Map::new();
    for (path, item) in up {
        let relevant = match group_version(path) {
            Some(gv) => served.contains(&gv),
            None => match path
                .strip_prefix("/apis/")
                .and_then(|g| g.strip_suffix('/'))
            {
                Some(group) => groups.contains(group),
                None => true,
            },
        };
        if !relevant || KNOWN_MISSING_PATHS.iter().any(|(p, _)| p == path) {
            continue;
        }
        compared.insert(path.clone(), item.clone());
        let Some(mine) = ours.get(path) else {
            problems.push(format!("missing path {path}"));
            continue;
        };
        for (key, want) in item.as_object().into_iter().flatten() {
            let got = &mine[key.as_str()];
            if key == "parameters" {
                if got != want {
                    problems.push(format!("{path} parameters: want {want}, got {got}"));
                }
                continue;
            }
            for (field, w) in want.as_object().into_iter().flatten() {
                if &got[field.as_str()] != w {
                    problems.push(format!(
                        "{path} {key} {field}: want {w}, got {}",
                        got[field.as_str()]
                    ));
                }
            }
        }
    }
    compared
}

fn compare_definitions(
    up: &Map<String, Value>,
    ours: &Map<String, Value>,
    names: &BTreeSet<String>,
    served: &BTreeSet<(String, String)>,
    problems: &mut Vec<String>,
) {
    let served_gvk = |v: &Value| -> BTreeSet<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter(|g| {
                let gv = (
                    g["group"].as_str().unwrap_or_default().to_owned(),
                    g["version"].as_str().unwrap_or_default().to_owned(),
                );
                served.contains(&gv) || gv.0.is_empty()
            })
            .map(Value::to_string)
            .collect()
    };
    for name in names {
        if CHANGED_SINCE_FIXTURE.contains(&name.as_str()) {
            continue;
        }
        let want = &up[name.as_str()];
        let Some(got) = ours.get(name.as_str()) else {
            problems.push(format!("missing definition {name}"));
            continue;
        };
        for (key, w) in want.as_object().into_iter().flatten() {
            if key == "x-kubernetes-group-version-kind" {
                if served_gvk(w) != served_gvk(&got[key.as_str()]) {
                    problems.push(format!("{name} kinds: want {w}, got {}", got[key.as_str()]));
                }
            } else if key.starts_with("x-kubernetes-") && &got[key.as_str()] != w {
                problems.push(format!("{name} {key}: want {w}, got {}", got[key.as_str()]));
            }
        }
        for (prop, w) in want["properties"].as_object().into_iter().flatten() {
            let field = format!("{name}.{prop}");
            if CHANGED_SINCE_FIXTURE.contains(&field.as_str()) {
                continue;
            }
            let g = &got["properties"][prop.as_str()];
            if g.is_null() {
                problems.push(format!("missing property {field}"));
                continue;
            }
            let ty = |s: &Value| {
                s["$ref"]
                    .as_str()
                    .map_or_else(|| s["type"].clone(), |r| json!(last(r)))
            };
            for (key, wv) in w.as_object().into_iter().flatten() {
                let gv = match key.as_str() {
                    "type" => ty(g),
                    "items" | "additionalProperties" => ty(&g[key.as_str()]),
                    _ => g[key.as_str()].clone(),
                };
                if &gv != wv {
                    problems.push(format!("{field} {key}: want {wv}, got {gv}"));
                }
            }
        }
    }
}

#[test]
fn v2_document_matches_upstreams_published_spec() {
    let s = TestServer::start();
    let fixture = upstream();
    let (paths, definitions) = trim(&ours(&s));
    let served: BTreeSet<(String, String)> =
        paths.keys().filter_map(|p| group_version(p)).collect();
    assert!(served.contains(&(String::new(), "v1".to_owned())));
    assert!(served.contains(&("authorization.k8s.io".to_owned(), "v1".to_owned())));
    let mut problems = Vec::new();
    let up_paths = fixture["paths"].as_object().cloned().unwrap_or_default();
    let compared = compare_paths(&up_paths, &paths, &served, &mut problems);
    let up_defs = fixture["definitions"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut names = BTreeSet::new();
    referenced(&Value::Object(compared.clone()), &up_defs, &mut names);
    compare_definitions(&up_defs, &definitions, &names, &served, &mut problems);
    assert!(compared.len() > 350, "compared {} paths", compared.len());
    assert!(names.len() > 400, "compared {} definitions", names.len());
    assert!(
        problems.is_empty(),
        "{} differences:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[test]
fn v3_documents_have_upstreams_operations_for_their_group_version() {
    let s = TestServer::start();
    let (code, _, body) = get(&s, "/openapi/v3", &[]);
    assert_eq!(code, 200);
    let index: Value = serde_json::from_slice(&body).expect("index");
    let url = index["paths"]["apis/apps/v1"]["serverRelativeURL"]
        .as_str()
        .expect("apps/v1 listed");
    let (code, _, body) = get(&s, url, &[]);
    assert_eq!(code, 200);
    let doc: Value = serde_json::from_slice(&body).expect("v3 document");
    let patch = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
    assert_eq!(patch["operationId"], "patchAppsV1NamespacedDeployment");
    assert_eq!(patch["x-kubernetes-action"], "patch");
    let params: Vec<&str> = patch["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert!(params.contains(&"fieldValidation"), "{params:?}");
    assert_eq!(
        patch["requestBody"]["content"]["application/apply-patch+yaml"]["schema"]["$ref"],
        "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
    );
    let scale =
        &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["get"];
    assert_eq!(scale["operationId"], "readAppsV1NamespacedDeploymentScale");
    let schemas = &doc["components"]["schemas"];
    let strategy = &schemas["io.k8s.api.apps.v1.DeploymentSpec"]["properties"]["strategy"];
    assert_eq!(
        strategy["allOf"][0]["$ref"],
        "#/components/schemas/io.k8s.api.apps.v1.DeploymentStrategy"
    );
    assert_eq!(
        schemas["io.k8s.api.apps.v1.DeploymentList"]["x-kubernetes-group-version-kind"][0]["kind"],
        "DeploymentList"
    );
    // Each document carries only the schemas of its group version's paths.
    assert!(schemas.get("io.k8s.api.core.v1.Service").is_none());
    assert!(schemas.get("io.k8s.api.core.v1.PodTemplateSpec").is_some());

    let core = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .expect("core listed");
    let (_, _, body) = get(&s, core, &[]);
    let core: Value = serde_json::from_slice(&body).expect("core document");
    let exec = &core["paths"]["/api/v1/namespaces/{namespace}/pods/{name}/exec"];
    assert_eq!(
        exec["post"]["operationId"],
        "connectCoreV1PostNamespacedPodExec"
    );
    assert_eq!(exec["post"]["x-kubernetes-action"], "connect");
    let reviews = index["paths"]["apis/authorization.k8s.io/v1"]["serverRelativeURL"]
        .as_str()
        .expect("authorization.k8s.io/v1 listed");
    let (_, _, body) = get(&s, reviews, &[]);
    let reviews: Value = serde_json::from_slice(&body).expect("reviews document");
    assert_eq!(
        reviews["paths"]["/apis/authorization.k8s.io/v1/subjectaccessreviews"]["post"]
            ["operationId"],
        "createAuthorizationV1SubjectAccessReview"
    );
}

#[test]
fn kubectl_explain_reads_the_documents() {
    let s = TestServer::start();
    let out = s.ok(&["explain", "deployment.spec.strategy"]);
    assert!(out.contains("rollingUpdate"), "{out}");
    assert!(out.contains("KIND:       Deployment"), "{out}");
    let out = s.ok(&["explain", "pods", "--recursive"]);
    assert!(out.contains("ephemeralContainers"), "{out}");
    let out = s.ok(&["explain", "pods.spec.containers.ports"]);
    assert!(out.contains("containerPort"), "{out}");
    let out = s.ok(&["explain", "subjectaccessreviews.spec"]);
    assert!(out.contains("resourceAttributes"), "{out}");
    let out = s.ok(&["explain", "tokenreviews"]);
    assert!(out.contains("TokenReview"), "{out}");
    let out = s.ok(&[
        "explain",
        "hpa.spec.metrics",
        "--api-version=autoscaling/v2",
    ]);
    assert!(out.contains("containerResource"), "{out}");
    let out = s.ok(&["explain", "deployment.spec", "--output=plaintext-openapiv2"]);
    assert!(out.contains("strategy"), "{out}");
    let out = s.fails(&["explain", "deployment.spec.nosuchfield"]);
    assert!(out.contains("nosuchfield"), "{out}");
    // The documents kubectl reads list every operation once per path.
    let ids: BTreeMap<String, usize> = trim(&ours(&s))
        .0
        .values()
        .flat_map(|item| item.as_object().cloned().unwrap_or_default().into_values())
        .filter_map(|op| op["operationId"].as_str().map(str::to_owned))
        .fold(BTreeMap::new(), |mut seen, id| {
            *seen.entry(id).or_default() += 1;
            seen
        });
    let repeated: Vec<_> = ids.iter().filter(|(_, n)| **n > 1).collect();
    assert!(repeated.is_empty(), "{repeated:?}");
}

const AGGREGATED: &str = "g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

fn header<'a>(headers: &'a str, name: &str) -> Option<&'a str> {
    headers
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name}: ")))
        .map(str::trim)
}

#[test]
fn discovery_is_served_in_cbor_when_the_gate_is_on() {
    let s = TestServer::start_with(&["--feature-gates=CBORServingAndStorage=true"]);
    for (path, kind) in [
        ("/api", "APIVersions"),
        ("/apis", "APIGroupList"),
        ("/apis/apps", "APIGroup"),
        ("/apis/apps/v1", "APIResourceList"),
        ("/api/v1", "APIResourceList"),
    ] {
        let (code, headers, body) = get(&s, path, &["Accept: application/cbor"]);
        assert_eq!(code, 200, "{path}");
        assert_eq!(header(&headers, "content-type"), Some("application/cbor"));
        let doc = kube_cbor::decode(&body).expect("CBOR document");
        assert_eq!(doc["kind"], kind, "{path}");
        let (_, _, json) = get(&s, path, &["Accept: application/json"]);
        let json: Value = serde_json::from_slice(&json).expect("JSON document");
        assert_eq!(doc, json, "{path}: CBOR and JSON say the same");
    }
    let (_, _, body) = get(&s, "/apis/apps/v1", &["Accept: application/cbor"]);
    let resources = kube_cbor::decode(&body).expect("CBOR document");
    assert!(resources["resources"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|r| r["name"] == "deployments/scale"));

    let accept = format!("Accept: application/cbor;{AGGREGATED},application/json");
    let (code, headers, body) = get(&s, "/apis", &[&accept]);
    assert_eq!(code, 200);
    assert_eq!(
        header(&headers, "content-type"),
        Some(format!("application/cbor;{}", AGGREGATED.to_lowercase()).as_str())
    );
    let aggregated = kube_cbor::decode(&body).expect("CBOR aggregated discovery");
    assert_eq!(aggregated["kind"], "APIGroupDiscoveryList");
    assert_eq!(aggregated["apiVersion"], "apidiscovery.k8s.io/v2");
    assert!(aggregated["items"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|g| g["metadata"]["name"] == "apps"));
    let (_, json_headers, json) = get(
        &s,
        "/apis",
        &[&format!("Accept: application/json;{AGGREGATED}")],
    );
    let json: Value = serde_json::from_slice(&json).expect("aggregated JSON");
    assert_eq!(aggregated, json);
    // One ETag for both encodings; a current one answers 304.
    let etag = header(&headers, "etag").expect("etag").to_uppercase();
    assert_eq!(
        header(&json_headers, "etag").map(str::to_uppercase),
        Some(etag.clone())
    );
    let (code, _, body) = get(&s, "/apis", &[&accept, &format!("If-None-Match: {etag}")]);
    assert_eq!(code, 304);
    assert!(body.is_empty());

    // kubectl still reads discovery.
    s.ok(&["api-resources", "--api-group=apps"]);
}

#[test]
fn discovery_is_not_served_in_cbor_without_the_gate() {
    let s = TestServer::start();
    let (code, _, _) = get(&s, "/apis", &["Accept: application/cbor"]);
    assert_eq!(code, 406);
    let accept = format!("Accept: application/cbor;{AGGREGATED},application/json");
    let (code, headers, body) = get(&s, "/apis", &[&accept]);
    assert_eq!(code, 200);
    assert_eq!(header(&headers, "content-type"), Some("application/json"));
    let doc: Value = serde_json::from_slice(&body).expect("JSON");
    assert_eq!(doc["kind"], "APIGroupList");
    let (code, headers, body) = get(&s, "/api", &["Accept: application/vnd.kubernetes.protobuf"]);
    assert_eq!(code, 200);
    assert_eq!(
        header(&headers, "content-type"),
        Some("application/vnd.kubernetes.protobuf")
    );
    assert!(body.starts_with(b"k8s\0"));
}
