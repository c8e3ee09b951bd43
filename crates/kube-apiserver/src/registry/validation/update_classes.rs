//! The update rules of kinds whose only update validation is a few fixed
//! fields: upstream's `ValidateStorageClassUpdate` and
//! `ValidateVolumeAttributesClassUpdate` (pkg/apis/storage/validation),
//! `validateIngressClassSpecUpdate` (networking), `ValidateEndpointSliceUpdate`
//! (discovery), `ValidateRuntimeClassUpdate` (node) and
//! `ValidatePriorityClassUpdate` (scheduling), with their messages.

use apimachinery::field_errors::{FieldError, Path};
use serde_json::Value;

use super::update::immutable_field;

/// A field that may not change, refused as Forbidden with `message`
/// (absent and null are the same unset value).
fn forbidden_change(new: &Value, old: &Value, key: &str, message: &str) -> Option<FieldError> {
    let set = |obj: &Value| obj.get(key).filter(|v| !v.is_null()).cloned();
    (set(new) != set(old)).then(|| FieldError::forbidden(&Path::new(key), message))
}

fn immutable(new: &Value, old: &Value, pointer: &str, path: &Path) -> Option<FieldError> {
    immutable_field(new.pointer(pointer), old.pointer(pointer), path)
}

pub fn validate_storage_class_update(new: &Value, old: &Value) -> Vec<FieldError> {
    [
        forbidden_change(
            new,
            old,
            "parameters",
            "updates to parameters are forbidden.",
        ),
        forbidden_change(
            new,
            old,
            "provisioner",
            "updates to provisioner are forbidden.",
        ),
        forbidden_change(
            new,
            old,
            "reclaimPolicy",
            "updates to reclaimPolicy are forbidden.",
        ),
        immutable(
            new,
            old,
            "/volumeBindingMode",
            &Path::new("volumeBindingMode"),
        ),
    ]
    .into_iter()
    .flatten()
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

pub fn validate_endpoint_slice_update(new: &Value, old: &Value) -> Vec<FieldError> {
    immutable(new, old, "/addressType", &Path::new("addressType"))
        .into_iter()
        .collect()
}

pub fn validate_runtime_class_update(new: &Value, old: &Value) -> Vec<FieldError> {
    immutable(new, old, "/handler", &Path::new("handler"))
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    type Validate = fn(&Value, &Value) -> Vec<FieldError>;

    /// Every immutable field of each kind: (kind, validation, old, new, the
    /// errors, as upstream words them).
    #[test]
    fn every_immutable_field_is_refused_as_upstream() {
        let sc = json!({"provisioner": "a", "parameters": {"k": "v"},
            "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate", "allowVolumeExpansion": false});
        let vac = json!({"driverName": "d", "parameters": {"k": "v"}});
        let cases: Vec<(&str, Validate, Value, Value, Vec<&str>)> = vec![
            (
                "StorageClass",
                validate_storage_class_update,
                sc.clone(),
                json!({"provisioner": "b", "parameters": {"k": "w"}, "reclaimPolicy": "Retain",
                    "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true}),
                vec![
                    "parameters: Forbidden: updates to parameters are forbidden.",
                    "provisioner: Forbidden: updates to provisioner are forbidden.",
                    "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
                    "volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable",
                ],
            ),
            ("StorageClass", validate_storage_class_update, sc.clone(), sc, vec![]),
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
                vec!["addressType: Invalid value: \"IPv6\": field is immutable"],
            ),
            (
                "RuntimeClass",
                validate_runtime_class_update,
                json!({"handler": "runc"}),
                json!({"handler": "kata"}),
                vec!["handler: Invalid value: \"kata\": field is immutable"],
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
        for (kind, validate, old, new, want) in cases {
            let got: Vec<String> = validate(&new, &old)
                .iter()
                .map(ToString::to_string)
                .collect();
            assert_eq!(got, want, "{kind}");
        }
    }
}
