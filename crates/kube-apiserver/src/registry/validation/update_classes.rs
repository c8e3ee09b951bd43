//! The update rules of kinds whose only update validation is a few fixed
//! fields: upstream's `ValidateStorageClassUpdate` and
//! `ValidateVolumeAttributesClassUpdate` (pkg/apis/storage/validation),
//! `validateIngressClassSpecUpdate` (networking), `ValidateEndpointSliceUpdate`
//! (discovery), `ValidateRuntimeClassUpdate` (node),
//! `ValidatePriorityClassUpdate` (scheduling), `ValidateIPAddressUpdate` and
//! `ValidateServiceCIDRUpdate` (networking), `ValidateControllerRevisionUpdate`
//! (apps), `ValidateClusterTrustBundleUpdate` (certificates),
//! `ValidateResourceClaimUpdate`, `ValidateResourceClaimTemplateUpdate` and
//! `ValidateResourceSliceUpdate` (resource), with their messages.

use apimachinery::field_errors::{FieldError, Path};
use serde_json::Value;

use super::text;
use super::update::{declared_immutable, immutable_field, invalid_typed, semantic_eq, IMMUTABLE};

/// A field that may not change, refused as Forbidden with `message`
/// (absent and null are the same unset value).
fn forbidden_change(new: &Value, old: &Value, key: &str, message: &str) -> Option<FieldError> {
    let set = |obj: &Value| obj.get(key).filter(|v| !v.is_null()).cloned();
    (set(new) != set(old)).then(|| FieldError::forbidden(&Path::new(key), message))
}

fn immutable(new: &Value, old: &Value, pointer: &str, path: &Path) -> Option<FieldError> {
    immutable_field(new.pointer(pointer), old.pointer(pointer), path)
}

/// StorageClasses: the provisioner, its parameters, the reclaim policy and
/// the binding mode are fixed; 1.37 checks all four declaratively at beta
/// (`+k8s:immutable`), so they are shown without their values.
pub fn validate_storage_class_update(new: &Value, old: &Value) -> Vec<FieldError> {
    [
        "provisioner",
        "parameters",
        "reclaimPolicy",
        "volumeBindingMode",
    ]
    .into_iter()
    .filter_map(|key| declared_immutable(new.get(key), old.get(key), &Path::new(key)))
    .collect()
}

pub fn validate_volume_attributes_class_update(new: &Value, old: &Value) -> Vec<FieldError> {
    [
        forbidden_change(
            new,
            old,
            "driverName",
            "updates to driverName are forbidden.",
        ),
        forbidden_change(
            new,
            old,
            "parameters",
            "updates to parameters are forbidden.",
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

pub fn validate_ingress_class_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let path = Path::new("spec").child("controller");
    immutable(new, old, "/spec/controller", &path)
        .into_iter()
        .collect()
}

/// EndpointSlices: the address type is fixed (beta declarative in 1.37).
pub fn validate_endpoint_slice_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let path = Path::new("addressType");
    declared_immutable(new.get("addressType"), old.get("addressType"), &path)
        .into_iter()
        .collect()
}

/// RuntimeClasses: the handler is fixed (beta declarative in 1.37).
pub fn validate_runtime_class_update(new: &Value, old: &Value) -> Vec<FieldError> {
    declared_immutable(
        new.get("handler"),
        old.get("handler"),
        &Path::new("handler"),
    )
    .into_iter()
    .collect()
}

pub fn validate_priority_class_update(new: &Value, old: &Value) -> Vec<FieldError> {
    [
        forbidden_change(new, old, "value", "may not be changed in an update."),
        immutable(
            new,
            old,
            "/preemptionPolicy",
            &Path::new("preemptionPolicy"),
        ),
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// IPAddresses: the parent reference is fixed (beta declarative in 1.37).
pub fn validate_ip_address_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let (n, o) = (
        new.pointer("/spec/parentRef"),
        old.pointer("/spec/parentRef"),
    );
    let path = Path::new("spec").child("parentRef");
    declared_immutable(n, o, &path).into_iter().collect()
}

/// ServiceCIDRs: the CIDRs are fixed, except that a single-stack range may
/// gain a second one (upstream's single to dual-stack upgrade).
pub fn validate_service_cidr_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let cidrs = |obj: &Value| -> Vec<String> {
        super::items(obj.get("spec").unwrap_or(&Value::Null), "cidrs")
            .iter()
            .map(|c| c.as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let (n, o) = (cidrs(new), cidrs(old));
    let path = Path::new("spec").child("cidrs");
    let changed_at = |i: usize| {
        (n[i] != o[i]).then(|| FieldError::invalid(&path.index(i), n[i].as_str(), IMMUTABLE))
    };
    match (o.len(), n.len()) {
        (before, after) if before == after => (0..n.len()).filter_map(changed_at).collect(),
        (1, 2) => changed_at(0)
            .into_iter()
            .chain(super::networking::validate_service_cidr_spec(new))
            .collect(),
        _ => vec![FieldError::invalid(&path, n.clone(), IMMUTABLE)],
    }
}

/// ControllerRevisions: the data is fixed (shown as it was sent).
pub fn validate_controller_revision_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let (n, o) = (new.get("data"), old.get("data"));
    if semantic_eq(n, o) {
        return Vec::new();
    }
    let shown = n.cloned().unwrap_or(Value::Null);
    vec![invalid_typed(&Path::new("data"), &shown, IMMUTABLE)]
}

/// ClusterTrustBundles: the signer name is fixed.
pub fn validate_cluster_trust_bundle_update(new: &Value, old: &Value) -> Vec<FieldError> {
    fn signer(obj: &Value) -> &str {
        text(obj.get("spec").unwrap_or(&Value::Null), "signerName")
    }
    if signer(new) == signer(old) {
        return Vec::new();
    }
    let path = Path::new("spec").child("signerName");
    vec![FieldError::invalid(&path, signer(new), IMMUTABLE)]
}

/// ResourceClaims: the spec is fixed (beta declarative in 1.37); status
/// goes through its own subresource.
pub fn validate_resource_claim_update(new: &Value, old: &Value) -> Vec<FieldError> {
    declared_immutable(new.get("spec"), old.get("spec"), &Path::new("spec"))
        .into_iter()
        .collect()
}

/// ResourceClaimTemplates: the template's spec is fixed. Upstream shows
/// the internal Go struct; here the value is the v1 object.
pub fn validate_resource_claim_template_update(new: &Value, old: &Value) -> Vec<FieldError> {
    immutable(new, old, "/spec", &Path::new("spec"))
        .into_iter()
        .collect()
}

/// ResourceSlices: the pool's name, the driver and the node are fixed.
pub fn validate_resource_slice_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let spec = Path::new("spec");
    let text_at = |obj: &Value, pointer: &str| {
        Value::from(
            obj.pointer(pointer)
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )
    };
    let mut errs = Vec::new();
    for (pointer, path) in [
        ("/spec/pool/name", spec.child("pool").child("name")),
        ("/spec/driver", spec.child("driver")),
    ] {
        let n = text_at(new, pointer);
        if n != text_at(old, pointer) {
            errs.push(FieldError::invalid(&path, n, IMMUTABLE));
        }
    }
    errs.extend(immutable(
        new,
        old,
        "/spec/nodeName",
        &spec.child("nodeName"),
    ));
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    type Validate = fn(&Value, &Value) -> Vec<FieldError>;
    type Case = (&'static str, Validate, Value, Value, Vec<&'static str>);

    /// The kinds whose rules came with the README's list (issue 18).
    fn new_rule_cases() -> Vec<Case> {
        let ip =
            |name: &str| json!({"spec": {"parentRef": {"resource": "services", "name": name}}});
        let cidrs = |c: Value| json!({"spec": {"cidrs": c}});
        let claim = |class: &str| {
            json!({"spec": {"devices": {"requests": [{"name": "gpu",
                "exactly": {"deviceClassName": class}}]}}})
        };
        let mut allocated = claim("a");
        allocated["status"] = json!({"allocation": {"devices": {"results": []}}});
        let ctb = |signer: &str| json!({"spec": {"signerName": signer, "trustBundle": "x"}});
        vec![
            (
                "IPAddress",
                validate_ip_address_update,
                ip("a"),
                ip("b"),
                vec!["spec.parentRef: Invalid value: null: field is immutable"],
            ),
            (
                "ServiceCIDR",
                validate_service_cidr_update,
                cidrs(json!(["10.0.0.0/24"])),
                cidrs(json!(["10.0.1.0/24"])),
                vec!["spec.cidrs[0]: Invalid value: \"10.0.1.0/24\": field is immutable"],
            ),
            (
                "ServiceCIDR",
                validate_service_cidr_update,
                cidrs(json!(["10.0.0.0/24"])),
                cidrs(json!(["10.0.0.0/24", "fd00::/64"])),
                vec![],
            ),
            (
                "ServiceCIDR",
                validate_service_cidr_update,
                cidrs(json!(["10.0.0.0/24", "fd00::/64"])),
                cidrs(json!(["10.0.0.0/24"])),
                vec!["spec.cidrs: Invalid value: [\"10.0.0.0/24\"]: field is immutable"],
            ),
            (
                "ControllerRevision",
                validate_controller_revision_update,
                json!({"data": {"spec": {"b": 1, "a": 2}}, "revision": 1}),
                json!({"data": {"spec": {"b": 3, "a": 2}}, "revision": 1}),
                vec!["data: Invalid value: {\"spec\":{\"b\":3,\"a\":2}}: field is immutable"],
            ),
            (
                "ClusterTrustBundle",
                validate_cluster_trust_bundle_update,
                ctb("example.com/a"),
                ctb("example.com/b"),
                vec!["spec.signerName: Invalid value: \"example.com/b\": field is immutable"],
            ),
            (
                "ResourceClaim",
                validate_resource_claim_update,
                claim("a"),
                claim("b"),
                vec!["spec: Invalid value: null: field is immutable"],
            ),
            (
                "ResourceClaim",
                validate_resource_claim_update,
                claim("a"),
                allocated,
                vec![],
            ),
            ("ResourceClaimTemplate", validate_resource_claim_template_update,
                json!({"spec": {"spec": {"devices": {}}}}),
                json!({"spec": {"spec": {"devices": {"requests": [{"name": "r"}]}}}}),
                vec!["spec: Invalid value: {\"spec\":{\"devices\":{\"requests\":[{\"name\":\"r\"}]}}}: field is immutable"]),
            ("ResourceSlice", validate_resource_slice_update,
                json!({"spec": {"driver": "d", "pool": {"name": "p", "generation": 1}, "nodeName": "n1"}}),
                json!({"spec": {"driver": "e", "pool": {"name": "q", "generation": 2}, "nodeName": "n2"}}),
                vec![
                    "spec.pool.name: Invalid value: \"q\": field is immutable",
                    "spec.driver: Invalid value: \"e\": field is immutable",
                    "spec.nodeName: Invalid value: \"n2\": field is immutable",
                ]),
            ("ResourceSlice", validate_resource_slice_update,
                json!({"spec": {"driver": "d", "pool": {"name": "p", "generation": 1}, "allNodes": true}}),
                json!({"spec": {"driver": "d", "pool": {"name": "p", "generation": 2}, "allNodes": true,
                    "devices": [{"name": "x"}]}}),
                vec![]),
        ]
    }

    /// Every immutable field of each kind: (kind, validation, old, new, the
    /// errors, as upstream words them).
    #[test]
    fn every_immutable_field_is_refused_as_upstream() {
        let sc = json!({"provisioner": "a", "parameters": {"k": "v"},
            "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate", "allowVolumeExpansion": false});
        let vac = json!({"driverName": "d", "parameters": {"k": "v"}});
        let mut cases: Vec<Case> = vec![
            (
                "StorageClass",
                validate_storage_class_update,
                sc.clone(),
                json!({"provisioner": "b", "parameters": {"k": "w"}, "reclaimPolicy": "Retain",
                    "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true}),
                vec![
                    "provisioner: Invalid value: null: field is immutable",
                    "parameters: Invalid value: null: field is immutable",
                    "reclaimPolicy: Invalid value: null: field is immutable",
                    "volumeBindingMode: Invalid value: null: field is immutable",
                ],
            ),
            (
                "StorageClass",
                validate_storage_class_update,
                sc.clone(),
                sc,
                vec![],
            ),
            (
                "VolumeAttributesClass",
                validate_volume_attributes_class_update,
                vac,
                json!({"driverName": "e", "parameters": {}}),
                vec![
                    "driverName: Forbidden: updates to driverName are forbidden.",
                    "parameters: Forbidden: updates to parameters are forbidden.",
                ],
            ),
            (
                "IngressClass",
                validate_ingress_class_update,
                json!({"spec": {"controller": "example.com/a"}}),
                json!({"spec": {"controller": "example.com/b", "parameters": {"kind": "K", "name": "n"}}}),
                vec!["spec.controller: Invalid value: \"example.com/b\": field is immutable"],
            ),
            (
                "EndpointSlice",
                validate_endpoint_slice_update,
                json!({"addressType": "IPv4", "endpoints": []}),
                json!({"addressType": "IPv6", "endpoints": []}),
                vec!["addressType: Invalid value: null: field is immutable"],
            ),
            (
                "RuntimeClass",
                validate_runtime_class_update,
                json!({"handler": "runc"}),
                json!({"handler": "kata"}),
                vec!["handler: Invalid value: null: field is immutable"],
            ),
            (
                "PriorityClass",
                validate_priority_class_update,
                json!({"value": 1, "preemptionPolicy": "PreemptLowerPriority", "description": "a"}),
                json!({"value": 2, "preemptionPolicy": "Never", "description": "b"}),
                vec![
                    "value: Forbidden: may not be changed in an update.",
                    "preemptionPolicy: Invalid value: \"Never\": field is immutable",
                ],
            ),
        ];
        cases.extend(new_rule_cases());
        for (kind, validate, old, new, want) in cases {
            let got: Vec<String> = validate(&new, &old)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, want, "{kind}");
        }
    }
}
