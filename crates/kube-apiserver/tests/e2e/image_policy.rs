//! The ImagePolicyWebhook admission plugin end to end: a small HTTPS
//! ImageReview backend in the test allows or denies pods by image; answers
//! are cached; an unreachable backend refuses pods unless `defaultAllow`,
//! which lets them in with an audit annotation.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use base64::Engine;
use serde_json::{json, Value};

use crate::authentication::https_server;
use crate::harness::{Backend, Served};

fn kubeconfig(dir: &Path, port: u16, ca: &str) -> PathBuf {
    let b64 = base64::engine::general_purpose::STANDARD.encode(ca);
    let text = format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: images\n  cluster:\n    server: https://127.0.0.1:{port}/review\n    certificate-authority-data: {b64}\nusers:\n- name: apiserver\n  user: {{}}\ncontexts:\n- name: images\n  context: {{cluster: images, user: apiserver}}\ncurrent-context: images\n"
    );
    let path = dir.join(format!("images-{port}.kubeconfig"));
    std::fs::write(&path, text).expect("kubeconfig");
    path
}

/// Writes the admission configuration with the plugin's settings in a
/// file of their own (the versioned form).
fn admission_config(dir: &Path, kubeconfig: &Path, default_allow: bool) -> PathBuf {
    let settings = dir.join("image-policy.yaml");
    std::fs::write(
        &settings,
        format!(
            "apiVersion: imagepolicy.admission.k8s.io/v1alpha1\nkind: ImagePolicyWebhookConfiguration\nimagePolicy:\n  kubeConfigFile: {}\n  allowTTL: 50\n  denyTTL: 50\n  retryBackoff: 10\n  defaultAllow: {default_allow}\n",
            kubeconfig.display()
        ),
    )
    .expect("settings");
    let path = dir.join("admission.yaml");
    std::fs::write(
        &path,
        "apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\nplugins:\n- name: ImagePolicyWebhook\n  path: image-policy.yaml\n",
    )
    .expect("admission config");
    path
}

const POLICY: &str = "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources:\n  - group: \"\"\n    resources: [pods]\n";

fn start(backend: Backend, dir: &Path, admission: &Path) -> (Served, PathBuf) {
    let policy = dir.join("policy.yaml");
    std::fs::write(&policy, POLICY).expect("policy");
    let log = dir.join("audit.log");
    let server = backend.start_with(&[
        "--enable-admission-plugins=ImagePolicyWebhook",
        &format!("--admission-control-config-file={}", admission.display()),
        &format!("--audit-policy-file={}", policy.display()),
        &format!("--audit-log-path={}", log.display()),
    ]);
    (server, log)
}

/// The annotations of the audit event of creating pod `name`.
fn create_annotations(log: &Path, name: &str) -> Value {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| {
            e["stage"] == "ResponseComplete"
                && e["verb"] == "create"
                && e["objectRef"]["name"] == name
        })
        .map(|e| e["annotations"].clone())
        .unwrap_or_else(|| panic!("no create event of pod {name} in {text}"))
}

fn the_backend_allows_and_denies_pods_by_image_and_is_cached(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = seen.clone();
    let (port, ca, calls) = https_server::start(Arc::new(move |_, body| {
        let review: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        if let Ok(mut seen) = kept.lock() {
            seen.push(review.clone());
        }
        let images: Vec<&str> = review["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["image"].as_str())
            .collect();
        let status = match images.iter().find(|i| i.starts_with("evil/")) {
            Some(bad) => json!({"allowed": false, "reason": format!("{bad} is not trusted")}),
            None => json!({"allowed": true, "auditAnnotations": {"checked": "yes"}}),
        };
        json!({"apiVersion": "imagepolicy.k8s.io/v1alpha1", "kind": "ImageReview", "status": status})
    }));
    let hook = kubeconfig(files.path(), port, &ca);
    let admission = admission_config(files.path(), &hook, false);
    let (server, log) = start(backend, files.path(), &admission);

    server.ok(&[
        "run",
        "web",
        "--image=nginx:1.27",
        "--annotations=team.image-policy.k8s.io/ticket=42",
        "--annotations=unrelated=x",
    ]);
    let review = seen
        .lock()
        .expect("reviews")
        .last()
        .cloned()
        .expect("a review");
    assert_eq!(review["apiVersion"], "imagepolicy.k8s.io/v1alpha1");
    assert_eq!(review["kind"], "ImageReview");
    assert_eq!(
        review["spec"],
        json!({"containers": [{"image": "nginx:1.27"}],
            "annotations": {"team.image-policy.k8s.io/ticket": "42"},
            "namespace": "default"})
    );
    assert_eq!(
        create_annotations(&log, "web")["imagepolicywebhook.image-policy.k8s.io/checked"],
        "yes"
    );

    let refused = server.fails(&["run", "intruder", "--image=evil/miner"]);
    assert!(
        refused.contains("pods \"intruder\" is forbidden: image policy webhook backend denied one or more images: evil/miner is not trusted"),
        "{refused}"
    );

    // The same review is answered from the cache, allowed or denied.
    let before = calls.load(Ordering::SeqCst);
    server.ok(&[
        "run",
        "web2",
        "--image=nginx:1.27",
        "--annotations=team.image-policy.k8s.io/ticket=42",
    ]);
    server.fails(&["run", "intruder2", "--image=evil/miner"]);
    assert_eq!(calls.load(Ordering::SeqCst), before);
    // Another image is another review.
    server.ok(&["run", "other", "--image=busybox"]);
    assert_eq!(calls.load(Ordering::SeqCst), before + 1);

    // Ephemeral containers (kubectl debug) are reviewed on their own.
    let refused = server.fails(&["debug", "web", "--image=evil/debugger", "--container=dbg"]);
    assert!(
        refused.contains("evil/debugger is not trusted"),
        "{refused}"
    );
    let review = seen
        .lock()
        .expect("reviews")
        .last()
        .cloned()
        .expect("a review");
    assert_eq!(
        review["spec"]["containers"],
        json!([{"image": "evil/debugger"}])
    );
}

fn an_unreachable_backend_refuses_pods_unless_default_allow(backend: Backend) {
    let files = tempfile::tempdir().expect("temp dir");
    let (_, ca, _) = https_server::start(Arc::new(|_, _| Value::Null));
    // Nothing listens on port 1 of the loopback.
    let dead = kubeconfig(files.path(), 1, &ca);

    let closed = admission_config(files.path(), &dead, false);
    let (server, _) = start(backend, files.path(), &closed);
    let refused = server.fails(&["run", "web", "--image=nginx"]);
    assert!(
        refused.contains("pods \"web\" is forbidden: Post \"https://127.0.0.1:1/review\""),
        "{refused}"
    );
    drop(server);

    let open_dir = tempfile::tempdir().expect("temp dir");
    let open = admission_config(open_dir.path(), &dead, true);
    let (server, log) = start(backend, open_dir.path(), &open);
    server.ok(&["run", "web", "--image=nginx"]);
    assert_eq!(
        create_annotations(&log, "web")["imagepolicywebhook.image-policy.k8s.io/failed-open"],
        "true"
    );
}

crate::harness::on_both_backends!(backend: the_backend_allows_and_denies_pods_by_image_and_is_cached, an_unreachable_backend_refuses_pods_unless_default_allow);
