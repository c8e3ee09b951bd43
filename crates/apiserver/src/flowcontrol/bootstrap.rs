//! The bootstrap configuration of API Priority and Fairness: the mandatory
//! `exempt` and `catch-all` objects and upstream's suggested ones, kept as
//! data in `bootstrap.yaml` and built into typed objects once.

use std::sync::OnceLock;

use k8s_openapi::api::flowcontrol::v1::{FlowSchema, PriorityLevelConfiguration};
use serde::Deserialize;
use serde_json::{json, Value};

/// Objects annotated `"true"` have their spec kept equal to the bootstrap
/// one (upstream's `apf.kubernetes.io/autoupdate-spec`).
pub const AUTO_UPDATE_ANNOTATION: &str = "apf.kubernetes.io/autoupdate-spec";
/// The mandatory schema every request falls back to.
pub const CATCH_ALL: &str = "catch-all";

const API_VERSION: &str = "flowcontrol.apiserver.k8s.io/v1";

/// One set of bootstrap objects, as stored objects (JSON) and typed.
pub struct Objects {
    pub priority_levels: Vec<Value>,
    pub flow_schemas: Vec<Value>,
    typed_levels: Vec<PriorityLevelConfiguration>,
    typed_schemas: Vec<FlowSchema>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    mandatory: Set,
    suggested: Set,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Set {
    priority_levels: Vec<Entry>,
    flow_schemas: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    name: String,
    spec: Value,
}

fn object(kind: &str, entry: &Entry) -> Value {
    json!({
        "apiVersion": API_VERSION,
        "kind": kind,
        "metadata": {
            "name": entry.name,
            "annotations": {AUTO_UPDATE_ANNOTATION: "true"},
        },
        "spec": entry.spec,
    })
}

fn typed<T: serde::de::DeserializeOwned>(objects: &[Value]) -> Vec<T> {
    objects
        .iter()
        .map(|o| serde_json::from_value(o.clone()).expect("bootstrap.yaml holds valid objects"))
        .collect()
}

impl Objects {
    fn build(set: &Set) -> Objects {
        let priority_levels: Vec<Value> = set
            .priority_levels
            .iter()
            .map(|e| object("PriorityLevelConfiguration", e))
            .collect();
        let flow_schemas: Vec<Value> = set
            .flow_schemas
            .iter()
            .map(|e| object("FlowSchema", e))
            .collect();
        Objects {
            typed_levels: typed(&priority_levels),
            typed_schemas: typed(&flow_schemas),
            priority_levels,
            flow_schemas,
        }
    }
}

fn data() -> &'static (Objects, Objects) {
    static DATA: OnceLock<(Objects, Objects)> = OnceLock::new();
    DATA.get_or_init(|| {
        let data: Data =
            serde_yaml::from_str(include_str!("bootstrap.yaml")).expect("bootstrap.yaml is valid");
        (
            Objects::build(&data.mandatory),
            Objects::build(&data.suggested),
        )
    })
}

/// The objects that always exist: recreated when deleted, and their spec
/// always restored.
pub fn mandatory() -> &'static Objects {
    &data().0
}

/// Upstream's suggested objects: created when missing, updated while
/// annotated for auto-update.
pub fn suggested() -> &'static Objects {
    &data().1
}

pub(super) fn mandatory_priority_levels() -> &'static [PriorityLevelConfiguration] {
    &mandatory().typed_levels
}

pub(super) fn mandatory_flow_schemas() -> &'static [FlowSchema] {
    &mandatory().typed_schemas
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bootstrap_objects_are_upstreams() {
        let names = |objects: &[Value]| -> Vec<String> {
            objects
                .iter()
                .filter_map(|o| o.pointer("/metadata/name")?.as_str().map(str::to_owned))
                .collect()
        };
        assert_eq!(names(&mandatory().priority_levels), ["catch-all", "exempt"]);
        assert_eq!(names(&mandatory().flow_schemas), ["exempt", "catch-all"]);
        assert_eq!(suggested().typed_levels.len(), 6);
        assert_eq!(suggested().typed_schemas.len(), 9);
        let shares: i32 = mandatory_priority_levels()
            .iter()
            .chain(&suggested().typed_levels)
            .filter_map(|l| l.spec.limited.as_ref()?.nominal_concurrency_shares)
            .sum();
        assert_eq!(shares, 245);
        for fs in suggested()
            .typed_schemas
            .iter()
            .chain(mandatory_flow_schemas())
        {
            let spec = &fs.spec;
            assert!(spec.matching_precedence.is_some());
            assert!(!spec.rules.as_ref().unwrap().is_empty());
        }
    }
}
