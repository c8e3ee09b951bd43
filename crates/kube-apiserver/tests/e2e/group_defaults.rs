//! Minimal objects of the admissionregistration, flowcontrol, storage and
//! resource groups, created with kubectl, read back with upstream's v1
//! defaults (`SetDefaults_ValidatingWebhook`, `SetDefaults_Rule`,
//! `SetDefaults_ServiceReference`, `SetDefaults_LimitedPriorityLevelConfiguration`,
//! `SetDefaults_QueuingConfiguration`, `SetDefaults_CSIDriver`,
//! `SetDefaults_ExactDeviceRequest` and the tolerations' `+default`),
//! stored and read back through either backend's encoding.

use serde_json::{json, Value};

use crate::harness::TestServer;

const OBJECTS: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: defaulted}
webhooks:
- name: check.example.com
  sideEffects: None
  admissionReviewVersions: [v1]
  clientConfig:
    service: {namespace: default, name: nowhere}
  rules:
  - operations: [CREATE]
    apiGroups: [example.com]
    apiVersions: [v1]
    resources: [widgets]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: defaulted}
spec:
  type: Limited
  limited:
    limitResponse:
      type: Queue
      queuing: {}
---
apiVersion: storage.k8s.io/v1
kind: CSIDriver
metadata: {name: defaulted.csi.example.com}
spec: {}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: defaulted, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        tolerations: [{key: dedicated, effect: NoSchedule}]
"#;

fn read(s: &TestServer, resource: &str, name: &str) -> Value {
    let out = s.ok(&["get", resource, name, "-o", "json"]);
    serde_json::from_str(&out).expect("kubectl prints JSON")
}

fn other_groups_read_back_with_upstreams_defaults(s: &TestServer) {
    let out = s.kubectl_stdin(&["create", "-f", "-"], OBJECTS);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");

    let hook = &read(s, "validatingwebhookconfigurations", "defaulted")["webhooks"][0];
    assert_eq!(hook["failurePolicy"], "Fail");
    assert_eq!(hook["matchPolicy"], "Equivalent");
    assert_eq!(hook["namespaceSelector"], json!({}));
    assert_eq!(hook["objectSelector"], json!({}));
    assert_eq!(hook["timeoutSeconds"], 10);
    assert_eq!(hook["rules"][0]["scope"], "*");
    assert_eq!(hook["clientConfig"]["service"]["port"], 443);

    let level = read(s, "prioritylevelconfigurations", "defaulted");
    let limited = &level["spec"]["limited"];
    assert_eq!(limited["nominalConcurrencyShares"], 30);
    assert_eq!(limited["lendablePercent"], 0);
    assert_eq!(
        limited["limitResponse"]["queuing"],
        json!({"queues": 64, "handSize": 8, "queueLengthLimit": 50})
    );

    let driver = read(s, "csidrivers", "defaulted.csi.example.com");
    assert_eq!(
        driver["spec"],
        json!({"attachRequired": true, "podInfoOnMount": false,
            "volumeLifecycleModes": ["Persistent"], "storageCapacity": false,
            "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": false,
            "seLinuxMount": false})
    );

    let claim = read(s, "resourceclaims", "defaulted");
    let exactly = &claim["spec"]["devices"]["requests"][0]["exactly"];
    assert_eq!(exactly["allocationMode"], "ExactCount");
    assert_eq!(exactly["count"], 1);
    assert_eq!(exactly["tolerations"][0]["operator"], "Equal");
}

crate::harness::on_both_backends!(other_groups_read_back_with_upstreams_defaults);
