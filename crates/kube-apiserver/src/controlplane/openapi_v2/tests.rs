use super::*;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;

fn resource(group: &str, kind: &str, resource: &str, schema: SchemaFn) -> Resource {
    Resource {
        info: ResourceInfo {
            group: group.into(),
            version: "v1".into(),
            resource: resource.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            namespaced: true,
            short_names: vec![],
            categories: vec![],
            verbs: [
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
            .map(str::to_owned)
            .to_vec(),
            has_status: true,
            has_scale: kind == "Deployment",
            storage_root: resource.into(),
        },
        schema,
    }
}

fn spec() -> Spec {
    let (_tx, crds) = watch::channel(Snapshot::default());
    Spec {
        resources: vec![
            resource("", "Pod", "pods", |g| g.subschema_for::<Pod>()),
            resource("apps", "Deployment", "deployments", |g| {
                g.subschema_for::<Deployment>()
            }),
        ],
        crds,
        builtin: OnceLock::new(),
        custom: Mutex::new(None),
    }
}

fn doc() -> Value {
    let spec = spec();
    let b = spec.builtin();
    document(b.definitions.clone(), b.paths.clone())
}

#[test]
fn definitions_carry_merge_metadata_and_kinds() {
    let doc = doc();
    let defs = &doc["definitions"];
    let containers = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-list-type"], "map");
    assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(
        containers["items"]["$ref"],
        "#/definitions/io.k8s.api.core.v1.Container"
    );
    let volumes = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["volumes"];
    assert_eq!(volumes["x-kubernetes-patch-strategy"], "merge,retainKeys");
    let node_selector = &defs["io.k8s.api.core.v1.PodSpec"]["properties"]["nodeSelector"];
    assert_eq!(node_selector["x-kubernetes-map-type"], "atomic");
    let selector = &defs["io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"];
    assert_eq!(selector["x-kubernetes-map-type"], "atomic");
    let pod = &defs["io.k8s.api.core.v1.Pod"];
    assert_eq!(
        pod["x-kubernetes-group-version-kind"],
        json!([{"group": "", "kind": "Pod", "version": "v1"}])
    );
    assert!(pod.get("required").is_none());
    let list = &defs["io.k8s.api.core.v1.PodList"];
    assert_eq!(
        list["x-kubernetes-group-version-kind"][0]["kind"],
        "PodList"
    );
    assert_eq!(list["required"], json!(["items"]));
    let delete = &defs[definitions::DELETE_OPTIONS]["x-kubernetes-group-version-kind"];
    assert_eq!(delete.as_array().map(Vec::len), Some(2));
    assert_eq!(
        defs[definitions::SCALE]["x-kubernetes-group-version-kind"][0]["group"],
        "autoscaling"
    );
}

#[test]
fn special_types_are_spelled_as_upstream_v2() {
    let doc = doc();
    let defs = &doc["definitions"];
    let int_or_string = &defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"];
    assert_eq!(int_or_string["type"], "string");
    assert_eq!(int_or_string["format"], "int-or-string");
    assert!(int_or_string.get("x-kubernetes-int-or-string").is_none());
    assert_eq!(
        defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"],
        "string"
    );
    assert_eq!(
        defs["io.k8s.apimachinery.pkg.apis.meta.v1.Time"]["format"],
        "date-time"
    );
}

/// What kube-openapi's `NewOpenAPIData` (kubectl) rejects: references
/// that resolve nowhere or have a type or properties beside them, arrays
/// without exactly one item schema, several types.
fn check_schema(defs: &Map<String, Value>, path: &str, s: &Value) {
    if let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r
            .strip_prefix("#/definitions/")
            .unwrap_or_else(|| panic!("{path}: {r}"));
        assert!(defs.contains_key(name), "{path}: dangling {r}");
        assert!(
            s.get("type").is_none() && s.get("properties").is_none(),
            "{path}"
        );
        return;
    }
    match s.get("type") {
        Some(Value::String(t)) if t == "array" => {
            let items = s
                .get("items")
                .filter(|i| i.is_object())
                .unwrap_or_else(|| panic!("{path}: array without items"));
            check_schema(defs, &format!("{path}[]"), items);
        }
        Some(Value::String(t)) => assert!(
            ["object", "string", "integer", "number", "boolean"].contains(&t.as_str()),
            "{path}: {t}"
        ),
        None => {}
        Some(other) => panic!("{path}: type {other}"),
    }
    for (name, p) in s
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        check_schema(defs, &format!("{path}.{name}"), p);
    }
    if let Some(a) = s.get("additionalProperties").filter(|a| a.is_object()) {
        check_schema(defs, &format!("{path}{{}}"), a);
    }
}

#[test]
fn every_definition_parses_as_kubectl_parses_it() {
    let doc = doc();
    let defs = doc["definitions"].as_object().unwrap();
    assert!(defs.len() > 100, "{}", defs.len());
    for (name, s) in defs {
        check_schema(defs, name, s);
    }
    for (path, item) in doc["paths"].as_object().unwrap() {
        for op in item.as_object().unwrap().values().filter(|v| v.is_object()) {
            for r in op["responses"].as_object().unwrap().values() {
                if let Some(s) = r.get("schema") {
                    check_schema(defs, path, s);
                }
            }
        }
    }
}

#[test]
fn patch_operations_offer_field_validation() {
    let doc = doc();
    let item = &doc["paths"]["/api/v1/namespaces/{namespace}/pods/{name}"];
    let patch = &item["patch"];
    assert_eq!(patch["operationId"], "patchCoreV1NamespacedPod");
    assert_eq!(patch["tags"], json!(["core_v1"]));
    assert_eq!(
        patch["x-kubernetes-group-version-kind"],
        json!({"group": "", "kind": "Pod", "version": "v1"})
    );
    let params = patch["parameters"].as_array().unwrap();
    // kubectl 1.27 and 1.28 look for fieldValidation on the operation.
    assert!(params
        .iter()
        .any(|p| p["name"] == "fieldValidation" && p["in"] == "query"));
    // The Patch body is generic, so shared.
    let shared = params[0]["$ref"]
        .as_str()
        .and_then(|r| r.strip_prefix("#/parameters/"))
        .unwrap();
    assert_eq!(
        doc["parameters"][shared]["schema"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
    );
    assert_eq!(item["parameters"][0]["name"], "name");
    let paths = &doc["paths"];
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods"]["delete"]["operationId"],
        "deleteCoreV1CollectionNamespacedPod"
    );
    assert_eq!(
        paths["/api/v1/pods"]["get"]["operationId"],
        "listCoreV1PodForAllNamespaces"
    );
    assert_eq!(
        paths["/api/v1/watch/namespaces/{namespace}/pods/{name}"]["get"]["operationId"],
        "watchCoreV1NamespacedPod"
    );
    assert_eq!(
        paths["/api/v1/namespaces/{namespace}/pods/{name}/status"]["put"]["operationId"],
        "replaceCoreV1NamespacedPodStatus"
    );
    let scale = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]["patch"];
    assert_eq!(scale["operationId"], "patchAppsV1NamespacedDeploymentScale");
    assert_eq!(scale["x-kubernetes-group-version-kind"]["kind"], "Scale");
    assert_eq!(
        scale["responses"]["200"]["schema"]["$ref"],
        "#/definitions/io.k8s.api.autoscaling.v1.Scale"
    );
}

#[test]
fn subresources_and_discovery_paths_are_published() {
    let doc = doc();
    let paths = &doc["paths"];
    let pod = "/api/v1/namespaces/{namespace}/pods/{name}";
    let exec = &paths[&format!("{pod}/exec")];
    assert_eq!(
        exec["post"]["operationId"],
        "connectCoreV1PostNamespacedPodExec"
    );
    assert_eq!(exec["get"]["x-kubernetes-action"], "connect");
    assert_eq!(exec["get"]["produces"], json!(["*/*"]));
    // The query parameters common to GET and POST sit on the path.
    let names: Vec<String> = exec["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| match p["$ref"].as_str() {
            Some(r) => doc["parameters"][r.trim_start_matches("#/parameters/")]["name"].to_string(),
            None => p["name"].to_string(),
        })
        .collect();
    assert!(names.contains(&"\"command\"".to_owned()), "{names:?}");
    let proxy = &paths[&format!("{pod}/proxy/{{path}}")];
    assert_eq!(
        proxy["head"]["operationId"],
        "connectCoreV1HeadNamespacedPodProxyWithPath"
    );
    let log = &paths[&format!("{pod}/log")]["get"];
    assert_eq!(log["operationId"], "readCoreV1NamespacedPodLog");
    assert_eq!(log["produces"][0], "text/plain");
    let eviction = &paths[&format!("{pod}/eviction")]["post"];
    assert_eq!(eviction["operationId"], "createCoreV1NamespacedPodEviction");
    assert_eq!(
        eviction["x-kubernetes-group-version-kind"]["group"],
        "policy"
    );
    assert_eq!(
        paths[&format!("{pod}/ephemeralcontainers")]["patch"]["operationId"],
        "patchCoreV1NamespacedPodEphemeralcontainers"
    );
    // Pods answer deletes with the pod, Deployments with a Status.
    assert_eq!(
        paths[pod]["delete"]["responses"]["200"]["schema"]["$ref"],
        "#/definitions/io.k8s.api.core.v1.Pod"
    );
    assert_eq!(
        paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["delete"]["responses"]
            ["200"]["schema"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.Status"
    );
    assert_eq!(
        paths["/apis/apps/v1/"]["get"]["operationId"],
        "getAppsV1APIResources"
    );
    assert_eq!(
        paths["/apis/apps/"]["get"]["operationId"],
        "getAppsAPIGroup"
    );
    assert_eq!(paths["/api/"]["get"]["operationId"], "getCoreAPIVersions");
    assert_eq!(
        doc["definitions"]["io.k8s.api.policy.v1.Eviction"]["x-kubernetes-group-version-kind"],
        json!([{"group": "policy", "kind": "Eviction", "version": "v1"}])
    );
}

#[test]
fn accept_negotiation_follows_kube_openapi() {
    assert_eq!(negotiate(None), Some(false));
    assert_eq!(negotiate(Some("application/json")), Some(false));
    assert_eq!(
        negotiate(Some(
            "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"
        )),
        Some(true)
    );
    assert_eq!(
        negotiate(Some(
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        )),
        Some(true)
    );
    assert_eq!(
        negotiate(Some(
            "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
        )),
        Some(true)
    );
    assert_eq!(negotiate(Some("application/json, */*")), Some(false));
    assert_eq!(negotiate(Some("text/html")), None);
    assert_eq!(negotiate(Some("application/yaml")), None);
}

#[test]
fn etag_and_dates_decide_not_modified() {
    let encoded = Encoded::new(&json!({"swagger": "2.0"}));
    let etag = encoded.etag.to_str().unwrap().to_owned();
    assert_eq!(etag.len(), 128 + 2);
    let mut headers = HeaderMap::new();
    headers.insert(header::IF_NONE_MATCH, HeaderValue::from_str(&etag).unwrap());
    let resp = respond(&Method::GET, &headers, &encoded, false, None);
    assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(resp.headers()[header::ETAG], etag.as_str());
    headers.insert(header::IF_NONE_MATCH, HeaderValue::from_static("\"other\""));
    let resp = respond(&Method::GET, &headers, &encoded, true, None);
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()[header::CONTENT_TYPE], PROTOBUF);
    let mut headers = HeaderMap::new();
    let later = (encoded.modified + chrono::Duration::seconds(5))
        .format("%a, %d %b %Y %H:%M:%S GMT")
        .to_string();
    headers.insert(
        header::IF_MODIFIED_SINCE,
        HeaderValue::from_str(&later).unwrap(),
    );
    assert_eq!(
        respond(&Method::GET, &headers, &encoded, false, None).status(),
        StatusCode::NOT_MODIFIED
    );
}

fn varint(data: &mut &[u8]) -> u64 {
    let mut v = 0u64;
    let mut shift = 0;
    loop {
        let b = data[0];
        *data = &data[1..];
        v |= u64::from(b & 0x7f) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

/// The length-delimited fields of a protobuf message, by number.
fn fields(mut data: &[u8]) -> Vec<(u64, &[u8])> {
    let mut out = Vec::new();
    while !data.is_empty() {
        let key = varint(&mut data);
        match key & 7 {
            0 => {
                varint(&mut data);
            }
            1 => data = &data[8..],
            2 => {
                let len = varint(&mut data) as usize;
                out.push((key >> 3, &data[..len]));
                data = &data[len..];
            }
            w => panic!("wire type {w}"),
        }
    }
    out
}

fn field(msg: &[u8], number: u64) -> Vec<&[u8]> {
    fields(msg)
        .into_iter()
        .filter(|(n, _)| *n == number)
        .map(|(_, v)| v)
        .collect()
}

#[test]
fn protobuf_encoding_follows_gnostic_field_numbers() {
    let doc = doc();
    let bytes = proto::document(&doc);
    assert_eq!(field(&bytes, 1), vec![b"2.0".as_slice()]);
    let info = field(&bytes, 2)[0];
    assert_eq!(field(info, 1), vec![b"Kubernetes".as_slice()]);
    // Definitions { repeated NamedSchema additional_properties = 1; }
    let defs = field(&bytes, 9)[0];
    let pod_spec = field(defs, 1)
        .into_iter()
        .find(|named| field(named, 1) == vec![b"io.k8s.api.core.v1.PodSpec".as_slice()])
        .expect("PodSpec");
    let schema = field(pod_spec, 2)[0];
    let props = field(schema, 25)[0];
    let containers = field(props, 1)
        .into_iter()
        .find(|named| field(named, 1) == vec![b"containers".as_slice()])
        .expect("containers");
    let containers = field(containers, 2)[0];
    let extensions: Vec<(String, String)> = field(containers, 31)
        .into_iter()
        .map(|named| {
            let name = String::from_utf8(field(named, 1)[0].to_vec()).unwrap();
            let yaml = String::from_utf8(field(field(named, 2)[0], 2)[0].to_vec()).unwrap();
            (name, yaml)
        })
        .collect();
    assert!(
        extensions.contains(&("x-kubernetes-patch-merge-key".into(), "\"name\"".into())),
        "{extensions:?}"
    );
    // Paths { repeated NamedPathItem path = 2; } → PathItem.patch = 8 →
    // Operation.parameters = 8 → ParametersItem.parameter = 1 →
    // Parameter.non_body_parameter = 2 → query_parameter_sub_schema = 3,
    // its name = 4.
    let paths = field(&bytes, 8)[0];
    let item = field(paths, 2)
        .into_iter()
        .find(|named| {
            field(named, 1) == vec![b"/api/v1/namespaces/{namespace}/pods/{name}".as_slice()]
        })
        .expect("pod path");
    let patch = field(field(item, 2)[0], 8)[0];
    let names: Vec<&[u8]> = field(patch, 8)
        .into_iter()
        .flat_map(|p| field(p, 1))
        .flat_map(|p| field(p, 2))
        .flat_map(|p| field(p, 3))
        .flat_map(|q| field(q, 4))
        .collect();
    assert!(names.contains(&b"fieldValidation".as_slice()), "{names:?}");
}

fn widget_crd(
) -> k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition {
    serde_json::from_value(json!({
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {"type": "object", "properties": {
                    "port": {"x-kubernetes-int-or-string": true},
                    "tags": {"type": "array", "items": {"type": "string"}, "nullable": true},
                }}}}}}]},
        "status": {"conditions": [
            {"type": "NamesAccepted", "status": "True"},
            {"type": "Established", "status": "True"}],
            "acceptedNames": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"}},
    }))
    .unwrap()
}

#[test]
fn custom_resources_join_the_document_when_crds_change() {
    let (tx, crds) = watch::channel(Snapshot::default());
    let spec = Spec { crds, ..spec() };
    let builtin = spec.current();
    assert!(Arc::ptr_eq(&builtin, &spec.builtin().encoded));
    tx.send_replace(Arc::new(vec![widget_crd()]));
    let with_crd = spec.current();
    assert!(
        Arc::ptr_eq(&with_crd, &spec.current()),
        "rebuilt without a change"
    );
    assert_ne!(with_crd.etag, builtin.etag);
    let doc: Value = serde_json::from_slice(&with_crd.json).unwrap();
    let widget = &doc["definitions"]["com.example.v1.Widget"];
    assert_eq!(
        widget["x-kubernetes-group-version-kind"][0]["kind"],
        "Widget"
    );
    assert_eq!(
        widget["properties"]["metadata"]["$ref"],
        "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    );
    let props = &widget["properties"]["spec"]["properties"];
    assert!(
        props["port"].get("anyOf").is_none() && props["port"].get("type").is_none(),
        "{props}"
    );
    assert!(props["tags"].get("type").is_none(), "{props}");
    assert!(doc["definitions"]["com.example.v1.WidgetList"].is_object());
    let patch =
        &doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"];
    assert_eq!(patch["operationId"], "patchExampleComV1NamespacedWidget");
    let defs = doc["definitions"].as_object().unwrap();
    for (name, s) in defs {
        check_schema(defs, name, s);
    }
    tx.send_replace(Snapshot::default());
    assert!(Arc::ptr_eq(&spec.current(), &builtin));
}

#[test]
fn gzip_is_served_to_clients_that_accept_it() {
    let accepts = |v: &'static str| {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT_ENCODING, HeaderValue::from_static(v));
        accepts_gzip(&h)
    };
    assert!(accepts("gzip"));
    assert!(accepts("deflate, gzip;q=0.5"));
    assert!(!accepts("gzip;q=0"));
    assert!(!accepts("identity"));
    assert!(!accepts_gzip(&HeaderMap::new()));
    let encoded = Encoded::new(&json!({"swagger": "2.0", "info": {"title": "Kubernetes"}}));
    let gz = encoded.gzipped(false);
    let resp = respond(
        &Method::GET,
        &HeaderMap::new(),
        &encoded,
        false,
        Some(gz.clone()),
    );
    assert_eq!(resp.headers()[header::CONTENT_ENCODING], "gzip");
    let mut plain = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(&gz[..]), &mut plain).unwrap();
    assert_eq!(plain, encoded.json);
}
