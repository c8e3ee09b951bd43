//! `events.k8s.io/v1` Events, served over the storage (and watch cache) of
//! core/v1 Events, as upstream stores both resources in one place
//! (`AddCohabitatingResources`) and converts through the internal Event
//! (`pkg/apis/events/v1/conversion.go`): `note` is the core `message`,
//! `regarding` the `involvedObject`, `reportingController` the
//! `reportingComponent`, and the `deprecated*` fields the core `source`,
//! `firstTimestamp`, `lastTimestamp` and `count`; the other fields share
//! their names.

use apiserver::server::GenericApiServer;
use serde_json::Value;

use super::openapi::ResourceSchema;
use super::{builtin, converted};

pub const EVENTS_V1: &str = "events.k8s.io/v1";
pub const CORE_V1: &str = "v1";

/// The group version this module serves, for `--runtime-config`.
pub const GROUP_VERSION: (&str, &str) = ("events.k8s.io", "v1");

/// Fields named differently: (events.k8s.io/v1, core/v1).
const RENAMED: [(&str, &str); 7] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// Serves `events.k8s.io/v1` Events over the installed core/v1 store
/// (one resource to admission rules matching equivalent resources, as
/// upstream's registry keyed by storage prefix makes them); returns what
/// OpenAPI needs of them.
pub fn install(server: &mut GenericApiServer, prefix: &str) -> Vec<ResourceSchema> {
    let Some(core) = server.store("", "v1", "events") else {
        return Vec::new();
    };
    converted::install(server, prefix, &core, builtin::events_v1(), convert)
}

/// Converts an Event between `events.k8s.io/v1` and core `v1`.
pub fn convert(obj: Value, api_version: &str) -> Result<Value, String> {
    let from = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    match (from, api_version) {
        (a, b) if a == b => Ok(obj),
        (CORE_V1, EVENTS_V1) => Ok(rename(obj, EVENTS_V1, |(events, core)| (core, events))),
        (EVENTS_V1, CORE_V1) => Ok(rename(obj, CORE_V1, |pair| pair)),
        (a, b) => Err(format!("cannot convert Event from {a:?} to {b:?}")),
    }
}

/// Moves each renamed field from its `from` name to its `to` name (`pick`
/// orders a pair as (from, to)) and reshapes the result as upstream
/// writes the target type.
fn rename(
    mut obj: Value,
    api_version: &str,
    pick: fn((&'static str, &'static str)) -> (&'static str, &'static str),
) -> Value {
    if let Some(map) = obj.as_object_mut() {
        let moved: Vec<(&str, Option<Value>)> = RENAMED
            .map(pick)
            .iter()
            .map(|(from, to)| (*to, map.remove(*from)))
            .collect();
        for (to, value) in moved {
            match value {
                Some(value) => map.insert(to.to_owned(), value),
                None => map.remove(to),
            };
        }
        map.insert("apiVersion".into(), Value::String(api_version.to_owned()));
        map.insert("kind".into(), Value::String("Event".to_owned()));
    }
    go_json::normalize(&mut obj);
    obj
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn events_event() -> Value {
        json!({
            "apiVersion": EVENTS_V1, "kind": "Event",
            "metadata": {"name": "e1", "namespace": "default"},
            "eventTime": "2026-01-02T03:04:05.000006Z",
            "series": {"count": 3, "lastObservedTime": "2026-01-02T03:05:00.000000Z"},
            "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1",
            "action": "Scale",
            "reason": "Scaled",
            "regarding": {"kind": "Deployment", "namespace": "default", "name": "web"},
            "related": {"kind": "ReplicaSet", "namespace": "default", "name": "web-1"},
            "note": "scaled up",
            "type": "Normal",
            "deprecatedSource": {"component": "ctl", "host": "h1"},
            "deprecatedFirstTimestamp": "2026-01-01T00:00:00Z",
            "deprecatedLastTimestamp": "2026-01-02T00:00:00Z",
            "deprecatedCount": 7
        })
    }

    #[test]
    fn events_fields_map_to_core_ones_and_back() {
        let core = convert(events_event(), CORE_V1).unwrap_or_default();
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["message"], "scaled up");
        assert_eq!(core["involvedObject"]["name"], "web");
        assert_eq!(core["related"]["name"], "web-1");
        assert_eq!(core["reportingComponent"], "example.com/ctl");
        assert_eq!(core["reportingInstance"], "ctl-1");
        assert_eq!(core["source"], json!({"component": "ctl", "host": "h1"}));
        assert_eq!(core["firstTimestamp"], "2026-01-01T00:00:00Z");
        assert_eq!(core["lastTimestamp"], "2026-01-02T00:00:00Z");
        assert_eq!(core["count"], 7);
        assert_eq!(core["series"]["count"], 3);
        assert_eq!(
            (&core["reason"], &core["action"], &core["type"]),
            (&json!("Scaled"), &json!("Scale"), &json!("Normal"))
        );
        assert_eq!(core["eventTime"], "2026-01-02T03:04:05.000006Z");
        for (events, _) in RENAMED {
            assert!(core.get(events).is_none(), "{events} left in core form");
        }
        let back = convert(core, EVENTS_V1).unwrap_or_default();
        assert_eq!(back, convert(events_event(), EVENTS_V1).unwrap_or_default());
        assert_eq!(back["note"], "scaled up");
        assert_eq!(back["regarding"]["kind"], "Deployment");
        assert_eq!(back["deprecatedCount"], 7);
    }

    #[test]
    fn a_core_event_reads_as_an_events_one() {
        let core = json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "e2", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "p"},
            "reason": "Pulled", "message": "pulled image", "type": "Normal",
            "source": {"component": "kubelet"}, "count": 2});
        let events = convert(core, EVENTS_V1).unwrap_or_default();
        assert_eq!(events["apiVersion"], EVENTS_V1);
        assert_eq!(events["note"], "pulled image");
        assert_eq!(events["regarding"]["kind"], "Pod");
        assert_eq!(events["deprecatedSource"]["component"], "kubelet");
        assert_eq!(events["deprecatedCount"], 2);
        assert!(events.get("message").is_none());
        assert!(convert(json!({"apiVersion": "v2"}), EVENTS_V1).is_err());
    }
}
