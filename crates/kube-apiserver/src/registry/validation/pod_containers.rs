//! Containers of a pod spec (upstream's `validateContainers`,
//! `validateInitContainers`, `validateEphemeralContainers` and
//! `validateContainerCommon`): names unique across all three lists, image,
//! ports, env, envFrom, volume mounts, pull and termination-message
//! policies, probes, lifecycle, resources and security context.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::formats::{is_config_map_key, is_valid_port_name, is_valid_port_num};
use apimachinery::validation::name_is_dns_subdomain;
use serde_json::Value;

use super::pod_claims::ClaimNames;
use super::pod_devices::{name_paths, validate_devices};
use super::pod_probes::{validate_lifecycle, validate_probe, ProbeKind};
use super::pod_resources::{validate_resize_policy, validate_resources, Level};
use super::pod_security::validate_security_context;
use super::pod_volumes::{
    local_descending_path, object_field_selector, resource_field_selector, Volumes,
};
use super::{dns_label, enumerated, invalid_all, is_true, items, set, text};

const PULL_POLICIES: &[&str] = &["Always", "IfNotPresent", "Never"];
const MESSAGE_POLICIES: &[&str] = &["File", "FallbackToLogsOnError"];
const PROPAGATIONS: &[&str] = &["Bidirectional", "HostToContainer", "None"];
const RECURSIVE_READ_ONLY: &[&str] = &["Disabled", "Enabled", "IfPossible"];
const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];
const RELAXED_ENV_NAME_MSG: &str =
    "a valid environment variable name must consist only of printable ASCII characters other than '='";
const NOT_FOR_INIT: &str = "may not be set for init containers without restartPolicy=Always";
const NOT_FOR_EPHEMERAL: &str = "cannot be set for an Ephemeral Container";
/// Fields an ephemeral container may not set, in upstream's field order.
const EPHEMERAL_FORBIDDEN: &[&str] = &[
    "ports",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
];

/// What container validation needs from the rest of the pod spec.
pub(super) struct PodContext<'a> {
    pub volumes: Volumes<'a>,
    /// The pod's termination grace period (upstream's default when unset).
    pub grace_period: i64,
    /// The pod shares the host's user namespace (`hostUsers` unset or true).
    pub host_users: bool,
    /// The names of the pod's `resourceClaims`.
    pub claims: ClaimNames<'a>,
    /// The pod's restart policy (upstream's default when unset).
    pub restart_policy: &'a str,
}

/// `spec.containers`, `spec.initContainers` and `spec.ephemeralContainers`.
pub(super) fn validate_all_containers(
    spec: &Value,
    path: &Path,
    ctx: &PodContext<'_>,
    errs: &mut Vec<FieldError>,
) {
    validate_containers(spec, &path.child("containers"), ctx, errs);
    validate_init_containers(spec, &path.child("initContainers"), ctx, errs);
    validate_ephemeral_containers(spec, &path.child("ephemeralContainers"), ctx, errs);
}

fn validate_containers(
    spec: &Value,
    path: &Path,
    ctx: &PodContext<'_>,
    errs: &mut Vec<FieldError>,
) {
    let containers = items(spec, "containers");
    if containers.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    let mut names = HashSet::new();
    for (i, c) in containers.iter().enumerate() {
        let idx = path.index(i);
        validate_common(c, &idx, ctx, errs);
        let name = text(c, "name");
        if !names.insert(name) {
            errs.push(FieldError::duplicate(&idx.child("name"), name));
        }
        probes_and_lifecycle(c, &idx, ctx, errs);
        if set(c, "restartPolicy").is_some() {
            errs.push(FieldError::forbidden(
                &idx.child("restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    host_port_conflicts(containers.iter().enumerate(), path, errs);
}

fn validate_init_containers(
    spec: &Value,
    path: &Path,
    ctx: &PodContext<'_>,
    errs: &mut Vec<FieldError>,
) {
    let mut names: HashSet<&str> = items(spec, "containers")
        .iter()
        .map(|c| text(c, "name"))
        .collect();
    for (i, c) in items(spec, "initContainers").iter().enumerate() {
        let idx = path.index(i);
        validate_common(c, &idx, ctx, errs);
        let restart = c.get("restartPolicy").and_then(Value::as_str);
        if let Some(policy) = restart.filter(|p| *p != "Always") {
            errs.push(FieldError::not_supported(
                &idx.child("restartPolicy"),
                policy,
                &["Always"],
            ));
        }
        let name = text(c, "name");
        if names.contains(name) {
            errs.push(FieldError::duplicate(&idx.child("name"), name));
        } else if !name.is_empty() {
            names.insert(name);
        }
        // Init containers run one at a time: each is checked on its own
        // (and upstream reports it at index 0).
        host_port_conflicts(std::iter::once((0, c)), path, errs);
        if restart == Some("Always") {
            probes_and_lifecycle(c, &idx, ctx, errs);
        } else {
            for key in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if set(c, key).is_some() {
                    errs.push(FieldError::forbidden(&idx.child(key), NOT_FOR_INIT));
                }
            }
        }
    }
}

fn validate_ephemeral_containers(
    spec: &Value,
    path: &Path,
    ctx: &PodContext<'_>,
    errs: &mut Vec<FieldError>,
) {
    let ephemeral = items(spec, "ephemeralContainers");
    if ephemeral.is_empty() {
        return;
    }
    let others: HashSet<&str> = ["containers", "initContainers"]
        .iter()
        .flat_map(|key| items(spec, key))
        .map(|c| text(c, "name"))
        .collect();
    let mut names = others.clone();
    for (i, c) in ephemeral.iter().enumerate() {
        let idx = path.index(i);
        validate_common(c, &idx, ctx, errs);
        image_whitespace(c, &idx, errs);
        let name = text(c, "name");
        if !names.insert(name) {
            errs.push(FieldError::duplicate(&idx.child("name"), name));
        }
        let target = text(c, "targetContainerName");
        if !target.is_empty() && !others.contains(target) {
            errs.push(FieldError::not_found(
                &idx.child("targetContainerName"),
                target,
            ));
        }
        for key in EPHEMERAL_FORBIDDEN {
            if set(c, key).is_some_and(is_set_value) {
                errs.push(FieldError::forbidden(&idx.child(key), NOT_FOR_EPHEMERAL));
            }
        }
        for (j, mount) in items(c, "volumeMounts").iter().enumerate() {
            for key in ["subPath", "subPathExpr"] {
                if !text(mount, key).is_empty() {
                    let p = idx.child("volumeMounts").index(j).child(key);
                    errs.push(FieldError::forbidden(&p, NOT_FOR_EPHEMERAL));
                }
            }
        }
    }
}

/// A value other than Go's zero value of its field.
fn is_set_value(v: &Value) -> bool {
    match v {
        Value::Array(a) => !a.is_empty(),
        Value::Object(m) => m.values().any(is_set_value),
        Value::String(s) => !s.is_empty(),
        Value::Null => false,
        _ => true,
    }
}

/// Pods (not templates) may not have images with surrounding whitespace.
pub(super) fn image_whitespace(c: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let image = text(c, "image");
    if image.trim() != image {
        errs.push(FieldError::invalid(
            &path.child("image"),
            image,
            "must not have leading or trailing whitespace",
        ));
    }
}

fn validate_common(c: &Value, path: &Path, ctx: &PodContext<'_>, errs: &mut Vec<FieldError>) {
    let name = text(c, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else {
        dns_label(&path.child("name"), name, errs);
    }
    if text(c, "image").is_empty() {
        errs.push(FieldError::required(&path.child("image"), ""));
    }
    enumerated(c, "terminationMessagePolicy", path, MESSAGE_POLICIES, errs);
    validate_ports(c, &path.child("ports"), errs);
    validate_env(c, &path.child("env"), errs);
    validate_env_from(c, &path.child("envFrom"), errs);
    validate_mounts(c, &path.child("volumeMounts"), ctx, errs);
    validate_devices(c, &ctx.volumes, &path.child("volumeDevices"), errs);
    enumerated(c, "imagePullPolicy", path, PULL_POLICIES, errs);
    if let Some(resources) = set(c, "resources") {
        let level = Level::Container;
        validate_resources(
            resources,
            &ctx.claims,
            &path.child("resources"),
            level,
            errs,
        );
    }
    validate_resize_policy(c, ctx.restart_policy, &path.child("resizePolicy"), errs);
    if let Some(sc) = set(c, "securityContext") {
        validate_security_context(sc, &path.child("securityContext"), ctx.host_users, errs);
    }
}

fn probes_and_lifecycle(c: &Value, path: &Path, ctx: &PodContext<'_>, errs: &mut Vec<FieldError>) {
    if let Some(lifecycle) = set(c, "lifecycle") {
        validate_lifecycle(lifecycle, &path.child("lifecycle"), ctx.grace_period, errs);
    }
    for (key, kind) in [
        ("livenessProbe", ProbeKind::Liveness),
        ("readinessProbe", ProbeKind::Readiness),
        ("startupProbe", ProbeKind::Startup),
    ] {
        if let Some(probe) = set(c, key) {
            validate_probe(probe, kind, &path.child(key), ctx.grace_period, errs);
        }
    }
}

fn validate_ports(c: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let mut names = HashSet::new();
    for (i, port) in items(c, "ports").iter().enumerate() {
        let idx = path.index(i);
        let name = text(port, "name");
        if !name.is_empty() {
            let msgs = is_valid_port_name(name);
            if !msgs.is_empty() {
                invalid_all(&idx.child("name"), name, msgs, errs);
            } else if !names.insert(name) {
                errs.push(FieldError::duplicate(&idx.child("name"), name));
            }
        }
        let container_port = port.get("containerPort").and_then(Value::as_i64);
        match container_port {
            None | Some(0) => errs.push(FieldError::required(&idx.child("containerPort"), "")),
            Some(n) => {
                for msg in is_valid_port_num(n) {
                    errs.push(FieldError::invalid(&idx.child("containerPort"), n, msg));
                }
            }
        }
        if let Some(host) = port
            .get("hostPort")
            .and_then(Value::as_i64)
            .filter(|p| *p != 0)
        {
            for msg in is_valid_port_num(host) {
                errs.push(FieldError::invalid(&idx.child("hostPort"), host, msg));
            }
        }
        super::protocol(port, &idx, errs);
    }
}

/// Host ports may be used once per protocol and host IP.
fn host_port_conflicts<'a>(
    containers: impl Iterator<Item = (usize, &'a Value)>,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let mut seen = HashSet::new();
    for (ci, c) in containers {
        for (pi, port) in items(c, "ports").iter().enumerate() {
            let host_port = port.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
            if host_port == 0 {
                continue;
            }
            let protocol = port
                .get("protocol")
                .and_then(Value::as_str)
                .unwrap_or("TCP");
            let key = format!("{protocol}/{}/{host_port}", text(port, "hostIP"));
            if seen.contains(&key) {
                let p = path.index(ci).child("ports").index(pi).child("hostPort");
                errs.push(FieldError::duplicate(&p, key));
            } else {
                seen.insert(key);
            }
        }
    }
}

/// Environment variable names as upstream 1.37 checks them (the relaxed
/// rule): printable ASCII other than `=`.
fn env_name(name: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let bad = name.chars().any(|c| !(' '..='~').contains(&c) || c == '=');
    if bad {
        errs.push(FieldError::invalid(path, name, RELAXED_ENV_NAME_MSG));
    }
}

fn validate_env(c: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    for (i, var) in items(c, "env").iter().enumerate() {
        let idx = path.index(i);
        let name = text(var, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&idx.child("name"), ""));
        } else {
            env_name(name, &idx.child("name"), errs);
        }
        if let Some(from) = set(var, "valueFrom") {
            value_from(
                from,
                !text(var, "value").is_empty(),
                &idx.child("valueFrom"),
                errs,
            );
        }
    }
}

fn value_from(from: &Value, has_value: bool, path: &Path, errs: &mut Vec<FieldError>) {
    let mut sources = 0;
    if let Some(field_ref) = set(from, "fieldRef") {
        sources += 1;
        object_field_selector(field_ref, ENV_FIELD_PATHS, &path.child("fieldRef"), errs);
    }
    if let Some(resource_ref) = set(from, "resourceFieldRef") {
        sources += 1;
        resource_field_selector(resource_ref, &path.child("resourceFieldRef"), false, errs);
    }
    for key in ["configMapKeyRef", "secretKeyRef"] {
        if let Some(selector) = set(from, key) {
            sources += 1;
            key_selector(selector, &path.child(key), errs);
        }
    }
    let msg = match sources {
        0 => "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
        _ if has_value => "may not be specified when `value` is not empty",
        1 => return,
        _ => "may not have more than one field specified at a time",
    };
    errs.push(FieldError::invalid(path, "", msg));
}

fn key_selector(selector: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let name = text(selector, "name");
    invalid_all(
        &path.child("name"),
        name,
        name_is_dns_subdomain(name, false),
        errs,
    );
    let key = text(selector, "key");
    if key.is_empty() {
        errs.push(FieldError::required(&path.child("key"), ""));
    } else {
        invalid_all(&path.child("key"), key, is_config_map_key(key), errs);
    }
}

fn validate_env_from(c: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    for (i, source) in items(c, "envFrom").iter().enumerate() {
        let idx = path.index(i);
        let prefix = text(source, "prefix");
        if !prefix.is_empty() {
            env_name(prefix, &idx.child("prefix"), errs);
        }
        let mut sources = 0;
        for key in ["configMapRef", "secretRef"] {
            if let Some(reference) = set(source, key) {
                sources += 1;
                let p = idx.child(key).child("name");
                let name = text(reference, "name");
                if name.is_empty() {
                    errs.push(FieldError::required(&p, ""));
                } else {
                    invalid_all(&p, name, name_is_dns_subdomain(name, true), errs);
                }
            }
        }
        match sources {
            0 => errs.push(FieldError::invalid(
                path,
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            )),
            1 => {}
            _ => errs.push(FieldError::invalid(
                path,
                "",
                "may not have more than one field specified at a time",
            )),
        }
    }
}

/// Upstream's `ValidateVolumeMounts` (some errors are reported at the list
/// path without an index, as upstream does).
fn validate_mounts(c: &Value, path: &Path, ctx: &PodContext<'_>, errs: &mut Vec<FieldError>) {
    let mut mount_points = HashSet::new();
    let devices = name_paths(c, "volumeDevices", "devicePath");
    let privileged = c
        .get("securityContext")
        .is_some_and(|sc| is_true(sc, "privileged"));
    for (i, mount) in items(c, "volumeMounts").iter().enumerate() {
        let idx = path.index(i);
        let name = text(mount, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&idx.child("name"), ""));
        }
        let volume = ctx.volumes.get(name);
        if volume.is_none() {
            errs.push(FieldError::not_found(&idx.child("name"), name));
        }
        let mount_path = text(mount, "mountPath");
        if mount_path.is_empty() {
            errs.push(FieldError::required(&idx.child("mountPath"), ""));
        }
        if !mount_points.insert(mount_path) {
            errs.push(FieldError::invalid(
                &idx.child("mountPath"),
                mount_path,
                "must be unique",
            ));
        }
        if devices.iter().any(|(n, _)| *n == name) {
            let msg = "must not already exist in volumeDevices";
            errs.push(FieldError::invalid(&idx.child("name"), name, msg));
        }
        if devices.iter().any(|(_, p)| *p == mount_path) {
            let msg = "must not already exist as a path in volumeDevices";
            errs.push(FieldError::invalid(
                &idx.child("mountPath"),
                mount_path,
                msg,
            ));
        }
        if volume.is_some_and(|v| set(v, "image").is_some()) {
            for key in ["subPath", "subPathExpr"] {
                let value = text(mount, key);
                if !value.is_empty() {
                    let msg = "not allowed in image volume sources";
                    errs.push(FieldError::invalid(&idx.child(key), value, msg));
                }
            }
        }
        mount_sub_paths(mount, &idx, path, errs);
        mount_propagation(mount, path, privileged, errs);
    }
}

fn mount_sub_paths(mount: &Value, idx: &Path, path: &Path, errs: &mut Vec<FieldError>) {
    let sub_path = text(mount, "subPath");
    if !sub_path.is_empty() {
        local_descending_path(sub_path, &path.child("subPath"), errs);
    }
    let expr = text(mount, "subPathExpr");
    if !expr.is_empty() {
        if !sub_path.is_empty() {
            errs.push(FieldError::invalid(
                &idx.child("subPathExpr"),
                expr,
                "subPathExpr and subPath are mutually exclusive",
            ));
        }
        local_descending_path(expr, &path.child("subPathExpr"), errs);
    }
}

fn mount_propagation(mount: &Value, path: &Path, privileged: bool, errs: &mut Vec<FieldError>) {
    let propagation = mount.get("mountPropagation").and_then(Value::as_str);
    if let Some(mode) = propagation {
        let p = path.child("mountPropagation");
        if !PROPAGATIONS.contains(&mode) {
            errs.push(FieldError::not_supported(&p, mode, PROPAGATIONS));
        }
        if mode == "Bidirectional" && !privileged {
            errs.push(FieldError::forbidden(
                &p,
                "Bidirectional mount propagation is available only to privileged containers",
            ));
        }
    }
    let Some(rro) = mount.get("recursiveReadOnly").and_then(Value::as_str) else {
        return;
    };
    let p = path.child("recursiveReadOnly");
    match rro {
        "Disabled" => {}
        "Enabled" | "IfPossible" => {
            if !is_true(mount, "readOnly") {
                errs.push(FieldError::forbidden(
                    &p,
                    "may only be specified when readOnly is true",
                ));
            }
            if propagation.is_some_and(|m| m != "None") {
                errs.push(FieldError::forbidden(
                    &p,
                    "may only be specified when mountPropagation is None or not specified",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(&p, other, RECURSIVE_READ_ONLY)),
    }
}
