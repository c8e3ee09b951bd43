//! Server-side apply and managed fields: the real kubectl
//! (`apply --server-side`, conflicts, `--force-conflicts`, dry run, `diff
//! --server-side`, `--show-managed-fields`) and raw HTTPS PATCH requests
//! with `application/apply-patch+yaml` (curl with the admin certificate).

use serde_json::{json, Value};

use crate::harness::TestServer;
use crate::support::http::{request, Answer};

fn write(s: &TestServer, name: &str, text: &str) -> String {
    let path = s.dir.path().join(name);
    std::fs::write(&path, text).expect("write manifest");
    path.to_string_lossy().into_owned()
}

fn get_json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["get"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["-o", "json", "--show-managed-fields"]);
    serde_json::from_str(&s.ok(&all)).expect("kubectl prints JSON")
}

/// `(manager, operation, fieldsV1)` of each managed fields entry.
fn owners(obj: &Value) -> Vec<(String, String, Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or("").to_owned(),
                        e["operation"].as_str().unwrap_or("").to_owned(),
                        e["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn config_map(data: &str) -> String {
    format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  namespace: default\n  labels:\n    app: web\ndata:\n{data}"
    )
}

fn kubectl_server_side_apply_owns_conflicts_and_prunes(s: &TestServer) {
    let first = write(s, "cm.yaml", &config_map("  a: \"1\"\n  b: \"2\"\n"));
    let out = s.ok(&["apply", "--server-side", "-f", &first]);
    assert!(out.contains("configmap/ssa serverside-applied"), "{out}");
    s.ok(&["apply", "--server-side", "-f", &first]);
    let cm = get_json(s, &["configmap", "ssa"]);
    assert_eq!(
        owners(&cm),
        vec![(
            "kubectl".to_owned(),
            "Apply".to_owned(),
            json!({"f:data": {"f:a": {}, "f:b": {}}, "f:metadata": {"f:labels": {"f:app": {}}}})
        )]
    );
    let yaml = s.ok(&[
        "get",
        "configmap",
        "ssa",
        "-o",
        "yaml",
        "--show-managed-fields",
    ]);
    assert!(
        yaml.contains("manager: kubectl") && yaml.contains("operation: Apply"),
        "{yaml}"
    );

    // Another manager changing a field kubectl owns conflicts…
    let other = write(s, "other.yaml", &config_map("  a: \"9\"\n"));
    let err = s.fails(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "-f",
        &other,
    ]);
    assert!(
        err.contains("Apply failed with 1 conflict: conflict with \"kubectl\": .data.a"),
        "{err}"
    );
    // …until it forces, taking the field over.
    s.ok(&[
        "apply",
        "--server-side",
        "--field-manager=other",
        "--force-conflicts",
        "-f",
        &other,
    ]);
    let cm = get_json(s, &["configmap", "ssa"]);
    assert_eq!(cm["data"], json!({"a": "9", "b": "2"}));
    let fields: Vec<(String, Value)> = owners(&cm).into_iter().map(|(m, _, f)| (m, f)).collect();
    assert_eq!(
        fields,
        vec![
            (
                "kubectl".to_owned(),
                json!({"f:data": {"f:b": {}}, "f:metadata": {"f:labels": {"f:app": {}}}})
            ),
            (
                "other".to_owned(),
                json!({"f:data": {"f:a": {}}, "f:metadata": {"f:labels": {"f:app": {}}}})
            ),
        ]
    );

    // A field kubectl stops applying goes; one another manager owns stays.
    let second = write(s, "cm2.yaml", &config_map("  c: \"3\"\n"));
    s.ok(&["apply", "--server-side", "-f", &second]);
    let cm = get_json(s, &["configmap", "ssa"]);
    assert_eq!(cm["data"], json!({"a": "9", "c": "3"}));

    // A server dry run answers but stores nothing.
    let third = write(s, "cm3.yaml", &config_map("  c: \"3\"\n  d: \"4\"\n"));
    let out = s.ok(&["apply", "--server-side", "--dry-run=server", "-f", &third]);
    assert!(out.contains("serverside-applied (server dry run)"), "{out}");
    assert_eq!(
        get_json(s, &["configmap", "ssa"])["data"],
        json!({"a": "9", "c": "3"})
    );

    // diff --server-side shows what the apply would change (exit code 1).
    let diff = s.kubectl(&["diff", "--server-side", "-f", &third]);
    let text = String::from_utf8_lossy(&diff.stdout);
    assert_eq!(
        diff.status.code(),
        Some(1),
        "{text} {}",
        String::from_utf8_lossy(&diff.stderr)
    );
    assert!(text.contains("+  d: \"4\""), "{text}");
    let same = s.kubectl(&["diff", "--server-side", "-f", &second]);
    assert_eq!(
        same.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&same.stdout)
    );
}

fn kubectl_applies_deployments_by_container_name(s: &TestServer) {
    let deployment = |image: &str, extra: &str| {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: default\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {{app: web}}\n  template:\n    metadata:\n      labels: {{app: web}}\n    spec:\n      containers:\n      - name: web\n        image: {image}\n        ports:\n        - containerPort: 80\n{extra}"
        )
    };
    let file = write(s, "d.yaml", &deployment("nginx:1", ""));
    s.ok(&["apply", "--server-side", "-f", &file]);
    let d = get_json(s, &["deployment", "web"]);
    let (manager, op, fields) = owners(&d).into_iter().next().expect("an entry");
    assert_eq!((manager.as_str(), op.as_str()), ("kubectl", "Apply"));
    let container =
        &fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"];
    assert_eq!(container["f:image"], json!({}), "{fields}");
    assert_eq!(
        container["f:ports"]["k:{\"containerPort\":80,\"protocol\":\"TCP\"}"]["f:containerPort"],
        json!({}),
        "{fields}"
    );
    // A second container is merged in by name; defaults stay.
    let sidecar = "      - name: side\n        image: busybox\n";
    let file = write(s, "d2.yaml", &deployment("nginx:2", sidecar));
    s.ok(&["apply", "--server-side", "-f", &file]);
    let d = get_json(s, &["deployment", "web"]);
    let containers = &d["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers[0]["image"], "nginx:2");
    assert_eq!(containers[0]["ports"][0]["protocol"], "TCP");
    assert_eq!(containers[1]["name"], "side");
    // A field the type does not have is refused.
    let bad = write(
        s,
        "bad.yaml",
        &deployment("nginx:2", "").replace("replicas: 2", "replicas: 2\n  bogus: 1"),
    );
    let err = s.fails(&["apply", "--server-side", "-f", &bad]);
    assert!(
        err.contains(".spec.bogus: field not declared in schema"),
        "{err}"
    );
    // kubectl scale owns the replicas through the scale subresource, so
    // applying the old count conflicts with it.
    s.ok(&["scale", "deployment", "web", "--replicas=5"]);
    let err = s.fails(&["apply", "--server-side", "-f", &file]);
    assert!(
        err.contains("with subresource \"scale\" using apps/v1: .spec.replicas"),
        "{err}"
    );
}

const APPLY: &str = "Content-Type: application/apply-patch+yaml";
const DEPLOY: &str = "/apis/apps/v1/namespaces/default/deployments/web";

fn deployment_yaml(replicas: u32) -> String {
    format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: {replicas}\n  selector:\n    matchLabels:\n      app: web\n  template:\n    metadata:\n      labels:\n        app: web\n    spec:\n      containers:\n      - name: web\n        image: nginx\n"
    )
}

fn assert_status(a: &Answer, code: u16, reason: &str, message: &str) {
    assert_eq!(a.code, code, "{}", a.body);
    assert_eq!(a.body["reason"], reason, "{}", a.body);
    assert_eq!(a.body["message"], message, "{}", a.body);
}

fn raw_apply_patches_create_conflict_and_force(s: &TestServer) {
    let path = format!("{DEPLOY}?fieldManager=deployer");
    let created = request(s, "PATCH", &path, &[APPLY], Some(&deployment_yaml(2)));
    assert_eq!(created.code, 201, "{}", created.body);
    assert_eq!(created.body["metadata"]["namespace"], "default");
    assert_eq!(
        created.body["metadata"]["managedFields"][0]["manager"],
        "deployer"
    );
    assert_eq!(
        created.body["metadata"]["managedFields"][0]["operation"],
        "Apply"
    );
    let again = request(s, "PATCH", &path, &[APPLY], Some(&deployment_yaml(3)));
    assert_eq!(again.code, 200, "{}", again.body);
    assert_eq!(again.body["spec"]["replicas"], 3);

    let missing = request(s, "PATCH", DEPLOY, &[APPLY], Some(&deployment_yaml(3)));
    assert_status(
        &missing,
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
    );
    let other = format!("{DEPLOY}?fieldManager=scaler");
    let conflict = request(s, "PATCH", &other, &[APPLY], Some(&deployment_yaml(7)));
    assert_status(
        &conflict,
        409,
        "Conflict",
        "Apply failed with 1 conflict: conflict with \"deployer\": .spec.replicas",
    );
    assert_eq!(
        conflict.body["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"deployer\"", "field": ".spec.replicas"}])
    );
    let forced = request(
        s,
        "PATCH",
        &format!("{other}&force=true"),
        &[APPLY],
        Some(&deployment_yaml(7)),
    );
    assert_eq!(forced.code, 200, "{}", forced.body);
    assert_eq!(forced.body["spec"]["replicas"], 7);

    let renamed = deployment_yaml(7).replace("name: web\nspec", "name: other\nspec");
    let mismatch = request(s, "PATCH", &path, &[APPLY], Some(&renamed));
    assert_status(
        &mismatch,
        400,
        "BadRequest",
        "the name of the object (other) does not match the name on the URL (web)",
    );
    let untyped = deployment_yaml(7).replace("apiVersion: apps/v1\n", "");
    let no_version = request(s, "PATCH", &path, &[APPLY], Some(&untyped));
    assert_status(
        &no_version,
        400,
        "BadRequest",
        "invalid object type: /, Kind=Deployment",
    );
    let not_force = request(
        s,
        "PATCH",
        &format!("{DEPLOY}?force=true"),
        &["Content-Type: application/merge-patch+json"],
        Some("{}"),
    );
    assert_status(
        &not_force,
        422,
        "Invalid",
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch",
    );
}

fn every_write_records_its_manager(s: &TestServer) {
    const CM: &str = "/api/v1/namespaces/default/configmaps";
    let apply_cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  a: \"1\"\n";
    // A dry-run apply creates nothing.
    let dry = request(
        s,
        "PATCH",
        &format!("{CM}/cfg?fieldManager=m&dryRun=All"),
        &[APPLY],
        Some(apply_cm),
    );
    assert_eq!(dry.code, 201, "{}", dry.body);
    assert_eq!(request(s, "GET", &format!("{CM}/cfg"), &[], None).code, 404);
    // Unknown fields are refused with fieldValidation=Strict.
    let strict = request(
        s,
        "PATCH",
        &format!("{CM}/cfg?fieldManager=m&fieldValidation=Strict"),
        &[APPLY],
        Some(&format!("{apply_cm}bogus: 1\n")),
    );
    assert_eq!(strict.code, 400, "{}", strict.body);
    assert!(
        strict.body["message"]
            .as_str()
            .unwrap_or("")
            .ends_with(".bogus: field not declared in schema"),
        "{}",
        strict.body
    );
    s.ok(&["create", "configmap", "made", "--from-literal=k=v"]);
    let made = get_json(s, &["configmap", "made"]);
    assert_eq!(owners(&made)[0].0, "kubectl-create");
    assert_eq!(owners(&made)[0].2, json!({"f:data": {".": {}, "f:k": {}}}));

    let created = request(
        s,
        "PATCH",
        &format!("{CM}/cfg?fieldManager=m"),
        &[APPLY],
        Some(apply_cm),
    );
    assert_eq!(created.code, 201, "{}", created.body);
    let mut put = created.body.clone();
    put["data"]["b"] = json!("2");
    let agent = "User-Agent: my-tool/1.2 (linux)";
    let replaced = request(
        s,
        "PUT",
        &format!("{CM}/cfg"),
        &["Content-Type: application/json", agent],
        Some(&put.to_string()),
    );
    assert_eq!(replaced.code, 200, "{}", replaced.body);
    let merged = request(
        s,
        "PATCH",
        &format!("{CM}/cfg?fieldManager=patcher"),
        &["Content-Type: application/merge-patch+json"],
        Some(r#"{"data":{"c":"3"}}"#),
    );
    assert_eq!(merged.code, 200, "{}", merged.body);
    let who: Vec<(String, String)> = owners(&merged.body)
        .into_iter()
        .map(|(m, o, _)| (m, o))
        .collect();
    assert_eq!(
        who,
        vec![
            ("m".to_owned(), "Apply".to_owned()),
            ("my-tool".to_owned(), "Update".to_owned()),
            ("patcher".to_owned(), "Update".to_owned()),
        ]
    );

    let created = request(
        s,
        "PATCH",
        &format!("{DEPLOY}?fieldManager=deployer"),
        &[APPLY],
        Some(&deployment_yaml(1)),
    );
    assert_eq!(created.code, 201, "{}", created.body);
    let status = request(
        s,
        "PATCH",
        &format!("{DEPLOY}/status?fieldManager=controller"),
        &["Content-Type: application/merge-patch+json"],
        Some(r#"{"status":{"observedGeneration":7}}"#),
    );
    assert_eq!(status.code, 200, "{}", status.body);
    let entry = status.body["metadata"]["managedFields"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["manager"] == "controller").cloned())
        .unwrap_or(Value::Null);
    assert_eq!(entry["subresource"], "status", "{}", status.body);
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:status": {"f:observedGeneration": {}}})
    );
}

crate::harness::on_both_backends!(
    kubectl_server_side_apply_owns_conflicts_and_prunes,
    kubectl_applies_deployments_by_container_name,
    raw_apply_patches_create_conflict_and_force,
    every_write_records_its_manager
);
