//! The generic configuration the three servers of the chain share
//! (upstream's `BuildGenericConfig` in `pkg/controlplane/apiserver/config.go`)
//! and the `/version` document.

use std::sync::Arc;
use std::time::Duration;

use apiserver::authentication::Authentication;
use apiserver::server::{readyz_only, CompletedConfig, Config, DiscoveryRegistry, FnCheck};
use serde_json::json;
use storage::Kv;

use super::server::ChainError;
use crate::options::CompletedOptions;

/// host:port clients should use (published by `/api`, and the default
/// host of the service-account JWKS URI).
pub fn external_address(opts: &CompletedOptions) -> String {
    let port = opts.options.secure_serving.secure_port;
    format!("{}:{port}", opts.advertise_address)
}

/// The generic configuration shared by the three servers.
pub fn generic_config(
    opts: &CompletedOptions,
    kv: Arc<dyn Kv>,
    authentication: Arc<Authentication>,
) -> Result<CompletedConfig, ChainError> {
    let o = &opts.options;
    let modes = super::authorization::modes(opts)?;
    let storage = kv.clone();
    let etcd_check = FnCheck::new("etcd", move || {
        let kv = storage.clone();
        Box::pin(async move { kv.health().await.map_err(|e| e.to_string()) })
    });
    // Readiness asks the same question within `--etcd-readycheck-timeout`.
    let ready_timeout = o
        .flags
        .duration("etcd-readycheck-timeout")
        .map(|d| d.to_std())
        .unwrap_or(Duration::from_secs(2));
    let etcd_readiness = readyz_only(FnCheck::new("etcd-readiness", move || {
        let kv = kv.clone();
        Box::pin(async move {
            match tokio::time::timeout(ready_timeout, kv.health()).await {
                Ok(result) => result.map_err(|e| e.to_string()),
                Err(_) => Err("timed out".to_owned()),
            }
        })
    }));
    Ok(Config {
        request_timeout: o.generic.request_timeout.to_std(),
        min_request_timeout: Duration::from_secs(o.generic.min_request_timeout.unsigned_abs()),
        max_requests_inflight: usize::try_from(o.generic.max_requests_inflight).unwrap_or(0),
        max_mutating_requests_inflight: usize::try_from(o.generic.max_mutating_requests_inflight)
            .unwrap_or(0),
        enable_priority_and_fairness: o.flags.bool("enable-priority-and-fairness").unwrap_or(true),
        livez_grace_period: o.generic.livez_grace_period.to_std(),
        shutdown_delay: o.generic.shutdown_delay_duration.to_std(),
        shutdown_send_retry_after: o.flags.bool("shutdown-send-retry-after").unwrap_or(false),
        external_address: external_address(opts),
        health_checks: vec![etcd_check, etcd_readiness],
        authentication,
        authorization_modes: modes,
        version: version_info(),
        discovery: DiscoveryRegistry::default(),
        cors_allowed_origins: o.generic.cors_allowed_origins.clone(),
        hsts_directives: o.generic.strict_transport_security_directives.clone(),
        watch_list: opts.feature_gates.get("WatchList") != Some(&false),
        response_compression: opts.feature_gates.get("APIResponseCompression") != Some(&false),
        enable_profiling: o.flags.bool("profiling").unwrap_or(true),
        debug_socket_path: o.flags.path("debug-socket-path").ok().flatten(),
        audit: super::audit::auditor(opts)?,
    }
    .complete()?)
}

/// The `/version` document.
pub fn version_info() -> serde_json::Value {
    json!({
        "major": "1",
        "minor": "37",
        "emulationMajor": "1",
        "emulationMinor": "37",
        "minCompatibilityMajor": "1",
        "minCompatibilityMinor": "36",
        "gitVersion": "v1.37.0",
        "gitCommit": env!("CARGO_PKG_VERSION"),
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "rust",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, go_arch()),
    })
}

fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    }
}
