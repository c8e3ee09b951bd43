//! Update-time validation of the core types (upstream's `ValidatePodUpdate`,
//! `ValidateServiceUpdate`, `ValidateConfigMapUpdate`, `ValidateSecretUpdate`
//! and `ValidatePersistentVolumeClaimUpdate`): the rules that refuse changes
//! to fields fixed once an object exists. Each function sees the new and the
//! old object after defaulting and returns only the update-specific errors;
//! the create-time checks of the new object run beside them.

use apimachinery::field_errors::{ErrorType, FieldError, Path};
use apimachinery::quantity::Quantity;
use serde_json::{Map, Value};

use super::items;

/// Upstream's message for a changed immutable field.
pub const IMMUTABLE: &str = "field is immutable";
/// Upstream's message for changes to an object marked `immutable: true`.
const IMMUTABLE_WHEN_SET: &str = "field is immutable when `immutable` is set";
/// What a pod update may change, as upstream lists it (the diff upstream
/// appends after a newline is left out).
const POD_UPDATABLE: &str = "pod updates may not change fields other than \
`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,\
`spec.tolerations` (only additions to existing tolerations),\
`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";
const PVC_IMMUTABLE: &str = "spec is immutable after creation except resources.requests \
and volumeAttributesClassName for bound claims";
const MAX_INT32: i64 = i32::MAX as i64;

/// Equality as upstream's `apiequality.Semantic.DeepEqual` sees decoded
/// objects: an absent field, `null` and an empty list or map are the same.
pub fn semantic_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    let empty = Map::new();
    match (a.filter(|v| !is_empty(v)), b.filter(|v| !is_empty(v))) {
        (None, None) => true,
        (Some(Value::Array(a)), Some(Value::Array(b))) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| semantic_eq(Some(x), Some(y)))
        }
        (Some(Value::Object(a)), Some(Value::Object(b))) => maps_eq(a, b),
        // A map whose entries are all empty reads as an absent one.
        (Some(Value::Object(a)), None) | (None, Some(Value::Object(a))) => maps_eq(a, &empty),
        (Some(a), Some(b)) => a == b,
        _ => false,
    }
}

fn maps_eq(a: &Map<String, Value>, b: &Map<String, Value>) -> bool {
    a.iter().all(|(k, v)| semantic_eq(Some(v), b.get(k)))
        && b.iter()
            .all(|(k, v)| a.contains_key(k) || semantic_eq(None, Some(v)))
}

fn is_empty(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
        _ => false,
    }
}

/// Upstream's `ValidateImmutableField`: Invalid with the new value.
pub fn immutable_field(
    new: Option<&Value>,
    old: Option<&Value>,
    path: &Path,
) -> Option<FieldError> {
    (!semantic_eq(new, old))
        .then(|| FieldError::invalid(path, new.cloned().unwrap_or(Value::Null), IMMUTABLE))
}

/// Upstream's declarative `+k8s:immutable` rule, which 1.37 enforces in
/// place of the hand-written check for the fields it marks beta: Invalid,
/// with no value (shown as `null`).
pub fn declared_immutable(
    new: Option<&Value>,
    old: Option<&Value>,
    path: &Path,
) -> Option<FieldError> {
    (!semantic_eq(new, old)).then(|| FieldError::invalid(path, Value::Null, IMMUTABLE))
}

/// An Invalid error showing `value` as `json.Marshal` writes a typed Go
/// value (upstream's field errors render structs so): keys in the order
/// `value` has them, a struct's declaration order, where a plain bad value
/// would be written with sorted keys as Go writes maps.
pub fn invalid_typed(path: &Path, value: &Value, detail: &str) -> FieldError {
    typed_error(ErrorType::Invalid, path, value, detail)
}

/// An error of `error_type` showing `value` as [`invalid_typed`] does,
/// then `detail` when there is one.
pub fn typed_error(error_type: ErrorType, path: &Path, value: &Value, detail: &str) -> FieldError {
    let mut shown = go_json::encode::to_vec(value).unwrap_or_default();
    shown.pop(); // the encoder's newline
    let mut body = String::from_utf8_lossy(&shown).into_owned();
    if !detail.is_empty() {
        body.push_str(": ");
        body.push_str(detail);
    }
    FieldError {
        error_type,
        field: path.to_string(),
        bad_value: None,
        detail: body,
    }
}

/// A changed `metav1.LabelSelector` refused as immutable, shown as
/// `json.Marshal` writes the typed selector (declaration order, empty
/// fields left out).
pub fn immutable_label_selector(path: &Path, selector: Option<&Value>) -> FieldError {
    let mut shown = selector.cloned().unwrap_or(Value::Null);
    go_json::normalize_as(
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
        &mut shown,
    );
    invalid_typed(path, &shown, IMMUTABLE)
}

/// An internal (unversioned) Go struct as `json.Marshal` writes it: the
/// internal types carry no json tags, so every field is written under its
/// Go name, in declaration order, zero values included.
pub fn go_struct(fields: &[(&str, Value)]) -> Value {
    Value::Object(
        fields
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone()))
            .collect(),
    )
}

/// A string field as a Go string: absent reads as empty.
pub fn go_string(obj: &Value, key: &str) -> Value {
    Value::from(obj.get(key).and_then(Value::as_str).unwrap_or_default())
}

/// A pointer, slice or map field as Go writes it: absent reads as `null`.
pub fn go_nullable(obj: &Value, key: &str) -> Value {
    obj.get(key).cloned().unwrap_or(Value::Null)
}

fn spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// Pods: only images, a shrinking `activeDeadlineSeconds`, added
/// tolerations, removed scheduling gates and a negative grace period
/// raised to 1 may change.
pub fn validate_pod_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let (new_spec, old_spec) = (spec(new), spec(old));
    let path = Path::new("spec");
    let mut errs = Vec::new();
    for key in ["containers", "initContainers"] {
        let (n, o) = (items(new_spec, key), items(old_spec, key));
        if n.len() != o.len() {
            errs.push(FieldError::forbidden(
                &path.child(key),
                "pod updates may not add or remove containers",
            ));
            return errs;
        }
        for (i, c) in n.iter().enumerate() {
            let image = c.get("image").and_then(Value::as_str).unwrap_or_default();
            let image_path = path.child(key).index(i).child("image");
            if image.is_empty() {
                errs.push(FieldError::required(&image_path, ""));
            } else if image.trim() != image {
                errs.push(FieldError::invalid(
                    &image_path,
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    if active_deadline_errors(new_spec, old_spec, &path, &mut errs) {
        return errs;
    }
    tolerations_only_added(new_spec, old_spec, &path.child("tolerations"), &mut errs);
    gates_only_removed(
        new_spec,
        old_spec,
        &path.child("schedulingGates"),
        &mut errs,
    );
    if semantic_eq(Some(new_spec), Some(old_spec)) {
        return errs;
    }
    let gated = !items(old_spec, "schedulingGates").is_empty();
    if gated {
        node_selector_only_added(new_spec, old_spec, &path.child("nodeSelector"), &mut errs);
    }
    if !semantic_eq(
        Some(&munged_pod_spec(new_spec, old_spec, gated)),
        Some(old_spec),
    ) {
        errs.push(FieldError::forbidden(&path, POD_UPDATABLE));
    }
    errs
}

/// `activeDeadlineSeconds` may be set or lowered, never raised or removed.
/// Returns whether validation stops here, as upstream's does.
fn active_deadline_errors(
    new: &Value,
    old: &Value,
    path: &Path,
    errs: &mut Vec<FieldError>,
) -> bool {
    let path = path.child("activeDeadlineSeconds");
    let old_value = old.get("activeDeadlineSeconds").and_then(Value::as_i64);
    match new.get("activeDeadlineSeconds").and_then(Value::as_i64) {
        Some(n) if !(0..=MAX_INT32).contains(&n) => {
            let msg = format!("must be between 0 and {MAX_INT32}, inclusive");
            errs.push(FieldError::invalid(&path, n, msg));
            true
        }
        Some(n) if old_value.is_some_and(|o| o < n) => {
            errs.push(FieldError::invalid(
                &path,
                n,
                "must be less than or equal to previous value",
            ));
            true
        }
        Some(_) => false,
        None => {
            if old_value.is_some() {
                errs.push(FieldError::invalid(
                    &path,
                    Value::Null,
                    "must not update from a positive integer to nil value",
                ));
            }
            false
        }
    }
}

/// Every old toleration must still be there; only its `tolerationSeconds`
/// may differ.
fn tolerations_only_added(new: &Value, old: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    let new_tolerations: Vec<Value> = items(new, "tolerations")
        .iter()
        .map(without_seconds)
        .collect();
    let kept = items(old, "tolerations").iter().all(|o| {
        let o = without_seconds(o);
        new_tolerations
            .iter()
            .any(|n| semantic_eq(Some(n), Some(&o)))
    });
    if !kept {
        errs.push(FieldError::forbidden(
            path,
            "existing toleration can not be modified except its tolerationSeconds",
        ));
    }
}

/// Scheduling gates may only be removed.
fn gates_only_removed(new: &Value, old: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let name = |g: &Value| {
        g.get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let old_names: Vec<String> = items(old, "schedulingGates").iter().map(name).collect();
    for (i, gate) in items(new, "schedulingGates").iter().enumerate() {
        let gate = name(gate);
        if !old_names.contains(&gate) {
            let msg = format!("only deletion is allowed, but found new scheduling gate '{gate}'");
            errs.push(FieldError::forbidden(&path.index(i).child("name"), msg));
        }
    }
}

/// A gated pod's node selector may gain entries, never lose or change one.
fn node_selector_only_added(new: &Value, old: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let selector = |s: &Value| s.get("nodeSelector").and_then(Value::as_object).cloned();
    let (new_selector, old_selector) = (selector(new).unwrap_or_default(), selector(old));
    let kept = old_selector
        .iter()
        .flatten()
        .all(|(k, v)| new_selector.get(k) == Some(v));
    if !kept {
        errs.push(FieldError::invalid(
            path,
            Value::Object(new_selector),
            "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
        ));
    }
}

/// The new pod spec with every field an update may change put back to its
/// old value: what is left must equal the old spec. A gated pod's node
/// selector is checked on its own.
fn munged_pod_spec(new: &Value, old: &Value, gated: bool) -> Value {
    let mut munged = new.clone();
    let Some(map) = munged.as_object_mut() else {
        return munged;
    };
    for key in ["containers", "initContainers"] {
        if let Some(Value::Array(containers)) = map.get_mut(key) {
            for (c, o) in containers.iter_mut().zip(items(old, key)) {
                if let Some(c) = c.as_object_mut() {
                    restore(c, o, "image");
                }
            }
        }
    }
    for key in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        restore(map, old, key);
    }
    if gated {
        restore(map, old, "nodeSelector");
    }
    let old_grace = old
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    let new_grace = map
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64);
    if old_grace.is_some_and(|g| g < 0) && new_grace == Some(1) {
        restore(map, old, "terminationGracePeriodSeconds");
    }
    munged
}

/// Sets `key` of `map` to its value in `old` (removing it when absent there).
fn restore(map: &mut Map<String, Value>, old: &Value, key: &str) {
    match old.get(key) {
        Some(v) => {
            map.insert(key.to_owned(), v.clone());
        }
        None => {
            map.remove(key);
        }
    }
}

/// Services: allocated cluster IPs and IP families stay, except on the
/// way to, from or within ExternalName and between headless forms.
pub fn validate_service_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let (new_spec, old_spec) = (spec(new), spec(old));
    let kind = |s: &Value| {
        s.get("type")
            .and_then(Value::as_str)
            .unwrap_or("ClusterIP")
            .to_owned()
    };
    let mut errs = Vec::new();
    if kind(new_spec) == "ExternalName" || kind(old_spec) == "ExternalName" {
        return errs;
    }
    let (new_ips, old_ips) = (cluster_ips(new_spec), cluster_ips(old_spec));
    let headless = |ips: &[String]| ips.first().is_some_and(|ip| ip == "None");
    let ips_path = Path::new("spec").child("clusterIPs");
    if !(headless(&new_ips) && headless(&old_ips)) {
        let shown = Value::from(new_ips.clone());
        if new_ips.len() == old_ips.len() {
            for (i, (n, o)) in new_ips.iter().zip(&old_ips).enumerate() {
                if n != o {
                    errs.push(FieldError::invalid(
                        &ips_path.index(i),
                        shown.clone(),
                        "may not change once set",
                    ));
                }
            }
        } else if new_ips.is_empty() {
            errs.push(FieldError::invalid(
                &ips_path.index(0),
                shown,
                "primary clusterIP can not be unset",
            ));
        } else if !old_ips.is_empty() && new_ips[0] != old_ips[0] {
            errs.push(FieldError::invalid(
                &ips_path.index(0),
                shown,
                "may not change once set",
            ));
        }
    }
    if headless(&new_ips) != headless(&old_ips) || headless(&new_ips) {
        return errs;
    }
    let families = |s: &Value| items(s, "ipFamilies").to_vec();
    let (new_families, old_families) = (families(new_spec), families(old_spec));
    let primary_changed = new_families
        .first()
        .zip(old_families.first())
        .is_some_and(|(n, o)| n != o);
    let any_changed = new_families.len() == old_families.len() && new_families != old_families;
    if primary_changed || any_changed {
        let path = Path::new("spec").child("ipFamilies").index(0);
        errs.push(FieldError::invalid(
            &path,
            Value::from(new_families),
            "may not change once set",
        ));
    }
    if kind(new_spec) == "LoadBalancer"
        && kind(old_spec) == "LoadBalancer"
        && new_spec.get("loadBalancerClass") != old_spec.get("loadBalancerClass")
    {
        let value = new_spec
            .get("loadBalancerClass")
            .cloned()
            .unwrap_or(Value::Null);
        let path = Path::new("spec").child("loadBalancerClass");
        errs.push(FieldError::invalid(&path, value, "may not change once set"));
    }
    errs
}

/// `spec.clusterIPs` with a differing non-empty `spec.clusterIP` as the
/// primary (upstream's strategy normalizes the two before validating), or
/// the single `spec.clusterIP` when only it is given.
fn cluster_ips(spec: &Value) -> Vec<String> {
    let mut list: Vec<String> = items(spec, "clusterIPs")
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    match spec.get("clusterIP").and_then(Value::as_str) {
        Some(ip) if !ip.is_empty() => match list.first_mut() {
            Some(primary) => ip.clone_into(primary),
            None => list.push(ip.to_owned()),
        },
        _ => {}
    }
    list
}

fn is_immutable(obj: &Value) -> bool {
    obj.get("immutable").and_then(Value::as_bool) == Some(true)
}

/// ConfigMaps and Secrets marked `immutable: true` keep their content and
/// the mark (compared strictly: an empty map is not an absent one).
fn immutable_content(new: &Value, old: &Value, keys: &[&str], errs: &mut Vec<FieldError>) {
    if !is_immutable(old) {
        return;
    }
    if !is_immutable(new) {
        errs.push(FieldError::forbidden(
            &Path::new("immutable"),
            IMMUTABLE_WHEN_SET,
        ));
    }
    for key in keys {
        if new.get(*key) != old.get(*key) {
            errs.push(FieldError::forbidden(&Path::new(key), IMMUTABLE_WHEN_SET));
        }
    }
}

/// ConfigMaps: see [`immutable_content`].
pub fn validate_configmap_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    immutable_content(new, old, &["data", "binaryData"], &mut errs);
    errs
}

/// Secrets: the type never changes; see also [`immutable_content`]
/// (`stringData` is already folded into `data` here).
pub fn validate_secret_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs: Vec<FieldError> =
        immutable_field(new.get("type"), old.get("type"), &Path::new("type"))
            .into_iter()
            .collect();
    immutable_content(new, old, &["data"], &mut errs);
    errs
}

fn storage_request(obj: &Value) -> Option<Quantity> {
    obj.pointer("/spec/resources/requests/storage")
        .and_then(Value::as_str)
        .and_then(|q| Quantity::parse(q).ok())
}

/// PersistentVolumeClaims: the spec is fixed except the volume name (set
/// once) and, for bound claims, the storage request and the volume
/// attributes class; the request may not drop to the recorded capacity.
pub fn validate_pvc_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut new_spec = spec(new).clone();
    let old_spec = spec(old);
    let bound = new.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    if let Some(map) = new_spec.as_object_mut() {
        if old_spec
            .get("volumeName")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .is_empty()
        {
            restore(map, old_spec, "volumeName");
        }
        // A class may be set where only the beta annotation or nothing was.
        if old_spec.get("storageClassName").is_none() {
            map.remove("storageClassName");
        }
        if bound {
            restore(map, old_spec, "volumeAttributesClassName");
            let old_storage = old_spec.pointer("/resources/requests/storage").cloned();
            if let Some(Value::Object(requests)) =
                map.get_mut("resources").and_then(|r| r.get_mut("requests"))
            {
                match old_storage {
                    Some(v) => requests.insert("storage".to_owned(), v),
                    None => requests.remove("storage"),
                };
            }
        }
    }
    if !semantic_eq(Some(&new_spec), Some(old_spec)) {
        errs.push(FieldError::forbidden(&Path::new("spec"), PVC_IMMUTABLE));
    }
    let zero = || Quantity::parse("0").ok();
    let (new_size, old_size) = (
        storage_request(new).or_else(zero),
        storage_request(old).or_else(zero),
    );
    let capacity = old
        .pointer("/status/capacity/storage")
        .and_then(Value::as_str)
        .and_then(|q| Quantity::parse(q).ok())
        .or_else(zero);
    if new_size < old_size && new_size <= capacity {
        let path = Path::new("spec")
            .child("resources")
            .child("requests")
            .child("storage");
        errs.push(FieldError::forbidden(
            &path,
            "field can not be less than status.capacity",
        ));
    }
    errs
}

#[cfg(test)]
#[path = "update_tests.rs"]
mod tests;
