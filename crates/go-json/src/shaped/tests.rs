//! `is_normalized` against `normalize` itself: on upstream's fixtures of
//! every kind (Go wrote them) and on edits of them at every depth, it says
//! yes exactly when normalizing changes nothing, member order included.

use std::path::PathBuf;

use serde_json::{json, Value};

use super::is_normalized;
use crate::normalize::normalize;

/// Upstream's JSON fixtures (`testdata/kubernetes-api/HEAD`).
fn fixtures() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/kubernetes-api/HEAD");
    let mut out: Vec<_> = std::fs::read_dir(dir)
        .expect("fixtures are vendored")
        .filter_map(|e| {
            let path = e.expect("readable directory").path();
            let name = path
                .file_name()?
                .to_str()?
                .strip_suffix(".json")?
                .to_owned();
            let text = std::fs::read(&path).expect("readable fixture");
            Some((name, serde_json::from_slice(&text).expect("JSON fixture")))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Whether normalizing `v` changes it (compared as text: order counts).
fn unchanged_by_normalize(v: &Value) -> bool {
    let mut normalized = v.clone();
    normalize(&mut normalized);
    serde_json::to_string(&normalized).ok() == serde_json::to_string(v).ok()
}

/// JSON pointers of every object in `v`.
fn objects(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(members) => {
            for (k, m) in members {
                objects(
                    m,
                    format!("{at}/{}", k.replace('~', "~0").replace('/', "~1")),
                    out,
                );
            }
            out.push(at);
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                objects(item, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The edits tried on each object: each may or may not be one `normalize`
/// undoes (a member `omitempty` drops, maps' unsorted keys, ...).
const EDITS: usize = 7;

fn edit(obj: &mut serde_json::Map<String, Value>, which: usize) {
    let first = obj.keys().next().cloned();
    let last = obj.keys().next_back().cloned();
    match (which, first, last) {
        (0, Some(first), _) => {
            // The first member moved to the end.
            let v = obj.shift_remove(&first).unwrap_or_default();
            obj.insert(first, v);
        }
        (1, _, Some(last)) => {
            obj.shift_remove(&last);
        }
        (2, _, Some(last)) => {
            obj.insert(last, Value::Null);
        }
        (3, _, _) => {
            obj.insert("zzUnknown".into(), json!(1));
        }
        (4, _, Some(last)) => {
            obj.insert(last, json!([]));
        }
        (5, _, Some(last)) => {
            obj.insert(last, json!({}));
        }
        (6, _, Some(last)) => {
            obj.insert(last, json!(""));
        }
        _ => {}
    }
}

#[test]
fn agrees_with_normalize_on_fixtures_and_their_edits() {
    let fixtures = fixtures();
    assert!(fixtures.len() > 90, "{} fixtures", fixtures.len());
    let (mut yes, mut no) = (0, 0);
    for (name, fixture) in &fixtures {
        let mut pointers = Vec::new();
        objects(fixture, String::new(), &mut pointers);
        // Every fifth object, two edits each, for a test that stays quick.
        for (i, pointer) in pointers.iter().enumerate().step_by(5) {
            for which in [i % EDITS, (i + 3) % EDITS] {
                let mut edited = fixture.clone();
                if let Some(Value::Object(obj)) = edited.pointer_mut(pointer) {
                    edit(obj, which);
                }
                let expected = unchanged_by_normalize(&edited);
                assert_eq!(
                    is_normalized(&edited),
                    expected,
                    "{name}: edit {which} at {pointer:?}"
                );
                if expected {
                    yes += 1;
                } else {
                    no += 1;
                }
            }
        }
        assert_eq!(
            is_normalized(fixture),
            unchanged_by_normalize(fixture),
            "{name}"
        );
    }
    assert!(yes > 500 && no > 500, "{yes} unchanged, {no} changed");
}

#[test]
fn objects_that_are_not_built_in_count_as_normalized() {
    let custom = json!({"apiVersion": "example.com/v1", "kind": "Widget", "z": 1, "a": null});
    assert!(is_normalized(&custom));
    assert!(is_normalized(&json!({"no": "type fields"})));
}

#[test]
fn quantities_must_be_canonical() {
    let pod = |cpu: &str| {
        let mut p = json!({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "resources": {"limits": {"cpu": cpu}}}]}});
        normalize(&mut p);
        p["spec"]["containers"][0]["resources"]["limits"]["cpu"] = json!(cpu);
        p
    };
    assert!(is_normalized(&pod("1500m")));
    assert!(!is_normalized(&pod("1.5")), "normalize writes 1500m");
    assert!(is_normalized(&pod("not a quantity")), "left as it is");
}
