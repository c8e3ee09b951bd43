//! Update-time validation of Events written through `events.k8s.io/v1`
//! (upstream's `ValidateEventUpdate` in pkg/apis/core/validation/events.go):
//! everything but the series and metadata is fixed. Upstream checks the
//! internal (core) Event, so its paths and values are the core ones:
//! `regarding` is reported as `involvedObject`, `note` as `message`, and
//! so on. Updates through core/v1 keep upstream's legacy leniency.

use apimachinery::field_errors::{FieldError, Path};
use serde_json::Value;

use super::update::{go_nullable, go_string, go_struct, invalid_typed, IMMUTABLE};

/// How a field is written in an error: as a Go string or as a typed value.
#[derive(Clone, Copy)]
enum Shown {
    Text,
    Reference,
    Source,
    /// Times (absent ones written `null`) and the related reference.
    Nullable,
    Count,
}

/// The fields upstream checks, in its order (`reason` twice, as upstream
/// does): (core path, `events.k8s.io/v1` field, rendering).
const FIXED: [(&str, &str, Shown); 14] = [
    ("involvedObject", "regarding", Shown::Reference),
    ("reason", "reason", Shown::Text),
    ("message", "note", Shown::Text),
    ("source", "deprecatedSource", Shown::Source),
    (
        "firstTimestamp",
        "deprecatedFirstTimestamp",
        Shown::Nullable,
    ),
    ("lastTimestamp", "deprecatedLastTimestamp", Shown::Nullable),
    ("count", "deprecatedCount", Shown::Count),
    ("reason", "reason", Shown::Text),
    ("type", "type", Shown::Text),
    ("eventTime", "eventTime", Shown::Nullable),
    ("action", "action", Shown::Text),
    ("related", "related", Shown::Nullable),
    ("reportingController", "reportingController", Shown::Text),
    ("reportingInstance", "reportingInstance", Shown::Text),
];

/// An internal `ObjectReference`.
fn reference(r: &Value) -> Value {
    go_struct(&[
        ("Kind", go_string(r, "kind")),
        ("Namespace", go_string(r, "namespace")),
        ("Name", go_string(r, "name")),
        ("UID", go_string(r, "uid")),
        ("APIVersion", go_string(r, "apiVersion")),
        ("ResourceVersion", go_string(r, "resourceVersion")),
        ("FieldPath", go_string(r, "fieldPath")),
    ])
}

/// The field `key` of `event` as the internal Go value holds it.
fn go_value(event: &Value, key: &str, shown: Shown) -> Value {
    let field = event.get(key).unwrap_or(&Value::Null);
    match shown {
        Shown::Text => go_string(event, key),
        Shown::Reference => reference(field),
        Shown::Source => go_struct(&[
            ("Component", go_string(field, "component")),
            ("Host", go_string(field, "host")),
        ]),
        Shown::Nullable if key == "related" && !field.is_null() => reference(field),
        Shown::Nullable => go_nullable(event, key),
        Shown::Count => Value::from(field.as_i64().unwrap_or_default()),
    }
}

/// `events.k8s.io/v1` Events: see the module documentation.
pub fn validate_event_v1_update(new: &Value, old: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if new.get("series") != old.get("series") {
        errs.extend(series_errors(new));
    }
    for (path, key, shown) in FIXED {
        let n = go_value(new, key, shown);
        if n == go_value(old, key, shown) {
            continue;
        }
        let path = Path::new(path);
        errs.push(match shown {
            Shown::Text | Shown::Count => FieldError::invalid(&path, n, IMMUTABLE),
            _ => invalid_typed(&path, &n, IMMUTABLE),
        });
    }
    errs
}

/// Upstream's `validateV1EventSeries`, for a changed series.
fn series_errors(event: &Value) -> Vec<FieldError> {
    let Some(series) = event.get("series").filter(|s| !s.is_null()) else {
        return Vec::new();
    };
    let mut errs = Vec::new();
    if series
        .get("count")
        .and_then(Value::as_i64)
        .unwrap_or_default()
        < 2
    {
        errs.push(FieldError::invalid(
            &Path::new("series.count"),
            "",
            "should be at least 2",
        ));
    }
    if series.get("lastObservedTime").is_none_or(Value::is_null) {
        errs.push(FieldError::required(
            &Path::new("series.lastObservedTime"),
            "",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn event() -> Value {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "reason": "Started",
            "note": "started", "type": "Normal", "action": "Start",
            "reportingController": "example.com/c", "reportingInstance": "i",
            "regarding": {"kind": "Pod", "namespace": "default", "name": "p"}})
    }

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn fixed_fields_report_core_paths_and_go_values() {
        let old = event();
        let mut new = old.clone();
        new["note"] = json!("changed");
        new["reason"] = json!("Killed");
        new["regarding"]["name"] = json!("q");
        new["deprecatedCount"] = json!(3);
        assert_eq!(
            messages(&validate_event_v1_update(&new, &old)),
            [
                "involvedObject: Invalid value: {\"Kind\":\"Pod\",\"Namespace\":\"default\",\"Name\":\"q\",\"UID\":\"\",\"APIVersion\":\"\",\"ResourceVersion\":\"\",\"FieldPath\":\"\"}: field is immutable",
                "reason: Invalid value: \"Killed\": field is immutable",
                "message: Invalid value: \"changed\": field is immutable",
                "count: Invalid value: 3: field is immutable",
                "reason: Invalid value: \"Killed\": field is immutable",
            ]
        );
    }

    #[test]
    fn series_and_metadata_may_change() {
        let old = event();
        let mut new = old.clone();
        new["metadata"]["labels"] = json!({"a": "b"});
        new["series"] = json!({"count": 2, "lastObservedTime": "2024-01-01T00:01:00.000000Z"});
        assert!(validate_event_v1_update(&new, &old).is_empty());
        new["series"] = json!({"count": 1});
        assert_eq!(
            messages(&validate_event_v1_update(&new, &old)),
            [
                "series.count: Invalid value: \"\": should be at least 2",
                "series.lastObservedTime: Required value",
            ]
        );
    }
}
