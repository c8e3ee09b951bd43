//! Resource lists (`{"cpu": "100m", "memory": "1Gi"}`) as admission
//! plugins, the quota controller and validation compute with them: parsed
//! quantities, sums, and a pod's effective requests and limits (upstream's
//! `pkg/api/v1/resource` and `k8s.io/component-helpers/resource`, without
//! pod overhead).

use std::collections::BTreeMap;

use apimachinery::Quantity;
use serde_json::Value;

/// Resource name → quantity; unparseable values are left out (validation
/// refuses them).
pub type ResourceList = BTreeMap<String, Quantity>;

pub fn parse_list(v: Option<&Value>) -> ResourceList {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), Quantity::parse(v.as_str()?).ok()?)))
        .collect()
}

/// A resource list in milli-units, by name.
pub fn parsed_list(list: Option<&Value>) -> BTreeMap<String, i128> {
    parse_list(list)
        .iter()
        .map(|(k, v)| (k.clone(), milli(v)))
        .collect()
}

/// Milli-units of a quantity (the common precision of comparisons and sums).
pub fn milli(q: &Quantity) -> i128 {
    match q.milli_value() {
        Some(m) => i128::from(m),
        None => i128::from(q.value().unwrap_or(i64::MAX)) * 1000,
    }
}

/// `m` milli-units written as a quantity, in upstream's canonical form.
pub fn from_milli(m: i128) -> String {
    let text = if m % 1000 == 0 {
        (m / 1000).to_string()
    } else {
        format!("{m}m")
    };
    Quantity::parse(&text).map_or(text, |q| q.canonical())
}

/// The containers of a pod spec in one list (`containers`/`initContainers`).
pub fn containers<'a>(pod: &'a Value, list: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A pod's effective `requests` or `limits` (`which`) in milli-units, as
/// upstream's `PodRequests`/`PodLimits` (see [`pod_total_quantities`]), with
/// pod-level cpu, memory and huge pages (upstream's
/// `IsSupportedPodLevelResource`). The overhead is not included.
pub fn pod_total(pod: &Value, which: &str) -> BTreeMap<String, i128> {
    let supported = |k: &str| k == "cpu" || k == "memory" || k.starts_with("hugepages-");
    let total = pod_total_quantities(pod, which, supported);
    total.iter().map(|(k, q)| (k.clone(), milli(q))).collect()
}

/// A pod's `requests` or `limits` (`which`) as upstream's helpers total
/// them: containers and sidecars (restartable init containers) summed,
/// raised to the largest need of an init container (with the sidecars
/// started before it), and the pod-level values of the resources
/// `pod_level` accepts in place of the sum. Sums keep the format of the
/// first quantity, as upstream's `Quantity.Add`.
pub fn pod_total_quantities(
    pod: &Value,
    which: &str,
    pod_level: impl Fn(&str) -> bool,
) -> ResourceList {
    let of = |c: &Value| parse_list(c.pointer(&format!("/resources/{which}")));
    let mut total = ResourceList::new();
    for c in containers(pod, "containers") {
        add_list(&mut total, &of(c));
    }
    let (mut sidecars, mut init_peak) = (ResourceList::new(), ResourceList::new());
    for c in containers(pod, "initContainers") {
        let own = of(c);
        let need = if c.get("restartPolicy").and_then(Value::as_str) == Some("Always") {
            add_list(&mut total, &own);
            add_list(&mut sidecars, &own);
            sidecars.clone()
        } else {
            let mut need = own;
            add_list(&mut need, &sidecars);
            need
        };
        max_list(&mut init_peak, need);
    }
    max_list(&mut total, init_peak);
    for (name, q) in parse_list(pod.pointer(&format!("/spec/resources/{which}"))) {
        if pod_level(&name) {
            total.insert(name, q);
        }
    }
    total
}

/// Adds each quantity of `more` into `list` (upstream's addResourceList).
fn add_list(list: &mut ResourceList, more: &ResourceList) {
    for (name, q) in more {
        match list.get_mut(name) {
            Some(sum) => sum.add(q),
            None => {
                list.insert(name.clone(), q.clone());
            }
        }
    }
}

/// Raises `list` to `other` where `other` is strictly larger, taking its
/// quantity as written (upstream's maxResourceList).
fn max_list(list: &mut ResourceList, other: ResourceList) {
    for (name, q) in other {
        if list.get(&name).is_none_or(|have| q > *have) {
            list.insert(name, q);
        }
    }
}
