//! Create and update validation of the plain core/v1 kinds (upstream's
//! `ValidateConfigMap`, `ValidateSecret`, `ValidateEndpoints`,
//! `ValidateNamespace` in pkg/apis/core/validation/validation.go and
//! `ValidateEventCreate`/`legacyValidateEvent` in
//! pkg/apis/core/validation/events.go). Metadata (names, labels,
//! annotations) is checked for every kind elsewhere.
//!
//! Go iterates maps in random order; keys are checked here in the order
//! the object carries them.

use std::net::IpAddr;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::formats::{is_config_map_key, is_valid_port_num};
use apimachinery::validation::ip::{ip_sloppy, is_valid_ip};
use apimachinery::validation::object_meta::validate_finalizer_name;
use apimachinery::validation::{is_dns1123_subdomain, is_qualified_name, name_is_dns_subdomain};
use base64::Engine as _;
use serde_json::{Map, Value};

use super::{dns_label, invalid_all, items, set, text, PROTOCOLS};

/// Upstream's `core.MaxSecretSize`: the data of a Secret or ConfigMap.
pub const MAX_SECRET_SIZE: usize = 1024 * 1024;

fn map<'a>(obj: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    obj.get(key).and_then(Value::as_object)
}

/// The decoded size of a base64 (`[]byte`) value.
fn bytes_len(value: &Value) -> usize {
    let encoded = value.as_str().unwrap_or_default();
    base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_or(encoded.len(), |b| b.len())
}

fn config_keys(path: &Path, data: &Map<String, Value>, errs: &mut Vec<FieldError>) {
    for key in data.keys() {
        invalid_all(&path.key(key), key, is_config_map_key(key), errs);
    }
}

/// ConfigMaps: keys of `data` and `binaryData`, no key in both, 1 MiB in all.
pub fn validate_config_map(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Map::new();
    let data = map(obj, "data").unwrap_or(&empty);
    let binary = map(obj, "binaryData").unwrap_or(&empty);
    let data_path = Path::new("data");
    for key in data.keys() {
        let path = data_path.key(key);
        invalid_all(&path, key, is_config_map_key(key), &mut errs);
        if binary.contains_key(key) {
            let msg = "duplicate of key present in binaryData";
            errs.push(FieldError::invalid(&path, key.as_str(), msg));
        }
    }
    config_keys(&Path::new("binaryData"), binary, &mut errs);
    let text_size: usize = data.values().map(|v| v.as_str().map_or(0, str::len)).sum();
    let size = text_size + binary.values().map(bytes_len).sum::<usize>();
    if size > MAX_SECRET_SIZE {
        // The whole object: upstream reports it at the empty path.
        errs.push(FieldError::too_long(&Path::new(""), Some(MAX_SECRET_SIZE)));
    }
    errs
}

/// Secrets: data keys and size, then the keys each well-known type needs.
pub fn validate_secret(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let empty = Map::new();
    let data = map(obj, "data").unwrap_or(&empty);
    let data_path = Path::new("data");
    config_keys(&data_path, data, &mut errs);
    if data.values().map(bytes_len).sum::<usize>() > MAX_SECRET_SIZE {
        errs.push(FieldError::too_long(&data_path, Some(MAX_SECRET_SIZE)));
    }
    let required = |key: &str| FieldError::required(&data_path.key(key), "");
    match text(obj, "type") {
        "kubernetes.io/service-account-token" => {
            let key = "kubernetes.io/service-account.name";
            let name = obj
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(key));
            if name.and_then(Value::as_str).unwrap_or_default().is_empty() {
                let path = Path::new("metadata").child("annotations").key(key);
                errs.push(FieldError::required(&path, ""));
            }
        }
        kind @ ("kubernetes.io/dockercfg" | "kubernetes.io/dockerconfigjson") => {
            let key = if kind.ends_with("json") {
                ".dockerconfigjson"
            } else {
                ".dockercfg"
            };
            match data.get(key) {
                None => errs.push(required(key)),
                Some(value) => errs.extend(docker_config_json(&data_path.key(key), value)),
            }
        }
        "kubernetes.io/basic-auth"
            if !data.contains_key("username") && !data.contains_key("password") =>
        {
            errs.push(required("username"));
            errs.push(required("password"));
        }
        "kubernetes.io/ssh-auth" if data.get("ssh-privatekey").map_or(0, bytes_len) == 0 => {
            errs.push(required("ssh-privatekey"));
        }
        "kubernetes.io/tls" => {
            for key in ["tls.crt", "tls.key"] {
                if !data.contains_key(key) {
                    errs.push(required(key));
                }
            }
        }
        _ => {}
    }
    errs
}

/// A docker config must decode as a JSON object (Go's `json.Unmarshal`
/// into a map; `null` is accepted as Go does); the contents are redacted.
fn docker_config_json(path: &Path, value: &Value) -> Option<FieldError> {
    let encoded = value.as_str().unwrap_or_default();
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .unwrap_or_default();
    let msg = match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(_) | Value::Null) => return None,
        Ok(other) => format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_json_kind(&other)
        ),
        Err(e) if e.is_eof() => "unexpected end of JSON input".to_owned(),
        Err(e) => go_syntax_error(&bytes, &e),
    };
    Some(FieldError::invalid(path, "<secret contents redacted>", msg))
}

fn go_json_kind(value: &Value) -> &'static str {
    match value {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        _ => "array",
    }
}

/// Go's scanner error for the common cases: a bad first byte, a
/// misspelt literal, bytes after the value; others keep serde's words.
fn go_syntax_error(bytes: &[u8], err: &serde_json::Error) -> String {
    let start = bytes.iter().take_while(|b| b.is_ascii_whitespace()).count();
    let first = bytes.get(start).copied().unwrap_or(b' ');
    let literal = ["true", "false", "null"]
        .into_iter()
        .find(|l| l.as_bytes()[0] == first);
    if let Some(literal) = literal {
        let rest = &bytes[start..];
        let bad = literal
            .bytes()
            .zip(rest)
            .position(|(want, got)| want != *got);
        if let Some(i) = bad {
            let (got, want) = (go_quote_char(rest[i]), go_quote_char(literal.as_bytes()[i]));
            return format!("invalid character {got} in literal {literal} (expecting {want})");
        }
    }
    if !matches!(
        first,
        b'{' | b'[' | b'"' | b'-' | b'0'..=b'9' | b't' | b'f' | b'n'
    ) {
        let c = go_quote_char(first);
        return format!("invalid character {c} looking for beginning of value");
    }
    err.to_string()
}

fn go_quote_char(c: u8) -> String {
    match c {
        b'\'' => r"'\''".to_owned(),
        b'"' => r#"'"'"#.to_owned(),
        c if c.is_ascii_graphic() || c == b' ' => format!("'{}'", c as char),
        c => format!("'\\x{c:02x}'"),
    }
}

/// Endpoints: each subset has addresses, valid IPs, ports and protocols.
pub fn validate_endpoints(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, subset) in items(obj, "subsets").iter().enumerate() {
        let path = Path::new("subsets").index(i);
        let (ready, not_ready) = (
            items(subset, "addresses"),
            items(subset, "notReadyAddresses"),
        );
        if ready.is_empty() && not_ready.is_empty() {
            let msg = "must specify `addresses` or `notReadyAddresses`";
            errs.push(FieldError::required(&path, msg));
        }
        for (key, list) in [("addresses", ready), ("notReadyAddresses", not_ready)] {
            for (j, address) in list.iter().enumerate() {
                endpoint_address(address, &path.child(key).index(j), &mut errs);
            }
        }
        let ports = items(subset, "ports");
        for (j, port) in ports.iter().enumerate() {
            endpoint_port(
                port,
                ports.len() > 1,
                &path.child("ports").index(j),
                &mut errs,
            );
        }
    }
    errs
}

fn endpoint_address(address: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let ip = text(address, "ip");
    let ip_path = path.child("ip");
    errs.extend(is_valid_ip(&ip_path, ip));
    let hostname = text(address, "hostname");
    if !hostname.is_empty() {
        dns_label(&path.child("hostname"), hostname, errs);
    }
    if let Some(node) = set(address, "nodeName") {
        let node = node.as_str().unwrap_or_default();
        invalid_all(
            &path.child("nodeName"),
            node,
            name_is_dns_subdomain(node, false),
            errs,
        );
    }
    // Not the loopback rule yet: this server advertises its bind address
    // even when it is loopback (upstream picks the default route's), so
    // its own `default/kubernetes` Endpoints would be refused.
    let loopback = |e: &FieldError| e.detail.contains("loopback");
    errs.extend(
        non_special_ip(&ip_path, ip)
            .into_iter()
            .filter(|e| !loopback(e)),
    );
}

/// Upstream's `ValidateNonSpecialIP`: no unspecified, loopback or
/// link-local address (Endpoints, EndpointSlices, external IPs).
pub(crate) fn non_special_ip(path: &Path, value: &str) -> Vec<FieldError> {
    let Some(ip) = ip_sloppy(value) else {
        return vec![FieldError::invalid(
            path,
            value,
            "must be a valid IP address",
        )];
    };
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    let (link_local, link_local_multicast) = match ip {
        IpAddr::V4(v4) => (v4.is_link_local(), v4.octets()[..3] == [224, 0, 0]),
        IpAddr::V6(v6) => {
            let [a, b, ..] = v6.octets();
            (a == 0xfe && b & 0xc0 == 0x80, a == 0xff && b & 0x0f == 0x02)
        }
    };
    let unspecified = format!("may not be unspecified ({value})");
    [
        (ip.is_unspecified(), unspecified.as_str()),
        (
            ip.is_loopback(),
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ),
        (
            link_local,
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ),
        (
            link_local_multicast,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ),
    ]
    .into_iter()
    .filter(|(hit, _)| *hit)
    .map(|(_, msg)| FieldError::invalid(path, value, msg))
    .collect()
}

fn endpoint_port(port: &Value, require_name: bool, path: &Path, errs: &mut Vec<FieldError>) {
    let name = text(port, "name");
    if require_name && name.is_empty() {
        errs.push(FieldError::required(&path.child("name"), ""));
    } else if !name.is_empty() {
        dns_label(&path.child("name"), name, errs);
    }
    let number = port.get("port").and_then(Value::as_i64).unwrap_or_default();
    for msg in is_valid_port_num(number) {
        errs.push(FieldError::invalid(&path.child("port"), number, msg));
    }
    let protocol = text(port, "protocol");
    if protocol.is_empty() {
        errs.push(FieldError::required(&path.child("protocol"), ""));
    } else if !PROTOCOLS.contains(&protocol) {
        errs.push(FieldError::not_supported(
            &path.child("protocol"),
            protocol,
            PROTOCOLS,
        ));
    }
    if let Some(app) = set(port, "appProtocol") {
        let app = app.as_str().unwrap_or_default();
        invalid_all(
            &path.child("appProtocol"),
            app,
            is_qualified_name(app),
            errs,
        );
    }
}

/// Upstream's `helper.IsStandardFinalizerName`.
const STANDARD_FINALIZERS: &[&str] = &["kubernetes", "orphan", "foregroundDeletion"];

/// Namespaces: `spec.finalizers` are qualified names, and unprefixed ones
/// are the standard finalizers.
pub fn validate_namespace(obj: &Value) -> Vec<FieldError> {
    let path = Path::new("spec").child("finalizers");
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut errs = Vec::new();
    for finalizer in items(spec, "finalizers") {
        let name = finalizer.as_str().unwrap_or_default();
        errs.extend(validate_finalizer_name(name, &path));
        if !name.contains('/') && !STANDARD_FINALIZERS.contains(&name) {
            let msg = "name is neither a standard finalizer name nor is it fully qualified";
            errs.push(FieldError::invalid(&path, name, msg));
        }
    }
    errs
}

/// Where the fields upstream's event rules read sit in a core/v1 Event
/// and in an `events.k8s.io/v1` one.
struct EventFields {
    involved: &'static str,
    message: &'static str,
    source: &'static str,
    first: &'static str,
    last: &'static str,
    count: &'static str,
    controller: &'static str,
}

const CORE_EVENT: EventFields = EventFields {
    involved: "involvedObject",
    message: "message",
    source: "source",
    first: "firstTimestamp",
    last: "lastTimestamp",
    count: "count",
    controller: "reportingComponent",
};

const EVENTS_V1_EVENT: EventFields = EventFields {
    involved: "regarding",
    message: "note",
    source: "deprecatedSource",
    first: "deprecatedFirstTimestamp",
    last: "deprecatedLastTimestamp",
    count: "deprecatedCount",
    controller: "reportingController",
};

/// A time field that holds a time (Go's zero time reads as unset).
fn has_time(obj: &Value, key: &str) -> bool {
    set(obj, key).is_some_and(|t| !matches!(t.as_str(), Some("" | "0001-01-01T00:00:00Z")))
}

/// core/v1 Events (upstream's `legacyValidateEvent`, which every write
/// passes).
pub fn validate_event(obj: &Value) -> Vec<FieldError> {
    legacy_event(obj, &CORE_EVENT)
}

/// `events.k8s.io/v1` Events: the legacy rules on every write (reported
/// at the core paths, as upstream checks the internal Event).
pub fn validate_event_v1(obj: &Value) -> Vec<FieldError> {
    legacy_event(obj, &EVENTS_V1_EVENT)
}

fn legacy_event(obj: &Value, f: &EventFields) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let namespace = obj.pointer("/metadata/namespace").and_then(Value::as_str);
    let namespace = namespace.unwrap_or_default();
    let involved = obj.get(f.involved).unwrap_or(&Value::Null);
    let involved_ns = text(involved, "namespace");
    let ns_path = Path::new("involvedObject").child("namespace");
    let mismatch = if !has_time(obj, "eventTime") {
        if involved_ns.is_empty() {
            !matches!(namespace, "" | "default")
        } else {
            namespace != involved_ns
        }
    } else {
        involved_ns.is_empty() && !matches!(namespace, "default" | "kube-system")
    };
    if mismatch {
        errs.push(FieldError::invalid(
            &ns_path,
            involved_ns,
            "does not match event.namespace",
        ));
    }
    if has_time(obj, "eventTime") {
        new_event_fields(obj, f, &mut errs);
    }
    invalid_all(
        &Path::new("namespace"),
        namespace,
        is_dns1123_subdomain(namespace),
        &mut errs,
    );
    errs
}

/// The fields an event with `eventTime` (a "new" event) must carry.
fn new_event_fields(obj: &Value, f: &EventFields, errs: &mut Vec<FieldError>) {
    let controller = text(obj, f.controller);
    let controller_path = Path::new("reportingController");
    if controller.is_empty() {
        errs.push(FieldError::required(&controller_path, ""));
    }
    invalid_all(
        &controller_path,
        controller,
        is_qualified_name(controller),
        errs,
    );
    let limited = [
        ("reportingInstance", "reportingInstance", 128, true),
        ("action", "action", 128, true),
        ("reason", "reason", 128, true),
        ("message", f.message, 1024, false),
    ];
    for (name, key, limit, required) in limited {
        let value = text(obj, key);
        let path = Path::new(name);
        if required && value.is_empty() {
            errs.push(FieldError::required(&path, ""));
        }
        if value.len() > limit {
            let msg = format!("can have at most {limit} characters");
            errs.push(FieldError::invalid(&path, "", msg));
        }
    }
}

/// The rules upstream adds for Events created through `events.k8s.io/v1`
/// (`ValidateEventCreate` past the legacy ones).
pub fn validate_event_v1_create(obj: &Value) -> Vec<FieldError> {
    let f = &EVENTS_V1_EVENT;
    let mut errs = Vec::new();
    if let Some(series) = set(obj, "series") {
        if series
            .get("count")
            .and_then(Value::as_i64)
            .unwrap_or_default()
            < 2
        {
            let path = Path::new("series.count");
            errs.push(FieldError::invalid(&path, "", "should be at least 2"));
        }
        if !has_time(series, "lastObservedTime") {
            errs.push(FieldError::required(
                &Path::new("series.lastObservedTime"),
                "",
            ));
        }
    }
    if !has_time(obj, "eventTime") {
        errs.push(FieldError::required(&Path::new("eventTime"), ""));
    }
    let kind = text(obj, "type");
    if !matches!(kind, "Normal" | "Warning") {
        let msg = format!("has invalid value: {kind}");
        errs.push(FieldError::invalid(&Path::new("type"), "", msg));
    }
    let unset = |path: &str| FieldError::invalid(&Path::new(path), "", "needs to be unset");
    for (core, key) in [("firstTimestamp", f.first), ("lastTimestamp", f.last)] {
        if has_time(obj, key) {
            errs.push(unset(core));
        }
    }
    if obj.get(f.count).and_then(Value::as_i64).unwrap_or_default() != 0 {
        errs.push(unset("count"));
    }
    let source = obj.get(f.source).unwrap_or(&Value::Null);
    if !text(source, "component").is_empty() || !text(source, "host").is_empty() {
        errs.push(unset("source"));
    }
    errs
}

#[cfg(test)]
#[path = "core_objects_tests.rs"]
mod tests;
