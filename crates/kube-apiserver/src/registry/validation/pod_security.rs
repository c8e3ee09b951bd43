//! Security contexts (upstream's `ValidateSecurityContext` and
//! `validatePodSpecSecurityContext`): user and group IDs, proc mount,
//! seccomp and AppArmor profiles, the privileged/escalation rule, sysctls
//! and the pod-level policies.
//!
//! `privileged: true` is refused unless the server runs with
//! `--allow-privileged` (upstream's `capabilities.Setup`, a process-wide
//! setting made once at startup).

use std::collections::HashSet;
use std::sync::OnceLock;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::formats::{is_valid_group_id, is_valid_user_id};
use serde_json::Value;

use super::pod_volumes::local_descending_path;
use super::{int, is_true, items, set, text};

const PROC_MOUNTS: &[&str] = &["Default", "Unmasked"];
const SECCOMP_TYPES: &[&str] = &["Localhost", "RuntimeDefault", "Unconfined"];
const FS_GROUP_POLICIES: &[&str] = &["Always", "OnRootMismatch"];
const SUPPLEMENTAL_POLICIES: &[&str] = &["Merge", "Strict"];
const SELINUX_POLICIES: &[&str] = &["MountOption", "Recursive"];
const SYSCTL_MAX_LENGTH: usize = 253;
const SYSCTL_REGEX: &str =
    r"^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";
const MAX_APPARMOR_PROFILE: usize = 4095;

static ALLOW_PRIVILEGED: OnceLock<bool> = OnceLock::new();

/// Records `--allow-privileged`; the first call wins (upstream's
/// `capabilities.Setup` is also applied once). Unset means false.
pub fn set_allow_privileged(allowed: bool) {
    // A second server in the same process keeps the first setting.
    let _ = ALLOW_PRIVILEGED.set(allowed);
}

pub(super) fn allow_privileged() -> bool {
    ALLOW_PRIVILEGED.get().copied().unwrap_or(false)
}

/// A container's `securityContext`.
pub(super) fn validate_security_context(
    sc: &Value,
    path: &Path,
    host_users: bool,
    errs: &mut Vec<FieldError>,
) {
    if is_true(sc, "privileged") && !allow_privileged() {
        errs.push(FieldError::forbidden(
            &path.child("privileged"),
            "disallowed by cluster policy",
        ));
    }
    id(sc, "runAsUser", path, is_valid_user_id, errs);
    id(sc, "runAsGroup", path, is_valid_group_id, errs);
    if let Some(mount) = sc.get("procMount").and_then(Value::as_str) {
        let p = path.child("procMount");
        if !PROC_MOUNTS.contains(&mount) {
            errs.push(FieldError::not_supported(&p, mount, PROC_MOUNTS));
        }
        if host_users && mount == "Unmasked" {
            errs.push(FieldError::invalid(
                &p,
                mount,
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    seccomp_profile(sc, path, errs);
    if sc.get("allowPrivilegeEscalation").and_then(Value::as_bool) == Some(false) {
        if is_true(sc, "privileged") {
            errs.push(FieldError::invalid(
                path,
                sc.clone(),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        let added = sc
            .get("capabilities")
            .map(|c| items(c, "add"))
            .unwrap_or_default();
        for cap in added {
            if cap.as_str() == Some("CAP_SYS_ADMIN") {
                errs.push(FieldError::invalid(
                    path,
                    sc.clone(),
                    "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
                ));
            }
        }
    }
    app_armor_profile(sc, path, errs);
}

/// A pod's `securityContext`; `spec` gives the host namespace switches.
pub(super) fn validate_pod_security_context(spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(sc) = set(spec, "securityContext") else {
        return;
    };
    id(sc, "fsGroup", path, is_valid_group_id, errs);
    id(sc, "runAsUser", path, is_valid_user_id, errs);
    id(sc, "runAsGroup", path, is_valid_group_id, errs);
    for (i, gid) in items(sc, "supplementalGroups").iter().enumerate() {
        if let Some(gid) = gid.as_i64() {
            for msg in is_valid_group_id(gid) {
                let p = path.child("supplementalGroups").index(i);
                errs.push(FieldError::invalid(&p, gid, msg));
            }
        }
    }
    if is_true(spec, "shareProcessNamespace") && is_true(spec, "hostPID") {
        errs.push(FieldError::invalid(
            &path.child("shareProcessNamespace"),
            true,
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    sysctls(sc, spec, &path.child("sysctls"), errs);
    for (key, supported) in [
        ("fsGroupChangePolicy", FS_GROUP_POLICIES),
        ("supplementalGroupsPolicy", SUPPLEMENTAL_POLICIES),
        ("seLinuxChangePolicy", SELINUX_POLICIES),
    ] {
        if let Some(value) = sc.get(key).and_then(Value::as_str) {
            if !supported.contains(&value) {
                errs.push(FieldError::not_supported(
                    &path.child(key),
                    value,
                    supported,
                ));
            }
        }
    }
    seccomp_profile(sc, path, errs);
    app_armor_profile(sc, path, errs);
}

fn id(
    sc: &Value,
    key: &str,
    path: &Path,
    check: fn(i64) -> Vec<String>,
    errs: &mut Vec<FieldError>,
) {
    if let Some(value) = int(sc, key) {
        for msg in check(value) {
            errs.push(FieldError::invalid(&path.child(key), value, msg));
        }
    }
}

fn seccomp_profile(sc: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(profile) = set(sc, "seccompProfile") else {
        return;
    };
    let path = path.child("seccompProfile");
    let kind = text(profile, "type");
    if kind.is_empty() {
        errs.push(FieldError::required(
            &path.child("type"),
            "type is required when seccompProfile is set",
        ));
    } else if !SECCOMP_TYPES.contains(&kind) {
        errs.push(FieldError::not_supported(
            &path.child("type"),
            kind,
            SECCOMP_TYPES,
        ));
    }
    let localhost = profile.get("localhostProfile").and_then(Value::as_str);
    match (kind, localhost) {
        ("Localhost", None) => errs.push(FieldError::required(
            &path.child("localhostProfile"),
            "must be set when seccomp type is Localhost",
        )),
        ("Localhost", Some(file)) => {
            local_descending_path(file, &path.child("localhostProfile"), errs);
        }
        (_, Some(_)) => errs.push(FieldError::invalid(
            &path.child("localhostProfile"),
            profile.clone(),
            "can only be set when seccomp type is Localhost",
        )),
        (_, None) => {}
    }
}

fn app_armor_profile(sc: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let Some(profile) = set(sc, "appArmorProfile") else {
        return;
    };
    let path = path.child("appArmorProfile");
    let localhost = profile.get("localhostProfile").and_then(Value::as_str);
    let local_path = path.child("localhostProfile");
    match text(profile, "type") {
        "Localhost" => match localhost {
            None => errs.push(FieldError::required(
                &local_path,
                "must be set when AppArmor type is Localhost",
            )),
            Some(name) => {
                if name.trim() != name {
                    errs.push(FieldError::invalid(
                        &local_path,
                        name,
                        "must not be padded with whitespace",
                    ));
                } else if name.is_empty() {
                    errs.push(FieldError::required(
                        &local_path,
                        "must be set when AppArmor type is Localhost",
                    ));
                }
                if name.len() > MAX_APPARMOR_PROFILE {
                    errs.push(FieldError::too_long(
                        &local_path,
                        Some(MAX_APPARMOR_PROFILE),
                    ));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(name) = localhost {
                errs.push(FieldError::invalid(
                    &local_path,
                    name,
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errs.push(FieldError::required(
            &path.child("type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(FieldError::not_supported(
            &path.child("type"),
            other,
            SECCOMP_TYPES,
        )),
    }
}

/// Sysctl names, their uniqueness, and namespaced ones while sharing the
/// host's network or IPC namespace.
fn sysctls(sc: &Value, spec: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let mut names = HashSet::new();
    for (i, sysctl) in items(sc, "sysctls").iter().enumerate() {
        let p = path.index(i).child("name");
        let name = text(sysctl, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&p, ""));
        } else if !is_sysctl_name(name) {
            let msg = format!(
                "must have at most {SYSCTL_MAX_LENGTH} characters and match regex {SYSCTL_REGEX}"
            );
            errs.push(FieldError::invalid(&p, name, msg));
        } else if names.contains(name) {
            errs.push(FieldError::duplicate(&p, name));
        }
        let normalized = name.replace('/', ".");
        let net = normalized.starts_with("net.");
        let ipc = normalized.starts_with("kernel.shm")
            || normalized.starts_with("kernel.msg")
            || normalized == "kernel.sem"
            || normalized.starts_with("fs.mqueue.");
        if is_true(spec, "hostNetwork") && net {
            let msg = "may not be specified when 'hostNetwork' is true";
            errs.push(FieldError::invalid(&p, name, msg));
        } else if is_true(spec, "hostIPC") && ipc {
            let msg = "may not be specified when 'hostIPC' is true";
            errs.push(FieldError::invalid(&p, name, msg));
        }
        names.insert(name);
    }
}

/// Segments of `[a-z0-9]([-_a-z0-9]*[a-z0-9])?` joined by `.` or `/`.
fn is_sysctl_name(name: &str) -> bool {
    name.len() <= SYSCTL_MAX_LENGTH
        && name.split(['.', '/']).all(|segment| {
            let b = segment.as_bytes();
            let edge =
                |c: Option<&u8>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
            edge(b.first())
                && edge(b.last())
                && b.iter().all(|c| {
                    c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'_'
                })
        })
}
