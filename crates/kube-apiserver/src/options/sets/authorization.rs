//! Authorization flags: the authorizer chain.

use super::spec::{FlagSpec, Kind};

pub const FLAGS: &[FlagSpec] = &[
    FlagSpec::new("authorization-config", Kind::Str, "",
        "File with an AuthorizationConfiguration describing the authorizer chain. Cannot be combined with --authorization-mode or the --authorization-webhook-* flags."),
    FlagSpec::new("authorization-mode", Kind::StringSlice, "",
        "Comma-separated, ordered authorizers for the secure port, from AlwaysAllow, AlwaysDeny, ABAC, Webhook, RBAC and Node. Node,RBAC when neither this nor --authorization-config is given, as kubeadm and k3s configure (upstream defaults to AlwaysAllow: pass --authorization-mode=AlwaysAllow for that)."),
    FlagSpec::new("authorization-policy-file", Kind::Str, "",
        "ABAC policy file (one JSON policy per line), used with --authorization-mode=ABAC."),
    FlagSpec::new("authorization-webhook-cache-authorized-ttl", Kind::Duration, "5m0s",
        "How long the webhook authorizer's 'allowed' answers are cached."),
    FlagSpec::new("authorization-webhook-cache-unauthorized-ttl", Kind::Duration, "30s",
        "How long the webhook authorizer's 'denied' answers are cached."),
    FlagSpec::new("authorization-webhook-config-file", Kind::Str, "",
        "Kubeconfig-format file describing the authorization webhook, used with --authorization-mode=Webhook."),
    FlagSpec::new("authorization-webhook-version", Kind::Str, "v1beta1",
        "Version of authorization.k8s.io SubjectAccessReview exchanged with the webhook."),
];
