//! Resource lists (`{"cpu": "100m", "memory": "1Gi"}`) as plugins compute
//! with them: parsed quantities, sums, and a pod's effective requests and
//! limits (upstream's resource helpers, without pod overhead).

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

/// Adds `b` into `a`, per resource.
pub fn add(a: &mut BTreeMap<String, i128>, b: &ResourceList) {
    for (k, v) in b {
        *a.entry(k.clone()).or_default() += milli(v);
    }
}

/// The containers of a pod spec in one list (`containers`/`initContainers`).
pub fn containers<'a>(pod: &'a Value, list: &str) -> impl Iterator<Item = &'a Value> {
    pod.pointer(&format!("/spec/{list}"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A pod's effective `requests` or `limits` (`which`), as upstream's
/// `PodRequests`/`PodLimits`: the containers' sum plus the restartable
/// (sidecar) init containers, or the largest init container's need when
/// larger (sidecars started before it included); pod-level resources
/// replace cpu, memory and huge pages (upstream's
/// `IsSupportedPodLevelResource`). The overhead is not included.
pub fn pod_total(pod: &Value, which: &str) -> BTreeMap<String, i128> {
    let of = |c: &Value| parse_list(c.pointer(&format!("/resources/{which}")));
    let mut total = BTreeMap::new();
    for c in containers(pod, "containers") {
        add(&mut total, &of(c));
    }
    let mut sidecars: BTreeMap<String, i128> = BTreeMap::new();
    let mut init_peak: BTreeMap<String, i128> = BTreeMap::new();
    for c in containers(pod, "initContainers") {
        let mut need = sidecars.clone();
        add(&mut need, &of(c));
        if c.pointer("/restartPolicy").and_then(Value::as_str) == Some("Always") {
            add(&mut sidecars, &of(c));
        }
        for (k, v) in need {
            let peak = init_peak.entry(k).or_default();
            *peak = (*peak).max(v);
        }
    }
    for (k, v) in sidecars {
        *total.entry(k).or_default() += v;
    }
    for (k, v) in init_peak {
        let entry = total.entry(k).or_default();
        *entry = (*entry).max(v);
    }
    let pod_level = parse_list(pod.pointer(&format!("/spec/resources/{which}")));
    let supported = |k: &String| k == "cpu" || k == "memory" || k.starts_with("hugepages-");
    for (k, v) in pod_level.into_iter().filter(|(k, _)| supported(k)) {
        total.insert(k, milli(&v));
    }
    total
}
