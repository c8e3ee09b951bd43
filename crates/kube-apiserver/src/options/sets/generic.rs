//! Generic flags: addressing, request limits and timeouts, shutdown
//! behaviour, feature gates and emulated versions.

use super::spec::{FlagSpec, Kind};

/// The data directory flag; its default depends on the user's environment.
pub const DATA_DIR: &str = "data-dir";
/// The feature gates flag; its help lists the known gates.
pub const FEATURE_GATES: &str = "feature-gates";

pub const FLAGS: &[FlagSpec] = &[
    FlagSpec::new("advertise-address", Kind::Ip, "",
        "IP address that cluster members use to reach this API server; it must be reachable from the rest of the cluster. When empty, --bind-address is used, or the host's default interface when --bind-address is unspecified."),
    FlagSpec::new("cors-allowed-origins", Kind::StringSlice, "",
        "Comma-separated regular expressions for origins allowed by CORS; an empty list disables CORS. Anchor each expression to the whole host: start it with '^' or '//' and end it with '$' or ':' (for example '//example.com(:|$)')."),
    FlagSpec::new(DATA_DIR, Kind::Str, "",
        "Directory holding this server's own state: the embedded store (used when --etcd-servers is empty), generated certificates and admin.kubeconfig."),
    FlagSpec::new("default-not-ready-toleration-seconds", Kind::Int, "300",
        "tolerationSeconds of the notReady:NoExecute toleration added to pods that do not already have one."),
    FlagSpec::new("default-unreachable-toleration-seconds", Kind::Int, "300",
        "tolerationSeconds of the unreachable:NoExecute toleration added to pods that do not already have one."),
    FlagSpec::new("emulated-version", Kind::StringSlice, "",
        "Versions whose behaviour (APIs, features, ...) components emulate instead of their binary version, as component=major.minor pairs, e.g. 'kube=1.36'. A value without a component applies to \"kube\"."),
    FlagSpec::new("emulation-forward-compatible", Kind::Bool, "",
        "When emulating an older version, also enable the newer, higher-priority versions of beta-or-later APIs that are enabled at the emulated version. Only valid when the emulated version is below the binary version."),
    FlagSpec::new("external-hostname", Kind::Str, "",
        "Hostname used when building externalized URLs for this server (for example in OpenID discovery documents)."),
    FlagSpec::new(FEATURE_GATES, Kind::ColonMultimap, "",
        "Comma-separated component:Name=true|false pairs switching alpha/beta features on or off; a pair without a component applies to \"kube\". The flag may be repeated. Known gates:"),
    FlagSpec::new("goaway-chance", Kind::Float64, "",
        "Fraction of HTTP/2 requests answered with GOAWAY so clients reconnect and spread across API servers behind a load balancer. 0 disables it, 0.02 is the maximum, 0.001 is a sensible start; leave it off for a single server."),
    FlagSpec::new("livez-grace-period", Kind::Duration, "",
        "How long startup may take: until this much time has passed since start, /livez treats unfinished post-start hooks as successful."),
    FlagSpec::new("max-mutating-requests-inflight", Kind::Int, "200",
        "With priority and fairness, added to --max-requests-inflight to form the total concurrency limit; otherwise the limit on mutating requests in flight (0 means no limit)."),
    FlagSpec::new("max-requests-inflight", Kind::Int, "400",
        "With priority and fairness, added to --max-mutating-requests-inflight to form the total concurrency limit; otherwise the limit on read-only requests in flight (0 means no limit)."),
    FlagSpec::new("min-compatibility-version", Kind::StringSlice, "",
        "Oldest control-plane version, per component (component=major.minor), this server must stay compatible with; it may not exceed the emulated version. A value without a component applies to \"kube\"."),
    FlagSpec::new("min-request-timeout", Kind::Int, "1800",
        "Minimum number of seconds a long-running request (watch) is kept open; the watch handler picks a random timeout above it to spread load."),
    FlagSpec::new("request-timeout", Kind::Duration, "1m0s",
        "Default time a handler may keep a request open before timing it out; some requests use other limits such as --min-request-timeout."),
    FlagSpec::new("runtime-config-emulation-forward-compatible", Kind::Bool, "",
        "When emulating an older version, install group/versions named in --runtime-config even if they were introduced after the emulated version, instead of failing. Only valid when the emulated version is below the binary version."),
    FlagSpec::new("shutdown-delay-duration", Kind::Duration, "",
        "How long to keep serving normally after a termination signal before graceful shutdown starts; /readyz fails during this time while /healthz and /livez still succeed, so load balancers can drain."),
    FlagSpec::new("shutdown-send-retry-after", Kind::Bool, "",
        "During shutdown, keep listening until in-flight requests finish and answer new requests with 429, a Retry-After header and Connection: close."),
    FlagSpec::new("shutdown-watch-termination-grace-period", Kind::Duration, "",
        "Longest time graceful shutdown waits for active watches to drain."),
    FlagSpec::new("storage-initialization-timeout", Kind::Duration, "1m0s",
        "Longest time to wait for storage to initialize before the server reports ready."),
    FlagSpec::new("strict-transport-security-directives", Kind::StringSlice, "",
        "Comma-separated HSTS directives sent in Strict-Transport-Security, e.g. 'max-age=31536000,includeSubDomains,preload'; empty sends no header."),
];
