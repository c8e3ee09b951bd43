//! The plugin over real stores: enforcement, ignored updates and
//! subresources, exemptions, label validation on namespace updates and the
//! warnings about existing pods.

use apimachinery::field_errors::aggregate_message;
use apiserver::admission::{Operation, ValidationInterface};
use serde_json::{json, Value};

use super::{
    label_field_errors, significant_pod_update, template_pointer, Config, LabelError, PodSecurity,
};
use crate::admission::testing::{refusal, stores, user, Write};

fn namespace(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}})
}

fn pod(name: &str, privileged: bool, extra_meta: Value) -> Value {
    let mut meta = json!({"name": name, "namespace": "ns"});
    if let (Some(m), Value::Object(extra)) = (meta.as_object_mut(), extra_meta) {
        m.extend(extra);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": {"containers": [
        {"name": "c", "image": "nginx", "securityContext": {"privileged": privileged}}]}})
}

async fn plugin(labels: Value, pods: Vec<Value>, config: Config) -> PodSecurity {
    let mut objects = vec![("", "namespaces", namespace("ns", labels))];
    objects.extend(pods.into_iter().map(|p| ("", "pods", p)));
    PodSecurity::new(stores(objects).await, config)
}

const BASELINE: &str = "pod-security.kubernetes.io/enforce";

#[tokio::test]
async fn pods_are_enforced_except_for_ignored_updates_and_subresources() {
    let p = plugin(json!({BASELINE: "baseline"}), vec![], Config::default()).await;
    let bad = pod("p", true, json!({}));
    let create = Write::new("", "pods", Operation::Create)
        .object(bad.clone())
        .name("p")
        .by(user("alice", &[]));
    assert_eq!(
        refusal(p.validate(&create).await),
        "pods \"p\" is forbidden: violates PodSecurity \"baseline:latest\": privileged (container \"c\" must not set securityContext.privileged=true)"
    );
    let mut relabelled = bad.clone();
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    let update = Write::new("", "pods", Operation::Update)
        .object(relabelled)
        .old(bad.clone())
        .name("p")
        .by(user("alice", &[]));
    assert_eq!(refusal(p.validate(&update).await), "");
    let status = Write::new("", "pods", Operation::Update)
        .object(bad.clone())
        .old(bad)
        .sub("status")
        .name("p")
        .by(user("alice", &[]));
    assert_eq!(refusal(p.validate(&status).await), "");
}

#[tokio::test]
async fn exempt_users_and_runtime_classes_are_not_evaluated() {
    let config = Config {
        exempt_usernames: ["ops".to_owned()].into(),
        exempt_runtime_classes: ["kata".to_owned()].into(),
        ..Config::default()
    };
    let p = plugin(json!({BASELINE: "restricted"}), vec![], config).await;
    let write = |object: Value, who: &str| {
        Write::new("", "pods", Operation::Create)
            .object(object)
            .name("p")
            .by(user(who, &[]))
    };
    assert_eq!(
        refusal(p.validate(&write(pod("p", true, json!({})), "ops")).await),
        ""
    );
    let mut kata = pod("p", true, json!({}));
    kata["spec"]["runtimeClassName"] = json!("kata");
    assert_eq!(refusal(p.validate(&write(kata, "alice")).await), "");
    assert!(!refusal(
        p.validate(&write(pod("p", false, json!({})), "alice"))
            .await
    )
    .is_empty());
}

#[tokio::test]
async fn workload_templates_are_warned_about_but_not_refused() {
    let p = plugin(json!({BASELINE: "baseline"}), vec![], Config::default()).await;
    let template = pod("", true, json!({}));
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "ns"},
        "spec": {"template": {"metadata": {}, "spec": template["spec"]}}});
    let a = Write::new("apps", "deployments", Operation::Create)
        .object(deployment)
        .name("d")
        .by(user("alice", &[]));
    assert_eq!(refusal(p.validate(&a).await), "");
    assert_eq!(
        a.request.take_warnings(),
        ["would violate PodSecurity \"baseline:latest\": privileged (container \"c\" must not set securityContext.privileged=true)"]
    );
}

#[tokio::test]
async fn stricter_labels_warn_once_per_reason_naming_the_first_pod() {
    let owned = |name: &str, uid: &str| {
        pod(
            name,
            false,
            json!({"ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": uid, "controller": true}]}),
        )
    };
    let pods = vec![
        owned("web-b", "u1"),
        owned("web-a", "u1"),
        pod("solo", true, json!({})),
    ];
    let p = plugin(json!({}), pods, Config::default()).await;
    let old = namespace("ns", json!({}));
    let new = namespace("ns", json!({BASELINE: "restricted"}));
    let a = Write::new("", "namespaces", Operation::Update)
        .object(new)
        .old(old)
        .name("ns")
        .by(user("alice", &[]));
    assert_eq!(refusal(p.validate(&a).await), "");
    let plain = "allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile";
    assert_eq!(
        a.request.take_warnings(),
        [
            "existing pods in namespace \"ns\" violate the new PodSecurity enforce level \"restricted:latest\"".to_owned(),
            format!("solo: privileged, {plain}"),
            format!("web-a (and 1 other pod): {plain}"),
        ]
    );
}

#[tokio::test]
async fn namespace_labels_are_validated_unless_already_invalid() {
    let p = plugin(json!({}), vec![], Config::default()).await;
    let update = |old: Value, new: Value| {
        Write::new("", "namespaces", Operation::Update)
            .object(new)
            .old(old)
            .name("ns")
            .by(user("alice", &[]))
    };
    let bad = namespace("ns", json!({BASELINE: "strict"}));
    let err = refusal(
        p.validate(&update(namespace("ns", json!({})), bad.clone()))
            .await,
    );
    assert_eq!(
        err,
        "Namespace \"ns\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"
    );
    let mut annotated = bad.clone();
    annotated["metadata"]["annotations"] = json!({"a": "b"});
    assert_eq!(refusal(p.validate(&update(bad, annotated)).await), "");
}

#[tokio::test]
async fn exempt_namespaces_warn_that_their_labels_are_ignored() {
    let config = Config {
        exempt_namespaces: ["ns".to_owned()].into(),
        ..Config::default()
    };
    let p = plugin(json!({}), vec![pod("solo", true, json!({}))], config).await;
    let a = Write::new("", "namespaces", Operation::Create)
        .object(namespace(
            "ns",
            json!({BASELINE: "baseline", "pod-security.kubernetes.io/audit": "restricted"}),
        ))
        .name("ns")
        .by(user("alice", &[]));
    assert_eq!(refusal(p.validate(&a).await), "");
    assert_eq!(
        a.request.take_warnings(),
        ["namespace \"ns\" is exempt from Pod Security, and the policy (enforce=baseline:latest, audit=restricted:latest) will be ignored"]
    );
}

fn spec_of(containers: Value, ephemeral: Value) -> Value {
    json!({"spec": {"containers": containers, "ephemeralContainers": ephemeral}})
}

#[test]
fn only_image_changes_and_new_ephemeral_containers_are_significant() {
    let old = spec_of(json!([{"name": "c", "image": "a"}]), json!([]));
    let relabelled = spec_of(json!([{"name": "c", "image": "a", "tty": true}]), json!([]));
    assert!(!significant_pod_update(&relabelled, &old));
    let new_image = spec_of(json!([{"name": "c", "image": "b"}]), json!([]));
    assert!(significant_pod_update(&new_image, &old));
    let more = spec_of(
        json!([{"name": "c", "image": "a"}, {"name": "d", "image": "a"}]),
        json!([]),
    );
    assert!(significant_pod_update(&more, &old));
    let debug = spec_of(
        json!([{"name": "c", "image": "a"}]),
        json!([{"name": "dbg", "image": "busybox"}]),
    );
    assert!(significant_pod_update(&debug, &old));
    assert!(!significant_pod_update(&debug, &debug));
}

#[test]
fn workload_templates_are_found_where_each_kind_keeps_them() {
    assert_eq!(
        template_pointer("apps", "deployments"),
        Some("/spec/template")
    );
    assert_eq!(
        template_pointer("batch", "cronjobs"),
        Some("/spec/jobTemplate/spec/template")
    );
    assert_eq!(template_pointer("", "podtemplates"), Some("/template"));
    assert_eq!(template_pointer("", "configmaps"), None);
    assert_eq!(template_pointer("extensions", "deployments"), None);
}

#[test]
fn label_errors_name_the_label_field() {
    let errors = [LabelError {
        label: pod_security::ENFORCE_LEVEL_LABEL,
        value: "strict".into(),
        error: pod_security::ParseError::Level,
    }];
    assert_eq!(
        aggregate_message(&label_field_errors(&errors)).unwrap_or_default(),
        "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"
    );
}
