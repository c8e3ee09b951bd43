//! Validation of completed options. Like upstream's `Validate`, every
//! problem is collected and reported together, each naming its flag.

use super::complete::service_ip_ranges;
use super::syntax::parse_bool;
use super::{support, CompletedOptions, FlagValues, OptionError, Value};

/// Authorizers upstream knows.
const AUTHORIZATION_MODES: &[&str] = &[
    "AlwaysAllow",
    "AlwaysDeny",
    "ABAC",
    "Webhook",
    "RBAC",
    "Node",
];

/// Media types objects can be stored in.
const STORAGE_MEDIA_TYPES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];

/// Cipher suite names upstream accepts (secure and insecure ones).
const CIPHER_SUITES: &[&str] = &[
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA",
    "TLS_RSA_WITH_AES_256_GCM_SHA384",
    "TLS_RSA_WITH_RC4_128_SHA",
];

impl CompletedOptions {
    /// Every invalid value and inconsistent combination, all at once.
    /// Flags this server does not implement yet are reported separately by
    /// [`Self::unsupported`]; startup needs both lists empty.
    pub fn validate(&self) -> Vec<OptionError> {
        let flags = &self.options.flags;
        let mut errors = Vec::new();
        validate_generic(flags, &mut errors);
        errors.extend(
            self.feature_gate_errors
                .iter()
                .map(|message| OptionError::new("feature-gates", message.clone())),
        );
        validate_storage(flags, &mut errors);
        validate_serving(self, &mut errors);
        validate_authorization(flags, &mut errors);
        errors.extend(super::AdmissionOptions::from_flags(flags).validate());
        validate_runtime_config(self, &mut errors);
        if let Err(range_errors) = service_ip_ranges(&self.options.service_cluster_ip_range) {
            errors.extend(range_errors);
        }
        validate_node_port(flags, self.options.service_node_port_range, &mut errors);
        validate_endpoint_reconciler(flags, &mut errors);
        errors.extend(self.logging_errors());
        errors.extend(self.tracing_errors());
        if self.options.data_dir.as_os_str().is_empty() {
            errors.push(OptionError::new("data-dir", "must not be empty"));
        }
        errors
    }

    /// One error per flag set to a value this server cannot honour yet.
    pub fn unsupported(&self) -> Vec<OptionError> {
        let mut errors = support::unsupported(&self.options.flags);
        errors.extend(super::AdmissionOptions::from_flags(&self.options.flags).unsupported());
        errors.extend(support::unsupported_gates(&self.feature_gates));
        errors
    }
}

fn int(flags: &FlagValues, name: &str) -> i64 {
    match flags.get(name).map(|flag| &flag.value) {
        Some(Value::Int(value)) => *value,
        _ => 0,
    }
}

fn list<'a>(flags: &'a FlagValues, name: &str) -> &'a [String] {
    match flags.get(name).map(|flag| &flag.value) {
        Some(Value::List(items)) => items,
        _ => &[],
    }
}

fn text<'a>(flags: &'a FlagValues, name: &str) -> &'a str {
    match flags.get(name).map(|flag| &flag.value) {
        Some(Value::Str(value)) => value,
        _ => "",
    }
}

fn validate_generic(flags: &FlagValues, errors: &mut Vec<OptionError>) {
    for name in [
        "max-requests-inflight",
        "max-mutating-requests-inflight",
        "min-request-timeout",
    ] {
        if int(flags, name) < 0 {
            errors.push(OptionError::new(name, "can not be negative value"));
        }
    }
    let apf = matches!(
        flags.get("enable-priority-and-fairness").map(|f| &f.value),
        Some(Value::Bool(true))
    );
    let (reads, writes) = (
        int(flags, "max-requests-inflight"),
        int(flags, "max-mutating-requests-inflight"),
    );
    if apf && reads + writes <= 0 {
        errors.push(OptionError::new(
            "enable-priority-and-fairness",
            format!(
                "invalid configuration: MaxRequestsInFlight={reads} and \
                 MaxMutatingRequestsInFlight={writes}; they must add up to something positive"
            ),
        ));
    }
    for name in [
        "request-timeout",
        "livez-grace-period",
        "storage-initialization-timeout",
        "shutdown-delay-duration",
        "shutdown-watch-termination-grace-period",
    ] {
        if let Some(Value::Duration(duration)) = flags.get(name).map(|flag| &flag.value) {
            if duration.is_negative() {
                errors.push(OptionError::new(name, "can not be negative value"));
            }
        }
    }
    if let Some(Value::Float(chance)) = flags.get("goaway-chance").map(|flag| &flag.value) {
        if !(0.0..=0.02).contains(chance) {
            errors.push(OptionError::new(
                "goaway-chance",
                "can not be less than 0 or greater than 0.02",
            ));
        }
    }
    for directive in list(flags, "strict-transport-security-directives") {
        let valid = match directive.trim() {
            "" => false,
            "includeSubDomains" | "preload" => true,
            other => other
                .split_once('=')
                .is_some_and(|(key, value)| key == "max-age" && !value.contains('=')),
        };
        if !valid {
            errors.push(OptionError::new(
                "strict-transport-security-directives",
                format!("invalid directive {directive:?}; allowed values: max-age=expireTime, includeSubDomains, preload (see https://tools.ietf.org/html/rfc6797#section-6.1)"),
            ));
        }
    }
    for origin in list(flags, "cors-allowed-origins") {
        if let Some(problem) = cors_origin_problem(origin) {
            errors.push(OptionError::new("cors-allowed-origins", problem));
        }
    }
}

/// Upstream requires each CORS pattern to pin both ends of the host, so a
/// pattern cannot match a longer, attacker-chosen host (CVE-2022-1996).
fn cors_origin_problem(origin: &str) -> Option<String> {
    if origin.is_empty() {
        return Some("empty value in the list".to_string());
    }
    let pins_start = origin.contains('^') || origin.contains("//");
    let pins_end = origin.contains('$') || origin.contains(':');
    (!pins_start || !pins_end).then(|| {
        format!(
            "{origin:?}: regular expression does not pin to start/end of host in the origin header"
        )
    })
}

fn validate_storage(flags: &FlagValues, errors: &mut Vec<OptionError>) {
    let backend = text(flags, "storage-backend");
    if !backend.is_empty() && backend != "etcd3" {
        errors.push(OptionError::new(
            "storage-backend",
            format!("invalid value {backend:?}, allowed values: etcd3. If not specified, it will default to 'etcd3'"),
        ));
    }
    let media_type = text(flags, "storage-media-type");
    if !STORAGE_MEDIA_TYPES.contains(&media_type) {
        errors.push(OptionError::new(
            "storage-media-type",
            format!(
                "{media_type:?} invalid, allowed values: {}",
                STORAGE_MEDIA_TYPES.join(", ")
            ),
        ));
    }
    for entry in list(flags, "watch-cache-sizes") {
        let valid = entry.split_once('#').is_some_and(|(resource, size)| {
            !resource.is_empty() && size.parse::<i64>().is_ok_and(|size| size >= 0)
        });
        if !valid {
            errors.push(OptionError::new(
                "watch-cache-sizes",
                format!("invalid entry {entry:?}; expected resource[.group]#size with a size of 0 or more"),
            ));
        }
    }
    for entry in list(flags, "etcd-servers-overrides") {
        let valid = entry
            .split_once('#')
            .is_some_and(|(resource, servers)| resource.contains('/') && !servers.is_empty());
        if !valid {
            errors.push(OptionError::new(
                "etcd-servers-overrides",
                format!("invalid entry {entry:?}; expected group/resource#servers, servers separated by ';'"),
            ));
        }
    }
    let automatic_reload = matches!(
        flags
            .get("encryption-provider-config-automatic-reload")
            .map(|flag| &flag.value),
        Some(Value::Bool(true))
    );
    if automatic_reload && text(flags, "encryption-provider-config").is_empty() {
        errors.push(OptionError::new(
            "encryption-provider-config-automatic-reload",
            "must be set with --encryption-provider-config",
        ));
    }
}

fn validate_serving(completed: &CompletedOptions, errors: &mut Vec<OptionError>) {
    let serving = &completed.options.secure_serving;
    if !(1..=65535).contains(&serving.secure_port) {
        errors.push(OptionError::new(
            "secure-port",
            format!(
                "{} must be between 1 and 65535, inclusive. It cannot be turned off with 0",
                serving.secure_port
            ),
        ));
    }
    if serving.tls_cert_file.is_some() != serving.tls_private_key_file.is_some() {
        let missing = if serving.tls_cert_file.is_some() {
            "tls-private-key-file"
        } else {
            "tls-cert-file"
        };
        errors.push(OptionError::new(
            missing,
            "must be given together with its pair (--tls-cert-file and --tls-private-key-file)",
        ));
    }
    if !serving.tls_min_version.is_empty() && completed.tls_min_version.is_none() {
        errors.push(OptionError::new(
            "tls-min-version",
            format!("unknown TLS version {:?}; allowed values: VersionTLS10, VersionTLS11, VersionTLS12, VersionTLS13", serving.tls_min_version),
        ));
    }
    for suite in &serving.tls_cipher_suites {
        if !CIPHER_SUITES.contains(&suite.as_str()) {
            errors.push(OptionError::new(
                "tls-cipher-suites",
                format!("cipher suite {suite} not supported or doesn't exist"),
            ));
        }
    }
    if serving.http2_max_streams_per_connection < 0 {
        errors.push(OptionError::new(
            "http2-max-streams-per-connection",
            "can not be negative value",
        ));
    }
}

fn validate_authorization(flags: &FlagValues, errors: &mut Vec<OptionError>) {
    let modes = list(flags, "authorization-mode");
    if !text(flags, "authorization-config").is_empty() {
        let legacy = [
            "authorization-mode",
            "authorization-webhook-config-file",
            "authorization-webhook-version",
            "authorization-webhook-cache-authorized-ttl",
            "authorization-webhook-cache-unauthorized-ttl",
        ];
        if legacy.iter().any(|flag| flags.explicit(flag)) {
            errors.push(OptionError::new(
                "authorization-config",
                "can not be specified when --authorization-mode or --authorization-webhook-* flags are defined",
            ));
        }
        return;
    }
    for (index, mode) in modes.iter().enumerate() {
        if !AUTHORIZATION_MODES.contains(&mode.as_str()) {
            errors.push(OptionError::new(
                "authorization-mode",
                format!(
                    "{mode:?} is not a valid mode; valid modes: {}",
                    AUTHORIZATION_MODES.join(",")
                ),
            ));
        } else if modes[..index].contains(mode) {
            errors.push(OptionError::new(
                "authorization-mode",
                format!("{mode:?} has mode specified more than once"),
            ));
        }
    }
    let has = |mode: &str| modes.iter().any(|item| item == mode);
    let requirements = [
        ("ABAC", "authorization-policy-file"),
        ("Webhook", "authorization-webhook-config-file"),
    ];
    for (mode, file_flag) in requirements {
        let file_given = !text(flags, file_flag).is_empty();
        if has(mode) && !file_given {
            errors.push(OptionError::new(
                file_flag,
                format!("must be set when --authorization-mode includes {mode}"),
            ));
        } else if !has(mode) && file_given {
            errors.push(OptionError::new(
                file_flag,
                format!("cannot be used without --authorization-mode={mode}"),
            ));
        }
    }
}

fn validate_runtime_config(completed: &CompletedOptions, errors: &mut Vec<OptionError>) {
    for (key, value) in &completed.runtime_config {
        if key.is_empty() {
            errors.push(OptionError::new("runtime-config", "empty key"));
        } else if !value.is_empty() && parse_bool(value).is_err() {
            errors.push(OptionError::new(
                "runtime-config",
                format!("invalid value of {key}: {value}, expected true or false"),
            ));
        }
    }
}

/// Upstream stops at startup on a reconciler type it does not know.
fn validate_endpoint_reconciler(flags: &FlagValues, errors: &mut Vec<OptionError>) {
    let kind = text(flags, "endpoint-reconciler-type");
    if !crate::controlplane::reconcilers::TYPES.contains(&kind) {
        errors.push(OptionError::new(
            "endpoint-reconciler-type",
            format!("Reconciler not implemented: {kind}"),
        ));
    }
}

fn validate_node_port(flags: &FlagValues, range: super::PortRange, errors: &mut Vec<OptionError>) {
    let port = int(flags, "kubernetes-service-node-port");
    if !(0..=65535).contains(&port) {
        errors.push(OptionError::new(
            "kubernetes-service-node-port",
            format!("{port} must be between 0 and 65535, inclusive"),
        ));
    } else if port > 0 && !u32::try_from(port).is_ok_and(|port| range.contains(port)) {
        errors.push(OptionError::new(
            "kubernetes-service-node-port",
            format!("{port} must be inside --service-node-port-range {range}"),
        ));
    }
    if range.size == 0 {
        errors.push(OptionError::new(
            "service-node-port-range",
            "must not be empty",
        ));
    }
}
