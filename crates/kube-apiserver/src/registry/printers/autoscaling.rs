//! HorizontalPodAutoscaler printers at autoscaling/v2 and autoscaling/v1.
//! Upstream prints the internal object, so a v1 HPA is converted to v2
//! first and both versions print the same cells.

use serde_json::{json, Value};

use super::core::quantity;
use super::{age_cell, int, name_cell, string, text, Printer, TableColumn};
use super::{AGE_COLUMN, NAME_COLUMN};
use crate::api::autoscaling_v1;

pub const V2: Printer = Printer {
    group: "autoscaling",
    version: "v2",
    kind: "HorizontalPodAutoscaler",
    columns,
    row: v2_row,
};

pub const V1: Printer = Printer {
    group: "autoscaling",
    version: "v1",
    kind: "HorizontalPodAutoscaler",
    columns,
    row: v1_row,
};

fn columns() -> Vec<TableColumn> {
    vec![
        NAME_COLUMN,
        string("Reference", "scaleTargetRef points to the target resource to scale, and is used to the pods for which metrics should be collected, as well as to actually change the replica count."),
        string("Targets", "metrics contains the specifications for which to use to calculate the desired replica count (the maximum replica count across all metrics will be used).  The desired replica count is calculated multiplying the ratio between the target value and the current value by the current number of pods.  Ergo, metrics used must decrease as the pod count is increased, and vice-versa.  See the individual metric source types for more information about how each type of metric must respond. If not set, the default metric will be set to 80% average CPU utilization."),
        string("MinPods", "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.  It defaults to 1 pod.  minReplicas is allowed to be 0 if the alpha feature gate HPAScaleToZero is enabled and at least one Object or External metric is configured.  Scaling is active as long as at least one metric value is available."),
        string("MaxPods", "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up. It cannot be less that minReplicas."),
        string("Replicas", "currentReplicas is current number of replicas of pods managed by this autoscaler, as last seen by the autoscaler."),
        AGE_COLUMN,
    ]
}

fn v1_row(obj: &Value) -> Vec<Value> {
    let mut v1 = obj.clone();
    v1["apiVersion"] = json!(autoscaling_v1::V1);
    match autoscaling_v1::convert(v1, autoscaling_v1::V2) {
        Ok(v2) => v2_row(&v2),
        // Unreachable with the version set above; print what there is.
        Err(_) => v2_row(obj),
    }
}

fn v2_row(hpa: &Value) -> Vec<Value> {
    let reference = format!(
        "{}/{}",
        text(hpa, "/spec/scaleTargetRef/kind"),
        text(hpa, "/spec/scaleTargetRef/name")
    );
    let min_pods = match hpa.pointer("/spec/minReplicas").and_then(Value::as_i64) {
        Some(n) => n.to_string(),
        None => "<unset>".into(),
    };
    vec![
        name_cell(hpa),
        json!(reference),
        json!(format_metrics(hpa)),
        json!(min_pods),
        json!(int(hpa, "/spec/maxReplicas")),
        json!(int(hpa, "/status/currentReplicas")),
        age_cell(hpa),
    ]
}

/// A quantity that upstream holds behind a pointer: `<nil>` when unset.
fn quantity_at(obj: Option<&Value>, pointer: &str) -> String {
    match obj.and_then(|o| o.pointer(pointer)) {
        Some(v) if !v.is_null() => quantity(v),
        _ => "<nil>".into(),
    }
}

fn is_set(obj: Option<&Value>, pointer: &str) -> bool {
    obj.and_then(|o| o.pointer(pointer))
        .is_some_and(|v| !v.is_null())
}

/// Upstream's `formatHPAMetrics`: `current/target` per metric spec (the
/// status at the same index holds the current value), at most two.
fn format_metrics(hpa: &Value) -> String {
    const MAX: usize = 2;
    let specs = hpa
        .pointer("/spec/metrics")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = hpa
        .pointer("/status/currentMetrics")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| format_metric(spec, statuses.get(i)))
        .collect();
    if list.len() > MAX {
        format!("{} + {} more...", list[..MAX].join(", "), list.len() - MAX)
    } else {
        list.join(", ")
    }
}

fn format_metric(spec: &Value, status: Option<&Value>) -> String {
    match text(spec, "/type") {
        "External" => value_or_average(spec, status, "external"),
        "Object" => value_or_average(spec, status, "object"),
        "Pods" => {
            let current = match status.and_then(|s| s.get("pods")) {
                Some(p) if !p.is_null() => quantity_at(Some(p), "/current/averageValue"),
                _ => "<unknown>".into(),
            };
            let target = quantity_at(Some(spec), "/pods/target/averageValue");
            format!("{current}/{target}")
        }
        "Resource" => resource_metric(spec, status, "resource"),
        "ContainerResource" => resource_metric(spec, status, "containerResource"),
        _ => "<unknown type>".into(),
    }
}

/// External and Object metrics: an average-value target prints with
/// `(avg)`, otherwise the plain value.
fn value_or_average(spec: &Value, status: Option<&Value>, field: &str) -> String {
    let source = status.and_then(|s| s.get(field)).filter(|v| !v.is_null());
    let target = spec.get(field);
    if is_set(target, "/target/averageValue") {
        let current = if is_set(source, "/current/averageValue") {
            quantity_at(source, "/current/averageValue")
        } else {
            "<unknown>".into()
        };
        let target = quantity_at(target, "/target/averageValue");
        format!("{current}/{target} (avg)")
    } else {
        let current = match source {
            Some(_) => quantity_at(source, "/current/value"),
            None => "<unknown>".into(),
        };
        let target = quantity_at(target, "/target/value");
        format!("{current}/{target}")
    }
}

/// Resource and ContainerResource metrics: `name: current/target`, as an
/// average value or a utilization percentage.
fn resource_metric(spec: &Value, status: Option<&Value>, field: &str) -> String {
    let source = status.and_then(|s| s.get(field)).filter(|v| !v.is_null());
    let target = spec.get(field);
    let name = target.map_or("", |t| text(t, "/name"));
    if is_set(target, "/target/averageValue") {
        let current = match source {
            Some(_) => quantity_at(source, "/current/averageValue"),
            None => "<unknown>".into(),
        };
        let target = quantity_at(target, "/target/averageValue");
        return format!("{name}: {current}/{target}");
    }
    let percent = |obj: Option<&Value>, pointer: &str| {
        obj.and_then(|o| o.pointer(pointer))
            .and_then(Value::as_i64)
            .map(|n| format!("{n}%"))
    };
    let current =
        percent(source, "/current/averageUtilization").unwrap_or_else(|| "<unknown>".into());
    let target = percent(target, "/target/averageUtilization").unwrap_or_else(|| "<auto>".into());
    format!("{name}: {current}/{target}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(hpa: Value) -> Vec<Value> {
        let mut row = v2_row(&hpa);
        row.remove(6); // age
        row
    }

    #[test]
    fn cpu_utilization_and_missing_status() {
        let hpa = json!({
            "metadata": {"name": "web"},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "web"},
                "minReplicas": 2, "maxReplicas": 5,
                "metrics": [{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 70}}}]
            }
        });
        assert_eq!(
            cells(hpa),
            vec![
                json!("web"),
                json!("Deployment/web"),
                json!("cpu: <unknown>/70%"),
                json!("2"),
                json!(5),
                json!(0)
            ]
        );
    }

    #[test]
    fn every_metric_type_and_truncation() {
        let hpa = json!({
            "metadata": {"name": "m"},
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "d"},
                "maxReplicas": 3,
                "metrics": [
                    {"type": "Resource", "resource": {"name": "memory",
                        "target": {"type": "AverageValue", "averageValue": "1024Mi"}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"},
                        "target": {"type": "AverageValue", "averageValue": "1k"}}},
                    {"type": "External", "external": {"metric": {"name": "q"},
                        "target": {"type": "Value", "value": "10"}}}
                ]
            },
            "status": {
                "currentReplicas": 2,
                "currentMetrics": [
                    {"type": "Resource", "resource": {"name": "memory",
                        "current": {"averageValue": "512Mi"}}},
                    {"type": "Pods", "pods": {"metric": {"name": "qps"},
                        "current": {"averageValue": "500"}}}
                ]
            }
        });
        let row = cells(hpa);
        assert_eq!(row[2], json!("memory: 512Mi/1Gi, 500/1k + 1 more..."));
        assert_eq!(row[3], json!("<unset>"));
        assert_eq!(row[5], json!(2));
    }

    #[test]
    fn external_and_object_averages() {
        let spec = json!({"type": "External", "external": {"metric": {"name": "q"},
            "target": {"type": "AverageValue", "averageValue": "30"}}});
        assert_eq!(format_metric(&spec, None), "<unknown>/30 (avg)");
        let status = json!({"type": "External", "external": {"current": {"averageValue": "12"}}});
        assert_eq!(format_metric(&spec, Some(&status)), "12/30 (avg)");
        let object =
            json!({"type": "Object", "object": {"target": {"type": "Value", "value": "2"}}});
        let current = json!({"type": "Object", "object": {"current": {"value": "1500m"}}});
        assert_eq!(format_metric(&object, Some(&current)), "1500m/2");
        let auto = json!({"type": "ContainerResource", "containerResource": {"name": "cpu",
            "container": "app", "target": {"type": "Utilization"}}});
        assert_eq!(format_metric(&auto, None), "cpu: <unknown>/<auto>");
        assert_eq!(
            format_metric(&json!({"type": "Other"}), None),
            "<unknown type>"
        );
    }

    #[test]
    fn v1_prints_as_v2() {
        let v1 = json!({
            "apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler",
            "metadata": {"name": "web"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"},
                "minReplicas": 1, "maxReplicas": 4, "targetCPUUtilizationPercentage": 50},
            "status": {"currentReplicas": 1, "desiredReplicas": 1,
                "currentCPUUtilizationPercentage": 20}
        });
        let mut row = v1_row(&v1);
        row.remove(6);
        assert_eq!(
            row,
            vec![
                json!("web"),
                json!("Deployment/web"),
                json!("cpu: 20%/50%"),
                json!("1"),
                json!(4),
                json!(1)
            ]
        );
        // Without a target, v1 means upstream's default of 80% CPU.
        let bare = json!({"apiVersion": "autoscaling/v1", "metadata": {"name": "b"},
            "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "b"}, "maxReplicas": 2}});
        assert_eq!(v1_row(&bare)[2], json!("cpu: <unknown>/80%"));
    }
}
