//! Service spec validation (upstream's `ValidateService`): type, ports,
//! port names, protocols and target ports. NodePort ranges are the
//! allocator's concern.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::formats::{is_valid_port_name, is_valid_port_num};
use serde_json::Value;

use super::{dns_label, items, text};

const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// Validates a Service object.
pub fn validate_service(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    let kind = text(spec, "type");
    if !kind.is_empty() && !TYPES.contains(&kind) {
        errs.push(FieldError::not_supported(&path.child("type"), kind, TYPES));
    }
    let ports = items(spec, "ports");
    let headless = text(spec, "clusterIP") == "None";
    if ports.is_empty() && !headless && kind != "ExternalName" {
        errs.push(FieldError::required(&path.child("ports"), ""));
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.child("ports").index(i);
        validate_port(port, &p, ports.len() > 1, &mut names, &mut errs);
    }
    errs
}

fn validate_port<'a>(
    port: &'a Value,
    path: &Path,
    require_name: bool,
    names: &mut HashSet<&'a str>,
    errs: &mut Vec<FieldError>,
) {
    let name_path = path.child("name");
    let name = text(port, "name");
    if name.is_empty() {
        if require_name {
            errs.push(FieldError::required(&name_path, ""));
        }
    } else {
        dns_label(&name_path, name, errs);
        if !names.insert(name) {
            errs.push(FieldError::duplicate(&name_path, name));
        }
    }
    let n = port.get("port").and_then(Value::as_i64).unwrap_or_default();
    for msg in is_valid_port_num(n) {
        errs.push(FieldError::invalid(&path.child("port"), n, msg));
    }
    super::protocol(port, path, errs);
    let target = path.child("targetPort");
    match port.get("targetPort") {
        Some(Value::String(s)) => {
            for msg in is_valid_port_name(s) {
                errs.push(FieldError::invalid(&target, s.as_str(), msg));
            }
        }
        // Zero means "same as port" and is defaulted away.
        Some(Value::Number(t)) => match t.as_i64() {
            Some(0) => {}
            Some(t) => {
                for msg in is_valid_port_num(t) {
                    errs.push(FieldError::invalid(&target, t, msg));
                }
            }
            None => errs.push(FieldError::invalid(
                &target,
                Value::Number(t.clone()),
                "must be between 1 and 65535, inclusive",
            )),
        },
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(spec: Value) -> Vec<String> {
        let errs = validate_service(&json!({ "spec": spec }));
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn valid_services_pass() {
        assert!(messages(json!({"ports": [{"port": 80, "targetPort": "http"}]})).is_empty());
        assert!(messages(json!({"clusterIP": "None"})).is_empty());
        assert!(messages(json!({"type": "ExternalName", "externalName": "a.b"})).is_empty());
    }

    #[test]
    fn port_must_be_in_range() {
        assert_eq!(
            messages(json!({"ports": [{"port": 70000}]})),
            ["spec.ports[0].port: Invalid value: 70000: must be between 1 and 65535, inclusive"]
        );
    }

    #[test]
    fn ports_are_required() {
        assert_eq!(messages(json!({})), ["spec.ports: Required value"]);
    }

    #[test]
    fn names_required_and_unique_with_several_ports() {
        assert_eq!(
            messages(
                json!({"ports": [{"port": 1}, {"name": "a", "port": 2}, {"name": "a", "port": 3}]})
            ),
            [
                "spec.ports[0].name: Required value",
                "spec.ports[2].name: Duplicate value: \"a\"",
            ]
        );
    }

    #[test]
    fn type_protocol_and_target_port_are_checked() {
        assert_eq!(
            messages(json!({"type": "Magic", "ports": [{"port": 1, "protocol": "X", "targetPort": 70000}]})),
            [
                "spec.type: Unsupported value: \"Magic\": supported values: \"ClusterIP\", \"ExternalName\", \"LoadBalancer\", \"NodePort\"",
                "spec.ports[0].protocol: Unsupported value: \"X\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.ports[0].targetPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            ]
        );
    }
}
