//! HorizontalPodAutoscaler spec rules (upstream's
//! `ValidateHorizontalPodAutoscaler` in pkg/apis/autoscaling/validation):
//! replica bounds, the scale target reference, metrics by source type and
//! behavior policies, with upstream's paths and messages. autoscaling/v1
//! objects are checked in their v2 form, as upstream checks the internal
//! type.

use std::collections::BTreeSet;

use apimachinery::field_errors::{ErrorType, FieldError, Path};
use apimachinery::validation::is_path_segment_name;
use serde_json::Value;

use super::pod_resources::resource_name;
use super::pod_volumes::quantity;
use super::{dns_label, int, invalid_all, items, set, text};
use crate::api::autoscaling_v1::{convert, V2};

/// Upstream's `MaxPeriodSeconds` and `MaxStabilizationWindowSeconds`.
const MAX_PERIOD_SECONDS: i64 = 1800;
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;
const SOURCE_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
const SELECT_POLICIES: &[&str] = &["Disabled", "Max", "Min"];
const POLICY_TYPES: &[&str] = &["Percent", "Pods"];
const POSITIVE: &str = "must be greater than 0";

/// autoscaling/v2 HorizontalPodAutoscalers (create and update; scaling to
/// zero, the alpha HPAScaleToZero gate, is off).
pub fn validate_hpa(obj: &Value) -> Vec<FieldError> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let path = Path::new("spec");
    let mut errs = Vec::new();
    let min = int(spec, "minReplicas");
    let max = int(spec, "maxReplicas").unwrap_or(0);
    if let Some(min) = min.filter(|m| *m < 1) {
        let msg = "must be greater than or equal to 1";
        errs.push(FieldError::invalid(&path.child("minReplicas"), min, msg));
    }
    if max < 1 {
        errs.push(FieldError::invalid(
            &path.child("maxReplicas"),
            max,
            POSITIVE,
        ));
    }
    if min.is_some_and(|min| max < min) {
        let msg = "must be greater than or equal to `minReplicas`";
        errs.push(FieldError::invalid(&path.child("maxReplicas"), max, msg));
    }
    let target = spec.get("scaleTargetRef").unwrap_or(&Value::Null);
    object_reference(target, &path.child("scaleTargetRef"), &mut errs);
    for (i, metric) in items(spec, "metrics").iter().enumerate() {
        metric_spec(metric, &path.child("metrics").index(i), &mut errs);
    }
    if let Some(behavior) = set(spec, "behavior") {
        for key in ["scaleUp", "scaleDown"] {
            if let Some(rules) = set(behavior, key) {
                scaling_rules(rules, &path.child("behavior").child(key), &mut errs);
            }
        }
    }
    errs
}

/// autoscaling/v1 HorizontalPodAutoscalers, checked in their v2 form.
pub fn validate_hpa_v1(obj: &Value) -> Vec<FieldError> {
    convert(obj.clone(), V2)
        .map(|v2| validate_hpa(&v2))
        .unwrap_or_default()
}

/// Upstream's `ValidateCrossVersionObjectReference`.
fn object_reference(reference: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    for key in ["kind", "name"] {
        let value = text(reference, key);
        if value.is_empty() {
            errs.push(FieldError::required(&path.child(key), ""));
        } else {
            invalid_all(&path.child(key), value, is_path_segment_name(value), errs);
        }
    }
}

/// Upstream's `validateMetricSpec`: the type names the one source given.
fn metric_spec(metric: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let kind = text(metric, "type");
    if kind.is_empty() {
        let msg = "must specify a metric source type";
        errs.push(FieldError::required(&path.child("type"), msg));
    }
    if !SOURCE_TYPES.contains(&kind) {
        errs.push(FieldError::not_supported(
            &path.child("type"),
            kind,
            SOURCE_TYPES,
        ));
    }
    let sources = [
        "object",
        "external",
        "pods",
        "resource",
        "containerResource",
    ];
    let present: Vec<&str> = sources
        .into_iter()
        .filter(|s| set(metric, s).is_some())
        .collect();
    if let Some(first) = present.first() {
        let source = &metric[*first];
        let at = path.child(first);
        match *first {
            "object" => object_source(source, &at, errs),
            "external" => external_source(source, &at, errs),
            "pods" => pods_source(source, &at, errs),
            "resource" => resource_source(source, &at, errs),
            _ => container_resource_source(source, &at, errs),
        }
    }
    let expected = match kind {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "External" => "external",
        "ContainerResource" => "containerResource",
        _ => {
            errs.push(FieldError::not_supported(
                &path.child("type"),
                kind,
                SOURCE_TYPES,
            ));
            ""
        }
    };
    if !expected.is_empty() && !present.contains(&expected) {
        let msg = "must populate information for the given metric source";
        errs.push(FieldError::required(&path.child(expected), msg));
    }
    if present.len() > 1 {
        // Go ranges over a set: the order is unspecified; sorted here.
        let others: BTreeSet<&str> = present.into_iter().filter(|s| *s != expected).collect();
        for other in others {
            let msg = "must populate the given metric source only";
            errs.push(FieldError::forbidden(&path.child(other), msg));
        }
    }
}

fn target(source: &Value) -> &Value {
    source.get("target").unwrap_or(&Value::Null)
}

fn object_source(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let described = source.get("describedObject").unwrap_or(&Value::Null);
    object_reference(described, &path.child("describedObject"), errs);
    metric_identifier(source, &path.child("metric"), errs);
    metric_target(target(source), &path.child("target"), errs);
    if set(target(source), "value").is_none() && set(target(source), "averageValue").is_none() {
        let msg = "must set either a target value or averageValue";
        errs.push(FieldError::required(
            &path.child("target").child("averageValue"),
            msg,
        ));
    }
}

fn external_source(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    metric_identifier(source, &path.child("metric"), errs);
    metric_target(target(source), &path.child("target"), errs);
    let (value, average) = (
        set(target(source), "value").is_some(),
        set(target(source), "averageValue").is_some(),
    );
    if !value && !average {
        let msg = "must set either a target value for metric or a per-pod target";
        errs.push(FieldError::required(
            &path.child("target").child("averageValue"),
            msg,
        ));
    }
    if value && average {
        let msg = "may not set both a target value for metric and a per-pod target";
        errs.push(FieldError::forbidden(
            &path.child("target").child("value"),
            msg,
        ));
    }
}

fn pods_source(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    metric_identifier(source, &path.child("metric"), errs);
    metric_target(target(source), &path.child("target"), errs);
    if set(target(source), "averageValue").is_none() {
        let msg = "must specify a positive target averageValue";
        errs.push(FieldError::required(
            &path.child("target").child("averageValue"),
            msg,
        ));
    }
}

fn resource_source(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if text(source, "name").is_empty() {
        let msg = "must specify a resource name";
        errs.push(FieldError::required(&path.child("name"), msg));
    }
    metric_target(target(source), &path.child("target"), errs);
    utilization_or_value(target(source), &path.child("target"), errs);
}

fn container_resource_source(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let name = text(source, "name");
    if name.is_empty() {
        let msg = "must specify a resource name";
        errs.push(FieldError::required(&path.child("name"), msg));
    } else {
        resource_name(name, &path.child("name"), errs);
    }
    let container = text(source, "container");
    if container.is_empty() {
        let msg = "must specify a container";
        errs.push(FieldError::required(&path.child("container"), msg));
    } else {
        dns_label(&path.child("container"), container, errs);
    }
    metric_target(target(source), &path.child("target"), errs);
    utilization_or_value(target(source), &path.child("target"), errs);
}

/// A resource target gives a utilization or an average value, not both.
fn utilization_or_value(target: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let utilization = set(target, "averageUtilization").is_some();
    let value = set(target, "averageValue").is_some();
    if !utilization && !value {
        let msg = "must set either a target raw value or a target utilization";
        errs.push(FieldError::required(&path.child("averageUtilization"), msg));
    }
    if utilization && value {
        let msg = "may not set both a target raw value and a target utilization";
        errs.push(FieldError::forbidden(&path.child("averageValue"), msg));
    }
}

/// Upstream's `validateMetricTarget`.
fn metric_target(target: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let kind = text(target, "type");
    if kind.is_empty() {
        let msg = "must specify a metric target type";
        errs.push(FieldError::required(&path.child("type"), msg));
    }
    if !["Utilization", "Value", "AverageValue"].contains(&kind) {
        let msg = "must be either Utilization, Value, or AverageValue";
        errs.push(FieldError::invalid(&path.child("type"), kind, msg));
    }
    for key in ["value", "averageValue"] {
        let Some(q) = set(target, key).and_then(quantity) else {
            continue;
        };
        if q.is_negative() || q.is_zero() {
            errs.push(shown_bare(
                &path.child(key),
                &q.to_string(),
                "must be positive",
            ));
        }
    }
    if let Some(utilization) = int(target, "averageUtilization").filter(|u| *u < 1) {
        let p = path.child("averageUtilization");
        errs.push(FieldError::invalid(&p, utilization, POSITIVE));
    }
}

/// An Invalid error whose value Go prints through `String()` (a
/// `*resource.Quantity`), so unquoted.
fn shown_bare(path: &Path, value: &str, detail: &str) -> FieldError {
    FieldError {
        error_type: ErrorType::Invalid,
        field: path.to_string(),
        bad_value: None,
        detail: format!("{value}: {detail}"),
    }
}

/// Upstream's `validateMetricIdentifier` (of `source.metric`).
fn metric_identifier(source: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let metric = source.get("metric").unwrap_or(&Value::Null);
    let name = text(metric, "name");
    if name.is_empty() {
        let msg = "must specify a metric name";
        errs.push(FieldError::required(&path.child("name"), msg));
    } else {
        invalid_all(&path.child("name"), name, is_path_segment_name(name), errs);
    }
}

/// Upstream's `validateScalingRules` of one direction.
fn scaling_rules(rules: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    if let Some(window) = int(rules, "stabilizationWindowSeconds") {
        let p = path.child("stabilizationWindowSeconds");
        if window < 0 {
            let msg = "must be greater than or equal to zero";
            errs.push(FieldError::invalid(&p, window, msg));
        }
        if window > MAX_STABILIZATION_WINDOW_SECONDS {
            let msg = format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}");
            errs.push(FieldError::invalid(&p, window, msg));
        }
    }
    if let Some(policy) = set(rules, "selectPolicy").and_then(Value::as_str) {
        if !SELECT_POLICIES.contains(&policy) {
            let p = path.child("selectPolicy");
            errs.push(FieldError::not_supported(&p, policy, SELECT_POLICIES));
        }
    }
    let policies = items(rules, "policies");
    if policies.is_empty() {
        let msg = "must specify at least one Policy";
        errs.push(FieldError::required(&path.child("policies"), msg));
    }
    for (i, policy) in policies.iter().enumerate() {
        scaling_policy(policy, &path.child("policies").index(i), errs);
    }
}

/// Upstream's `validateScalingPolicy`.
fn scaling_policy(policy: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let kind = text(policy, "type");
    if !POLICY_TYPES.contains(&kind) {
        errs.push(FieldError::not_supported(
            &path.child("type"),
            kind,
            POLICY_TYPES,
        ));
    }
    let value = int(policy, "value").unwrap_or(0);
    if value <= 0 {
        let msg = "must be greater than zero";
        errs.push(FieldError::invalid(&path.child("value"), value, msg));
    }
    let period = int(policy, "periodSeconds").unwrap_or(0);
    let p = path.child("periodSeconds");
    if period <= 0 {
        errs.push(FieldError::invalid(&p, period, "must be greater than zero"));
    }
    if period > MAX_PERIOD_SECONDS {
        let msg = format!("must be less than or equal to {MAX_PERIOD_SECONDS}");
        errs.push(FieldError::invalid(&p, period, msg));
    }
}

#[cfg(test)]
#[path = "autoscaling_tests.rs"]
mod tests;
