//! What `spec.os.name` rules out (upstream's `validateLinux` and
//! `validateWindows`): Linux-only security settings in a Windows pod, and
//! Windows options in a Linux pod; and the rules of Windows HostProcess
//! pods (upstream's `validateWindowsHostProcessPod`).

use apimachinery::field_errors::{FieldError, Path};
use serde_json::Value;

use super::pod_security::allow_privileged;
use super::{is_true, items, set};

const NOT_FOR_WINDOWS: &str = "cannot be set for a windows pod";
const NOT_FOR_LINUX: &str = "windows options cannot be set for a linux pod";
/// Pod security context fields a Windows pod may not set, in upstream's
/// order, with where they are reported (`None`: under `securityContext`).
/// The host namespace switches live in the spec in v1.
const WINDOWS_POD_FIELDS: &[(&str, Option<&str>)] = &[
    ("appArmorProfile", None),
    ("seLinuxOptions", None),
    ("hostUsers", Some("hostUsers")),
    ("hostPID", Some("hostPID")),
    ("hostIPC", Some("hostIPC")),
    ("seccompProfile", None),
    ("fsGroup", None),
    ("fsGroupChangePolicy", None),
    ("sysctls", None),
    ("shareProcessNamespace", Some("shareProcessNamespace")),
    ("runAsUser", None),
    ("runAsGroup", None),
    ("supplementalGroups", None),
    ("supplementalGroupsPolicy", None),
    ("seLinuxChangePolicy", None),
];
/// Container security context fields a Windows pod may not set.
const WINDOWS_CONTAINER_FIELDS: &[&str] = &[
    "appArmorProfile",
    "seLinuxOptions",
    "seccompProfile",
    "capabilities",
    "readOnlyRootFilesystem",
    "privileged",
    "allowPrivilegeEscalation",
    "procMount",
    "runAsUser",
    "runAsGroup",
];

/// The rules of the pod's operating system, once `os.name` is valid.
pub(super) fn validate_os_rules(spec: &Value, os: &str, path: &Path, errs: &mut Vec<FieldError>) {
    match os {
        "linux" => linux(spec, path, errs),
        "windows" => windows(spec, path, errs),
        _ => {}
    }
}

fn linux(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let pod_sc = set(spec, "securityContext");
    if pod_sc.is_some_and(|sc| set(sc, "windowsOptions").is_some()) {
        let p = path.child("securityContext").child("windowsOptions");
        errs.push(FieldError::forbidden(&p, NOT_FOR_LINUX));
    }
    for (c, c_path) in containers(spec, path) {
        if let Some(sc) = set(c, "securityContext") {
            if set(sc, "windowsOptions").is_some() {
                let p = c_path.child("securityContext").child("windowsOptions");
                errs.push(FieldError::forbidden(&p, NOT_FOR_LINUX));
            }
        }
    }
}

fn windows(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let pod_sc = set(spec, "securityContext");
    for (key, in_spec) in WINDOWS_POD_FIELDS {
        let present = match in_spec {
            // Switches that are plain booleans count when true.
            Some("hostPID" | "hostIPC") => is_true(spec, key),
            Some(_) => set(spec, key).is_some(),
            None => pod_sc.and_then(|sc| set(sc, key)).is_some_and(|v| {
                // An empty sysctl list is Go's nil slice.
                *key != "sysctls" || v.as_array().is_some_and(|a| !a.is_empty())
            }),
        };
        if present {
            let p = match in_spec {
                Some(field) => path.child(field),
                None => path.child("securityContext").child(key),
            };
            errs.push(FieldError::forbidden(&p, NOT_FOR_WINDOWS));
        }
    }
    for (c, c_path) in containers(spec, path) {
        let Some(sc) = set(c, "securityContext") else {
            continue;
        };
        for key in WINDOWS_CONTAINER_FIELDS {
            if set(sc, key).is_some() {
                let p = c_path.child("securityContext").child(key);
                errs.push(FieldError::forbidden(&p, NOT_FOR_WINDOWS));
            }
        }
    }
}

/// `windowsOptions.hostProcess` of a security context, when set.
fn host_process(owner: &Value) -> Option<bool> {
    owner
        .pointer("/securityContext/windowsOptions/hostProcess")
        .and_then(Value::as_bool)
}

/// HostProcess pods: the pod's and a container's settings agree, every
/// container is a HostProcess one (set or inherited), the pod uses the
/// host network, and the server allows privileged pods.
pub(super) fn validate_host_process(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let pod = host_process(spec);
    let all = containers(spec, path);
    let mut host_process_count = 0;
    for (container, c_path) in &all {
        let own = host_process(container);
        if let (Some(pod), Some(own)) = (pod, own) {
            if pod != own {
                let p = c_path
                    .child("securityContext")
                    .child("windowsOptions")
                    .child("hostProcess");
                let detail = format!(
                    "pod hostProcess value must be identical if both are specified, was {pod}"
                );
                errs.push(FieldError::invalid(&p, own, detail));
            }
        }
        if own.or(pod) == Some(true) {
            host_process_count += 1;
        }
    }
    if host_process_count == 0 {
        return;
    }
    if host_process_count != all.len() {
        errs.push(FieldError::invalid(
            path,
            "",
            "If pod contains any hostProcess containers then all containers must be HostProcess containers",
        ));
    }
    if !is_true(spec, "hostNetwork") {
        errs.push(FieldError::invalid(
            &path.child("hostNetwork"),
            false,
            "hostNetwork must be true if pod contains any hostProcess containers",
        ));
    }
    if !allow_privileged() {
        errs.push(FieldError::forbidden(
            path,
            "hostProcess containers are disallowed by cluster policy",
        ));
    }
}

/// Every container with its path, in upstream's visiting order: init,
/// regular, then ephemeral containers.
fn containers<'a>(spec: &'a Value, path: &Path) -> Vec<(&'a Value, Path)> {
    ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|key| {
            items(spec, key)
                .iter()
                .enumerate()
                .map(move |(i, c)| (c, path.child(key).index(i)))
        })
        .collect()
}
