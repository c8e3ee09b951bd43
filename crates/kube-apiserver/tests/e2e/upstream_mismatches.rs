//! Behaviours where this server used to differ from upstream (issue 18),
//! on both backends: query parameters converted as upstream's parameter
//! codec does, invalid `dryRun` values answered 422, NetworkPolicy and
//! StorageClass defaults, an immutable binding `roleRef`, and
//! `events.k8s.io/v1` Events as views of core/v1 Events.

use serde_json::{json, Value};

use crate::harness::TestServer;
use crate::http_errors::assert_status;
use crate::support::http::request;

const JSON: &str = "Content-Type: application/json";
const MERGE: &str = "Content-Type: application/merge-patch+json";
const CM: &str = "/api/v1/namespaces/default/configmaps";

fn post(s: &TestServer, path: &str, body: &Value) -> Value {
    let a = request(s, "POST", path, &[JSON], Some(&body.to_string()));
    assert_eq!(a.code, 201, "POST {path}: {}", a.body);
    a.body
}

fn get(s: &TestServer, path: &str) -> Value {
    let a = request(s, "GET", path, &[], None);
    assert_eq!(a.code, 200, "GET {path}: {}", a.body);
    a.body
}

fn query_parameters_convert_as_upstream(s: &TestServer) {
    for name in ["q1", "q2"] {
        post(
            s,
            CM,
            &json!({"metadata": {"name": name}, "data": {"k": name}}),
        );
    }
    // Any value but 0 and false starts a watch.
    for watch in ["True", "yes", "1"] {
        let path = format!("{CM}?watch={watch}&timeoutSeconds=1");
        let out = s.ok(&["get", "--raw", &path]);
        assert!(
            out.contains(r#""type":"ADDED""#) && !out.contains(r#""kind":"ConfigMapList""#),
            "watch={watch} did not watch: {out}"
        );
    }
    let listed = get(s, &format!("{CM}?watch=False"));
    assert_eq!(listed["kind"], "ConfigMapList");
    // The first of repeated values counts; unknown parameters are ignored.
    let page = get(s, &format!("{CM}?limit=1&limit=abc&bogus=yes"));
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1), "{page}");
    assert!(page["metadata"]["continue"].is_string(), "{page}");
    let a = request(s, "GET", &format!("{CM}?limit=abc"), &[], None);
    assert_status(
        &a,
        400,
        "BadRequest",
        "strconv.ParseInt: parsing \"abc\": invalid syntax",
    );
    let a = request(
        s,
        "GET",
        &format!("{CM}?timeoutSeconds=99999999999999999999"),
        &[],
        None,
    );
    assert_status(
        &a,
        400,
        "BadRequest",
        "strconv.ParseInt: parsing \"99999999999999999999\": value out of range",
    );
}

fn bad_dry_run_values_are_invalid_options(s: &TestServer) {
    let body = json!({"metadata": {"name": "dry"}}).to_string();
    let a = request(
        s,
        "POST",
        &format!("{CM}?dryRun=Bogus"),
        &[JSON],
        Some(&body),
    );
    assert_eq!(a.body["details"]["kind"], "CreateOptions", "{}", a.body);
    post(s, CM, &json!({"metadata": {"name": "dry"}}));
    let cases = [
        (
            "POST",
            "?dryRun=Bogus",
            Some(JSON),
            "CreateOptions",
            r#"["Bogus"]"#,
        ),
        (
            "PUT",
            "/dry?dryRun=All&dryRun=x",
            Some(JSON),
            "UpdateOptions",
            r#"["All","x"]"#,
        ),
        (
            "PATCH",
            "/dry?dryRun=Bogus",
            Some(MERGE),
            "PatchOptions",
            r#"["Bogus"]"#,
        ),
        (
            "DELETE",
            "/dry?dryRun=Bogus",
            None,
            "DeleteOptions",
            r#"["Bogus"]"#,
        ),
    ];
    for (method, path, content_type, kind, shown) in cases {
        let sent = match method {
            "PATCH" => Some("{}"),
            "DELETE" => None,
            _ => Some(body.as_str()),
        };
        let headers: Vec<&str> = content_type.into_iter().collect();
        let a = request(s, method, &format!("{CM}{path}"), &headers, sent);
        let message = format!(
            "{kind}.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: {shown}: supported values: \"All\""
        );
        assert_status(&a, 422, "Invalid", &message);
    }
    // Nothing was written or deleted.
    assert_eq!(get(s, &format!("{CM}/dry"))["metadata"]["name"], "dry");
}

fn networking_and_storage_defaults(s: &TestServer) {
    let np = post(
        s,
        "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
        &json!({"metadata": {"name": "both"}, "spec": {"podSelector": {},
            "ingress": [{"ports": [{"port": 80}]}],
            "egress": [{"ports": [{"port": 53, "protocol": "UDP"}, {"port": 443}]}]}}),
    );
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(np["spec"]["ingress"][0]["ports"][0]["protocol"], "TCP");
    assert_eq!(np["spec"]["egress"][0]["ports"][0]["protocol"], "UDP");
    assert_eq!(np["spec"]["egress"][0]["ports"][1]["protocol"], "TCP");
    let np = post(
        s,
        "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies",
        &json!({"metadata": {"name": "deny"}, "spec": {"podSelector": {}}}),
    );
    assert_eq!(np["spec"]["policyTypes"], json!(["Ingress"]));
    let sc = post(
        s,
        "/apis/storage.k8s.io/v1/storageclasses",
        &json!({"metadata": {"name": "fast"}, "provisioner": "example.com/disk"}),
    );
    assert_eq!(sc["reclaimPolicy"], "Delete");
    assert_eq!(sc["volumeBindingMode"], "Immediate");
    let stored = get(s, "/apis/storage.k8s.io/v1/storageclasses/fast");
    assert_eq!(stored["reclaimPolicy"], "Delete");
}

/// Defaults of rbac/v1 (`SetDefaults_Subject`, the bindings' roleRef),
/// discovery/v1 (`SetDefaults_EndpointPort`) and core/v1 Endpoints ports,
/// and the immutable fields of classes refused with upstream's messages
/// (1.37's beta declarative rules show no value).
fn more_defaults_and_immutable_fields(s: &TestServer) {
    let rb = post(
        s,
        "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings",
        &json!({"metadata": {"name": "bare"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s", "namespace": "default"}]}),
    );
    assert_eq!(rb["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
    assert_eq!(rb["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
    assert!(rb["subjects"][1].get("apiGroup").is_none(), "{rb}");
    let slice = post(
        s,
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices",
        &json!({"metadata": {"name": "slice"}, "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.1"]}], "ports": [{"port": 80}]}),
    );
    assert_eq!(
        slice["ports"],
        json!([{"name": "", "protocol": "TCP", "port": 80}])
    );
    let ep = post(
        s,
        "/api/v1/namespaces/default/endpoints",
        &json!({"metadata": {"name": "ep"}, "subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}),
    );
    assert_eq!(ep["subsets"][0]["ports"][0]["protocol"], "TCP");
    post(
        s,
        "/apis/storage.k8s.io/v1/storageclasses",
        &json!({"metadata": {"name": "fixed"}, "provisioner": "example.com/a"}),
    );
    post(
        s,
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        &json!({"metadata": {"name": "fixed"}, "value": 10}),
    );
    let cases = [
        (
            "/apis/storage.k8s.io/v1/storageclasses/fixed",
            json!({"provisioner": "example.com/b", "volumeBindingMode": "WaitForFirstConsumer"}),
            "StorageClass.storage.k8s.io \"fixed\" is invalid: [provisioner: Invalid value: null: field is immutable, volumeBindingMode: Invalid value: null: field is immutable]",
        ),
        (
            "/apis/scheduling.k8s.io/v1/priorityclasses/fixed",
            json!({"value": 11}),
            "PriorityClass.scheduling.k8s.io \"fixed\" is invalid: value: Forbidden: may not be changed in an update.",
        ),
        (
            "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/slice",
            json!({"addressType": "IPv6", "endpoints": [{"addresses": ["2001:db8::1"]}]}),
            "EndpointSlice.discovery.k8s.io \"slice\" is invalid: addressType: Invalid value: null: field is immutable",
        ),
    ];
    for (path, patch, message) in cases {
        let a = request(s, "PATCH", path, &[MERGE], Some(&patch.to_string()));
        assert_status(&a, 422, "Invalid", message);
    }
}

fn binding_role_refs_cannot_change(s: &TestServer) {
    let rbac = "/apis/rbac.authorization.k8s.io/v1";
    let subject = json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "u"});
    let role_ref = |name: &str| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name});
    for (path, kind, name) in [
        (
            format!("{rbac}/namespaces/default/rolebindings"),
            "RoleBinding",
            "rb",
        ),
        (
            format!("{rbac}/clusterrolebindings"),
            "ClusterRoleBinding",
            "crb",
        ),
    ] {
        post(
            s,
            &path,
            &json!({"metadata": {"name": name}, "roleRef": role_ref("view"), "subjects": [subject]}),
        );
        let patch = json!({"roleRef": role_ref("edit")}).to_string();
        let a = request(
            s,
            "PATCH",
            &format!("{path}/{name}"),
            &[MERGE],
            Some(&patch),
        );
        assert_status(
            &a,
            422,
            "Invalid",
            &format!("{kind}.rbac.authorization.k8s.io \"{name}\" is invalid: roleRef: Invalid value: {{\"APIGroup\":\"rbac.authorization.k8s.io\",\"Kind\":\"ClusterRole\",\"Name\":\"edit\"}}: cannot change roleRef"),
        );
        // Subjects may change.
        let patch = json!({"subjects": [subject, {"kind": "Group",
            "apiGroup": "rbac.authorization.k8s.io", "name": "g"}]});
        let a = request(
            s,
            "PATCH",
            &format!("{path}/{name}"),
            &[MERGE],
            Some(&patch.to_string()),
        );
        assert_eq!(a.code, 200, "{}", a.body);
        assert_eq!(get(s, &format!("{path}/{name}"))["roleRef"]["name"], "view");
    }
}

fn events_are_one_resource_in_two_groups(s: &TestServer) {
    let events = "/apis/events.k8s.io/v1/namespaces/default/events";
    let core = "/api/v1/namespaces/default/events";
    post(
        s,
        events,
        &json!({"metadata": {"name": "new-style"},
            "eventTime": "2026-01-02T03:04:05.000006Z",
            "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
            "action": "Scale", "reason": "Scaled", "type": "Normal", "note": "scaled up",
            "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"},
            "related": {"kind": "ReplicaSet", "namespace": "default", "name": "web-1"},
            "series": {"count": 2, "lastObservedTime": "2026-01-02T03:05:00.000000Z"}}),
    );
    let seen = get(s, &format!("{core}/new-style"));
    assert_eq!(seen["apiVersion"], "v1");
    assert_eq!(seen["message"], "scaled up");
    assert_eq!(seen["involvedObject"]["name"], "web");
    assert_eq!(seen["related"]["name"], "web-1");
    assert_eq!(seen["reportingComponent"], "example.com/ctl");
    assert_eq!(seen["reportingInstance"], "ctl-1");
    assert_eq!(seen["series"]["count"], 2);
    assert_eq!(
        (&seen["action"], &seen["reason"]),
        (&json!("Scale"), &json!("Scaled"))
    );
    assert_eq!(seen["eventTime"], "2026-01-02T03:04:05.000006Z");
    post(
        s,
        core,
        &json!({"metadata": {"name": "old-style"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "p"},
            "reason": "Pulled", "message": "pulled image", "type": "Normal",
            "source": {"component": "kubelet", "host": "n1"}, "count": 3,
            "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-02T00:00:00Z"}),
    );
    let seen = get(s, &format!("{events}/old-style"));
    assert_eq!(seen["apiVersion"], "events.k8s.io/v1");
    assert_eq!(seen["note"], "pulled image");
    assert_eq!(seen["regarding"]["kind"], "Pod");
    assert_eq!(
        seen["deprecatedSource"],
        json!({"component": "kubelet", "host": "n1"})
    );
    assert_eq!(seen["deprecatedCount"], 3);
    assert_eq!(seen["deprecatedFirstTimestamp"], "2026-01-01T00:00:00Z");
    assert_eq!(seen["deprecatedLastTimestamp"], "2026-01-02T00:00:00Z");
    assert!(seen.get("message").is_none(), "{seen}");
    // Each group lists both, each in its own form.
    for (path, field) in [(events, "note"), (core, "message")] {
        let list = get(s, path);
        let notes: Vec<&str> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e[field].as_str())
            .collect();
        assert!(
            notes.contains(&"scaled up") && notes.contains(&"pulled image"),
            "{path}: {list}"
        );
    }
    event_field_selectors(s, events, core);
}

/// Each group selects by its own field labels (upstream's events/v1
/// `AddFieldLabelConversionsForEvent` over core's `ToSelectableFields`):
/// `source` is the source component, else the reporting controller.
fn event_field_selectors(s: &TestServer, events: &str, core: &str) {
    let names = |path: &str, selector: &str| -> Vec<String> {
        let list = get(s, &format!("{path}?fieldSelector={selector}"));
        let mut names: Vec<String> = list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["metadata"]["name"].as_str().map(str::to_owned))
            .collect();
        names.sort();
        names
    };
    let cases = [
        (events, "regarding.name%3Dweb", &["new-style"][..]),
        (events, "regarding.kind%3DPod,type%3DNormal", &["old-style"]),
        (
            events,
            "reportingController%3Dexample.com%2Fctl",
            &["new-style"],
        ),
        (events, "source%3Dexample.com%2Fctl", &["new-style"]),
        (events, "source%3Dkubelet", &["old-style"]),
        (events, "reason%21%3DScaled", &["old-style"]),
        (core, "involvedObject.name%3Dweb", &["new-style"]),
        (
            core,
            "reportingComponent%3Dexample.com%2Fctl",
            &["new-style"],
        ),
        (core, "source%3Dexample.com%2Fctl", &["new-style"]),
        (core, "source%3Dkubelet", &["old-style"]),
    ];
    for (path, selector, expected) in cases {
        assert_eq!(
            names(path, selector),
            expected,
            "{path}?fieldSelector={selector}"
        );
    }
    for (path, label) in [
        (events, "involvedObject.name"),
        (events, "reportingComponent"),
        (core, "regarding.name"),
    ] {
        let a = request(
            s,
            "GET",
            &format!("{path}?fieldSelector={label}%3Dx"),
            &[],
            None,
        );
        assert_status(
            &a,
            400,
            "BadRequest",
            &format!("field label not supported: {label}"),
        );
    }
}

crate::harness::on_both_backends!(
    query_parameters_convert_as_upstream,
    bad_dry_run_values_are_invalid_options,
    networking_and_storage_defaults,
    more_defaults_and_immutable_fields,
    binding_role_refs_cannot_change,
    events_are_one_resource_in_two_groups,
);
