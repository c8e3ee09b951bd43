//! Which flags this server implements. Every other flag is accepted at its
//! default, and a non-default value stops startup with one line naming it,
//! so no setting is ever silently ignored.
//!
//! When a feature lands, move its flags into [`IMPLEMENTED`] (one line each).

use super::flags::{default_value, FlagValues};
use super::sets;
use super::sets::spec::Kind;
use super::OptionError;

/// Flags the server honours at any value.
pub const IMPLEMENTED: &[&str] = &[
    // Admission.
    "admission-control",
    "admission-control-config-file",
    "disable-admission-plugins",
    "enable-admission-plugins",
    // Generic.
    "advertise-address",
    "cors-allowed-origins",
    "data-dir",
    "default-not-ready-toleration-seconds",
    "default-unreachable-toleration-seconds",
    "enable-priority-and-fairness",
    // Features.
    "debug-socket-path",
    "profiling",
    "feature-gates",
    "livez-grace-period",
    "max-mutating-requests-inflight",
    "max-requests-inflight",
    "min-request-timeout",
    "request-timeout",
    "shutdown-delay-duration",
    "shutdown-send-retry-after",
    "storage-initialization-timeout",
    "strict-transport-security-directives",
    // Auditing (only the audit.k8s.io/v1 event version is served, as upstream).
    "audit-log-batch-buffer-size",
    "audit-log-batch-max-size",
    "audit-log-batch-max-wait",
    "audit-log-batch-throttle-burst",
    "audit-log-batch-throttle-enable",
    "audit-log-batch-throttle-qps",
    "audit-log-compress",
    "audit-log-format",
    "audit-log-maxage",
    "audit-log-maxbackup",
    "audit-log-maxsize",
    "audit-log-mode",
    "audit-log-path",
    "audit-log-truncate-enabled",
    "audit-log-truncate-max-batch-size",
    "audit-log-truncate-max-event-size",
    "audit-log-version",
    "audit-policy-file",
    "audit-webhook-batch-buffer-size",
    "audit-webhook-batch-initial-backoff",
    "audit-webhook-batch-max-size",
    "audit-webhook-batch-max-wait",
    "audit-webhook-batch-throttle-burst",
    "audit-webhook-batch-throttle-enable",
    "audit-webhook-batch-throttle-qps",
    "audit-webhook-config-file",
    "audit-webhook-initial-backoff",
    "audit-webhook-mode",
    "audit-webhook-truncate-enabled",
    "audit-webhook-truncate-max-batch-size",
    "audit-webhook-truncate-max-event-size",
    "audit-webhook-version",
    // Etcd and storage.
    "encryption-provider-config",
    "encryption-provider-config-automatic-reload",
    "etcd-cafile",
    "etcd-certfile",
    "etcd-healthcheck-timeout",
    "etcd-readycheck-timeout",
    "etcd-compaction-interval",
    "etcd-count-metric-poll-period",
    "etcd-keyfile",
    "etcd-prefix",
    "etcd-servers",
    "storage-backend",
    "storage-media-type",
    "watch-cache",
    "watch-cache-sizes",
    // Secure serving.
    "bind-address",
    "cert-dir",
    "http2-max-streams-per-connection",
    "secure-port",
    "tls-cert-file",
    "tls-cipher-suites",
    "tls-min-version",
    "tls-private-key-file",
    // Authentication.
    "anonymous-auth",
    "api-audiences",
    "authentication-config",
    "authentication-token-webhook-cache-ttl",
    "authentication-token-webhook-config-file",
    "authentication-token-webhook-version",
    "client-ca-file",
    "enable-bootstrap-token-auth",
    "oidc-ca-file",
    "oidc-client-id",
    "oidc-groups-claim",
    "oidc-groups-prefix",
    "oidc-issuer-url",
    "oidc-required-claim",
    "oidc-signing-algs",
    "oidc-username-claim",
    "oidc-username-prefix",
    "requestheader-allowed-names",
    "requestheader-client-ca-file",
    "requestheader-extra-headers-prefix",
    "requestheader-group-headers",
    "requestheader-uid-headers",
    "requestheader-username-headers",
    "service-account-extend-token-expiration",
    "service-account-issuer",
    "service-account-jwks-uri",
    "service-account-key-file",
    "service-account-lookup",
    "service-account-max-token-expiration",
    "service-account-signing-key-file",
    "token-auth-file",
    // Authorization.
    "authorization-config",
    "authorization-webhook-cache-authorized-ttl",
    "authorization-webhook-cache-unauthorized-ttl",
    "authorization-webhook-config-file",
    "authorization-webhook-version",
    // API enablement.
    "runtime-config",
    // Misc.
    "aggregator-reject-forwarding-redirect",
    "allow-privileged",
    "apiserver-count",
    "enable-aggregator-routing",
    "endpoint-reconciler-type",
    "kubernetes-service-node-port",
    "enable-logs-handler",
    "kubelet-certificate-authority",
    "kubelet-client-certificate",
    "kubelet-client-key",
    "kubelet-port",
    "kubelet-preferred-address-types",
    "kubelet-timeout",
    "proxy-client-cert-file",
    "proxy-client-key-file",
    "service-cluster-ip-range",
    "service-node-port-range",
    // Logs, traces and global.
    "log-flush-frequency",
    "logging-format",
    "tracing-config-file",
    "v",
    "vmodule",
    "version",
];

/// Flags accepted at any value that do nothing, as `--help` says.
pub const NO_OPS: &[&str] = &[
    "contention-profiling", // Go's block profile rate; block and mutex stay empty
    "default-watch-cache-size", // a no-op upstream too
    "kubelet-read-only-port", // a no-op upstream too
];

/// Flags not implemented whose (non-zero) default is what this server does
/// anyway; other values stop startup.
pub const DEFAULT_IN_EFFECT: &[&str] = &[
    "coordinated-leadership-lease-duration", // CoordinatedLeaderElection is off
    "coordinated-leadership-renew-deadline",
    "coordinated-leadership-retry-period",
    "delete-collection-workers", // deletecollection deletes one by one
    "enable-garbage-collector",
];

/// Flags not implemented whose default is not in effect: what the server
/// does instead, shown in `--help` and in the README's not-built list.
pub const NOT_IN_EFFECT: &[(&str, &str)] = &[
    (
        "etcd-db-metric-poll-interval",
        "the database size is not polled",
    ),
    ("event-ttl", "events are kept until deleted"),
    (
        "lease-reuse-duration-seconds",
        "no object is written with an etcd lease",
    ),
];

/// What this server does with a flag, as `--help` documents it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Support {
    /// Honoured at any value.
    Honoured,
    /// Honoured for the values of [`PARTIAL`].
    Partial,
    /// Accepted at any value, does nothing ([`NO_OPS`]).
    NoOp,
    /// Only the default is accepted, and it is the zero value: the feature
    /// is off, as by default.
    Inert,
    /// Only the default is accepted, and it is in effect ([`DEFAULT_IN_EFFECT`]).
    DefaultInEffect,
    /// Only the default is accepted, and it is not in effect: what happens
    /// instead ([`NOT_IN_EFFECT`]).
    NotInEffect(&'static str),
}

impl Support {
    /// What `--help` adds to the flag's description, if anything.
    pub fn help_note(self) -> Option<String> {
        match self {
            Support::Honoured | Support::Partial => None,
            Support::NoOp => Some("No-op here.".to_owned()),
            Support::Inert | Support::DefaultInEffect => {
                Some("Only the default is built here.".to_owned())
            }
            Support::NotInEffect(instead) => Some(format!("Not built here: {instead}.")),
        }
    }
}

/// How this server supports the flag `name`.
pub fn support(name: &str) -> Support {
    if IMPLEMENTED.contains(&name) {
        Support::Honoured
    } else if PARTIAL.iter().any(|(flag, _)| *flag == name) {
        Support::Partial
    } else if NO_OPS.contains(&name) {
        Support::NoOp
    } else if DEFAULT_IN_EFFECT.contains(&name) {
        Support::DefaultInEffect
    } else if let Some((_, instead)) = NOT_IN_EFFECT.iter().find(|(flag, _)| *flag == name) {
        Support::NotInEffect(instead)
    } else {
        Support::Inert
    }
}

/// Flags honoured only for some values: each list item must be one of these.
pub const PARTIAL: &[(&str, &[&str])] = &[(
    "authorization-mode",
    &["AlwaysAllow", "AlwaysDeny", "RBAC", "Node", "Webhook"],
)];

/// Feature gates whose feature this server has not built: enabling one
/// stops startup rather than being silently ignored.
const UNBUILT_GATES: &[&str] = &["PodCertificateRequest"];

/// One error per enabled gate of [`UNBUILT_GATES`].
pub fn unsupported_gates(gates: &super::feature_gates::FeatureGates) -> Vec<OptionError> {
    UNBUILT_GATES
        .iter()
        .filter(|name| gates.get(*name) == Some(&true))
        .map(|name| {
            OptionError::new(
                "feature-gates",
                format!("{name}=true is not supported yet by this server"),
            )
        })
        .collect()
}

/// One error per flag that is set to a value this server cannot honour yet.
pub fn unsupported(flags: &FlagValues) -> Vec<OptionError> {
    let mut errors = Vec::new();
    for (_, spec) in sets::all() {
        if spec.kind == Kind::Help
            || matches!(support(spec.name), Support::Honoured | Support::NoOp)
        {
            continue;
        }
        let Some(flag) = flags.get(spec.name) else {
            continue;
        };
        if let Some((_, allowed)) = PARTIAL.iter().find(|(name, _)| *name == spec.name) {
            let items = match &flag.value {
                super::Value::List(items) => items.as_slice(),
                _ => &[],
            };
            for item in items
                .iter()
                .filter(|item| !allowed.contains(&item.as_str()))
            {
                errors.push(OptionError::new(
                    spec.name,
                    format!(
                        "{item:?} is not supported yet by this server (supported: {})",
                        allowed.join(", ")
                    ),
                ));
            }
            continue;
        }
        // The data dir default only matters for --data-dir, which is implemented.
        let differs = default_value(spec, "").map_or(true, |default| default != flag.value);
        if differs {
            errors.push(OptionError::new(
                spec.name,
                "not supported yet by this server",
            ));
        }
    }
    errors
}
