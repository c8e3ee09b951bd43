//! The LimitRanger plugin: containers take the default requests and limits
//! of the namespace's LimitRanges, and pods and claims must stay within
//! their minimums, maximums and limit/request ratios.

use apimachinery::status::ApiError;
use apiserver::admission::{
    Attributes, Handler, MutationInterface, Operation, ValidationInterface,
};
use async_trait::async_trait;
use serde_json::{json, Map, Value};
use storage::Object;

use crate::api::resource::{self, milli, parse_list, ResourceList};
use apiserver::admission::initializer::Stores;

const ANNOTATION: &str = "kubernetes.io/limit-ranger";

pub struct LimitRanger {
    pub stores: Stores,
}

impl Handler for LimitRanger {
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
}

/// Pods on create (their containers cannot change later) and claims.
fn applies(a: &Attributes) -> bool {
    a.subresource.is_empty()
        && ((a.is("", "pods") && a.operation == Operation::Create)
            || a.is("", "persistentvolumeclaims"))
}

impl LimitRanger {
    async fn ranges(&self, a: &Attributes) -> Result<Vec<Object>, ApiError> {
        self.stores
            .list("", "limitranges", Some(&a.namespace))
            .await
    }
}

fn items(range: &Value) -> impl Iterator<Item = &Value> {
    range
        .pointer("/spec/limits")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

fn of_type<'a>(range: &'a Value, kind: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    items(range).filter(move |i| i.get("type").and_then(Value::as_str) == Some(kind))
}

#[async_trait]
impl MutationInterface for LimitRanger {
    async fn admit(&self, a: &mut Attributes) -> Result<(), ApiError> {
        if !applies(a) || !a.is("", "pods") {
            return Ok(());
        }
        let ranges = self.ranges(a).await?;
        let Some(pod) = a.object.as_mut() else {
            return Ok(());
        };
        for range in &ranges {
            let (mut requests, mut limits) = (Map::new(), Map::new());
            for item in of_type(range, "Container") {
                if let Some(d) = item.get("defaultRequest").and_then(Value::as_object) {
                    requests.extend(d.clone());
                }
                if let Some(d) = item.get("default").and_then(Value::as_object) {
                    limits.extend(d.clone());
                }
            }
            apply_defaults(pod, &requests, &limits);
        }
        Ok(())
    }
}

/// Fills unset requests and limits, recording what was set in upstream's
/// annotation.
fn apply_defaults(pod: &mut Value, requests: &Map<String, Value>, limits: &Map<String, Value>) {
    let mut notes = Vec::new();
    for (list, label) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(containers) = pod
            .pointer_mut(&format!("/spec/{list}"))
            .and_then(Value::as_array_mut)
        else {
            continue;
        };
        for c in containers.iter_mut() {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            let Some(res) = c
                .as_object_mut()
                .map(|c| c.entry("resources").or_insert_with(|| json!({})))
                .and_then(Value::as_object_mut)
            else {
                continue;
            };
            let set_requests = fill(res, "requests", requests);
            let set_limits = fill(res, "limits", limits);
            if !set_requests.is_empty() {
                notes.push(format!(
                    "{} request for {label} {name}",
                    set_requests.join(", ")
                ));
            }
            if !set_limits.is_empty() {
                notes.push(format!(
                    "{} limit for {label} {name}",
                    set_limits.join(", ")
                ));
            }
        }
    }
    if notes.is_empty() {
        return;
    }
    let annotations = pod
        .as_object_mut()
        .map(|p| p.entry("metadata").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
        .map(|m| m.entry("annotations").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut);
    if let Some(annotations) = annotations {
        annotations.insert(
            ANNOTATION.into(),
            json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
        );
    }
}

/// Sets each default missing from `res[key]`; returns the names set, sorted.
fn fill(res: &mut Map<String, Value>, key: &str, defaults: &Map<String, Value>) -> Vec<String> {
    if defaults.is_empty() {
        return Vec::new();
    }
    let Some(list) = res.entry(key).or_insert_with(|| json!({})).as_object_mut() else {
        return Vec::new();
    };
    let mut set = Vec::new();
    for (k, v) in defaults {
        if !list.contains_key(k) {
            list.insert(k.clone(), v.clone());
            set.push(k.clone());
        }
    }
    set.sort();
    set
}

#[async_trait]
impl ValidationInterface for LimitRanger {
    async fn validate(&self, a: &Attributes) -> Result<(), ApiError> {
        if !applies(a) {
            return Ok(());
        }
        let Some(obj) = a.object.as_ref() else {
            return Ok(());
        };
        let mut errors = Vec::new();
        for range in &self.ranges(a).await? {
            if a.is("", "pods") {
                check_pod(range, obj, &mut errors);
            } else {
                check_claim(range, obj, &mut errors);
            }
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(a.forbidden(&errors[0])),
            _ => Err(a.forbidden(format!("[{}]", errors.join(", ")))),
        }
    }
}

fn check_pod(range: &Value, pod: &Value, errors: &mut Vec<String>) {
    for item in of_type(range, "Container") {
        for list in ["containers", "initContainers"] {
            for c in resource::containers(pod, list) {
                let req = parse_list(c.pointer("/resources/requests"));
                let lim = parse_list(c.pointer("/resources/limits"));
                check_item(item, "Container", &req, &lim, errors);
            }
        }
    }
    for item in of_type(range, "Pod") {
        let req = pod_totals(pod, "requests");
        let lim = pod_totals(pod, "limits");
        check_item(item, "Pod", &req, &lim, errors);
    }
}

/// A pod's `requests` or `limits` (`which`) as upstream LimitRanger's
/// podRequests/podLimits total them: pod-level cpu and memory replace the
/// sum. Sums keep the format of the first quantity, so messages read
/// `2Gi`, not `2147483648`.
fn pod_totals(pod: &Value, which: &str) -> ResourceList {
    resource::pod_total_quantities(pod, which, |name| name == "cpu" || name == "memory")
}

fn check_claim(range: &Value, pvc: &Value, errors: &mut Vec<String>) {
    let req = parse_list(pvc.pointer("/spec/resources/requests"));
    for item in of_type(range, "PersistentVolumeClaim") {
        let kind = "PersistentVolumeClaim";
        for (name, min) in parse_list(item.get("min")) {
            match req.get(&name) {
                None => errors.push(format!(
                    "minimum {name} usage per {kind} is {min}.  No request is specified"
                )),
                Some(r) if milli(r) < milli(&min) => errors.push(format!(
                    "minimum {name} usage per {kind} is {min}, but request is {r}"
                )),
                Some(_) => {}
            }
        }
        for (name, max) in parse_list(item.get("max")) {
            match req.get(&name) {
                None => errors.push(format!(
                    "maximum {name} usage per {kind} is {max}.  No request is specified"
                )),
                Some(r) if milli(r) > milli(&max) => errors.push(format!(
                    "maximum {name} usage per {kind} is {max}, but request is {r}"
                )),
                Some(_) => {}
            }
        }
    }
}

/// Upstream's min, max and ratio constraints of one LimitRange item.
fn check_item(
    item: &Value,
    kind: &str,
    req: &ResourceList,
    lim: &ResourceList,
    errors: &mut Vec<String>,
) {
    for (name, min) in parse_list(item.get("min")) {
        let (r, l) = (req.get(&name), lim.get(&name));
        match r {
            None => errors.push(format!(
                "minimum {name} usage per {kind} is {min}.  No request is specified"
            )),
            Some(r) if milli(r) < milli(&min) => errors.push(format!(
                "minimum {name} usage per {kind} is {min}, but request is {r}"
            )),
            Some(_) => match l {
                Some(l) if milli(l) < milli(&min) => errors.push(format!(
                    "minimum {name} usage per {kind} is {min}, but limit is {l}"
                )),
                _ => {}
            },
        }
    }
    for (name, max) in parse_list(item.get("max")) {
        let (r, l) = (req.get(&name), lim.get(&name));
        match l {
            None => errors.push(format!(
                "maximum {name} usage per {kind} is {max}.  No limit is specified"
            )),
            Some(l) if milli(l) > milli(&max) => errors.push(format!(
                "maximum {name} usage per {kind} is {max}, but limit is {l}"
            )),
            Some(_) => match r {
                Some(r) if milli(r) > milli(&max) => errors.push(format!(
                    "maximum {name} usage per {kind} is {max}, but request is {r}"
                )),
                _ => {}
            },
        }
    }
    for (name, ratio) in parse_list(item.get("maxLimitRequestRatio")) {
        let r = req.get(&name).map(milli).unwrap_or(0);
        let l = lim.get(&name).map(milli).unwrap_or(0);
        if r == 0 {
            errors.push(format!("{name} max limit to request ratio per {kind} is {ratio}, but no request is specified or request is 0"));
        } else if l == 0 {
            errors.push(format!("{name} max limit to request ratio per {kind} is {ratio}, but no limit is specified or limit is 0"));
        } else {
            // Precision of a ratio check, as upstream: milli-units both sides.
            let observed = l as f64 / r as f64;
            let allowed = milli(&ratio) as f64 / 1000.0;
            if observed > allowed {
                errors.push(format!("{name} max limit to request ratio per {kind} is {ratio}, but provided ratio is {observed:.6}"));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_only_what_is_unset_and_are_annotated() {
        let mut pod = json!({"spec": {"containers": [
            {"name": "web", "resources": {"requests": {"cpu": "250m"}}}
        ]}});
        let requests = json!({"cpu": "100m", "memory": "64Mi"});
        let limits = json!({"cpu": "1"});
        apply_defaults(
            &mut pod,
            requests.as_object().unwrap_or(&Map::new()),
            limits.as_object().unwrap_or(&Map::new()),
        );
        let res = &pod["spec"]["containers"][0]["resources"];
        assert_eq!(res["requests"], json!({"cpu": "250m", "memory": "64Mi"}));
        assert_eq!(res["limits"], json!({"cpu": "1"}));
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: memory request for container web; cpu limit for container web"
        );
    }

    #[test]
    fn minimum_maximum_and_ratio_are_enforced() {
        let item = json!({"type": "Container", "min": {"cpu": "100m"}, "max": {"memory": "1Gi"},
                          "maxLimitRequestRatio": {"cpu": "2"}});
        let req = parse_list(Some(&json!({"cpu": "50m"})));
        let lim = parse_list(Some(&json!({"cpu": "200m", "memory": "2Gi"})));
        let mut errors = Vec::new();
        check_item(&item, "Container", &req, &lim, &mut errors);
        assert_eq!(
            errors,
            vec![
                "minimum cpu usage per Container is 100m, but request is 50m".to_string(),
                "maximum memory usage per Container is 1Gi, but limit is 2Gi".to_string(),
                "cpu max limit to request ratio per Container is 2, but provided ratio is 4.000000"
                    .to_string(),
            ]
        );
    }

    fn pod_errors(range_item: Value, pod: Value) -> Vec<String> {
        let mut errors = Vec::new();
        check_pod(
            &json!({"spec": {"limits": [range_item]}}),
            &pod,
            &mut errors,
        );
        errors
    }

    fn container(name: &str, limits: Value) -> Value {
        json!({"name": name, "resources": {"limits": limits}})
    }

    #[test]
    fn pod_totals_are_written_in_the_first_quantity_format() {
        let max = json!({"type": "Pod", "max": {"memory": "1Gi", "cpu": "1"}});
        let one =
            json!({"spec": {"containers": [container("a", json!({"memory": "2Gi", "cpu": "1"}))]}});
        assert_eq!(
            pod_errors(max.clone(), one),
            vec!["maximum memory usage per Pod is 1Gi, but limit is 2Gi".to_string()]
        );
        let two = json!({"spec": {"containers": [
            container("a", json!({"memory": "1Gi", "cpu": "500m"})),
            container("b", json!({"memory": "512Mi", "cpu": "1"})),
        ]}});
        assert_eq!(
            pod_errors(max, two),
            vec![
                "maximum cpu usage per Pod is 1, but limit is 1500m".to_string(),
                "maximum memory usage per Pod is 1Gi, but limit is 1536Mi".to_string(),
            ]
        );
        // A decimal first quantity makes the sum decimal.
        let decimal_first = json!({"spec": {"containers": [
            container("a", json!({"memory": "1G"})),
            container("b", json!({"memory": "1Gi"})),
        ]}});
        assert_eq!(
            pod_errors(
                json!({"type": "Pod", "max": {"memory": "1G"}}),
                decimal_first
            ),
            vec!["maximum memory usage per Pod is 1G, but limit is 2073741824".to_string()]
        );
    }

    #[test]
    fn pod_totals_count_sidecars_and_the_largest_init_container() {
        let max = json!({"type": "Pod", "max": {"memory": "1Gi"}});
        let mut sidecar = container("side", json!({"memory": "256Mi"}));
        sidecar["restartPolicy"] = json!("Always");
        // Containers 1Gi + sidecar 256Mi; the init container needs 2Gi
        // with the sidecar, which is larger.
        let pod = json!({"spec": {
            "initContainers": [sidecar, container("init", json!({"memory": "1792Mi"}))],
            "containers": [container("a", json!({"memory": "1Gi"}))],
        }});
        assert_eq!(
            pod_errors(max.clone(), pod),
            vec!["maximum memory usage per Pod is 1Gi, but limit is 2Gi".to_string()]
        );
        // Pod-level memory replaces the containers' sum.
        let pod_level = json!({"spec": {
            "resources": {"limits": {"memory": "3Gi"}},
            "containers": [container("a", json!({"memory": "512Mi"}))],
        }});
        assert_eq!(
            pod_errors(max, pod_level),
            vec!["maximum memory usage per Pod is 1Gi, but limit is 3Gi".to_string()]
        );
    }
}
