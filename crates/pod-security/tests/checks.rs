//! Every check of the baseline and restricted profiles against allowed and
//! forbidden pods, with upstream's reason and detail strings and the
//! differences between policy versions.

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use pod_security::{check_ids, evaluate_pod, Level, LevelVersion, Version};
use serde_json::{json, Value};

fn lv(level: &str, version: &str) -> LevelVersion {
    let level: Level = level.parse().expect("level");
    let version: Version = version.parse().expect("version");
    LevelVersion::new(level, version)
}

/// The forbidden detail of `spec` (with `annotations`) at `level:version`;
/// empty when allowed.
fn detail_with(level: &str, version: &str, annotations: Value, spec: Value) -> String {
    let meta: ObjectMeta =
        serde_json::from_value(json!({"annotations": annotations})).expect("metadata");
    let spec: PodSpec = serde_json::from_value(spec).expect("pod spec");
    evaluate_pod(lv(level, version), &meta, &spec).forbidden_detail()
}

fn detail(level: &str, version: &str, spec: Value) -> String {
    detail_with(level, version, json!({}), spec)
}

/// A container that passes every restricted check.
fn good(name: &str) -> Value {
    json!({"name": name, "image": "img", "securityContext": {
        "allowPrivilegeEscalation": false,
        "capabilities": {"drop": ["ALL"]},
        "runAsNonRoot": true,
        "seccompProfile": {"type": "RuntimeDefault"}
    }})
}

/// `good(name)` with extra container securityContext fields.
fn with_sc(name: &str, extra: Value) -> Value {
    let mut c = good(name);
    if let (Some(sc), Value::Object(extra)) = (c["securityContext"].as_object_mut(), extra) {
        sc.extend(extra);
    }
    c
}

#[test]
fn a_bare_pod_violates_restricted_with_upstreams_message() {
    let spec = json!({"containers": [{"name": "c", "image": "nginx"}]});
    assert_eq!(
        detail("restricted", "latest", spec.clone()),
        "allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), \
seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
    assert_eq!(detail("baseline", "latest", spec.clone()), "");
    assert_eq!(detail("privileged", "latest", spec), "");
}

#[test]
fn a_hardened_pod_passes_restricted_at_every_version() {
    let spec = json!({"containers": [good("a"), good("b")], "initContainers": [good("i")],
        "volumes": [{"name": "v", "emptyDir": {}}, {"name": "s", "secret": {"secretName": "x"}}]});
    for version in ["v1.0", "v1.19", "v1.25", "v1.35", "latest", "v1.99"] {
        assert_eq!(detail("restricted", version, spec.clone()), "", "{version}");
    }
    // Pod-level runAsNonRoot and seccompProfile cover the containers.
    let spec = json!({"securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "Localhost", "localhostProfile": "p"}},
        "containers": [{"name": "c", "image": "i", "securityContext": {"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]}}}]});
    assert_eq!(detail("restricted", "latest", spec), "");
}

#[test]
fn privileged_containers_are_refused_by_baseline() {
    let spec = json!({"containers": [{"name": "c", "image": "i", "securityContext": {"privileged": true}},
        {"name": "d", "image": "i", "securityContext": {"privileged": false}}],
        "ephemeralContainers": [{"name": "e", "image": "i", "securityContext": {"privileged": true}}]});
    assert_eq!(
        detail("baseline", "latest", spec),
        "privileged (containers \"c\", \"e\" must not set securityContext.privileged=true)"
    );
}

#[test]
fn host_namespaces_paths_and_ports_are_refused() {
    let spec = json!({"hostNetwork": true, "hostIPC": true, "hostPID": false,
        "volumes": [{"name": "h", "hostPath": {"path": "/"}}, {"name": "e", "emptyDir": {}}],
        "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 81, "hostPort": 80}, {"containerPort": 82}]}]});
    assert_eq!(
        detail("baseline", "latest", spec.clone()),
        "host namespaces (hostNetwork=true, hostIPC=true), hostPath volumes (volume \"h\"), \
hostPort (container \"c\" uses hostPorts 80, 8080)"
    );
    // Restricted reports the hostPath volume as a restricted volume type.
    let restricted = detail("restricted", "latest", spec);
    assert!(!restricted.contains("hostPath volumes"), "{restricted}");
    assert!(
        restricted.contains(
            "restricted volume types (volume \"h\" uses restricted volume type \"hostPath\")"
        ),
        "{restricted}"
    );
}

#[test]
fn probe_and_lifecycle_hosts_are_refused_from_v1_34() {
    let spec = json!({"containers": [{"name": "b", "image": "i",
            "livenessProbe": {"httpGet": {"port": 80, "host": "10.0.0.1"}},
            "lifecycle": {"preStop": {"tcpSocket": {"port": 1, "host": "evil"}}}},
        {"name": "a", "image": "i", "readinessProbe": {"tcpSocket": {"port": 80, "host": "10.0.0.1"}}},
        {"name": "ok", "image": "i", "startupProbe": {"httpGet": {"port": 80, "host": ""}}}]});
    assert_eq!(detail("baseline", "v1.33", spec.clone()), "");
    assert_eq!(
        detail("baseline", "v1.34", spec),
        "probe or lifecycle host (containers \"a\", \"b\" use probe or lifecycle hosts \"10.0.0.1\", \"evil\")"
    );
}

#[test]
fn capabilities_beyond_the_default_set_are_refused() {
    let spec = json!({"containers": [{"name": "c", "image": "i", "securityContext": {"capabilities": {"add": ["SYS_ADMIN", "CHOWN", "NET_RAW"]}}}]});
    assert_eq!(
        detail("baseline", "latest", spec),
        "non-default capabilities (container \"c\" must not include \"NET_RAW\", \"SYS_ADMIN\" in securityContext.capabilities.add)"
    );
    // Restricted replaces the baseline check from v1.22 only.
    let spec = json!({"containers": [with_sc("c", json!({"capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}}))]});
    assert_eq!(detail("restricted", "v1.21", spec.clone()), "");
    assert_eq!(
        detail("restricted", "v1.22", spec),
        "unrestricted capabilities (container \"c\" must not include \"CHOWN\" in securityContext.capabilities.add)"
    );
    let spec =
        json!({"containers": [with_sc("c", json!({"capabilities": {"add": ["SYS_ADMIN"]}}))]});
    assert_eq!(
        detail("restricted", "v1.21", spec.clone()),
        "non-default capabilities (container \"c\" must not include \"SYS_ADMIN\" in securityContext.capabilities.add)"
    );
    assert_eq!(
        detail("restricted", "latest", spec),
        "unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]; \
container \"c\" must not include \"SYS_ADMIN\" in securityContext.capabilities.add)"
    );
}

#[test]
fn apparmor_profiles_other_than_runtime_default_or_localhost_are_refused() {
    let spec = json!({"securityContext": {"appArmorProfile": {"type": "Unconfined"}},
        "containers": [{"name": "c", "image": "i", "securityContext": {"appArmorProfile": {"type": "Localhost", "localhostProfile": "p"}}}]});
    assert_eq!(
        detail("baseline", "latest", spec),
        "forbidden AppArmor profile (pod must not set AppArmor profile type to \"Unconfined\")"
    );
    let annotations = json!({"container.apparmor.security.beta.kubernetes.io/c": "unconfined",
        "container.apparmor.security.beta.kubernetes.io/d": "runtime/default"});
    assert_eq!(
        detail_with("baseline", "latest", annotations, json!({"containers": [{"name": "c", "image": "i"}]})),
        "forbidden AppArmor profile (annotation must not set AppArmor profile type to \"container.apparmor.security.beta.kubernetes.io/c=\"unconfined\"\")"
    );
}

#[test]
fn selinux_types_users_and_roles_are_limited() {
    let spec = json!({"containers": [{"name": "c", "image": "i", "securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}]});
    assert_eq!(
        detail("baseline", "v1.30", spec.clone()),
        "seLinuxOptions (container \"c\" set forbidden securityContext.seLinuxOptions: type \"container_engine_t\")"
    );
    assert_eq!(detail("baseline", "v1.31", spec), "");
    let spec = json!({"securityContext": {"seLinuxOptions": {"user": "u", "role": "r", "type": "spc_t"}},
        "containers": [{"name": "c", "image": "i", "securityContext": {"seLinuxOptions": {"type": "unconfined_t"}}}]});
    assert_eq!(
        detail("baseline", "latest", spec),
        "seLinuxOptions (pod and container \"c\" set forbidden securityContext.seLinuxOptions: \
types \"spc_t\", \"unconfined_t\"; user may not be set; role may not be set)"
    );
}

#[test]
fn seccomp_annotations_count_before_v1_19_and_fields_after() {
    let annotations = json!({"seccomp.security.alpha.kubernetes.io/pod": "unconfined",
        "container.seccomp.security.alpha.kubernetes.io/c": "docker/default"});
    let spec = json!({"containers": [{"name": "c", "image": "i"}]});
    assert_eq!(
        detail_with("baseline", "v1.18", annotations.clone(), spec.clone()),
        "seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod=\"unconfined\")"
    );
    assert_eq!(detail_with("baseline", "v1.19", annotations, spec), "");
    let spec = json!({"securityContext": {"seccompProfile": {"type": "Unconfined"}},
        "containers": [{"name": "c", "image": "i", "securityContext": {"seccompProfile": {"type": "Unconfined"}}}]});
    assert_eq!(
        detail("baseline", "latest", spec),
        "seccompProfile (pod and container \"c\" must not set securityContext.seccompProfile.type to \"Unconfined\")"
    );
}

#[test]
fn safe_sysctls_grow_with_the_version() {
    let spec = json!({"securityContext": {"sysctls": [
        {"name": "net.ipv4.tcp_keepalive_time", "value": "1"},
        {"name": "kernel.msgmax", "value": "1"},
        {"name": "net.ipv4.tcp_notsent_lowat", "value": "1"}]}, "containers": [{"name": "c", "image": "i"}]});
    assert_eq!(
        detail("baseline", "v1.28", spec.clone()),
        "forbidden sysctls (net.ipv4.tcp_keepalive_time, kernel.msgmax, net.ipv4.tcp_notsent_lowat)"
    );
    assert_eq!(
        detail("baseline", "v1.36", spec.clone()),
        "forbidden sysctls (kernel.msgmax, net.ipv4.tcp_notsent_lowat)"
    );
    assert_eq!(
        detail("baseline", "latest", spec),
        "forbidden sysctls (kernel.msgmax)"
    );
}

#[test]
fn windows_host_process_is_refused() {
    let spec = json!({"securityContext": {"windowsOptions": {"hostProcess": true}},
        "containers": [{"name": "c", "image": "i", "securityContext": {"windowsOptions": {"hostProcess": true}}},
                       {"name": "d", "image": "i", "securityContext": {"windowsOptions": {"hostProcess": false}}}]});
    assert_eq!(
        detail("baseline", "latest", spec),
        "hostProcess (pod and container \"c\" must not set securityContext.windowsOptions.hostProcess=true)"
    );
}

#[test]
fn proc_mount_is_relaxed_for_user_namespaces_in_baseline_from_v1_35() {
    let c = |host_users: bool| json!({"hostUsers": host_users, "containers": [with_sc("c", json!({"procMount": "Unmasked"}))]});
    let refused =
        "procMount (container \"c\" must not set securityContext.procMount to \"Unmasked\")";
    assert_eq!(detail("baseline", "latest", c(true)), refused);
    assert_eq!(detail("baseline", "v1.34", c(false)), refused);
    assert_eq!(detail("baseline", "v1.35", c(false)), "");
    // Restricted keeps refusing it (procMount_restricted from v1.35).
    assert_eq!(detail("restricted", "v1.35", c(false)), refused);
    assert_eq!(detail("restricted", "v1.34", c(false)), refused);
}

#[test]
fn restricted_volume_types_are_named() {
    let spec = json!({"containers": [good("c")], "volumes": [
        {"name": "n", "nfs": {"server": "s", "path": "/"}},
        {"name": "g", "gitRepo": {"repository": "r"}},
        {"name": "p", "persistentVolumeClaim": {"claimName": "x"}}]});
    assert_eq!(
        detail("restricted", "latest", spec),
        "restricted volume types (volumes \"n\", \"g\" use restricted volume types \"gitRepo\", \"nfs\")"
    );
}

#[test]
fn run_as_non_root_and_run_as_user() {
    let spec = json!({"securityContext": {"runAsNonRoot": false, "runAsUser": 0},
        "containers": [with_sc("c", json!({"runAsNonRoot": false, "runAsUser": 0})), with_sc("d", json!({"runAsUser": 1000}))]});
    assert_eq!(
        detail("restricted", "latest", spec.clone()),
        "runAsNonRoot != true (pod and container \"c\" must not set securityContext.runAsNonRoot=false), \
runAsUser=0 (pod and container \"c\" must not set runAsUser=0)"
    );
    // runAsUser joined the profile in v1.23.
    assert_eq!(
        detail("restricted", "v1.22", spec),
        "runAsNonRoot != true (pod and container \"c\" must not set securityContext.runAsNonRoot=false)"
    );
    // A pod in a user namespace may run as root from v1.35.
    let spec = json!({"hostUsers": false, "securityContext": {"runAsUser": 0},
        "containers": [with_sc("c", json!({"runAsNonRoot": false}))]});
    assert_eq!(detail("restricted", "latest", spec.clone()), "");
    assert!(detail("restricted", "v1.34", spec).starts_with("runAsNonRoot != true"));
}

#[test]
fn windows_pods_are_exempt_from_linux_only_checks_from_v1_25() {
    let spec = json!({"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true},
        "containers": [{"name": "c", "image": "i"}]});
    assert_eq!(detail("restricted", "v1.25", spec.clone()), "");
    assert_eq!(
        detail("restricted", "v1.24", spec),
        "allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), \
unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), \
seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
    );
}

#[test]
fn each_level_and_version_runs_upstreams_checks_in_order() {
    assert!(check_ids(lv("privileged", "latest")).is_empty());
    assert_eq!(
        check_ids(lv("baseline", "latest")),
        [
            "appArmorProfile",
            "capabilities_baseline",
            "hostNamespaces",
            "hostPathVolumes",
            "hostPorts",
            "hostProbesAndHostLifecycle",
            "privileged",
            "procMount",
            "seLinuxOptions",
            "seccompProfile_baseline",
            "sysctls",
            "windowsHostProcess"
        ]
    );
    assert_eq!(
        check_ids(lv("restricted", "latest")),
        [
            "appArmorProfile",
            "hostNamespaces",
            "hostPorts",
            "hostProbesAndHostLifecycle",
            "privileged",
            "seLinuxOptions",
            "sysctls",
            "windowsHostProcess",
            "allowPrivilegeEscalation",
            "capabilities_restricted",
            "procMount_restricted",
            "restrictedVolumes",
            "runAsNonRoot",
            "runAsUser",
            "seccompProfile_restricted"
        ]
    );
    let old = check_ids(lv("restricted", "v1.7"));
    assert!(old.contains(&"capabilities_baseline") && old.contains(&"seccompProfile_baseline"));
    assert!(!old.contains(&"allowPrivilegeEscalation") && !old.contains(&"runAsUser"));
    // Versions past the newest evaluate as the newest.
    assert_eq!(
        check_ids(lv("baseline", "v1.99")),
        check_ids(lv("baseline", "latest"))
    );
}
