//! Conversion of HorizontalPodAutoscalers between `autoscaling/v1` and
//! `autoscaling/v2` (the storage version), as upstream's conversion through
//! the internal type does (`pkg/apis/autoscaling/v1`); the v1 store
//! (`controlplane::autoscaling_v1`) and the v1 printer use it.
//!
//! v1 knows one metric, the CPU utilization target; everything v2 has
//! beyond it travels in upstream's annotations so that a read-modify-write
//! through v1 keeps it:
//! `autoscaling.alpha.kubernetes.io/metrics` (the other metric specs, in
//! v1's alpha `MetricSpec` form), `…/current-metrics` (the other metric
//! statuses), `…/conditions` and `…/behavior` (field names as upstream's
//! internal type marshals them).

use serde_json::{json, Map, Value};

pub const V1: &str = "autoscaling/v1";
pub const V2: &str = "autoscaling/v2";

const METRICS: &str = "autoscaling.alpha.kubernetes.io/metrics";
const CURRENT_METRICS: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// Upstream's CPU target when a v1 object sets none.
const DEFAULT_CPU_UTILIZATION: i64 = 80;

/// Converts an HPA between `autoscaling/v1` and `autoscaling/v2`.
pub fn convert(obj: Value, api_version: &str) -> Result<Value, String> {
    let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    match (from, api_version) {
        (a, b) if a == b => Ok(obj),
        (V1, V2) => Ok(to_v2(obj)),
        (V2, V1) => Ok(to_v1(obj)),
        (a, b) => Err(format!(
            "cannot convert HorizontalPodAutoscaler from {a:?} to {b:?}"
        )),
    }
}

fn take_annotation(obj: &mut Value, key: &str) -> Option<Value> {
    let annotations = obj.pointer_mut("/metadata/annotations")?.as_object_mut()?;
    let text = annotations.remove(key)?;
    if annotations.is_empty() {
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("annotations");
        }
    }
    serde_json::from_str(text.as_str()?).ok()
}

fn put_annotation(obj: &mut Value, key: &str, value: &Value) {
    let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta.entry("annotations").or_insert_with(|| json!({}));
    if let Some(map) = annotations.as_object_mut() {
        map.insert(key.to_owned(), Value::String(value.to_string()));
    }
}

fn to_v2(mut obj: Value) -> Value {
    let metrics = take_annotation(&mut obj, METRICS);
    let current = take_annotation(&mut obj, CURRENT_METRICS);
    let conditions = take_annotation(&mut obj, CONDITIONS);
    let behavior = take_annotation(&mut obj, BEHAVIOR);
    obj["apiVersion"] = json!(V2);
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let cpu = spec
            .remove("targetCPUUtilizationPercentage")
            .and_then(|v| v.as_i64());
        let mut specs: Vec<Value> = Vec::new();
        if let Some(cpu) = cpu {
            specs.push(cpu_metric(cpu));
        }
        specs.extend(list(metrics).iter().map(metric_spec_to_v2));
        if specs.is_empty() {
            specs.push(cpu_metric(DEFAULT_CPU_UTILIZATION));
        }
        spec.insert("metrics".into(), Value::Array(specs));
        if let Some(b) = behavior.as_ref().map(behavior_to_v2) {
            spec.insert("behavior".into(), b);
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        let cpu = status.remove("currentCPUUtilizationPercentage");
        let mut statuses: Vec<Value> = Vec::new();
        if let Some(cpu) = cpu {
            statuses.push(json!({"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": cpu}}}));
        }
        statuses.extend(list(current).iter().map(metric_status_to_v2));
        if !statuses.is_empty() {
            status.insert("currentMetrics".into(), Value::Array(statuses));
        }
        if let Some(c) = conditions.filter(|c| c.as_array().is_some_and(|a| !a.is_empty())) {
            status.insert("conditions".into(), c);
        }
    }
    obj
}

fn to_v1(mut obj: Value) -> Value {
    obj["apiVersion"] = json!(V1);
    let mut annotations: Vec<(&str, Value)> = Vec::new();
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        let metrics = list(spec.remove("metrics"));
        let cpu = metrics.iter().position(is_cpu_utilization);
        if let Some(i) = cpu {
            let target = &metrics[i]["resource"]["target"]["averageUtilization"];
            spec.insert("targetCPUUtilizationPercentage".into(), target.clone());
        }
        let others: Vec<Value> = metrics
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != cpu)
            .map(|(_, m)| metric_spec_to_v1(m))
            .collect();
        if !others.is_empty() {
            annotations.push((METRICS, Value::Array(others)));
        }
        if let Some(b) = spec.remove("behavior") {
            annotations.push((BEHAVIOR, behavior_to_v1(&b)));
        }
    }
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        let current = list(status.remove("currentMetrics"));
        let cpu = current.iter().position(|m| {
            m["type"] == "Resource"
                && m["resource"]["name"] == "cpu"
                && m["resource"]["current"]["averageUtilization"].is_number()
        });
        if let Some(i) = cpu {
            let value = &current[i]["resource"]["current"]["averageUtilization"];
            status.insert("currentCPUUtilizationPercentage".into(), value.clone());
        }
        let others: Vec<Value> = current
            .iter()
            .enumerate()
            .filter(|(i, _)| Some(*i) != cpu)
            .map(|(_, m)| metric_status_to_v1(m))
            .collect();
        if !others.is_empty() {
            annotations.push((CURRENT_METRICS, Value::Array(others)));
        }
        if let Some(c) = status.remove("conditions").filter(|c| !list_is_empty(c)) {
            annotations.push((CONDITIONS, c));
        }
        status.entry("currentReplicas").or_insert(json!(0));
    }
    for (key, value) in annotations {
        put_annotation(&mut obj, key, &value);
    }
    obj
}

fn list(v: Option<Value>) -> Vec<Value> {
    match v {
        Some(Value::Array(items)) => items,
        _ => Vec::new(),
    }
}

fn list_is_empty(v: &Value) -> bool {
    v.as_array().is_none_or(Vec::is_empty)
}

fn cpu_metric(utilization: i64) -> Value {
    json!({"type": "Resource", "resource": {"name": "cpu",
        "target": {"type": "Utilization", "averageUtilization": utilization}}})
}

fn is_cpu_utilization(m: &Value) -> bool {
    m["type"] == "Resource"
        && m["resource"]["name"] == "cpu"
        && m["resource"]["target"]["type"] == "Utilization"
        && m["resource"]["target"]["averageUtilization"].is_number()
}

/// Copies the members of `from` named in `pairs` (from-name, to-name)
/// that are present.
fn renamed(from: &Value, pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .filter_map(|(a, b)| from.get(*a).map(|v| ((*b).to_owned(), v.clone())))
        .collect()
}

/// The v2 target of a v1 alpha metric: utilization, average value or value.
fn target_v2(utilization: Option<&Value>, average: Option<&Value>, value: Option<&Value>) -> Value {
    match (utilization, average, value) {
        (Some(u), _, _) => json!({"type": "Utilization", "averageUtilization": u}),
        (None, Some(a), _) => json!({"type": "AverageValue", "averageValue": a}),
        (None, None, Some(v)) => json!({"type": "Value", "value": v}),
        (None, None, None) => json!({}),
    }
}

fn metric_id(name: &Value, selector: Option<&Value>) -> Value {
    let mut id = json!({"name": name});
    if let Some(s) = selector {
        id["selector"] = s.clone();
    }
    id
}

fn metric_spec_to_v2(m: &Value) -> Value {
    let ty = m["type"].as_str().unwrap_or("");
    let body = match ty {
        "Resource" | "ContainerResource" => {
            let r = &m[lower_first(ty).as_str()];
            let mut out = renamed(r, &[("name", "name"), ("container", "container")]);
            out.insert(
                "target".into(),
                target_v2(
                    r.get("targetAverageUtilization"),
                    r.get("targetAverageValue"),
                    None,
                ),
            );
            Value::Object(out)
        }
        "Pods" => {
            let p = &m["pods"];
            json!({"metric": metric_id(&p["metricName"], p.get("selector")),
                "target": target_v2(None, p.get("targetAverageValue"), None)})
        }
        "Object" => {
            let o = &m["object"];
            json!({"describedObject": o["target"], "metric": metric_id(&o["metricName"], o.get("selector")),
                "target": target_v2(None, o.get("averageValue"), o.get("targetValue"))})
        }
        "External" => {
            let e = &m["external"];
            json!({"metric": metric_id(&e["metricName"], e.get("metricSelector")),
                "target": target_v2(None, e.get("targetAverageValue"), e.get("targetValue"))})
        }
        _ => return m.clone(),
    };
    json!({"type": ty, lower_first(ty): body})
}

/// The v1 alpha identity of a v2 metric source (`type`'s member `v2`):
/// the resource name and container, or the metric name, its selector and
/// the described object; `None` for an unknown type.
fn v1_identity(ty: &str, v2: &Value) -> Option<Map<String, Value>> {
    let metric = &v2["metric"];
    Some(match ty {
        "Resource" | "ContainerResource" => {
            renamed(v2, &[("name", "name"), ("container", "container")])
        }
        "Pods" => renamed(metric, &[("name", "metricName"), ("selector", "selector")]),
        "Object" => {
            let mut o = renamed(metric, &[("name", "metricName"), ("selector", "selector")]);
            o.extend(renamed(v2, &[("describedObject", "target")]));
            o
        }
        "External" => renamed(
            metric,
            &[("name", "metricName"), ("selector", "metricSelector")],
        ),
        _ => return None,
    })
}

fn metric_spec_to_v1(m: &Value) -> Value {
    let ty = m["type"].as_str().unwrap_or("");
    let key = lower_first(ty);
    let v2 = &m[key.as_str()];
    let target = &v2["target"];
    let Some(mut out) = v1_identity(ty, v2) else {
        return m.clone();
    };
    let (value_key, average_key) = match ty {
        "Object" => ("targetValue", "averageValue"),
        _ => ("targetValue", "targetAverageValue"),
    };
    out.extend(renamed(
        target,
        &[
            ("averageUtilization", "targetAverageUtilization"),
            ("averageValue", average_key),
            ("value", value_key),
        ],
    ));
    json!({"type": ty, key: out})
}

fn metric_status_to_v2(m: &Value) -> Value {
    let ty = m["type"].as_str().unwrap_or("");
    let key = lower_first(ty);
    let v1 = &m[key.as_str()];
    let current = Value::Object(renamed(
        v1,
        &[
            ("currentAverageUtilization", "averageUtilization"),
            ("currentAverageValue", "averageValue"),
            ("averageValue", "averageValue"),
            ("currentValue", "value"),
        ],
    ));
    let mut out = match ty {
        "Resource" | "ContainerResource" => {
            renamed(v1, &[("name", "name"), ("container", "container")])
        }
        "Pods" | "Object" => {
            let mut o = Map::new();
            o.insert(
                "metric".into(),
                metric_id(&v1["metricName"], v1.get("selector")),
            );
            o.extend(renamed(v1, &[("target", "describedObject")]));
            o
        }
        "External" => {
            let mut o = Map::new();
            o.insert(
                "metric".into(),
                metric_id(&v1["metricName"], v1.get("metricSelector")),
            );
            o
        }
        _ => return m.clone(),
    };
    out.insert("current".into(), current);
    json!({"type": ty, key: out})
}

fn metric_status_to_v1(m: &Value) -> Value {
    let ty = m["type"].as_str().unwrap_or("");
    let key = lower_first(ty);
    let v2 = &m[key.as_str()];
    let Some(mut out) = v1_identity(ty, v2) else {
        return m.clone();
    };
    let average = if ty == "Object" {
        "averageValue"
    } else {
        "currentAverageValue"
    };
    out.extend(renamed(
        &v2["current"],
        &[
            ("averageUtilization", "currentAverageUtilization"),
            ("averageValue", average),
            ("value", "currentValue"),
        ],
    ));
    json!({"type": ty, key: out})
}

fn lower_first(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_lowercase().chain(chars).collect())
        .unwrap_or_default()
}

fn upper_first(s: &str) -> String {
    let mut chars = s.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// Renames every object member with `rename`, recursively (behavior's
/// annotation uses the Go field names of upstream's internal type).
fn rename_keys(v: &Value, rename: fn(&str) -> String) -> Value {
    match v {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (rename(k), rename_keys(v, rename)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|i| rename_keys(i, rename)).collect()),
        other => other.clone(),
    }
}

fn behavior_to_v1(b: &Value) -> Value {
    rename_keys(b, upper_first)
}

fn behavior_to_v2(b: &Value) -> Value {
    rename_keys(b, lower_first)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v1_hpa() -> Value {
        json!({"apiVersion": V1, "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 5, "targetCPUUtilizationPercentage": 50},
            "status": {"currentReplicas": 2, "desiredReplicas": 3, "currentCPUUtilizationPercentage": 40}})
    }

    #[test]
    fn the_cpu_target_becomes_a_resource_metric_and_back() {
        let v2 = convert(v1_hpa(), V2).expect("to v2");
        assert_eq!(v2["apiVersion"], V2);
        assert_eq!(v2["spec"]["metrics"], json!([cpu_metric(50)]));
        assert_eq!(
            v2["status"]["currentMetrics"][0]["resource"]["current"]["averageUtilization"],
            40
        );
        assert!(v2["spec"].get("targetCPUUtilizationPercentage").is_none());
        assert_eq!(convert(v2, V1).expect("to v1"), v1_hpa());
    }

    #[test]
    fn without_a_target_cpu_defaults_to_80_percent() {
        let mut hpa = v1_hpa();
        hpa["spec"]
            .as_object_mut()
            .map(|s| s.remove("targetCPUUtilizationPercentage"));
        let v2 = convert(hpa, V2).expect("to v2");
        assert_eq!(v2["spec"]["metrics"], json!([cpu_metric(80)]));
    }

    #[test]
    fn what_v1_cannot_hold_travels_in_annotations() {
        let v2 = json!({"apiVersion": V2, "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 4,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "memory", "target": {"type": "AverageValue", "averageValue": "500Mi"}}},
                    {"type": "External", "external": {"metric": {"name": "queue"}, "target": {"type": "Value", "value": "30"}}},
                    cpu_metric(70)],
                "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}},
            "status": {"currentReplicas": 1, "desiredReplicas": 1,
                "conditions": [{"type": "AbleToScale", "status": "True"}]}});
        let v1 = convert(v2.clone(), V1).expect("to v1");
        assert_eq!(v1["spec"]["targetCPUUtilizationPercentage"], 70);
        let annotations = &v1["metadata"]["annotations"];
        let metrics: Value =
            serde_json::from_str(annotations[METRICS].as_str().expect("metrics")).expect("json");
        assert_eq!(
            metrics[0],
            json!({"type": "Resource", "resource": {"name": "memory", "targetAverageValue": "500Mi"}})
        );
        assert_eq!(
            metrics[1],
            json!({"type": "External", "external": {"metricName": "queue", "targetValue": "30"}})
        );
        let behavior: Value =
            serde_json::from_str(annotations[BEHAVIOR].as_str().expect("behavior")).expect("json");
        assert_eq!(
            behavior,
            json!({"ScaleDown": {"StabilizationWindowSeconds": 300}})
        );
        // Back to v2: the same metrics (the CPU one first), behavior and
        // conditions, and no annotations left.
        let back = convert(v1, V2).expect("to v2");
        assert_eq!(back["spec"]["metrics"][0], cpu_metric(70));
        assert_eq!(back["spec"]["metrics"][1], v2["spec"]["metrics"][0]);
        assert_eq!(back["spec"]["metrics"][2], v2["spec"]["metrics"][1]);
        assert_eq!(back["spec"]["behavior"], v2["spec"]["behavior"]);
        assert_eq!(back["status"]["conditions"], v2["status"]["conditions"]);
        assert!(back["metadata"].get("annotations").is_none());
    }

    #[test]
    fn unknown_versions_are_refused() {
        assert!(convert(v1_hpa(), "autoscaling/v2beta2").is_err());
    }
}
