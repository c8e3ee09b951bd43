//! Upstream's defaulting of the GA kinds of admissionregistration,
//! flowcontrol, resource, networking and storage (the `SetDefaults_*` of
//! pkg/apis/<group>/v1/defaults.go and the `+default` markers of
//! k8s.io/api, Kubernetes 1.37), one row per kind listing the defaults it
//! checks, applied through the kind's scheme as a request body is.
//!
//! Kinds of these groups (and of certificates, coordination, node and
//! policy) that upstream does not default, checked to stay as sent:
//! CertificateSigningRequest, ClusterTrustBundle, Lease, Ingress,
//! IPAddress, ServiceCIDR, RuntimeClass, PodDisruptionBudget, CSINode,
//! CSIStorageCapacity, VolumeAttributesClass and DeviceClass.
//! StorageClass, NetworkPolicy, PriorityClass, EndpointSlice and the RBAC
//! bindings have their rows in `defaults_tests`.

use serde_json::{json, Value};

use super::defaults_tests::{assert_defaults, at, defaulted, Expected, Row};

const ADMISSION: &str = "admissionregistration.k8s.io/v1";
const FLOWCONTROL: &str = "flowcontrol.apiserver.k8s.io/v1";
const RESOURCE: &str = "resource.k8s.io/v1";

fn rule() -> Value {
    json!({"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"],
        "resources": ["pods"]})
}

fn webhook_configuration() -> Value {
    json!({"webhooks": [{"name": "w.example.com", "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"namespace": "n", "name": "s"}},
        "rules": [rule()]}]})
}

/// `SetDefaults_ValidatingWebhook` (the mutating one adds the
/// reinvocation policy), `SetDefaults_Rule`, `SetDefaults_ServiceReference`.
fn webhook_defaults() -> Expected {
    at(vec![
        ("/webhooks/0/failurePolicy", json!("Fail")),
        ("/webhooks/0/matchPolicy", json!("Equivalent")),
        ("/webhooks/0/namespaceSelector", json!({})),
        ("/webhooks/0/objectSelector", json!({})),
        ("/webhooks/0/timeoutSeconds", json!(10)),
        ("/webhooks/0/rules/0/scope", json!("*")),
        ("/webhooks/0/clientConfig/service/port", json!(443)),
    ])
}

/// `SetDefaults_MatchResources` and `SetDefaults_Rule` below `prefix`.
fn match_resources_defaults(prefix: &str) -> Expected {
    [
        ("matchPolicy", json!("Equivalent")),
        ("namespaceSelector", json!({})),
        ("objectSelector", json!({})),
        ("resourceRules/0/scope", json!("*")),
        ("excludeResourceRules/0/scope", json!("*")),
    ]
    .into_iter()
    .map(|(p, v)| (format!("{prefix}/{p}"), v))
    .collect()
}

fn match_resources() -> Value {
    json!({"resourceRules": [rule()], "excludeResourceRules": [rule()]})
}

fn admission_rows() -> Vec<Row> {
    let mut mutating_hook = webhook_defaults();
    mutating_hook.push(("/webhooks/0/reinvocationPolicy".into(), json!("Never")));
    let mut policy = match_resources_defaults("/spec/matchConstraints");
    policy.push(("/spec/failurePolicy".into(), json!("Fail")));
    let binding = match_resources_defaults("/spec/matchResources");
    vec![
        (
            ADMISSION,
            "ValidatingWebhookConfiguration",
            webhook_configuration(),
            webhook_defaults(),
        ),
        (
            ADMISSION,
            "MutatingWebhookConfiguration",
            webhook_configuration(),
            mutating_hook,
        ),
        (
            ADMISSION,
            "ValidatingAdmissionPolicy",
            json!({"spec": {"matchConstraints": match_resources(),
                "validations": [{"expression": "true"}]}}),
            policy.clone(),
        ),
        (
            ADMISSION,
            "MutatingAdmissionPolicy",
            json!({"spec": {"matchConstraints": match_resources(),
                "reinvocationPolicy": "Never"}}),
            policy,
        ),
        (
            ADMISSION,
            "ValidatingAdmissionPolicyBinding",
            json!({"spec": {"policyName": "p", "validationActions": ["Deny"],
                "matchResources": match_resources()}}),
            binding.clone(),
        ),
        (
            ADMISSION,
            "MutatingAdmissionPolicyBinding",
            json!({"spec": {"policyName": "p", "matchResources": match_resources()}}),
            binding,
        ),
    ]
}

fn flowcontrol_rows() -> Vec<Row> {
    vec![
        (
            FLOWCONTROL,
            "FlowSchema",
            json!({"spec": {"priorityLevelConfiguration": {"name": "p"}}}),
            at(vec![("/spec/matchingPrecedence", json!(1000))]),
        ),
        (
            FLOWCONTROL,
            "PriorityLevelConfiguration",
            json!({"spec": {"type": "Limited", "limited": {
                "limitResponse": {"type": "Queue", "queuing": {}}}}}),
            at(vec![
                ("/spec/limited/nominalConcurrencyShares", json!(30)),
                ("/spec/limited/lendablePercent", json!(0)),
                ("/spec/limited/limitResponse/queuing/handSize", json!(8)),
                ("/spec/limited/limitResponse/queuing/queues", json!(64)),
                (
                    "/spec/limited/limitResponse/queuing/queueLengthLimit",
                    json!(50),
                ),
            ]),
        ),
        (
            FLOWCONTROL,
            "PriorityLevelConfiguration",
            json!({"spec": {"type": "Exempt", "exempt": {}}}),
            at(vec![
                ("/spec/exempt/nominalConcurrencyShares", json!(0)),
                ("/spec/exempt/lendablePercent", json!(0)),
            ]),
        ),
    ]
}

fn claim_spec() -> Value {
    json!({"devices": {"requests": [
        {"name": "a", "exactly": {"deviceClassName": "c", "tolerations": [{"key": "k"}]}},
        {"name": "b", "firstAvailable": [{"name": "x", "deviceClassName": "c"}]}
    ]}})
}

/// `SetDefaults_ExactDeviceRequest`, `SetDefaults_DeviceSubRequest` and the
/// tolerations' `+default="Equal"` below `prefix`.
fn claim_spec_defaults(prefix: &str) -> Expected {
    [
        ("/0/exactly/allocationMode", json!("ExactCount")),
        ("/0/exactly/count", json!(1)),
        ("/0/exactly/tolerations/0/operator", json!("Equal")),
        ("/1/firstAvailable/0/allocationMode", json!("ExactCount")),
        ("/1/firstAvailable/0/count", json!(1)),
    ]
    .into_iter()
    .map(|(p, v)| (format!("{prefix}/devices/requests{p}"), v))
    .collect()
}

fn resource_and_storage_rows() -> Vec<Row> {
    vec![
        (
            RESOURCE,
            "ResourceClaim",
            json!({"spec": claim_spec()}),
            claim_spec_defaults("/spec"),
        ),
        (
            RESOURCE,
            "ResourceClaimTemplate",
            json!({"spec": {"spec": claim_spec()}}),
            claim_spec_defaults("/spec/spec"),
        ),
        (
            "networking.k8s.io/v1",
            "IngressClass",
            json!({"spec": {"controller": "c", "parameters": {"kind": "K", "name": "n"}}}),
            at(vec![("/spec/parameters/scope", json!("Cluster"))]),
        ),
        (
            "storage.k8s.io/v1",
            "CSIDriver",
            json!({"spec": {}}),
            at(vec![
                ("/spec/attachRequired", json!(true)),
                ("/spec/podInfoOnMount", json!(false)),
                ("/spec/storageCapacity", json!(false)),
                ("/spec/fsGroupPolicy", json!("ReadWriteOnceWithFSType")),
                ("/spec/volumeLifecycleModes", json!(["Persistent"])),
                ("/spec/requiresRepublish", json!(false)),
                ("/spec/seLinuxMount", json!(false)),
            ]),
        ),
        (
            "storage.k8s.io/v1",
            "VolumeAttachment",
            json!({"spec": {"attacher": "a", "nodeName": "n", "source": {"inlineVolumeSpec": {
                "hostPath": {"path": "/x"}, "rbd": {"monitors": ["m"], "image": "i"}}}}}),
            at(vec![
                ("/spec/source/inlineVolumeSpec/hostPath/type", json!("")),
                ("/spec/source/inlineVolumeSpec/rbd/pool", json!("rbd")),
                ("/spec/source/inlineVolumeSpec/rbd/user", json!("admin")),
                (
                    "/spec/source/inlineVolumeSpec/rbd/keyring",
                    json!("/etc/ceph/keyring"),
                ),
            ]),
        ),
    ]
}

#[test]
fn every_kind_of_the_other_groups_gets_upstreams_defaults() {
    assert_defaults(
        admission_rows()
            .into_iter()
            .chain(flowcontrol_rows())
            .chain(resource_and_storage_rows()),
    );
}

/// `SetDefaults_DeviceTaint` stamps the time, which no row can list.
#[test]
fn resource_slice_taints_get_the_time_they_were_added() {
    let slice = defaulted(
        RESOURCE,
        "ResourceSlice",
        json!({"spec": {"driver": "d", "devices": [{"name": "d0",
            "taints": [{"key": "k", "effect": "NoSchedule"}]}]}}),
    );
    let added = slice.pointer("/spec/devices/0/taints/0/timeAdded");
    let added = added.and_then(Value::as_str).unwrap_or_default();
    assert!(added.len() == 20 && added.ends_with('Z'), "{added:?}");
}

#[test]
fn kinds_upstream_does_not_default_stay_as_sent() {
    let bodies = [
        (
            "certificates.k8s.io/v1",
            "CertificateSigningRequest",
            json!({"spec": {"request": "cmVx", "signerName": "example.com/s"}}),
        ),
        (
            "certificates.k8s.io/v1",
            "ClusterTrustBundle",
            json!({"spec": {"trustBundle": "x"}}),
        ),
        (
            "coordination.k8s.io/v1",
            "Lease",
            json!({"spec": {"holderIdentity": "h"}}),
        ),
        (
            "networking.k8s.io/v1",
            "Ingress",
            json!({"spec": {"rules": [{"http": {"paths": [{"path": "/",
                "backend": {"service": {"name": "s", "port": {"number": 80}}}}]}}]}}),
        ),
        (
            "networking.k8s.io/v1",
            "IPAddress",
            json!({"spec": {"parentRef": {"resource": "services", "name": "s"}}}),
        ),
        (
            "networking.k8s.io/v1",
            "ServiceCIDR",
            json!({"spec": {"cidrs": ["10.0.0.0/24"]}}),
        ),
        ("node.k8s.io/v1", "RuntimeClass", json!({"handler": "h"})),
        (
            "policy/v1",
            "PodDisruptionBudget",
            json!({"spec": {"minAvailable": 1}}),
        ),
        (
            "storage.k8s.io/v1",
            "CSINode",
            json!({"spec": {"drivers": [{"name": "d", "nodeID": "n"}]}}),
        ),
        (
            "storage.k8s.io/v1",
            "CSIStorageCapacity",
            json!({"storageClassName": "s"}),
        ),
        (
            "storage.k8s.io/v1",
            "VolumeAttributesClass",
            json!({"driverName": "d"}),
        ),
        (
            RESOURCE,
            "DeviceClass",
            json!({"spec": {"selectors": [{"cel": {"expression": "true"}}]}}),
        ),
    ];
    for (api_version, kind, body) in bodies {
        assert_eq!(defaulted(api_version, kind, body.clone()), body, "{kind}");
    }
}
