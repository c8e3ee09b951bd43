//! ImagePolicyWebhook: its configuration, the reviews it builds, its cache,
//! and its answers when the backend cannot be reached.

use std::sync::Arc;

use apiserver::admission::RequestContext;
use apiserver::audit::AuditContext;
use serde_json::json;

use super::*;
use crate::admission::testing::{info, refusal, user};

fn settings(doc: Value) -> Result<Settings, String> {
    let raw: RawConfig = serde_json::from_value(doc).map_err(|e| e.to_string())?;
    Settings::from_raw(&raw.image_policy)
}

#[test]
fn zero_takes_the_defaults_and_minus_one_disables() {
    assert_eq!(
        settings(json!({"imagePolicy": {"kubeConfigFile": "k"}})),
        Ok(Settings {
            allow_ttl: Duration::from_secs(300),
            deny_ttl: Duration::from_secs(30),
            retry_backoff: Duration::from_millis(500),
            default_allow: false,
        })
    );
    let versioned = json!({
        "apiVersion": "imagepolicy.admission.k8s.io/v1alpha1",
        "kind": "ImagePolicyWebhookConfiguration",
        "imagePolicy": {"allowTTL": 50, "denyTTL": -1, "retryBackoff": 20, "defaultAllow": true}});
    assert_eq!(
        settings(versioned),
        Ok(Settings {
            allow_ttl: Duration::from_secs(50),
            deny_ttl: Duration::ZERO,
            retry_backoff: Duration::from_millis(20),
            default_allow: true,
        })
    );
}

#[test]
fn out_of_range_settings_are_refused_with_upstreams_message() {
    assert_eq!(
        settings(json!({"imagePolicy": {"allowTTL": 2700}})),
        Err("valid value is between 1s and 30m0s, got 45m0s".into())
    );
    assert_eq!(
        settings(json!({"imagePolicy": {"retryBackoff": 400000}})),
        Err("valid value is between 1ns and 5m0s, got 6m40s".into())
    );
    let missing = ImagePolicyWebhook::from_config(None)
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        missing.as_deref(),
        Some("failed to initialize admission: couldn't init admission plugin \"ImagePolicyWebhook\": no config specified")
    );
}

fn pod() -> Value {
    json!({"metadata": {"name": "p", "namespace": "ns", "annotations": {
            "mycluster.image-policy.k8s.io/ticket": "1234", "other": "x"}},
        "spec": {
            "initContainers": [{"name": "i", "image": "init:1"}],
            "containers": [{"name": "a", "image": "nginx:1"}, {"name": "b", "image": "busybox"}],
            "ephemeralContainers": [{"name": "e", "image": "debug:2"}]}})
}

#[test]
fn reviews_list_the_images_and_image_policy_annotations() {
    let pod = pod();
    let spec = serde_json::to_value(review_spec(&pod, "ns", false)).ok();
    assert_eq!(
        spec,
        Some(json!({
            "containers": [{"image": "nginx:1"}, {"image": "busybox"}, {"image": "init:1"}],
            "annotations": {"mycluster.image-policy.k8s.io/ticket": "1234"},
            "namespace": "ns"}))
    );
    let ephemeral = serde_json::to_value(review_spec(&pod, "ns", true)).ok();
    assert_eq!(
        ephemeral.as_ref().map(|s| &s["containers"]),
        Some(&json!([{"image": "debug:2"}]))
    );
}

#[test]
fn cached_answers_expire_and_the_least_recently_used_goes_first() {
    let cache = ReviewCache::default();
    let now = Instant::now();
    let allowed = ReviewStatus {
        allowed: true,
        ..ReviewStatus::default()
    };
    cache.insert("a".into(), allowed.clone(), Duration::from_secs(5), now);
    cache.insert("off".into(), allowed.clone(), Duration::ZERO, now);
    assert_eq!(cache.get("a", now), Some(allowed.clone()));
    assert_eq!(cache.get("off", now), None);
    assert_eq!(cache.get("a", now + Duration::from_secs(5)), None);
    for i in 0..CACHE_ENTRIES {
        cache.insert(i.to_string(), allowed.clone(), Duration::from_secs(5), now);
    }
    assert!(cache.get("0", now).is_some());
    cache.insert("new".into(), allowed, Duration::from_secs(5), now);
    assert!(cache.get("0", now).is_some());
    assert!(cache.get("1", now).is_none());
    assert!(cache.get("new", now).is_some());
}

/// The plugin pointed at a port where nothing listens.
fn unreachable(dir: &Path, default_allow: bool) -> ImagePolicyWebhook {
    let kubeconfig = dir.join("backend.yaml");
    let written = std::fs::write(
        &kubeconfig,
        "clusters:\n- name: b\n  cluster: {server: 'https://127.0.0.1:9/review'}\n",
    );
    assert!(written.is_ok());
    let plugin = ImagePolicyWebhook::from_config(Some(&json!({"imagePolicy": {
        "kubeConfigFile": kubeconfig, "defaultAllow": default_allow}})));
    match plugin {
        Ok(plugin) => plugin,
        Err(e) => panic!("configuration refused: {e}"),
    }
}

fn pod_write(sub: &str, audit: &Arc<AuditContext>) -> Attributes {
    Attributes::new(
        &info("", "pods"),
        Operation::Create,
        Some(pod()),
        None,
        sub,
        Some("ns"),
        "p",
        false,
        RequestContext::audited(user("alice", &[]), Some(audit.clone())),
    )
}

#[tokio::test]
async fn an_unreachable_backend_refuses_unless_default_allow() {
    let dir = tempfile::tempdir().expect("temp dir");
    let audit = Arc::new(AuditContext::default());
    let closed = unreachable(dir.path(), false);
    let message = refusal(closed.validate(&pod_write("", &audit)).await);
    assert!(
        message.starts_with("pods \"p\" is forbidden: Post \"https://127.0.0.1:9/review\": "),
        "{message}"
    );
    // Other subresources are not reviewed.
    assert_eq!(
        refusal(closed.validate(&pod_write("status", &audit)).await),
        ""
    );
    assert!(audit.annotations().is_empty());

    let open = unreachable(dir.path(), true);
    assert_eq!(refusal(open.validate(&pod_write("", &audit)).await), "");
    assert_eq!(
        audit.annotations(),
        vec![(
            "imagepolicywebhook.image-policy.k8s.io/failed-open".to_owned(),
            "true".to_owned()
        )]
    );
}
