//! resource.k8s.io/v1 DeviceTaintRules (GA in 1.37, served while the
//! DRADeviceTaintRules gate is on, as by default): created, read (kubectl
//! JSON, protobuf) and updated with kubectl as upstream's strategy and
//! validation have it: status dropped on create, generation counting spec
//! changes, `timeAdded` defaulted and renewed when the effect changes, the
//! effect one of NoSchedule, NoExecute and None; listed by discovery with a
//! status subresource, and gone from it when the gate is off. Enabling the
//! PodCertificateRequest gate (Beta, off by default) stops startup.

use serde_json::Value;

use crate::harness::TestServer;

const RULE: &str = r#"
apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata: {name: gpu-maintenance}
spec:
  deviceSelector: {driver: gpu.example.com, pool: node-1}
  taint: {key: example.com/maintenance, value: planned, effect: NoSchedule}
status:
  conditions:
  - {type: EvictionInProgress, status: "False", reason: Set, message: by client,
     lastTransitionTime: "2026-01-01T00:00:00Z"}
"#;

const KEPT_TIME: &str = "2026-01-01T00:00:00Z";

fn read(s: &TestServer) -> Value {
    let out = s.ok(&["get", "devicetaintrules", "gpu-maintenance", "-o", "json"]);
    serde_json::from_str(&out).expect("kubectl prints JSON")
}

fn patch(s: &TestServer, spec: &str) {
    s.ok(&[
        "patch",
        "devicetaintrule",
        "gpu-maintenance",
        "--type=merge",
        "-p",
        spec,
    ]);
}

fn device_taint_rules_are_served(s: &TestServer) {
    let resources = s.ok(&[
        "api-resources",
        "--api-group=resource.k8s.io",
        "--no-headers",
    ]);
    let line = resources
        .lines()
        .find(|l| l.starts_with("devicetaintrules "))
        .unwrap_or_else(|| panic!("{resources}"));
    let columns: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        columns,
        [
            "devicetaintrules",
            "resource.k8s.io/v1",
            "false",
            "DeviceTaintRule"
        ]
    );
    let group = s.ok(&["get", "--raw", "/apis/resource.k8s.io/v1"]);
    assert!(
        group.contains(r#""name":"devicetaintrules/status""#),
        "{group}"
    );

    let out = s.kubectl_stdin(&["create", "-f", "-"], RULE);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rule = read(s);
    assert_eq!(rule["metadata"]["generation"], 1);
    assert!(rule["status"].get("conditions").is_none(), "{rule}");
    let added = rule["spec"]["taint"]["timeAdded"]
        .as_str()
        .unwrap_or_default();
    assert!(added.len() == 20 && added.ends_with('Z'), "{rule}");
    let listed = s.ok(&["get", "devicetaintrules"]);
    assert!(
        listed
            .lines()
            .nth(1)
            .is_some_and(|l| l.starts_with("gpu-maintenance ")),
        "{listed}"
    );

    let path = "/apis/resource.k8s.io/v1/devicetaintrules/gpu-maintenance";
    let accept = "Accept: application/vnd.kubernetes.protobuf";
    let (code, headers, body) = crate::openapi_v2::get(s, path, &[accept]);
    assert_eq!(code, 200, "{headers}");
    let decoded = protobuf_codec::decode(&body).expect("a protobuf DeviceTaintRule");
    assert_eq!(decoded["kind"], "DeviceTaintRule");
    assert_eq!(decoded["spec"], rule["spec"]);

    patch(
        s,
        &format!(r#"{{"spec":{{"taint":{{"timeAdded":"{KEPT_TIME}"}}}}}}"#),
    );
    let rule = read(s);
    assert_eq!(rule["metadata"]["generation"], 2);
    assert_eq!(rule["spec"]["taint"]["timeAdded"], KEPT_TIME);
    patch(s, r#"{"spec":{"taint":{"effect":"NoExecute"}}}"#);
    let rule = read(s);
    assert_eq!(rule["metadata"]["generation"], 3);
    assert_eq!(rule["spec"]["taint"]["effect"], "NoExecute");
    assert_ne!(rule["spec"]["taint"]["timeAdded"], KEPT_TIME, "{rule}");

    let err = s.fails(&[
        "patch",
        "devicetaintrule",
        "gpu-maintenance",
        "--type=merge",
        "-p",
        r#"{"spec":{"taint":{"effect":"PreferNoSchedule","key":"-bad"}}}"#,
    ]);
    assert!(err.contains(r#"spec.taint.effect: Unsupported value: "PreferNoSchedule": supported values: "NoExecute", "NoSchedule", "None""#), "{err}");
    assert!(
        err.contains(r#"spec.taint.key: Invalid value: "-bad""#),
        "{err}"
    );
}

crate::harness::on_both_backends!(device_taint_rules_are_served);

#[test]
fn device_taint_rules_are_not_served_with_their_gate_off() {
    let s = TestServer::start_with(&["--feature-gates=DRADeviceTaintRules=false"]);
    let resources = s.ok(&[
        "api-resources",
        "--api-group=resource.k8s.io",
        "--no-headers",
    ]);
    assert!(resources.contains("resourceslices "), "{resources}");
    assert!(!resources.contains("devicetaintrules"), "{resources}");
}

/// PodCertificateRequests, which upstream serves only with their
/// off-by-default gate on, are not built: enabling the gate stops startup.
#[test]
fn pod_certificate_request_gate_is_refused() {
    let err = crate::harness::startup_error(&["--feature-gates=PodCertificateRequest=true"]);
    assert!(
        err.contains("PodCertificateRequest=true is not supported yet by this server"),
        "{err}"
    );
}
