//! Baseline checks on what a pod shares with its host: host namespaces,
//! hostPath volumes, host ports, probe and lifecycle hosts, privileged
//! containers and Windows host processes.

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{LifecycleHandler, PodSpec, Probe};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::result::Forbidden;
use super::visit::{bad_containers, containers, containers_phrase, join_quote, pluralize};

/// hostNamespaces: no hostNetwork, hostPID or hostIPC.
pub(crate) fn host_namespaces_1_0(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let set: Vec<&str> = [
        (spec.host_network, "hostNetwork=true"),
        (spec.host_pid, "hostPID=true"),
        (spec.host_ipc, "hostIPC=true"),
    ]
    .into_iter()
    .filter(|(on, _)| *on == Some(true))
    .map(|(_, text)| text)
    .collect();
    (!set.is_empty()).then(|| Forbidden::new("host namespaces", set.join(", ")))
}

/// hostPathVolumes: no hostPath volumes.
pub(crate) fn host_path_volumes_1_0(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let names: Vec<&str> = spec
        .volumes
        .iter()
        .flatten()
        .filter(|v| v.host_path.is_some())
        .map(|v| v.name.as_str())
        .collect();
    (!names.is_empty()).then(|| {
        Forbidden::new(
            "hostPath volumes",
            format!(
                "{} {}",
                pluralize("volume", "volumes", names.len()),
                join_quote(&names)
            ),
        )
    })
}

/// hostPorts: no container port with a hostPort.
pub(crate) fn host_ports_1_0(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let mut ports = BTreeSet::new();
    let bad = bad_containers(spec, |c| {
        let mut found = false;
        for port in c
            .ports
            .iter()
            .filter_map(|p| p.host_port)
            .filter(|p| *p != 0)
        {
            ports.insert(port.to_string());
            found = true;
        }
        found
    });
    if bad.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    Some(Forbidden::new(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    ))
}

fn probe_hosts(probe: Option<&Probe>) -> impl Iterator<Item = &str> {
    let http = probe
        .and_then(|p| p.http_get.as_ref())
        .and_then(|h| h.host.as_deref());
    let tcp = probe
        .and_then(|p| p.tcp_socket.as_ref())
        .and_then(|t| t.host.as_deref());
    http.into_iter().chain(tcp).filter(|h| !h.is_empty())
}

fn handler_hosts(handler: Option<&LifecycleHandler>) -> impl Iterator<Item = &str> {
    let http = handler
        .and_then(|p| p.http_get.as_ref())
        .and_then(|h| h.host.as_deref());
    let tcp = handler
        .and_then(|p| p.tcp_socket.as_ref())
        .and_then(|t| t.host.as_deref());
    http.into_iter().chain(tcp).filter(|h| !h.is_empty())
}

/// hostProbesAndHostLifecycle (v1.34+): probes and lifecycle handlers may
/// not name a host.
pub(crate) fn host_probes_1_34(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let mut bad = BTreeSet::new();
    let mut hosts = BTreeSet::new();
    for c in containers(spec) {
        let lifecycle = c.lifecycle;
        let found: Vec<&str> = c
            .probes
            .iter()
            .flat_map(|p| probe_hosts(*p))
            .chain(handler_hosts(lifecycle.and_then(|l| l.post_start.as_ref())))
            .chain(handler_hosts(lifecycle.and_then(|l| l.pre_stop.as_ref())))
            .collect();
        if !found.is_empty() {
            bad.insert(c.name);
            hosts.extend(found);
        }
    }
    if bad.is_empty() {
        return None;
    }
    Some(Forbidden::new(
        "probe or lifecycle host",
        format!(
            "{} {} {} {} {}",
            pluralize("container", "containers", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize(
                "probe or lifecycle host",
                "probe or lifecycle hosts",
                hosts.len()
            ),
            join_quote(&hosts)
        ),
    ))
}

/// privileged: no container sets securityContext.privileged=true.
pub(crate) fn privileged_1_0(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let bad = bad_containers(spec, |c| {
        c.security_context.and_then(|s| s.privileged) == Some(true)
    });
    (!bad.is_empty()).then(|| {
        Forbidden::new(
            "privileged",
            format!(
                "{} must not set securityContext.privileged=true",
                containers_phrase(&bad)
            ),
        )
    })
}

/// windowsHostProcess: neither the pod nor a container sets
/// windowsOptions.hostProcess=true.
pub(crate) fn windows_host_process_1_0(_: &ObjectMeta, spec: &PodSpec) -> Option<Forbidden> {
    let bad = bad_containers(spec, |c| {
        c.security_context
            .and_then(|s| s.windows_options.as_ref())
            .and_then(|w| w.host_process)
            == Some(true)
    });
    let pod = spec
        .security_context
        .as_ref()
        .and_then(|s| s.windows_options.as_ref())
        .and_then(|w| w.host_process)
        == Some(true);
    let mut setters = Vec::new();
    if pod {
        setters.push("pod".to_owned());
    }
    if !bad.is_empty() {
        setters.push(containers_phrase(&bad));
    }
    (!setters.is_empty()).then(|| {
        Forbidden::new(
            "hostProcess",
            format!(
                "{} must not set securityContext.windowsOptions.hostProcess=true",
                setters.join(" and ")
            ),
        )
    })
}
