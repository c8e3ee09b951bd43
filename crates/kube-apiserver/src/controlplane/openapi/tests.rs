use super::*;
use apiserver::registry::resource::ALL_VERBS;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::Pod;

fn resource(group: &str, kind: &str, schema: SchemaFn) -> ResourceSchema {
    let info = ResourceInfo::testing(group, kind);
    ResourceSchema {
        returns_deleted: info.resource == "pods",
        info: ResourceInfo {
            verbs: ALL_VERBS.iter().copied().map(str::to_owned).collect(),
            has_status: true,
            has_scale: kind == "Deployment",
            ..info
        },
        schema,
    }
}

fn doc() -> Value {
    let resources = [
        resource("", "Pod", |g| g.subschema_for::<Pod>()),
        resource("apps", "Deployment", |g| g.subschema_for::<Deployment>()),
    ];
    let (definitions, paths) = build_parts(&resources);
    handlers::document(&json!({"title": "Kubernetes"}), definitions, paths)
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
    let delete = &defs[handlers::DELETE_OPTIONS]["x-kubernetes-group-version-kind"];
    assert_eq!(delete.as_array().map(Vec::len), Some(2));
    assert_eq!(
        defs[handlers::SCALE]["x-kubernetes-group-version-kind"][0]["group"],
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
    let issuer = &paths["/.well-known/openid-configuration/"]["get"];
    assert_eq!(
        issuer["operationId"],
        "getServiceAccountIssuerOpenIDConfiguration"
    );
    assert_eq!(
        paths["/openid/v1/jwks/"]["get"]["produces"],
        json!(["application/jwk-set+json"])
    );
    assert_eq!(
        doc["definitions"]["io.k8s.api.policy.v1.Eviction"]["x-kubernetes-group-version-kind"],
        json!([{"group": "policy", "kind": "Eviction", "version": "v1"}])
    );
}

#[test]
fn required_and_defaults_come_from_the_go_declarations() {
    let doc = doc();
    let defs = &doc["definitions"];
    // `+optional` name: nothing required, in v2 or v3.
    let reference = &defs["io.k8s.api.core.v1.LocalObjectReference"];
    assert!(reference.get("required").is_none(), "{reference}");
    assert_eq!(
        defs["io.k8s.api.core.v1.Container"]["required"],
        json!(["name"])
    );
    assert_eq!(
        defs["io.k8s.api.core.v1.ContainerPort"]["required"],
        json!(["containerPort"])
    );
    // v2 has no defaults; v3 gets markers (`ref(...)` constants too) and
    // zero values.
    let mut disk = defs["io.k8s.api.core.v1.AzureDiskVolumeSource"].clone();
    assert!(disk["properties"]["cachingMode"].get("default").is_none());
    generated::add_defaults("io.k8s.api.core.v1.AzureDiskVolumeSource", &mut disk);
    let props = &disk["properties"];
    assert_eq!(props["cachingMode"]["default"], "ReadWrite");
    assert_eq!(props["kind"]["default"], "Shared");
    assert_eq!(props["fsType"]["default"], "ext4");
    assert_eq!(props["readOnly"]["default"], false);
    assert_eq!(props["diskName"]["default"], "");
    let mut pod = defs["io.k8s.api.core.v1.Pod"].clone();
    generated::add_defaults("io.k8s.api.core.v1.Pod", &mut pod);
    let spec = v3::schema("io.k8s.api.core.v1.Pod", &pod)["properties"]["spec"].clone();
    assert_eq!(
        spec,
        json!({
            "allOf": [{"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"}],
            "default": {},
            "description": spec["description"],
        })
    );
}
