//! Baseline checks on security profiles and kernel settings: AppArmor,
//! added capabilities, /proc mounts, SELinux options, seccomp and sysctls
//! (with the restricted profile's stricter seccomp and procMount checks).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{PodSpec, SELinuxOptions};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::result::Forbidden;
use super::visit::{
    bad_containers, containers, containers_phrase, in_user_namespace, is_windows, join_quote,
    key_quoted_value, pluralize,
};

const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";
const SECCOMP_POD_ANNOTATION: &str = "seccomp.security.alpha.kubernetes.io/pod";
const SECCOMP_CONTAINER_ANNOTATION_PREFIX: &str = "container.seccomp.security.alpha.kubernetes.io/";

/// Profile types the baseline allows for AppArmor and seccomp.
fn allowed_profile_type(t: &str) -> bool {
    t == "RuntimeDefault" || t == "Localhost"
}

/// The pod (when `pod_bad`) and the named containers, as upstream lists
/// who set a forbidden value: `pod and containers "a", "b"`.
fn setters(pod_bad: bool, bad: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    if pod_bad {
        out.push("pod".to_owned());
    }
    if !bad.is_empty() {
        out.push(containers_phrase(bad));
    }
    out
}

/// appArmorProfile: profile types RuntimeDefault or Localhost only, and no
/// beta annotation naming another profile.
pub(crate) fn app_armor_1_0(meta: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let mut values = BTreeSet::new();
    let pod_type = spec
        .security_context
        .as_ref()
        .and_then(|s| s.app_armor_profile.as_ref())
        .map(|p| p.type_.as_str());
    let pod_bad = pod_type.is_some_and(|t| !allowed_profile_type(t));
    if let Some(t) = pod_type.filter(|_| pod_bad) {
        values.insert(t.to_owned());
    }
    let bad = bad_containers(spec, |c| {
        let t = c
            .security_context
            .and_then(|s| s.app_armor_profile.as_ref())
            .map(|p| p.type_.as_str());
        match t {
            Some(t) if !allowed_profile_type(t) => {
                values.insert(t.to_owned());
                true
            }
            _ => false,
        }
    });
    let mut who = setters(pod_bad, &bad);
    let mut annotations: Vec<String> = meta
        .annotations
        .iter()
        .flatten()
        .filter(|(k, v)| {
            k.starts_with(APPARMOR_ANNOTATION_PREFIX)
                && !(v.is_empty() || *v == "runtime/default" || v.starts_with("localhost/"))
        })
        .map(|(k, v)| key_quoted_value(k, v))
        .collect();
    let mut list: Vec<String> = values.into_iter().collect();
    if !annotations.is_empty() {
        annotations.sort();
        who.push(pluralize("annotation", "annotations", annotations.len()).to_owned());
        list.extend(annotations);
    }
    (!who.is_empty()).then(|| {
        Forbidden::new(
            pluralize(
                "forbidden AppArmor profile",
                "forbidden AppArmor profiles",
                list.len(),
            ),
            format!(
                "{} must not set AppArmor profile type to {}",
                who.join(" and "),
                join_quote(&list)
            ),
        )
    })
}

/// The capabilities containers may add under the baseline.
const DEFAULT_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

/// capabilities_baseline: only default capabilities may be added.
pub(crate) fn capabilities_baseline_1_0(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let mut caps = BTreeSet::new();
    let bad = bad_containers(spec, |c| {
        let added = c
            .security_context
            .and_then(|s| s.capabilities.as_ref())
            .and_then(|caps| caps.add.as_deref())
            .unwrap_or_default();
        let mut found = false;
        for cap in added
            .iter()
            .filter(|a| !DEFAULT_CAPABILITIES.contains(&a.as_str()))
        {
            caps.insert(cap.as_str());
            found = true;
        }
        found
    });
    (!bad.is_empty()).then(|| {
        Forbidden::new(
            "non-default capabilities",
            format!(
                "{} must not include {} in securityContext.capabilities.add",
                containers_phrase(&bad),
                join_quote(&caps)
            ),
        )
    })
}

/// procMount: only the Default /proc mount.
pub(crate) fn proc_mount_1_0(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let mut types = BTreeSet::new();
    let bad = bad_containers(spec, |c| {
        match c.security_context.and_then(|s| s.proc_mount.as_deref()) {
            Some(t) if t != "Default" => {
                types.insert(t);
                true
            }
            _ => false,
        }
    });
    (!bad.is_empty()).then(|| {
        Forbidden::new(
            "procMount",
            format!(
                "{} must not set securityContext.procMount to {}",
                containers_phrase(&bad),
                join_quote(&types)
            ),
        )
    })
}

/// procMount from v1.35 (baseline): any value in a user namespace.
pub(crate) fn proc_mount_1_35(meta: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    if in_user_namespace(spec) {
        return None;
    }
    proc_mount_1_0(meta, spec)
}

const SELINUX_TYPES_1_0: &[&str] = &["", "container_t", "container_init_t", "container_kvm_t"];
const SELINUX_TYPES_1_31: &[&str] = &[
    "",
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

pub(crate) fn se_linux_1_0(meta: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    se_linux(meta, spec, SELINUX_TYPES_1_0)
}

pub(crate) fn se_linux_1_31(meta: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    se_linux(meta, spec, SELINUX_TYPES_1_31)
}

/// What is wrong in the SELinux options seen so far.
#[derive(Default)]
struct SeLinuxFindings<'a> {
    types: BTreeSet<&'a str>,
    user: bool,
    role: bool,
}

impl<'a> SeLinuxFindings<'a> {
    /// Records what `opts` sets wrongly; true when anything is.
    fn record(&mut self, opts: &'a SELinuxOptions, allowed: &[&str]) -> bool {
        let t = opts.type_.as_deref().unwrap_or_default();
        let bad_type = !allowed.contains(&t);
        if bad_type {
            self.types.insert(t);
        }
        let user = opts.user.as_deref().is_some_and(|u| !u.is_empty());
        let role = opts.role.as_deref().is_some_and(|r| !r.is_empty());
        self.user |= user;
        self.role |= role;
        bad_type || user || role
    }
}

/// seLinuxOptions: allowed types only, no user or role.
fn se_linux(_: &ObjectMeta, spec: &PodSpec, allowed: &[&str]) -> Option<Forbidden> {
    let mut found = SeLinuxFindings::default();
    let pod_bad = spec
        .security_context
        .as_ref()
        .and_then(|s| s.se_linux_options.as_ref())
        .is_some_and(|o| found.record(o, allowed));
    let bad = bad_containers(spec, |c| {
        c.security_context
            .and_then(|s| s.se_linux_options.as_ref())
            .is_some_and(|o| found.record(o, allowed))
    });
    let who = setters(pod_bad, &bad);
    if who.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !found.types.is_empty() {
        data.push(format!(
            "{} {}",
            pluralize("type", "types", found.types.len()),
            join_quote(&found.types)
        ));
    }
    if found.user {
        data.push("user may not be set".to_owned());
    }
    if found.role {
        data.push("role may not be set".to_owned());
    }
    Some(Forbidden::new(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            who.join(" and "),
            data.join("; ")
        ),
    ))
}

fn valid_seccomp_annotation(v: &str) -> bool {
    v == "runtime/default" || v == "docker/default" || v.starts_with("localhost/")
}

/// seccompProfile_baseline before v1.19: the alpha annotations.
pub(crate) fn seccomp_baseline_1_0(meta: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let annotations = meta.annotations.as_ref();
    let mut bad = BTreeSet::new();
    let mut check = |key: &str| {
        if let Some(v) = annotations.and_then(|a| a.get(key)) {
            if !valid_seccomp_annotation(v) {
                bad.insert(key_quoted_value(key, v));
            }
        }
    };
    check(SECCOMP_POD_ANNOTATION);
    for c in containers(spec) {
        check(&format!("{SECCOMP_CONTAINER_ANNOTATION_PREFIX}{}", c.name));
    }
    (!bad.is_empty()).then(|| {
        let list: Vec<String> = bad.iter().cloned().collect();
        Forbidden::new(
            "seccompProfile",
            format!(
                "forbidden {} {}",
                pluralize("annotation", "annotations", bad.len()),
                list.join(", ")
            ),
        )
    })
}

/// The seccomp types set wrongly by the pod and by containers, and the
/// containers that set none.
struct SeccompFindings<'a> {
    pod_set_valid: bool,
    who: Vec<String>,
    values: BTreeSet<&'a str>,
    unset: Vec<&'a str>,
}

fn seccomp_findings(spec: &PodSpec) -> SeccompFindings<'_> {
    let mut values = BTreeSet::new();
    let pod_type = spec
        .security_context
        .as_ref()
        .and_then(|s| s.seccomp_profile.as_ref())
        .map(|p| p.type_.as_str());
    let pod_bad = pod_type.is_some_and(|t| !allowed_profile_type(t));
    if let Some(t) = pod_type.filter(|_| pod_bad) {
        values.insert(t);
    }
    let mut unset = Vec::new();
    let bad = bad_containers(spec, |c| {
        match c.security_context.and_then(|s| s.seccomp_profile.as_ref()) {
            Some(p) if !allowed_profile_type(&p.type_) => {
                values.insert(&p.type_);
                true
            }
            Some(_) => false,
            None => {
                unset.push(c.name);
                false
            }
        }
    });
    SeccompFindings {
        pod_set_valid: pod_type.is_some() && !pod_bad,
        who: setters(pod_bad, &bad),
        values,
        unset,
    }
}

fn seccomp_set_wrongly(f: &SeccompFindings<'_>) -> Option<Forbidden> {
    (!f.who.is_empty()).then(|| {
        Forbidden::new(
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                f.who.join(" and "),
                join_quote(&f.values)
            ),
        )
    })
}

/// seccompProfile_baseline from v1.19: no profile type other than
/// RuntimeDefault or Localhost.
pub(crate) fn seccomp_baseline_1_19(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    seccomp_set_wrongly(&seccomp_findings(spec))
}

/// seccompProfile_restricted: as the baseline, and every container must
/// have RuntimeDefault or Localhost, by itself or from the pod.
pub(crate) fn seccomp_restricted_1_19(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let f = seccomp_findings(spec);
    if let Some(forbidden) = seccomp_set_wrongly(&f) {
        return Some(forbidden);
    }
    (!f.pod_set_valid && !f.unset.is_empty()).then(|| {
        Forbidden::new(
            "seccompProfile",
            format!(
                "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                containers_phrase(&f.unset)
            ),
        )
    })
}

/// seccompProfile_restricted from v1.25: Windows pods are exempt.
pub(crate) fn seccomp_restricted_1_25(meta: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    if is_windows(spec) {
        return None;
    }
    seccomp_restricted_1_19(meta, spec)
}

const SYSCTLS_1_0: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_unprivileged_port_start",
];
const SYSCTLS_ADDED_1_27: &[&str] = &["net.ipv4.ip_local_reserved_ports"];
const SYSCTLS_ADDED_1_29: &[&str] = &[
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];
const SYSCTLS_ADDED_1_32: &[&str] = &["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"];
const SYSCTLS_ADDED_1_37: &[&str] = &[
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_notsent_lowat",
];

/// The safe sysctls of the version whose additions are the first `n` lists.
fn sysctls(spec: &PodSpec, added: &[&[&str]]) -> Option<Forbidden> {
    let allowed =
        |name: &str| SYSCTLS_1_0.contains(&name) || added.iter().any(|list| list.contains(&name));
    let bad: Vec<&str> = spec
        .security_context
        .as_ref()
        .and_then(|s| s.sysctls.as_deref())
        .unwrap_or_default()
        .iter()
        .map(|s| s.name.as_str())
        .filter(|n| !allowed(n))
        .collect();
    (!bad.is_empty()).then(|| Forbidden::new("forbidden sysctls", bad.join(", ")))
}

pub(crate) fn sysctls_1_0(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    sysctls(spec, &[])
}

pub(crate) fn sysctls_1_27(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    sysctls(spec, &[SYSCTLS_ADDED_1_27])
}

pub(crate) fn sysctls_1_29(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    sysctls(spec, &[SYSCTLS_ADDED_1_27, SYSCTLS_ADDED_1_29])
}

pub(crate) fn sysctls_1_32(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    sysctls(
        spec,
        &[SYSCTLS_ADDED_1_27, SYSCTLS_ADDED_1_29, SYSCTLS_ADDED_1_32],
    )
}

pub(crate) fn sysctls_1_37(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    sysctls(
        spec,
        &[
            SYSCTLS_ADDED_1_27,
            SYSCTLS_ADDED_1_29,
            SYSCTLS_ADDED_1_32,
            SYSCTLS_ADDED_1_37,
        ],
    )
}
