//! LimitRanges: upstream's v1 defaulting of Container items (the default
//! limit from `max`, the default request from the default limit or `min`)
//! and `ValidateLimitRange` (types, resource names, Pod items without
//! defaults, claims bounding storage, and min ≤ default request ≤ default
//! ≤ max with sane ratios).

use std::cmp::Ordering;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::quantity::Quantity;
use apimachinery::validation::is_qualified_name;
use serde_json::{Map, Value};

use crate::api::resource::parsed_list;

/// Upstream's `SetDefaults_LimitRangeItem` for every Container item.
pub fn limit_range_defaults(range: &mut Value) {
    let Some(items) = range
        .pointer_mut("/spec/limits")
        .and_then(Value::as_array_mut)
    else {
        return;
    };
    for item in items.iter_mut().filter_map(Value::as_object_mut) {
        if item.get("type").and_then(Value::as_str) != Some("Container") {
            continue;
        }
        let list = |item: &Map<String, Value>, key: &str| {
            item.get(key)
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default()
        };
        let (min, max) = (list(item, "min"), list(item, "max"));
        let mut default = list(item, "default");
        let mut request = list(item, "defaultRequest");
        for (k, v) in &max {
            default.entry(k.clone()).or_insert_with(|| v.clone());
        }
        for (k, v) in default.iter().chain(&min) {
            request.entry(k.clone()).or_insert_with(|| v.clone());
        }
        item.insert("default".into(), Value::Object(default));
        item.insert("defaultRequest".into(), Value::Object(request));
    }
}

/// Standard resource names a container may state.
fn container_standard(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || name.starts_with("hugepages-")
}

/// Upstream's `IsStandardResourceName` for unprefixed names.
fn standard(name: &str) -> bool {
    const OTHERS: &[&str] = &[
        "pods",
        "services",
        "replicationcontrollers",
        "resourcequotas",
        "secrets",
        "configmaps",
        "persistentvolumeclaims",
        "storage",
        "requests.storage",
        "services.nodeports",
        "services.loadbalancers",
    ];
    let bare = name
        .strip_prefix("requests.")
        .or_else(|| name.strip_prefix("limits."))
        .unwrap_or(name);
    container_standard(bare) || OTHERS.contains(&name)
}

/// Upstream's `validateLimitRangeResourceName`.
fn resource_name(kind: &str, name: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let msgs = is_qualified_name(name);
    if !msgs.is_empty() {
        errs.extend(msgs.into_iter().map(|m| FieldError::invalid(path, name, m)));
        return;
    }
    let container = kind == "Pod" || kind == "Container";
    if let Some((domain, _)) = name.split_once('/') {
        let native = domain == "kubernetes.io" || domain.ends_with(".kubernetes.io");
        // Not native and not extended: a `requests.` name in another domain.
        if container && !native && name.starts_with("requests.") {
            let msg = "doesn't follow extended resource name standard";
            errs.push(FieldError::invalid(path, name, msg));
        }
        return;
    }
    if !standard(name) {
        let msg = "must be a standard resource type or fully qualified";
        errs.push(FieldError::invalid(path, name, msg));
    }
    if container && !container_standard(name) {
        let msg = "must be a standard resource for containers";
        errs.push(FieldError::invalid(path, name, msg));
    }
}

/// One item's quantities by name: (min, max, default, defaultRequest, ratio).
struct Bounds<'a> {
    lists: [Option<&'a Map<String, Value>>; 5],
}

const FIELDS: [&str; 5] = [
    "min",
    "max",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
];

impl<'a> Bounds<'a> {
    fn get(&self, field: usize, key: &str) -> Option<Quantity> {
        let text = self.lists[field]?.get(key)?.as_str()?;
        Quantity::parse(text).ok()
    }
}

fn cmp(a: &Quantity, b: &Quantity) -> Ordering {
    milli(a).cmp(&milli(b))
}

fn milli(q: &Quantity) -> i128 {
    q.milli_value()
        .map(i128::from)
        .unwrap_or_else(|| i128::from(q.value().unwrap_or(i64::MAX)) * 1000)
}

/// Resources that cannot be overcommitted (upstream's
/// `IsOvercommitAllowed` is false): hugepages and extended resources.
fn no_overcommit(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    name.starts_with("hugepages-") || (!native && !name.starts_with("requests."))
}

/// The ordering checks of one resource of an item.
fn bounds(b: &Bounds, key: &str, at: &Path, errs: &mut Vec<FieldError>) {
    let [min, max, default, request, ratio] =
        [0, 1, 2, 3, 4].map(|i| b.get(i, key).map(|q| (q.to_string(), q)));
    let path = |field: &str| at.child(field).key(key);
    let mut invalid = |field: &str, value: &str, msg: String| {
        errs.push(FieldError::invalid(&path(field), value, msg));
    };
    if let (Some((mn, mq)), Some((mx, xq))) = (&min, &max) {
        if cmp(mq, xq) == Ordering::Greater {
            invalid(
                "min",
                mn,
                format!("min value {mn} is greater than max value {mx}"),
            );
        }
    }
    if let Some((dr, rq)) = &request {
        if let Some((mn, mq)) = &min {
            if cmp(mq, rq) == Ordering::Greater {
                let msg = format!("min value {mn} is greater than default request value {dr}");
                invalid("defaultRequest", dr, msg);
            }
        }
        if let Some((mx, xq)) = &max {
            if cmp(rq, xq) == Ordering::Greater {
                let msg = format!("default request value {dr} is greater than max value {mx}");
                invalid("defaultRequest", dr, msg);
            }
        }
        if let Some((d, dq)) = &default {
            if cmp(rq, dq) == Ordering::Greater {
                let msg =
                    format!("default request value {dr} is greater than default limit value {d}");
                invalid("defaultRequest", dr, msg);
            }
        }
    }
    if let Some((d, dq)) = &default {
        if let Some((mn, mq)) = &min {
            if cmp(mq, dq) == Ordering::Greater {
                invalid(
                    "default",
                    mn,
                    format!("min value {mn} is greater than default value {d}"),
                );
            }
        }
        if let Some((mx, xq)) = &max {
            if cmp(dq, xq) == Ordering::Greater {
                invalid(
                    "default",
                    mx,
                    format!("default value {d} is greater than max value {mx}"),
                );
            }
        }
    }
    if let Some((r, rq)) = &ratio {
        if milli(rq) < 1000 {
            invalid(
                "maxLimitRequestRatio",
                r,
                format!("ratio {r} is less than 1"),
            );
        }
        if let (Some((_, mq)), Some((_, xq))) = (&min, &max) {
            let limit = milli(xq) as f64 / milli(mq) as f64;
            if milli(rq) as f64 / 1000.0 > limit {
                let msg = format!("ratio {r} is greater than max/min = {limit:.6}");
                invalid("maxLimitRequestRatio", r, msg);
            }
        }
    }
    if let (Some((d, dq)), Some((dr, rq))) = (&default, &request) {
        if no_overcommit(key) && cmp(dq, rq) != Ordering::Equal {
            let msg = format!("default value {d} must equal to defaultRequest value {dr} in {key}");
            invalid("defaultRequest", dr, msg);
        }
    }
}

/// Upstream's `ValidateLimitRange` (metadata is checked elsewhere).
pub fn validate_limit_range(range: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("spec").child("limits");
    let items = range.pointer("/spec/limits").and_then(Value::as_array);
    let mut seen: Vec<&str> = Vec::new();
    for (i, item) in items.into_iter().flatten().enumerate() {
        let at = path.index(i);
        let kind = item.get("type").and_then(Value::as_str).unwrap_or_default();
        type_name(kind, &at.child("type"), &mut errs);
        if seen.contains(&kind) {
            errs.push(FieldError::duplicate(&at.child("type"), kind));
        }
        seen.push(kind);
        let lists = FIELDS.map(|f| item.get(f).and_then(Value::as_object));
        let mut keys: Vec<&str> = Vec::new();
        for (field, list) in FIELDS.iter().zip(lists) {
            let defaults = *field == "default" || *field == "defaultRequest";
            if defaults && kind == "Pod" {
                if list.is_some_and(|l| !l.is_empty()) {
                    let msg = "may not be specified when `type` is 'Pod'";
                    errs.push(FieldError::forbidden(&at.child(field), msg));
                }
                continue;
            }
            for name in list.into_iter().flat_map(|l| l.keys()) {
                resource_name(kind, name, &at.child(field).key(name), &mut errs);
                if !keys.contains(&name.as_str()) {
                    keys.push(name);
                }
            }
        }
        if kind == "PersistentVolumeClaim" {
            let has = |f: &str| parsed_list(item.get(f)).contains_key("storage");
            if !has("min") && !has("max") {
                let msg =
                    "either minimum or maximum storage value is required, but neither was provided";
                errs.push(FieldError::required(&at.child("limits"), msg));
            }
        }
        let mut b = Bounds { lists };
        if kind == "Pod" {
            b.lists[2] = None;
            b.lists[3] = None;
        }
        for key in keys {
            bounds(&b, key, &at, &mut errs);
        }
    }
    errs
}

/// Upstream's `ValidateLimitRangeTypeName`.
fn type_name(kind: &str, path: &Path, errs: &mut Vec<FieldError>) {
    let msgs = is_qualified_name(kind);
    if !msgs.is_empty() {
        errs.extend(msgs.into_iter().map(|m| FieldError::invalid(path, kind, m)));
        return;
    }
    let known = matches!(kind, "Pod" | "Container" | "PersistentVolumeClaim");
    if !kind.contains('/') && !known {
        let msg = "must be a standard limit type or fully qualified";
        errs.push(FieldError::invalid(path, kind, msg));
    }
}

#[cfg(test)]
#[path = "limit_range_tests.rs"]
mod tests;
