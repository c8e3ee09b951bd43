//! resource.k8s.io/v1 defaults (upstream's pkg/apis/resource/v1
//! `defaults.go` and the `+default` markers of k8s.io/api/resource/v1):
//! device requests and their subrequests take `ExactCount` devices, one
//! unless told; tolerations compare with `Equal`; a ResourceSlice's device
//! taints and a DeviceTaintRule's taint record when they were added. Also
//! the DeviceTaintRule strategy's update rule (upstream's
//! pkg/registry/resource/devicetaintrule): a changed effect is added anew.

use apiserver::registry::object_meta;
use serde_json::{json, Value};

use super::pod_defaults::default_nonempty;
use super::ResourceStrategy;

fn items_mut(obj: Option<&mut Value>) -> impl Iterator<Item = &mut Value> {
    obj.and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter(|item| item.is_object())
}

/// `SetDefaults_ExactDeviceRequest` and `SetDefaults_DeviceSubRequest`
/// (both Go strings and integers, so empty and zero count as unset), with
/// the tolerations' `+default="Equal"`.
fn default_request(request: &mut Value) {
    default_nonempty(request, "allocationMode", "ExactCount");
    let zero = request.get("count").and_then(Value::as_i64).unwrap_or(0) == 0;
    if request["allocationMode"] == "ExactCount" && zero {
        request["count"] = json!(1);
    }
    default_tolerations(request);
}

fn default_tolerations(holder: &mut Value) {
    for toleration in items_mut(holder.get_mut("tolerations")) {
        default_nonempty(toleration, "operator", "Equal");
    }
}

/// The requests of a claim's spec (`ResourceClaimSpec`).
fn default_claim_spec(spec: Option<&mut Value>) {
    let requests = spec.and_then(|s| s.pointer_mut("/devices/requests"));
    for request in items_mut(requests) {
        if let Some(exactly) = request.get_mut("exactly").filter(|e| e.is_object()) {
            default_request(exactly);
        }
        for sub in items_mut(request.get_mut("firstAvailable")) {
            default_request(sub);
        }
    }
}

/// `SetObjectDefaults_ResourceClaim`: the spec's requests and the
/// tolerations of the allocation's results.
fn resource_claim_defaults(claim: &mut Value) {
    default_claim_spec(claim.get_mut("spec"));
    let results = claim.pointer_mut("/status/allocation/devices/results");
    for result in items_mut(results) {
        default_tolerations(result);
    }
}

fn resource_claim_template_defaults(template: &mut Value) {
    default_claim_spec(template.pointer_mut("/spec/spec"));
}

/// `SetDefaults_DeviceTaint`: a taint without `timeAdded` was added now
/// (to the second).
fn default_taint(taint: &mut Value) {
    if taint.get("timeAdded").is_none_or(Value::is_null) {
        taint["timeAdded"] = json!(object_meta::now());
    }
}

fn resource_slice_defaults(slice: &mut Value) {
    for device in items_mut(slice.pointer_mut("/spec/devices")) {
        for taint in items_mut(device.get_mut("taints")) {
            default_taint(taint);
        }
    }
}

/// `SetObjectDefaults_DeviceTaintRule`: the rule's taint.
fn device_taint_rule_defaults(rule: &mut Value) {
    if let Some(taint) = rule.pointer_mut("/spec/taint").filter(|t| t.is_object()) {
        default_taint(taint);
    }
}

/// The DeviceTaintRule strategy's `PrepareForUpdate`: a new effect whose
/// `timeAdded` the client left as it was gets the time of the change, so
/// `timeAdded` tells when the effect was added.
fn device_taint_rule_update(new: &mut Value, old: &Value) {
    let (effect, added) = ("/spec/taint/effect", "/spec/taint/timeAdded");
    if new.pointer(effect) != old.pointer(effect) && new.pointer(added) == old.pointer(added) {
        if let Some(taint) = new.pointer_mut("/spec/taint").filter(|t| t.is_object()) {
            taint["timeAdded"] = json!(object_meta::now());
        }
    }
}

pub fn resource_claims(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: resource_claim_defaults,
        ..base
    }
}

pub fn resource_claim_templates(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: resource_claim_template_defaults,
        ..base
    }
}

pub fn resource_slices(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: resource_slice_defaults,
        ..base
    }
}

pub fn device_taint_rules(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: device_taint_rule_defaults,
        on_update: device_taint_rule_update,
        ..base
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_take_one_exact_device_unless_told() {
        let mut claim = json!({"spec": {"devices": {"requests": [
            {"name": "a", "exactly": {"deviceClassName": "c",
                "tolerations": [{"key": "k"}, {"key": "e", "operator": "Exists"}]}},
            {"name": "b", "exactly": {"deviceClassName": "c", "allocationMode": "All"}},
            {"name": "s", "firstAvailable": [
                {"name": "x", "deviceClassName": "c", "count": 3},
                {"name": "y", "deviceClassName": "c", "allocationMode": "", "count": 0}]}
        ]}}, "status": {"allocation": {"devices": {"results": [{"tolerations": [{}]}]}}}});
        resource_claim_defaults(&mut claim);
        let requests = &claim["spec"]["devices"]["requests"];
        assert_eq!(requests[0]["exactly"]["allocationMode"], "ExactCount");
        assert_eq!(requests[0]["exactly"]["count"], 1);
        let tolerations = &requests[0]["exactly"]["tolerations"];
        assert_eq!(
            (&tolerations[0]["operator"], &tolerations[1]["operator"]),
            (&json!("Equal"), &json!("Exists"))
        );
        assert!(requests[1]["exactly"].get("count").is_none());
        let subs = &requests[2]["firstAvailable"];
        assert_eq!(subs[0]["count"], 3);
        assert_eq!(
            (&subs[1]["allocationMode"], &subs[1]["count"]),
            (&json!("ExactCount"), &json!(1))
        );
        let result = &claim["status"]["allocation"]["devices"]["results"][0];
        assert_eq!(result["tolerations"][0]["operator"], "Equal");
    }

    #[test]
    fn slice_taints_record_when_they_were_added() {
        let mut slice = json!({"spec": {"devices": [{"name": "d", "taints": [
            {"key": "k", "effect": "NoSchedule"},
            {"key": "l", "effect": "NoExecute", "timeAdded": "2026-01-01T00:00:00Z"}]}]}});
        resource_slice_defaults(&mut slice);
        let taints = &slice["spec"]["devices"][0]["taints"];
        let added = taints[0]["timeAdded"].as_str().unwrap_or_default();
        assert!(added.len() == 20 && added.ends_with('Z'), "{added}");
        assert_eq!(taints[1]["timeAdded"], "2026-01-01T00:00:00Z");
    }

    #[test]
    fn a_rules_taint_is_added_when_created_and_when_its_effect_changes() {
        let old = json!({"spec": {"taint": {"key": "k", "effect": "NoSchedule",
            "timeAdded": "2026-01-01T00:00:00Z"}}});
        let mut created = json!({"spec": {"taint": {"key": "k", "effect": "NoSchedule"}}});
        device_taint_rule_defaults(&mut created);
        assert_ne!(created["spec"]["taint"]["timeAdded"], Value::Null);
        let mut relabelled = old.clone();
        relabelled["spec"]["taint"]["value"] = json!("v");
        device_taint_rule_update(&mut relabelled, &old);
        assert_eq!(
            relabelled["spec"]["taint"]["timeAdded"],
            "2026-01-01T00:00:00Z"
        );
        let mut evicting = old.clone();
        evicting["spec"]["taint"]["effect"] = json!("NoExecute");
        device_taint_rule_update(&mut evicting, &old);
        assert_ne!(
            evicting["spec"]["taint"]["timeAdded"],
            "2026-01-01T00:00:00Z"
        );
        let mut dated = evicting.clone();
        dated["spec"]["taint"]["timeAdded"] = json!("2026-02-01T00:00:00Z");
        device_taint_rule_update(&mut dated, &old);
        assert_eq!(dated["spec"]["taint"]["timeAdded"], "2026-02-01T00:00:00Z");
    }
}
