//! Upstream's defaults of pod specs wherever they appear (pods and every
//! pod template: `SetDefaults_PodSpec`, containers, probes, handlers,
//! volumes, field selectors and the declarative `+default` markers), and
//! those that upstream keeps to pods alone (`SetDefaults_Pod`).

use serde_json::{json, Value};

use super::defaults::default_field;
use super::pod_resources::default_pod_resources;

/// The mode files of secret, configMap, downwardAPI and projected volumes
/// get (0644).
const DEFAULT_MODE: u32 = 0o644;
/// A projected service-account token lives an hour unless asked otherwise.
const TOKEN_EXPIRATION_SECONDS: i64 = 3600;

/// Upstream's pod spec defaults, for pods and pod templates alike.
pub fn default_pod_spec(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_field(spec, "dnsPolicy", json!("ClusterFirst"));
    default_field(spec, "restartPolicy", json!("Always"));
    default_field(spec, "terminationGracePeriodSeconds", json!(30));
    default_field(spec, "securityContext", json!({}));
    default_field(spec, "schedulerName", json!("default-scheduler"));
    service_account_alias(spec);
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in items_mut(spec, list) {
            default_container(c);
        }
    }
    for volume in items_mut(spec, "volumes") {
        default_volume(volume);
    }
}

/// The defaults upstream gives pods but not templates: service links on,
/// host ports of host-network pods, requests from limits.
pub fn default_pod(spec: &mut Value) {
    if !spec.is_object() {
        return;
    }
    default_field(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork") == Some(&json!(true)) {
        for list in ["containers", "initContainers"] {
            for c in items_mut(spec, list) {
                for port in items_mut(c, "ports") {
                    let container_port = port.get("containerPort").cloned();
                    if let Some(container_port) = container_port {
                        default_nonzero(port, "hostPort", container_port);
                    }
                }
            }
        }
    }
    default_pod_resources(spec);
}

/// Upstream's ReplicationController defaults: one replica, and a missing
/// selector or missing labels taken from the template's labels.
pub fn replication_controller_defaults(rc: &mut Value) {
    let labels = rc.pointer("/spec/template/metadata/labels").cloned();
    if let Some(labels) = labels.filter(|l| l.is_object()) {
        let empty = |v: Option<&Value>| v.and_then(Value::as_object).is_none_or(|m| m.is_empty());
        if let Some(spec) = rc.get_mut("spec").filter(|s| s.is_object()) {
            if empty(spec.get("selector")) {
                spec["selector"] = labels.clone();
            }
        }
        if let Some(meta) = rc.get_mut("metadata").filter(|m| m.is_object()) {
            if empty(meta.get("labels")) {
                meta["labels"] = labels;
            }
        }
    }
    if let Some(spec) = rc.get_mut("spec").filter(|s| s.is_object()) {
        default_field(spec, "replicas", json!(1));
        if let Some(template) = spec.pointer_mut("/template/spec") {
            default_pod_spec(template);
        }
    }
}

/// A PodTemplate's pod spec gets the pod spec defaults.
pub fn pod_template_defaults(template: &mut Value) {
    if let Some(spec) = template.pointer_mut("/template/spec") {
        default_pod_spec(spec);
    }
}

/// `serviceAccount` is a deprecated alias of `serviceAccountName`: it fills
/// a missing name, and is always written back as the name.
pub(crate) fn service_account_alias(spec: &mut Value) {
    let name = text(spec, "serviceAccountName");
    let alias = text(spec, "serviceAccount");
    let effective = if name.is_empty() { alias } else { name }.to_owned();
    if let Some(map) = spec.as_object_mut() {
        if effective.is_empty() {
            map.remove("serviceAccount");
        } else {
            map.insert("serviceAccountName".into(), json!(effective));
            map.insert("serviceAccount".into(), json!(effective));
        }
    }
}

/// `SetDefaults_Container` (also for ephemeral containers), ports' protocol,
/// probes, lifecycle handlers and field references of the environment.
fn default_container(c: &mut Value) {
    if !c.is_object() {
        return;
    }
    default_field(c, "terminationMessagePath", json!("/dev/termination-log"));
    default_field(c, "terminationMessagePolicy", json!("File"));
    default_field(c, "resources", json!({}));
    let policy = pull_policy(text(c, "image"));
    default_field(c, "imagePullPolicy", json!(policy));
    for port in items_mut(c, "ports") {
        default_field(port, "protocol", json!("TCP"));
    }
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(probe) = object_mut(c, probe) {
            default_nonzero(probe, "timeoutSeconds", json!(1));
            default_nonzero(probe, "periodSeconds", json!(10));
            default_nonzero(probe, "successThreshold", json!(1));
            default_nonzero(probe, "failureThreshold", json!(3));
            default_http_get(probe);
            // `GRPCAction.service` (`+default=""`, a pointer Go writes
            // even when nil).
            if let Some(grpc) = object_mut(probe, "grpc") {
                default_unset(grpc, "service", json!(""));
            }
        }
    }
    if let Some(lifecycle) = object_mut(c, "lifecycle") {
        for handler in ["postStart", "preStop"] {
            if let Some(handler) = object_mut(lifecycle, handler) {
                default_http_get(handler);
            }
        }
    }
    for env in items_mut(c, "env") {
        if let Some(field_ref) = env.pointer_mut("/valueFrom/fieldRef") {
            default_field(field_ref, "apiVersion", json!("v1"));
        }
    }
}

/// `IfNotPresent` for a tagged or digested image, `Always` for `:latest`
/// and for an image without tag (which means latest).
fn pull_policy(image: &str) -> &'static str {
    let last = image.rsplit('/').next().unwrap_or("");
    let tagged_latest = last.ends_with(":latest");
    let has_tag = last.contains(':') || image.contains('@');
    if tagged_latest || !has_tag {
        "Always"
    } else {
        "IfNotPresent"
    }
}

fn default_http_get(handler: &mut Value) {
    if let Some(get) = object_mut(handler, "httpGet") {
        default_nonempty(get, "path", "/");
        default_nonempty(get, "scheme", "HTTP");
    }
}

/// `SetDefaults_Volume` and the defaults of each volume source.
fn default_volume(volume: &mut Value) {
    let Some(map) = volume.as_object_mut() else {
        return;
    };
    let has_source = map.iter().any(|(k, v)| k != "name" && !v.is_null());
    if !has_source {
        map.insert("emptyDir".into(), json!({}));
        return;
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(source) = object_mut(volume, source) {
            default_field(source, "defaultMode", json!(DEFAULT_MODE));
        }
    }
    if let Some(items) = volume.pointer_mut("/downwardAPI/items") {
        default_field_refs(items);
    }
    for source in projected_sources(volume) {
        if let Some(token) = object_mut(source, "serviceAccountToken") {
            default_field(token, "expirationSeconds", json!(TOKEN_EXPIRATION_SECONDS));
        }
        if let Some(items) = source.pointer_mut("/downwardAPI/items") {
            default_field_refs(items);
        }
    }
    if let Some(image) = object_mut(volume, "image") {
        let policy = pull_policy(text(image, "reference"));
        default_nonempty(image, "pullPolicy", policy);
    }
    if let Some(claim) = volume.pointer_mut("/ephemeral/volumeClaimTemplate/spec") {
        default_field(claim, "volumeMode", json!("Filesystem"));
    }
    volume_source_defaults(volume);
}

/// The defaults of the in-tree sources a pod's volume and a
/// PersistentVolume's spec share: `SetDefaults_HostPathVolumeSource` and
/// the `+default` markers of iSCSI, RBD, Azure disk and ScaleIO sources.
pub(crate) fn volume_source_defaults(volume: &mut Value) {
    if let Some(host_path) = object_mut(volume, "hostPath") {
        default_field(host_path, "type", json!(""));
    }
    const DEFAULTS: &[(&str, &[(&str, &str)])] = &[
        ("iscsi", &[("iscsiInterface", "default")]),
        (
            "rbd",
            &[
                ("pool", "rbd"),
                ("user", "admin"),
                ("keyring", "/etc/ceph/keyring"),
            ],
        ),
        (
            "azureDisk",
            &[
                ("cachingMode", "ReadWrite"),
                ("fsType", "ext4"),
                ("kind", "Shared"),
            ],
        ),
        (
            "scaleIO",
            &[("storageMode", "ThinProvisioned"), ("fsType", "xfs")],
        ),
    ];
    for (source, fields) in DEFAULTS {
        if let Some(source_obj) = object_mut(volume, source) {
            for (field, value) in *fields {
                default_field(source_obj, field, json!(value));
            }
            if *source == "azureDisk" {
                default_field(source_obj, "readOnly", json!(false));
            }
        }
    }
}

fn projected_sources(volume: &mut Value) -> impl Iterator<Item = &mut Value> {
    volume
        .pointer_mut("/projected/sources")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// `SetDefaults_ObjectFieldSelector` for downward API items.
fn default_field_refs(items: &mut Value) {
    for item in items.as_array_mut().into_iter().flatten() {
        if let Some(field_ref) = object_mut(item, "fieldRef") {
            default_field(field_ref, "apiVersion", json!("v1"));
        }
    }
}

fn text<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or("")
}

fn object_mut<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    obj.get_mut(key).filter(|v| v.is_object())
}

fn items_mut<'a>(obj: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    obj.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
}

/// Sets a number that is missing or zero (Go's zero value).
fn default_nonzero(obj: &mut Value, key: &str, value: Value) {
    if let Some(map) = obj.as_object_mut() {
        if map.get(key).is_none_or(|v| v.is_null() || v == &json!(0)) {
            map.insert(key.into(), value);
        }
    }
}

/// Sets a string that is missing or empty.
/// Sets `obj[key]` when missing or null (an unset pointer).
pub(crate) fn default_unset(obj: &mut Value, key: &str, value: Value) {
    if let Some(map) = obj.as_object_mut() {
        let slot = map.entry(key).or_insert(Value::Null);
        if slot.is_null() {
            *slot = value;
        }
    }
}

/// Sets a string field when missing or empty (Go's `len(x) == 0`).
pub(crate) fn default_nonempty(obj: &mut Value, key: &str, value: &str) {
    if !text(obj, key).is_empty() {
        return;
    }
    if let Some(map) = obj.as_object_mut() {
        map.insert(key.into(), json!(value));
    }
}

#[cfg(test)]
#[path = "pod_defaults_tests.rs"]
mod tests;
