//! Update-time validation of PersistentVolumes (upstream's
//! `ValidatePersistentVolumeUpdate`): the volume source and mode are fixed
//! once created, node affinity may only move from beta to GA label keys,
//! and a volume attributes class may not be removed.

use apimachinery::field_errors::{FieldError, Path};
use serde_json::{Map, Value};

use super::update::{immutable_field, semantic_eq, IMMUTABLE};

/// The members of `PersistentVolumeSource` in a v1 PersistentVolume spec.
const SOURCES: &[&str] = &[
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "hostPath",
    "glusterfs",
    "nfs",
    "rbd",
    "iscsi",
    "cinder",
    "cephfs",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
];
/// Beta node labels and the GA labels that replace them.
const BETA_TO_GA: &[(&str, &str)] = &[
    (
        "failure-domain.beta.kubernetes.io/zone",
        "topology.kubernetes.io/zone",
    ),
    (
        "failure-domain.beta.kubernetes.io/region",
        "topology.kubernetes.io/region",
    ),
    ("beta.kubernetes.io/os", "kubernetes.io/os"),
    ("beta.kubernetes.io/arch", "kubernetes.io/arch"),
    (
        "beta.kubernetes.io/instance-type",
        "node.kubernetes.io/instance-type",
    ),
];

fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// PersistentVolumes: see the module documentation.
pub fn validate_pv_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let (new_spec, old_spec) = (spec(new), spec(old));
    let mut errs = Vec::new();
    if !semantic_eq(
        Some(&source(new_spec, old_spec)),
        Some(&source(old_spec, old_spec)),
    ) {
        errs.push(FieldError::forbidden(
            &Path::new("spec").child("persistentvolumesource"),
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    // An unset mode is defaulted to Filesystem.
    let mode = |s: &Value| {
        s.get("volumeMode")
            .cloned()
            .unwrap_or_else(|| Value::from("Filesystem"))
    };
    errs.extend(immutable_field(
        Some(&mode(new_spec)),
        Some(&mode(old_spec)),
        &Path::new("volumeMode"),
    ));
    if let Some(old_affinity) = old_spec.get("nodeAffinity").filter(|a| !a.is_null()) {
        let new_affinity = new_spec.get("nodeAffinity").unwrap_or(&Value::Null);
        if !semantic_eq(Some(&to_ga(new_affinity, old_affinity)), Some(new_affinity)) {
            errs.push(FieldError::invalid(
                &Path::new("nodeAffinity"),
                new_affinity.clone(),
                format!("{IMMUTABLE}, except for updating from beta label to GA"),
            ));
        }
    }
    let class = |s: &Value| {
        s.get("volumeAttributesClassName")
            .filter(|c| !c.is_null())
            .is_some()
    };
    if class(old_spec) && !class(new_spec) {
        errs.push(FieldError::forbidden(
            &Path::new("spec").child("volumeAttributesClassName"),
            "update from non-nil value to nil is forbidden",
        ));
    }
    errs
}

/// The volume source of `spec`; a CSI controller-expand secret that
/// `old` lacks may be added, so it is left out then.
fn source(spec: &Value, old: &Value) -> Value {
    let mut map = Map::new();
    for key in SOURCES {
        if let Some(v) = spec.get(*key) {
            map.insert((*key).to_owned(), v.clone());
        }
    }
    let old_has_secret = old
        .pointer("/csi/controllerExpandSecretRef")
        .is_some_and(|s| !s.is_null());
    if !old_has_secret {
        if let Some(Value::Object(csi)) = map.get_mut("csi") {
            csi.remove("controllerExpandSecretRef");
        }
    }
    Value::Object(map)
}

/// `old` node affinity with each beta key renamed to its GA key where
/// `new` has the GA key at the same place; equal to `new` when only such
/// renames happened.
fn to_ga(new: &Value, old: &Value) -> Value {
    match (new, old) {
        (Value::Object(n), Value::Object(o)) => {
            let mut out = o.clone();
            for (k, v) in out.iter_mut() {
                if let Some(nv) = n.get(k) {
                    *v = to_ga(nv, v);
                }
            }
            rename_key(n, &mut out);
            Value::Object(out)
        }
        (Value::Array(n), Value::Array(o)) => Value::Array(
            o.iter()
                .enumerate()
                .map(|(i, ov)| n.get(i).map_or_else(|| ov.clone(), |nv| to_ga(nv, ov)))
                .collect(),
        ),
        _ => old.clone(),
    }
}

/// A requirement's beta `key` becomes the GA key the new one uses.
fn rename_key(new: &Map<String, Value>, old: &mut Map<String, Value>) {
    let (Some(Value::String(nk)), Some(Value::String(ok))) = (new.get("key"), old.get("key"))
    else {
        return;
    };
    if BETA_TO_GA.iter().any(|(beta, ga)| beta == ok && ga == nk) {
        old.insert("key".to_owned(), Value::String(nk.clone()));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn pv(spec: Value) -> Value {
        json!({"spec": spec})
    }

    #[test]
    fn source_and_mode_are_fixed() {
        let old = pv(json!({"capacity": {"storage": "1Gi"}, "hostPath": {"path": "/a"}}));
        let mut grown = old.clone();
        grown["spec"]["capacity"]["storage"] = json!("2Gi");
        grown["spec"]["volumeMode"] = json!("Filesystem");
        assert!(validate_pv_update(&grown, &old).is_empty());
        let moved = pv(json!({"hostPath": {"path": "/b"}, "volumeMode": "Block"}));
        assert_eq!(
            messages(&validate_pv_update(&moved, &old)),
            [
                "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation",
                "volumeMode: Invalid value: \"Block\": field is immutable",
            ]
        );
    }

    #[test]
    fn csi_expand_secret_may_be_added() {
        let old = pv(json!({"csi": {"driver": "d", "volumeHandle": "h"}}));
        let new = pv(json!({"csi": {"driver": "d", "volumeHandle": "h",
            "controllerExpandSecretRef": {"name": "s", "namespace": "n"}}}));
        assert!(validate_pv_update(&new, &old).is_empty());
        assert_eq!(validate_pv_update(&old, &new).len(), 1);
    }

    #[test]
    fn node_affinity_may_only_move_to_ga_labels() {
        let affinity = |key: &str, value: &str| {
            json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": key, "operator": "In", "values": [value]}]}]}})
        };
        let old = pv(json!({"local": {"path": "/d"},
            "nodeAffinity": affinity("failure-domain.beta.kubernetes.io/zone", "a")}));
        let ga = pv(json!({"local": {"path": "/d"},
            "nodeAffinity": affinity("topology.kubernetes.io/zone", "a")}));
        assert!(validate_pv_update(&ga, &old).is_empty());
        let other = pv(json!({"local": {"path": "/d"},
            "nodeAffinity": affinity("topology.kubernetes.io/zone", "b")}));
        let errs = validate_pv_update(&other, &old);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "nodeAffinity");
        assert_eq!(
            errs[0].detail,
            "field is immutable, except for updating from beta label to GA"
        );
    }

    #[test]
    fn attributes_class_may_not_be_removed() {
        let old = pv(json!({"csi": {"driver": "d"}, "volumeAttributesClassName": "gold"}));
        let new = pv(json!({"csi": {"driver": "d"}}));
        assert_eq!(
            messages(&validate_pv_update(&new, &old)),
            ["spec.volumeAttributesClassName: Forbidden: update from non-nil value to nil is forbidden"]
        );
    }
}
