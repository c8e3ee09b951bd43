//! A pod's resources as upstream leaves them on create: requests defaulted
//! from limits (`SetDefaults_Pod`, containers and pod-level resources) and
//! the QoS class computed from them (`ComputePodQOS`).

use apimachinery::quantity::Quantity;
use serde_json::{json, Map, Value};

use super::validation::aggregate_container_requests;

/// The resources that decide a pod's QoS class.
const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];
const HUGEPAGES: &str = "hugepages-";

/// Upstream's resource defaults of a pod (not of pod templates): a
/// container's limit stands in for a missing request, and with pod-level
/// limits, missing pod-level requests come from what the containers
/// request together, else from the pod's limits.
pub fn default_pod_resources(spec: &mut Value) {
    for key in ["containers", "initContainers"] {
        let containers = spec.get_mut(key).and_then(Value::as_array_mut);
        for container in containers.into_iter().flatten() {
            if let Some(resources) = container.get_mut("resources") {
                requests_from_limits(resources);
            }
        }
    }
    default_pod_level_requests(spec);
}

/// Copies each limit without a request into the requests.
fn requests_from_limits(resources: &mut Value) {
    let Some(limits) = non_empty(resources, "limits").cloned() else {
        return;
    };
    let Some(resources) = resources.as_object_mut() else {
        return;
    };
    let requests = resources
        .entry("requests")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(requests) = requests.as_object_mut() {
        for (name, limit) in limits {
            requests.entry(name).or_insert(limit);
        }
    }
}

/// Upstream's `defaultPodRequests`.
fn default_pod_level_requests(spec: &mut Value) {
    let Some(limits) = spec
        .get("resources")
        .and_then(|r| non_empty(r, "limits"))
        .cloned()
    else {
        return;
    };
    let aggregated = aggregate_container_requests(spec);
    let Some(resources) = spec.get_mut("resources").and_then(Value::as_object_mut) else {
        return;
    };
    let mut requests = resources
        .get("requests")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for (name, total) in aggregated {
        // Only resources that may be overcommitted (not huge pages).
        if QOS_RESOURCES.contains(&name.as_str()) && !requests.contains_key(&name) {
            requests.insert(name, json!(total.to_string()));
        }
    }
    for (name, limit) in limits {
        let supported = QOS_RESOURCES.contains(&name.as_str()) || name.starts_with(HUGEPAGES);
        if supported && !requests.contains_key(&name) {
            requests.insert(name, limit);
        }
    }
    if !requests.is_empty() {
        resources.insert("requests".into(), Value::Object(requests));
    }
}

fn non_empty<'a>(resources: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    resources
        .get(key)
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
}

/// Sums of positive cpu and memory quantities, in milli-units.
#[derive(Default, PartialEq)]
struct Totals {
    cpu: Option<i128>,
    memory: Option<i128>,
}

impl Totals {
    /// Adds a resource list's positive cpu and memory; returns whether
    /// both were among them.
    fn add(&mut self, list: Option<&Value>) -> bool {
        let mut found = [false; 2];
        for (i, name) in QOS_RESOURCES.iter().enumerate() {
            let milli = list
                .and_then(|l| l.get(*name))
                .and_then(quantity_milli)
                .filter(|m| *m > 0);
            if let Some(milli) = milli {
                found[i] = true;
                let total = if i == 0 {
                    &mut self.cpu
                } else {
                    &mut self.memory
                };
                *total = Some(total.unwrap_or(0) + milli);
            }
        }
        found == [true, true]
    }

    fn is_empty(&self) -> bool {
        self.cpu.is_none() && self.memory.is_none()
    }
}

fn quantity_milli(value: &Value) -> Option<i128> {
    let text = match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    let q = Quantity::parse(&text).ok()?;
    q.milli_value().map(i128::from)
}

/// Upstream's `ComputePodQOS`: only cpu and memory count. With pod-level
/// resources the pod's own requests and limits decide; otherwise those of
/// the regular and init containers summed. Guaranteed needs cpu and memory
/// limits everywhere and requests equal to the limits; BestEffort has
/// neither requests nor limits.
pub fn qos_class(pod: &Value) -> &'static str {
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let (mut requests, mut limits) = (Totals::default(), Totals::default());
    let mut guaranteed = true;
    let sources: Vec<&Value> = match spec.get("resources").filter(|r| !r.is_null()) {
        Some(pod_level) => vec![pod_level],
        None => ["containers", "initContainers"]
            .iter()
            .filter_map(|key| spec.get(*key).and_then(Value::as_array))
            .flatten()
            .map(|c| c.get("resources").unwrap_or(&Value::Null))
            .collect(),
    };
    for resources in sources {
        requests.add(resources.get("requests"));
        let limits_given = resources.get("limits").is_some_and(|l| !l.is_null());
        let both = limits.add(resources.get("limits"));
        // A pod-level section without limits does not spoil Guaranteed;
        // a container without both limits does.
        if !both && (limits_given || spec.get("resources").is_none()) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    if guaranteed && requests == limits {
        return "Guaranteed";
    }
    "Burstable"
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pod(spec: Value) -> Value {
        let mut pod = json!({ "spec": spec });
        if let Some(spec) = pod.get_mut("spec") {
            default_pod_resources(spec);
        }
        pod
    }

    #[test]
    fn limits_stand_in_for_missing_requests() {
        let p = pod(json!({"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}},
            {"name": "b", "resources": {"limits": {}}}],
            "initContainers": [{"name": "i", "resources": {"limits": {"memory": "64Mi"}}}]}));
        assert_eq!(
            p["spec"]["containers"][0]["resources"]["requests"],
            json!({"cpu": "500m", "memory": "1Gi"})
        );
        assert_eq!(
            p["spec"]["containers"][1]["resources"],
            json!({"limits": {}})
        );
        assert_eq!(
            p["spec"]["initContainers"][0]["resources"]["requests"],
            json!({"memory": "64Mi"})
        );
    }

    #[test]
    fn pod_level_requests_come_from_containers_then_limits() {
        let p = pod(json!({
            "resources": {"limits": {"cpu": "2", "memory": "2Gi", "hugepages-2Mi": "4Mi"}},
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "300m"}}},
                {"name": "b", "resources": {"requests": {"cpu": "200m"}}}]}));
        assert_eq!(
            p["spec"]["resources"]["requests"],
            json!({"cpu": "500m", "memory": "2Gi", "hugepages-2Mi": "4Mi"})
        );
        // Without pod-level limits nothing is defaulted.
        let p = pod(json!({"resources": {"requests": {"cpu": "1"}},
            "containers": [{"name": "a", "resources": {"requests": {"memory": "1Gi"}}}]}));
        assert_eq!(p["spec"]["resources"], json!({"requests": {"cpu": "1"}}));
    }

    #[test]
    fn qos_classes_follow_upstream() {
        let full = json!({"limits": {"cpu": "1", "memory": "1Gi"}});
        let cases = [
            (json!({"containers": [{"name": "a"}]}), "BestEffort"),
            // Only cpu and memory count.
            (
                json!({"containers": [{"name": "a", "resources": {"requests": {"ephemeral-storage": "1Gi"}}}]}),
                "BestEffort",
            ),
            (
                json!({"containers": [{"name": "a", "resources": full.clone()}]}),
                "Guaranteed",
            ),
            // Equal values written differently.
            (
                json!({"containers": [{"name": "a", "resources": {
                    "limits": {"cpu": "1", "memory": "1Gi"},
                    "requests": {"cpu": "1000m", "memory": "1024Mi"}}}]}),
                "Guaranteed",
            ),
            // An init container without limits spoils it.
            (
                json!({"containers": [{"name": "a", "resources": full.clone()}],
                    "initContainers": [{"name": "i"}]}),
                "Burstable",
            ),
            (
                json!({"containers": [{"name": "a", "resources": {
                    "limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}}]}),
                "Burstable",
            ),
            // Pod-level resources decide alone.
            (
                json!({"resources": {"limits": {"cpu": "1", "memory": "1Gi"}},
                    "containers": [{"name": "a"}]}),
                "Guaranteed",
            ),
            (
                json!({"resources": {"requests": {"cpu": "1"}},
                    "containers": [{"name": "a", "resources": full}]}),
                "Burstable",
            ),
        ];
        for (spec, class) in cases {
            assert_eq!(qos_class(&pod(spec.clone())), class, "{spec}");
        }
    }
}
