//! A uniform view of a pod's init, regular and ephemeral containers (in
//! that order, as upstream visits them), and the phrasing helpers the
//! checks share.

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EphemeralContainer, Lifecycle, PodSpec, Probe, SecurityContext,
};

/// The fields of a container the checks look at.
pub(crate) struct ContainerRef<'a> {
    pub name: &'a str,
    pub security_context: Option<&'a SecurityContext>,
    pub ports: &'a [ContainerPort],
    /// Liveness, readiness and startup probes.
    pub probes: [Option<&'a Probe>; 3],
    pub lifecycle: Option<&'a Lifecycle>,
}

impl<'a> From<&'a Container> for ContainerRef<'a> {
    fn from(c: &'a Container) -> Self {
        ContainerRef {
            name: &c.name,
            security_context: c.security_context.as_ref(),
            ports: c.ports.as_deref().unwrap_or_default(),
            probes: [
                c.liveness_probe.as_ref(),
                c.readiness_probe.as_ref(),
                c.startup_probe.as_ref(),
            ],
            lifecycle: c.lifecycle.as_ref(),
        }
    }
}

impl<'a> From<&'a EphemeralContainer> for ContainerRef<'a> {
    fn from(c: &'a EphemeralContainer) -> Self {
        ContainerRef {
            name: &c.name,
            security_context: c.security_context.as_ref(),
            ports: c.ports.as_deref().unwrap_or_default(),
            probes: [
                c.liveness_probe.as_ref(),
                c.readiness_probe.as_ref(),
                c.startup_probe.as_ref(),
            ],
            lifecycle: c.lifecycle.as_ref(),
        }
    }
}

/// Every container of the pod: init containers, containers, ephemeral ones.
pub(crate) fn containers(spec: &PodSpec) -> impl Iterator<Item = ContainerRef<'_>> {
    let init = spec
        .init_containers
        .iter()
        .flatten()
        .map(ContainerRef::from);
    let regular = spec.containers.iter().map(ContainerRef::from);
    let ephemeral = spec
        .ephemeral_containers
        .iter()
        .flatten()
        .map(ContainerRef::from);
    init.chain(regular).chain(ephemeral)
}

/// The names of the containers for which `bad` holds.
pub(crate) fn bad_containers<'a>(
    spec: &'a PodSpec,
    mut bad: impl FnMut(&ContainerRef<'a>) -> bool,
) -> Vec<&'a str> {
    containers(spec)
        .filter(|c| bad(c))
        .map(|c| c.name)
        .collect()
}

/// `"a", "b"`.
pub(crate) fn join_quote<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    let quoted: Vec<String> = items
        .into_iter()
        .map(|s| format!("\"{}\"", s.as_ref()))
        .collect();
    quoted.join(", ")
}

pub(crate) fn pluralize<'a>(singular: &'a str, plural: &'a str, count: usize) -> &'a str {
    if count == 1 {
        singular
    } else {
        plural
    }
}

/// `container "a"` or `containers "a", "b"`.
pub(crate) fn containers_phrase(names: &[&str]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

/// `key="value"` as Go's `%s=%q` writes it.
pub(crate) fn key_quoted_value(key: &str, value: &str) -> String {
    format!("{key}={}", apimachinery::util::gofmt::go_quote(value))
}

/// Whether the pod declares `spec.os.name: windows`.
pub(crate) fn is_windows(spec: &PodSpec) -> bool {
    spec.os.as_ref().is_some_and(|os| os.name == "windows")
}

/// Whether the pod runs in a user namespace (`hostUsers: false`), which
/// relaxes some checks from v1.35.
pub(crate) fn in_user_namespace(spec: &PodSpec) -> bool {
    spec.host_users == Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn phrases_follow_upstream() {
        assert_eq!(containers_phrase(&["a"]), "container \"a\"");
        assert_eq!(containers_phrase(&["a", "b"]), "containers \"a\", \"b\"");
        assert_eq!(key_quoted_value("k", "a\"b"), "k=\"a\\\"b\"");
        assert_eq!(join_quote(Vec::<String>::new()), "");
    }
}
