//! Pod spec validation (upstream's `ValidatePodSpec`): containers, ports,
//! policies, volumes and volume mounts.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::formats::is_valid_port_num;
use serde_json::Value;

use super::{dns_label, items, text};

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const RESTART_POLICIES: &[&str] = &["Always", "OnFailure", "Never"];
const DNS_POLICIES: &[&str] = &["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None"];

/// Validates a Pod object.
pub fn validate_pod(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    validate_pod_spec(spec, &Path::new("spec"))
}

/// Validates a pod spec found at `path` (also used for pod templates).
pub fn validate_pod_spec(spec: &Value, path: &Path) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let volumes = validate_volumes(spec, &path.child("volumes"), &mut errs);
    let mut names = HashSet::new();
    let containers = items(spec, "containers");
    if containers.is_empty() {
        errs.push(FieldError::required(&path.child("containers"), ""));
    }
    for key in ["initContainers", "containers"] {
        let list = path.child(key);
        for (i, c) in items(spec, key).iter().enumerate() {
            validate_container(c, &list.index(i), &volumes, &mut names, &mut errs);
        }
    }
    if let Some(policy) = spec.get("restartPolicy").and_then(Value::as_str) {
        let p = path.child("restartPolicy");
        if policy.is_empty() {
            errs.push(FieldError::required(&p, ""));
        } else if !RESTART_POLICIES.contains(&policy) {
            errs.push(FieldError::not_supported(&p, policy, RESTART_POLICIES));
        }
    }
    if let Some(policy) = spec.get("dnsPolicy").and_then(Value::as_str) {
        if !DNS_POLICIES.contains(&policy) {
            let p = path.child("dnsPolicy");
            errs.push(FieldError::not_supported(&p, policy, DNS_POLICIES));
        }
    }
    errs
}

/// Checks volume names and returns the set of them for the mounts.
fn validate_volumes<'a>(
    spec: &'a Value,
    path: &Path,
    errs: &mut Vec<FieldError>,
) -> HashSet<&'a str> {
    let mut names = HashSet::new();
    for (i, v) in items(spec, "volumes").iter().enumerate() {
        let p = path.index(i).child("name");
        let name = text(v, "name");
        if name.is_empty() {
            errs.push(FieldError::required(&p, ""));
        } else {
            dns_label(&p, name, errs);
        }
        if !names.insert(name) {
            errs.push(FieldError::duplicate(&p, name));
        }
    }
    names
}

fn validate_container<'a>(
    c: &'a Value,
    path: &Path,
    volumes: &HashSet<&str>,
    names: &mut HashSet<&'a str>,
    errs: &mut Vec<FieldError>,
) {
    let name_path = path.child("name");
    let name = text(c, "name");
    if name.is_empty() {
        errs.push(FieldError::required(&name_path, ""));
    } else {
        dns_label(&name_path, name, errs);
        if !names.insert(name) {
            errs.push(FieldError::duplicate(&name_path, name));
        }
    }
    if text(c, "image").is_empty() {
        errs.push(FieldError::required(&path.child("image"), ""));
    }
    for (i, port) in items(c, "ports").iter().enumerate() {
        validate_container_port(port, &path.child("ports").index(i), errs);
    }
    for (i, mount) in items(c, "volumeMounts").iter().enumerate() {
        let p = path.child("volumeMounts").index(i);
        let vol = text(mount, "name");
        if vol.is_empty() {
            errs.push(FieldError::required(&p.child("name"), ""));
        } else if !volumes.contains(vol) {
            errs.push(FieldError::not_found(&p.child("name"), vol));
        }
        if text(mount, "mountPath").is_empty() {
            errs.push(FieldError::required(&p.child("mountPath"), ""));
        }
    }
}

fn validate_container_port(port: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let p = path.child("containerPort");
    match port.get("containerPort").and_then(Value::as_i64) {
        None | Some(0) => errs.push(FieldError::required(&p, "")),
        Some(n) => {
            for msg in is_valid_port_num(n) {
                errs.push(FieldError::invalid(&p, n, msg));
            }
        }
    }
    if let Some(host) = port.get("hostPort").and_then(Value::as_i64) {
        if host != 0 {
            for msg in is_valid_port_num(host) {
                errs.push(FieldError::invalid(&path.child("hostPort"), host, msg));
            }
        }
    }
    protocol(port, path, errs);
}

/// A port's protocol, when given, is TCP, UDP or SCTP.
pub(super) fn protocol(port: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if let Some(proto) = port.get("protocol").and_then(Value::as_str) {
        let p = path.child("protocol");
        if proto.is_empty() {
            errs.push(FieldError::required(&p, ""));
        } else if !PROTOCOLS.contains(&proto) {
            errs.push(FieldError::not_supported(&p, proto, PROTOCOLS));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(pod: Value) -> Vec<String> {
        validate_pod(&pod).iter().map(ToString::to_string).collect()
    }

    fn pod(containers: Value) -> Value {
        json!({"spec": {"containers": containers}})
    }

    #[test]
    fn valid_pod_passes() {
        let p = json!({"spec": {
            "containers": [{"name": "a", "image": "nginx",
                "ports": [{"containerPort": 80, "protocol": "TCP"}],
                "volumeMounts": [{"name": "data", "mountPath": "/d"}]}],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}});
        assert!(messages(p).is_empty());
    }

    #[test]
    fn containers_are_required() {
        assert_eq!(
            messages(pod(json!([]))),
            ["spec.containers: Required value"]
        );
    }

    #[test]
    fn image_is_required() {
        assert_eq!(
            messages(pod(json!([{"name": "a"}]))),
            ["spec.containers[0].image: Required value"]
        );
    }

    #[test]
    fn container_names_are_required_labels_and_unique() {
        let errs = messages(json!({"spec": {
            "initContainers": [{"name": "a", "image": "x"}],
            "containers": [{"image": "x"}, {"name": "a", "image": "x"}, {"name": "A_b", "image": "x"}]}}));
        assert_eq!(errs[0], "spec.containers[0].name: Required value");
        assert_eq!(errs[1], "spec.containers[1].name: Duplicate value: \"a\"");
        assert!(errs[2].starts_with(
            "spec.containers[2].name: Invalid value: \"A_b\": a lowercase RFC 1123 label must"
        ));
        assert_eq!(errs.len(), 3);
    }

    #[test]
    fn container_ports_are_checked() {
        let errs = messages(pod(json!([{"name": "a", "image": "x", "ports": [
            {"containerPort": 70000, "protocol": "ICMP"}, {}]}])));
        assert_eq!(
            errs,
            [
                "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                "spec.containers[0].ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
                "spec.containers[0].ports[1].containerPort: Required value",
            ]
        );
    }

    #[test]
    fn policies_are_enumerated() {
        let errs = messages(json!({"spec": {
            "containers": [{"name": "a", "image": "x"}],
            "restartPolicy": "Sometimes", "dnsPolicy": "Google"}}));
        assert_eq!(
            errs,
            [
                "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
                "spec.dnsPolicy: Unsupported value: \"Google\": supported values: \"ClusterFirst\", \"ClusterFirstWithHostNet\", \"Default\", \"None\"",
            ]
        );
    }

    #[test]
    fn volumes_are_unique_and_mounts_refer_to_them() {
        let errs = messages(json!({"spec": {
            "containers": [{"name": "a", "image": "x",
                "volumeMounts": [{"name": "other", "mountPath": "/o"}]}],
            "volumes": [{"name": "v"}, {"name": "v"}]}}));
        assert_eq!(
            errs,
            [
                "spec.volumes[1].name: Duplicate value: \"v\"",
                "spec.containers[0].volumeMounts[0].name: Not found: \"other\"",
            ]
        );
    }
}
