//! Probes and lifecycle hooks (upstream's `validateProbe`,
//! `validateLifecycle` and `validateHandler`): exactly one handler, each
//! handler's fields, non-negative timings and the per-kind rules.

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::formats::{
    is_http_header_name, is_valid_port_name, is_valid_port_num,
};
use serde_json::Value;

use super::{int, invalid_all, items, nonnegative, set};

const SCHEMES: &[&str] = &["HTTP", "HTTPS"];

/// Which container probe is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ProbeKind {
    Liveness,
    Readiness,
    Startup,
}

/// A liveness, readiness or startup probe.
pub(super) fn validate_probe(
    probe: &Value,
    kind: ProbeKind,
    path: &Path,
    grace_period: i64,
    errs: &mut Vec<FieldError>,
) {
    validate_handler(
        probe,
        &["exec", "httpGet", "tcpSocket", "grpc"],
        path,
        grace_period,
        errs,
    );
    for key in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        if let Some(n) = int(probe, key) {
            nonnegative(n, &path.child(key), errs);
        }
    }
    let grace = int(probe, "terminationGracePeriodSeconds");
    if let Some(g) = grace.filter(|g| *g <= 0) {
        errs.push(FieldError::invalid(
            &path.child("terminationGracePeriodSeconds"),
            g,
            "must be greater than 0",
        ));
    }
    match kind {
        ProbeKind::Liveness | ProbeKind::Startup => {
            // Zero is defaulted to 1.
            let success = int(probe, "successThreshold").unwrap_or(1);
            if success != 1 && success != 0 {
                errs.push(FieldError::invalid(
                    &path.child("successThreshold"),
                    success,
                    "must be 1",
                ));
            }
        }
        ProbeKind::Readiness => {
            if let Some(g) = grace {
                errs.push(FieldError::invalid(
                    &path.child("terminationGracePeriodSeconds"),
                    g,
                    "must not be set for readinessProbes",
                ));
            }
        }
    }
}

/// A container's `postStart` and `preStop` hooks.
pub(super) fn validate_lifecycle(
    lifecycle: &Value,
    path: &Path,
    grace_period: i64,
    errs: &mut Vec<FieldError>,
) {
    for key in ["postStart", "preStop"] {
        if let Some(hook) = set(lifecycle, key) {
            let kinds = ["exec", "httpGet", "tcpSocket", "sleep"];
            validate_handler(hook, &kinds, &path.child(key), grace_period, errs);
        }
    }
}

/// Exactly one of the handler `kinds`, checked in upstream's order.
fn validate_handler(
    handler: &Value,
    kinds: &[&str],
    path: &Path,
    grace_period: i64,
    errs: &mut Vec<FieldError>,
) {
    let mut found = false;
    for kind in ["exec", "httpGet", "tcpSocket", "grpc", "sleep"] {
        let Some(action) = set(handler, kind).filter(|_| kinds.contains(&kind)) else {
            continue;
        };
        let p = path.child(kind);
        if found {
            errs.push(FieldError::forbidden(
                &p,
                "may not specify more than 1 handler type",
            ));
            continue;
        }
        found = true;
        match kind {
            "exec" if items(action, "command").is_empty() => {
                errs.push(FieldError::required(&p.child("command"), ""));
            }
            "httpGet" => http_get(action, &p, errs),
            "tcpSocket" | "grpc" => port_num_or_name(action.get("port"), &p.child("port"), errs),
            "sleep" => sleep(action, &p, grace_period, errs),
            _ => {}
        }
    }
    if !found {
        errs.push(FieldError::required(path, "must specify a handler type"));
    }
}

fn http_get(action: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    port_num_or_name(action.get("port"), &path.child("port"), errs);
    // A missing scheme is defaulted to HTTP.
    if let Some(scheme) = action.get("scheme").and_then(Value::as_str) {
        if !SCHEMES.contains(&scheme) {
            errs.push(FieldError::not_supported(
                &path.child("scheme"),
                scheme,
                SCHEMES,
            ));
        }
    }
    for header in items(action, "httpHeaders") {
        let name = header
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        invalid_all(
            &path.child("httpHeaders"),
            name,
            is_http_header_name(name),
            errs,
        );
    }
}

/// Upstream's `ValidatePortNumOrName` (a missing port reads as 0).
pub(super) fn port_num_or_name(port: Option<&Value>, path: &Path, errs: &mut Vec<FieldError>) {
    match port {
        Some(Value::String(name)) => invalid_all(path, name, is_valid_port_name(name), errs),
        other => {
            let n = other.and_then(Value::as_i64).unwrap_or(0);
            for msg in is_valid_port_num(n) {
                errs.push(FieldError::invalid(path, n, msg));
            }
        }
    }
}

fn sleep(action: &Value, path: &Path, grace_period: i64, errs: &mut Vec<FieldError>) {
    let seconds = int(action, "seconds").unwrap_or(0);
    if seconds < 0 || seconds > grace_period {
        let msg = format!(
            "must be non-negative and less than terminationGracePeriodSeconds ({grace_period})"
        );
        errs.push(FieldError::invalid(path, seconds, msg));
    }
}
