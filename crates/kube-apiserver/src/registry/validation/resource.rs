//! Validation of resource.k8s.io DeviceTaintRules (upstream's
//! pkg/apis/resource/validation `ValidateDeviceTaintRule` and
//! `ValidateDeviceTaintRuleUpdate`): the selector's driver, pool and device
//! names are well formed, the taint's key is a label name, its value a label
//! value, and its effect, checked when the rule is created or the effect
//! changes, is one of the device taint effects.

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::{is_dns1123_subdomain, is_label_value, is_qualified_name};
use serde_json::Value;

use super::pod_volumes::csi_driver;
use super::{dns_label, invalid_all, set, text};

/// Upstream's `validDeviceTaintEffects`, sorted as its errors list them.
const TAINT_EFFECTS: &[&str] = &["NoExecute", "NoSchedule", "None"];

/// Upstream's `PoolNameMaxLength`.
const POOL_NAME_MAX_LENGTH: usize = 253;

fn spec(rule: &Value) -> &Value {
    rule.get("spec").unwrap_or(&Value::Null)
}

fn taint(rule: &Value) -> &Value {
    spec(rule).get("taint").unwrap_or(&Value::Null)
}

/// What holds for every DeviceTaintRule written: the selector and the
/// taint's key and value.
pub fn validate_device_taint_rule(rule: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("spec");
    if let Some(selector) = set(spec(rule), "deviceSelector") {
        device_taint_selector(selector, &path.child("deviceSelector"), &mut errs);
    }
    let (taint, path) = (taint(rule), path.child("taint"));
    let key = text(taint, "key");
    invalid_all(&path.child("key"), key, is_qualified_name(key), &mut errs);
    let value = text(taint, "value");
    if !value.is_empty() {
        invalid_all(
            &path.child("value"),
            value,
            is_label_value(value),
            &mut errs,
        );
    }
    errs
}

/// A new rule's taint effect.
pub fn validate_device_taint_rule_create(rule: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    taint_effect(taint(rule), &mut errs);
    errs
}

/// An update's taint effect, when it changes.
pub fn validate_device_taint_rule_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (taint, old_taint) = (taint(new), taint(old));
    if text(taint, "effect") != text(old_taint, "effect") {
        taint_effect(taint, &mut errs);
    }
    errs
}

fn taint_effect(taint: &Value, errs: &mut Vec<FieldError>) {
    let path = Path::new("spec").child("taint").child("effect");
    match text(taint, "effect") {
        "" => errs.push(FieldError::required(&path, "")),
        effect if !TAINT_EFFECTS.contains(&effect) => {
            errs.push(FieldError::not_supported(&path, effect, TAINT_EFFECTS))
        }
        _ => {}
    }
}

/// Upstream's `validateDeviceTaintSelector`: the names it sets.
fn device_taint_selector(selector: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if let Some(driver) = selector.get("driver").and_then(Value::as_str) {
        csi_driver(driver, &path.child("driver"), errs);
    }
    if let Some(pool) = selector.get("pool").and_then(Value::as_str) {
        pool_name(pool, &path.child("pool"), errs);
    }
    if let Some(device) = selector.get("device").and_then(Value::as_str) {
        dns_label(&path.child("device"), device, errs);
    }
}

/// Upstream's `validatePoolName`: DNS subdomains joined by slashes.
fn pool_name(name: &str, path: &Path, errs: &mut Vec<FieldError>) {
    if name.is_empty() {
        errs.push(FieldError::required(path, ""));
        return;
    }
    if name.len() > POOL_NAME_MAX_LENGTH {
        errs.push(FieldError::too_long(path, Some(POOL_NAME_MAX_LENGTH)));
    }
    for part in name.split('/') {
        invalid_all(path, part, is_dns1123_subdomain(part), errs);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(errs: Vec<FieldError>) -> Vec<String> {
        errs.iter().map(FieldError::to_string).collect()
    }

    #[test]
    fn rules_check_their_selector_and_taint() {
        let good = json!({"spec": {"deviceSelector": {"driver": "gpu.example.com",
            "pool": "node-1/a", "device": "gpu-0"},
            "taint": {"key": "example.com/broken", "value": "yes", "effect": "NoExecute"}}});
        assert!(validate_device_taint_rule(&good).is_empty());
        assert!(validate_device_taint_rule_create(&good).is_empty());
        let bad = json!({"spec": {"deviceSelector": {"driver": "Bad_Driver", "pool": "",
            "device": "GPU.0"}, "taint": {"key": "", "value": "-x", "effect": "PreferNoSchedule"}}});
        let errs = messages(validate_device_taint_rule(&bad));
        let mut fields: Vec<&str> = errs
            .iter()
            .map(|e| e.split(':').next().unwrap_or(""))
            .collect();
        fields.dedup();
        assert_eq!(
            fields,
            [
                "spec.deviceSelector.driver",
                "spec.deviceSelector.pool",
                "spec.deviceSelector.device",
                "spec.taint.key",
                "spec.taint.value"
            ],
            "{errs:?}"
        );
        assert_eq!(
            messages(validate_device_taint_rule_create(&bad)),
            ["spec.taint.effect: Unsupported value: \"PreferNoSchedule\": supported values: \"NoExecute\", \"NoSchedule\", \"None\""]
        );
        let no_effect = json!({"spec": {"taint": {"key": "k"}}});
        assert_eq!(
            messages(validate_device_taint_rule_create(&no_effect)),
            ["spec.taint.effect: Required value"]
        );
        assert!(validate_device_taint_rule_update(&bad, &bad).is_empty());
        assert_eq!(validate_device_taint_rule_update(&bad, &good).len(), 1);
    }
}
