//! Upstream's create-time state of kinds whose strategies are otherwise
//! plain: PersistentVolumes and claims start Pending with the default
//! volume mode (and reclaim policy), PriorityClasses preempt lower
//! priorities by default, CSIDrivers, StorageClasses, VolumeAttachments,
//! NetworkPolicies, IngressClasses and the flowcontrol kinds get upstream's
//! defaults, and a CertificateSigningRequest records who asked for it
//! (upstream's `csrStrategy.PrepareForCreate`), whatever the body says, and
//! keeps its spec through updates. [`default_field`] is the one-field defaulting
//! every built-in strategy uses.

use apiserver::admission::RequestContext;
use apiserver::registry::object_meta;
use serde_json::{json, Value};

use super::pod_defaults::{default_nonempty, default_unset, volume_source_defaults};
use super::ResourceStrategy;

/// Sets `obj[key]` when missing.
pub fn default_field(obj: &mut Value, key: &str, value: Value) {
    if let Some(map) = obj.as_object_mut() {
        map.entry(key).or_insert(value);
    }
}

fn default_spec(obj: &mut Value, key: &str, value: Value) {
    if let Some(spec) = obj.get_mut("spec").filter(|s| s.is_object()) {
        default_field(spec, key, value);
    }
}

fn pv_defaults(pv: &mut Value) {
    default_spec(pv, "persistentVolumeReclaimPolicy", json!("Retain"));
    default_spec(pv, "volumeMode", json!("Filesystem"));
    if let Some(spec) = pv.get_mut("spec") {
        volume_source_defaults(spec);
    }
}

/// A new volume is Pending since now (the phase transition time is GA).
fn pv_on_create(pv: &mut Value) {
    pv["status"] = json!({"phase": "Pending", "lastPhaseTransitionTime": object_meta::now()});
}

pub fn persistent_volumes(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: pv_defaults,
        on_create: pv_on_create,
        ..base
    }
}

fn pvc_defaults(pvc: &mut Value) {
    default_spec(pvc, "volumeMode", json!("Filesystem"));
}

fn pvc_on_create(pvc: &mut Value) {
    pvc["status"] = json!({"phase": "Pending"});
}

pub fn persistent_volume_claims(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: pvc_defaults,
        on_create: pvc_on_create,
        ..base
    }
}

fn priority_class_defaults(pc: &mut Value) {
    default_field(pc, "preemptionPolicy", json!("PreemptLowerPriority"));
}

/// Upstream's `SystemPriorityClasses()` stay: only collection deletes may
/// remove them.
fn system_priority_class(name: &str) -> Option<&'static str> {
    ["system-node-critical", "system-cluster-critical"]
        .contains(&name)
        .then_some("this is a system priority class and cannot be deleted")
}

pub fn priority_classes(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: priority_class_defaults,
        undeletable: system_priority_class,
        ..base
    }
}

/// `SetDefaults_CSIDriver`.
fn csi_driver_defaults(driver: &mut Value) {
    default_spec(driver, "attachRequired", json!(true));
    default_spec(driver, "podInfoOnMount", json!(false));
    default_spec(driver, "storageCapacity", json!(false));
    default_spec(driver, "fsGroupPolicy", json!("ReadWriteOnceWithFSType"));
    default_spec(driver, "requiresRepublish", json!(false));
    default_spec(driver, "seLinuxMount", json!(false));
    let modes = driver.pointer("/spec/volumeLifecycleModes");
    if modes.and_then(Value::as_array).is_none_or(Vec::is_empty) {
        if let Some(spec) = driver.get_mut("spec").and_then(Value::as_object_mut) {
            spec.insert("volumeLifecycleModes".into(), json!(["Persistent"]));
        }
    }
}

pub fn csi_drivers(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: csi_driver_defaults,
        ..base
    }
}

/// storage/v1 `SetObjectDefaults_VolumeAttachment`: an inline volume spec
/// gets the defaults of its volume source (not those of a
/// PersistentVolume object: reclaim policy and volume mode stay unset).
fn volume_attachment_defaults(attachment: &mut Value) {
    if let Some(spec) = attachment
        .pointer_mut("/spec/source/inlineVolumeSpec")
        .filter(|s| s.is_object())
    {
        volume_source_defaults(spec);
    }
}

pub fn volume_attachments(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: volume_attachment_defaults,
        ..base
    }
}

/// storage/v1 `SetDefaults_StorageClass`: volumes are deleted with their
/// claim and bound at once unless the class says otherwise.
fn storage_class_defaults(class: &mut Value) {
    default_field(class, "reclaimPolicy", json!("Delete"));
    default_field(class, "volumeBindingMode", json!("Immediate"));
}

pub fn storage_classes(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: storage_class_defaults,
        ..base
    }
}

/// networking/v1 `SetDefaults_NetworkPolicy` (a policy without types is
/// an Ingress policy, and an Egress one too when it has egress rules) and
/// `SetDefaults_NetworkPolicyPort` (ports are TCP unless told).
fn network_policy_defaults(policy: &mut Value) {
    let Some(spec) = policy.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let rules = |key: &str| spec.get(key).and_then(Value::as_array).map(Vec::len);
    let has_egress = rules("egress").unwrap_or(0) > 0;
    if spec
        .get("policyTypes")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty)
    {
        let mut types = vec![json!("Ingress")];
        if has_egress {
            types.push(json!("Egress"));
        }
        spec.insert("policyTypes".into(), Value::Array(types));
    }
    for direction in ["ingress", "egress"] {
        let rules = spec.get_mut(direction).and_then(Value::as_array_mut);
        for rule in rules.into_iter().flatten() {
            let ports = rule.get_mut("ports").and_then(Value::as_array_mut);
            for port in ports.into_iter().flatten().filter(|p| p.is_object()) {
                default_field(port, "protocol", json!("TCP"));
            }
        }
    }
}

pub fn network_policies(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: network_policy_defaults,
        ..base
    }
}

/// core/v1 `SetDefaults_Endpoints`: ports are TCP unless told.
fn endpoints_defaults(endpoints: &mut Value) {
    let subsets = endpoints.get_mut("subsets").and_then(Value::as_array_mut);
    for subset in subsets.into_iter().flatten() {
        let ports = subset.get_mut("ports").and_then(Value::as_array_mut);
        for port in ports.into_iter().flatten() {
            default_unset(port, "protocol", json!("TCP"));
        }
    }
}

pub fn endpoints(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: endpoints_defaults,
        ..base
    }
}

/// discovery/v1 `SetDefaults_EndpointPort`: an unnamed TCP port unless
/// told (both pointers, so the defaults show).
fn endpoint_slice_defaults(slice: &mut Value) {
    let ports = slice.get_mut("ports").and_then(Value::as_array_mut);
    for port in ports.into_iter().flatten() {
        default_unset(port, "name", json!(""));
        default_unset(port, "protocol", json!("TCP"));
    }
}

pub fn endpoint_slices(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: endpoint_slice_defaults,
        ..base
    }
}

/// rbac/v1 `SetDefaults_RoleBinding`/`SetDefaults_ClusterRoleBinding`
/// (the role is RBAC's) and `SetDefaults_Subject` (users and groups are
/// RBAC's, service accounts core's).
fn role_binding_defaults(binding: &mut Value) {
    const RBAC: &str = "rbac.authorization.k8s.io";
    if let Some(role_ref) = binding.get_mut("roleRef") {
        default_nonempty(role_ref, "apiGroup", RBAC);
    }
    let subjects = binding.get_mut("subjects").and_then(Value::as_array_mut);
    for subject in subjects.into_iter().flatten() {
        let group = match subject.get("kind").and_then(Value::as_str) {
            Some("User" | "Group") => RBAC,
            Some("ServiceAccount") => "",
            _ => continue,
        };
        default_nonempty(subject, "apiGroup", group);
    }
}

pub fn role_bindings(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: role_binding_defaults,
        ..base
    }
}

/// networking/v1 `SetDefaults_IngressClass`: parameters are cluster-scoped
/// unless told.
fn ingress_class_defaults(class: &mut Value) {
    if let Some(parameters) = class
        .pointer_mut("/spec/parameters")
        .filter(|p| p.is_object())
    {
        default_field(parameters, "scope", json!("Cluster"));
    }
}

pub fn ingress_classes(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: ingress_class_defaults,
        ..base
    }
}

/// `SetDefaults_FlowSchemaSpec`: an unset (zero) precedence is 1000.
fn flow_schema_defaults(fs: &mut Value) {
    if let Some(spec) = fs.get_mut("spec").filter(|s| s.is_object()) {
        if spec
            .get("matchingPrecedence")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == 0
        {
            spec["matchingPrecedence"] = json!(1000);
        }
    }
}

pub fn flow_schemas(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: flow_schema_defaults,
        ..base
    }
}

/// flowcontrol v1's `SetDefaults_PriorityLevelConfiguration` and
/// `SetDefaults_QueuingConfiguration`.
fn priority_level_defaults(plc: &mut Value) {
    if let Some(limited) = plc.pointer_mut("/spec/limited").filter(|l| l.is_object()) {
        default_field(limited, "nominalConcurrencyShares", json!(30));
        default_field(limited, "lendablePercent", json!(0));
        if let Some(queuing) = limited
            .pointer_mut("/limitResponse/queuing")
            .filter(|q| q.is_object())
        {
            for (key, value) in [("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)] {
                if queuing.get(key).and_then(Value::as_i64).unwrap_or(0) == 0 {
                    queuing[key] = json!(value);
                }
            }
        }
    }
    if let Some(exempt) = plc.pointer_mut("/spec/exempt").filter(|e| e.is_object()) {
        default_field(exempt, "nominalConcurrencyShares", json!(0));
        default_field(exempt, "lendablePercent", json!(0));
    }
}

pub fn priority_levels(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        defaults: priority_level_defaults,
        ..base
    }
}

/// The requester's identity replaces whatever the body claims; a request
/// cannot be created approved.
fn csr_on_create(csr: &mut Value) {
    let user = RequestContext::current().map(|c| c.user.clone());
    if let Some(spec) = csr.get_mut("spec").and_then(Value::as_object_mut) {
        for field in ["username", "uid", "groups", "extra"] {
            spec.remove(field);
        }
        if let Some(user) = user {
            spec.insert("username".into(), json!(user.name));
            if !user.uid.is_empty() {
                spec.insert("uid".into(), json!(user.uid));
            }
            if !user.groups.is_empty() {
                spec.insert("groups".into(), json!(user.groups));
            }
            if !user.extra.is_empty() {
                spec.insert("extra".into(), json!(user.extra));
            }
        }
    }
    csr["status"] = json!({});
}

/// A request is immutable but through its subresources: an update keeps
/// the stored spec (upstream's `csrStrategy.PrepareForUpdate`).
fn csr_on_update(csr: &mut Value, old: &Value) {
    match old.get("spec") {
        Some(spec) => csr["spec"] = spec.clone(),
        None => {
            if let Some(map) = csr.as_object_mut() {
                map.remove("spec");
            }
        }
    }
}

/// Status and approval writes stamp the conditions (upstream's
/// `populateConditionTimestamps`): `lastUpdateTime` when unset, and
/// `lastTransitionTime` when unset, kept from a stored condition of the
/// same type and status, else now.
fn stamp_conditions(csr: &mut Value, old: &Value) {
    let now = apiserver::registry::object_meta::now();
    let old_conditions = old.pointer("/status/conditions").and_then(Value::as_array);
    let conditions = csr
        .pointer_mut("/status/conditions")
        .and_then(Value::as_array_mut);
    for condition in conditions.into_iter().flatten() {
        let unset = |c: &Value, field: &str| {
            c.get(field)
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
        };
        if unset(condition, "lastUpdateTime") {
            condition["lastUpdateTime"] = json!(now);
        }
        if unset(condition, "lastTransitionTime") {
            let same = |o: &&Value| {
                o.get("type") == condition.get("type")
                    && o.get("status") == condition.get("status")
                    && !unset(o, "lastTransitionTime")
            };
            let kept = old_conditions
                .and_then(|old| old.iter().find(same))
                .and_then(|o| o.get("lastTransitionTime").cloned());
            condition["lastTransitionTime"] = kept.unwrap_or_else(|| json!(now));
        }
    }
}

/// Requests may be named anything a URL path segment can hold (upstream's
/// `ValidateCertificateRequestName` accepts every name).
pub fn certificate_signing_requests(base: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        on_create: csr_on_create,
        on_update: csr_on_update,
        on_subresource_update: |_, csr, old| stamp_conditions(csr, old),
        name: apimachinery::validation::name_is_path_segment,
        ..base
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use apiserver::authentication::user::UserInfo;

    use super::*;

    #[test]
    fn csr_conditions_are_stamped_and_keep_their_transition_time() {
        let old = json!({"status": {"conditions": [
            {"type": "Approved", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"}
        ]}});
        let mut csr = json!({"status": {"conditions": [
            {"type": "Approved", "status": "True"},
            {"type": "Failed", "status": "True", "lastUpdateTime": "2026-02-02T00:00:00Z"}
        ]}});
        stamp_conditions(&mut csr, &old);
        let conditions = &csr["status"]["conditions"];
        assert_eq!(conditions[0]["lastTransitionTime"], "2026-01-01T00:00:00Z");
        assert!(conditions[0]["lastUpdateTime"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z')));
        assert_eq!(conditions[1]["lastUpdateTime"], "2026-02-02T00:00:00Z");
        let transition = conditions[1]["lastTransitionTime"]
            .as_str()
            .unwrap_or_default();
        assert!(transition.starts_with("20") && transition != "2026-01-01T00:00:00Z");
    }

    #[test]
    fn volumes_and_claims_start_pending_with_upstreams_defaults() {
        let mut pv = json!({"spec": {"capacity": {"storage": "1Gi"}}});
        pv_defaults(&mut pv);
        pv_on_create(&mut pv);
        assert_eq!(pv["spec"]["persistentVolumeReclaimPolicy"], "Retain");
        assert_eq!(pv["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pv["status"]["phase"], "Pending");
        assert!(pv["status"]["lastPhaseTransitionTime"].is_string());
        let mut kept =
            json!({"spec": {"persistentVolumeReclaimPolicy": "Delete", "volumeMode": "Block"}});
        pv_defaults(&mut kept);
        assert_eq!(kept["spec"]["persistentVolumeReclaimPolicy"], "Delete");
        assert_eq!(kept["spec"]["volumeMode"], "Block");
        let mut pvc = json!({"spec": {}, "status": {"phase": "Bound"}});
        pvc_defaults(&mut pvc);
        pvc_on_create(&mut pvc);
        assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
        assert_eq!(pvc["status"], json!({"phase": "Pending"}));
        let mut driver = json!({"spec": {"podInfoOnMount": true}});
        csi_driver_defaults(&mut driver);
        assert_eq!(driver["spec"]["podInfoOnMount"], true);
        assert_eq!(driver["spec"]["attachRequired"], true);
        assert_eq!(driver["spec"]["fsGroupPolicy"], "ReadWriteOnceWithFSType");
        assert_eq!(
            driver["spec"]["volumeLifecycleModes"],
            json!(["Persistent"])
        );
        let mut fs = json!({"spec": {"priorityLevelConfiguration": {"name": "x"}}});
        flow_schema_defaults(&mut fs);
        assert_eq!(fs["spec"]["matchingPrecedence"], 1000);
        let mut plc = json!({"spec": {"type": "Limited", "limited": {
            "limitResponse": {"type": "Queue", "queuing": {"queues": 16}}}}});
        priority_level_defaults(&mut plc);
        assert_eq!(plc["spec"]["limited"]["nominalConcurrencyShares"], 30);
        assert_eq!(plc["spec"]["limited"]["lendablePercent"], 0);
        assert_eq!(
            plc["spec"]["limited"]["limitResponse"]["queuing"],
            json!({"queues": 16, "handSize": 8, "queueLengthLimit": 50})
        );
        let mut exempt = json!({"spec": {"type": "Exempt", "exempt": {}}});
        priority_level_defaults(&mut exempt);
        assert_eq!(
            exempt["spec"]["exempt"],
            json!({"nominalConcurrencyShares": 0, "lendablePercent": 0})
        );
        let mut pc = json!({"value": 10});
        priority_class_defaults(&mut pc);
        assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
    }

    #[test]
    fn networking_and_storage_defaults_follow_upstream() {
        let mut ingress_only = json!({"spec": {"podSelector": {},
            "ingress": [{"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]}]}});
        network_policy_defaults(&mut ingress_only);
        assert_eq!(ingress_only["spec"]["policyTypes"], json!(["Ingress"]));
        let ports = &ingress_only["spec"]["ingress"][0]["ports"];
        assert_eq!(
            (&ports[0]["protocol"], &ports[1]["protocol"]),
            (&json!("TCP"), &json!("UDP"))
        );
        let mut both = json!({"spec": {"podSelector": {}, "policyTypes": [],
            "egress": [{"ports": [{"port": 443}]}]}});
        network_policy_defaults(&mut both);
        assert_eq!(both["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
        assert_eq!(both["spec"]["egress"][0]["ports"][0]["protocol"], "TCP");
        let mut explicit = json!({"spec": {"policyTypes": ["Egress"], "egress": []}});
        network_policy_defaults(&mut explicit);
        assert_eq!(explicit["spec"]["policyTypes"], json!(["Egress"]));
        let mut empty_egress = json!({"spec": {"egress": []}});
        network_policy_defaults(&mut empty_egress);
        assert_eq!(empty_egress["spec"]["policyTypes"], json!(["Ingress"]));

        let mut class = json!({"provisioner": "x"});
        storage_class_defaults(&mut class);
        assert_eq!(class["reclaimPolicy"], "Delete");
        assert_eq!(class["volumeBindingMode"], "Immediate");
        let mut kept =
            json!({"reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer"});
        storage_class_defaults(&mut kept);
        assert_eq!(kept["reclaimPolicy"], "Retain");
        assert_eq!(kept["volumeBindingMode"], "WaitForFirstConsumer");

        let mut ic = json!({"spec": {"parameters": {"kind": "K", "name": "n"}}});
        ingress_class_defaults(&mut ic);
        assert_eq!(ic["spec"]["parameters"]["scope"], "Cluster");
        let mut bare = json!({"spec": {"controller": "c"}});
        ingress_class_defaults(&mut bare);
        assert!(bare["spec"].get("parameters").is_none());
    }

    #[tokio::test]
    async fn a_csr_records_its_requester() {
        let user = Arc::new(UserInfo {
            name: "system:node:n1".into(),
            uid: "u-1".into(),
            groups: vec!["system:nodes".into(), "system:authenticated".into()],
            extra: BTreeMap::from([("scopes".to_owned(), vec!["a".to_owned()])]),
        });
        let mut csr = json!({"spec": {"username": "forged", "groups": ["system:masters"],
            "signerName": "kubernetes.io/kubelet-serving"},
            "status": {"conditions": [{"type": "Approved", "status": "True"}]}});
        RequestContext::new(user)
            .scope(async { csr_on_create(&mut csr) })
            .await;
        assert_eq!(csr["spec"]["username"], "system:node:n1");
        assert_eq!(csr["spec"]["uid"], "u-1");
        assert_eq!(
            csr["spec"]["groups"],
            json!(["system:nodes", "system:authenticated"])
        );
        assert_eq!(csr["spec"]["extra"], json!({"scopes": ["a"]}));
        assert_eq!(csr["spec"]["signerName"], "kubernetes.io/kubelet-serving");
        assert_eq!(csr["status"], json!({}));
        // Outside a request (the server's own writes) nothing is claimed.
        let mut own = json!({"spec": {"username": "forged"}});
        csr_on_create(&mut own);
        assert!(own["spec"].get("username").is_none());
    }
}
