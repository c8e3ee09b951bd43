//! Streaming lists (upstream's WatchList, what client-go 1.35+ informers
//! use): `sendInitialEvents=true` sends the current objects as ADDED
//! events, a BOOKMARK annotated `k8s.io/initial-events-end` at the
//! snapshot's revision, then the changes after it; the parameter rules are
//! upstream's.

use serde_json::Value;

use crate::harness::TestServer;

const NS: &str = "/api/v1/namespaces/default/configmaps";

fn configmap(name: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\ndata:\n  k: v\n")
}

/// The events of a watch that the server ends after `seconds`.
fn watch_events(s: &TestServer, query: &str, seconds: u32) -> Vec<Value> {
    let path = format!("{NS}?watch=1&timeoutSeconds={seconds}&{query}");
    s.ok(&["get", "--raw", &path])
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("a JSON watch event"))
        .collect()
}

fn rv(obj: &Value) -> i64 {
    obj["metadata"]["resourceVersion"]
        .as_str()
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

fn names(events: &[Value], kind: &str) -> Vec<String> {
    events
        .iter()
        .filter(|e| e["type"] == kind)
        .map(|e| {
            e["object"]["metadata"]["name"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

fn initial_events_then_bookmark_then_changes(s: &TestServer) {
    for name in ["wl-a", "wl-b", "wl-c"] {
        s.apply_yaml(&configmap(name));
    }
    let last: Value =
        serde_json::from_str(&s.ok(&["get", "cm", "wl-c", "-o", "json"])).expect("json");
    let query = "sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let later = std::thread::scope(|scope| {
        let watch = scope.spawn(|| watch_events(s, query, 3));
        std::thread::sleep(std::time::Duration::from_millis(1500));
        s.apply_yaml(&configmap("wl-later"));
        watch.join().expect("watch thread")
    });
    let end = later
        .iter()
        .position(|e| e["type"] == "BOOKMARK")
        .expect("an initial-events-end bookmark");
    let bookmark = &later[end]["object"];
    assert_eq!(
        bookmark["metadata"]["annotations"]["k8s.io/initial-events-end"], "true",
        "{bookmark}"
    );
    assert_eq!(bookmark["kind"], "ConfigMap");
    assert!(rv(bookmark) >= rv(&last), "{bookmark} before {last}");
    let initial = names(&later[..end], "ADDED");
    for name in ["wl-a", "wl-b", "wl-c"] {
        assert!(initial.contains(&name.to_owned()), "{initial:?}");
    }
    assert_eq!(names(&later[end..], "ADDED"), ["wl-later"]);
    assert!(later[end + 1..]
        .iter()
        .all(|e| rv(&e["object"]) > rv(bookmark)));
}

fn without_initial_events_only_changes_follow(s: &TestServer) {
    s.apply_yaml(&configmap("quiet-a"));
    let query = "sendInitialEvents=false&resourceVersionMatch=NotOlderThan";
    let events = watch_events(s, query, 1);
    assert!(events.is_empty(), "{events:?}");
    // Without bookmarks allowed, the initial events end unmarked.
    let query = "sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
    let events = watch_events(s, query, 1);
    assert!(names(&events, "ADDED").contains(&"quiet-a".to_owned()));
    assert!(events.iter().all(|e| e["type"] == "ADDED"), "{events:?}");
}

fn parameter_rules_are_upstreams(s: &TestServer) {
    let cases = [
        (
            format!("{NS}?watch=1&sendInitialEvents=true"),
            "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ),
        (
            format!("{NS}?watch=1&resourceVersionMatch=NotOlderThan&resourceVersion=1"),
            "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ),
        (
            format!(
                "{NS}?sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=1"
            ),
            "sendInitialEvents is forbidden for list",
        ),
    ];
    for (path, message) in cases {
        let err = s.fails(&["get", "--raw", &path]);
        assert!(err.contains(message), "{path}: {err}");
    }
}

crate::harness::on_both_backends!(
    initial_events_then_bookmark_then_changes,
    without_initial_events_only_changes_follow,
    parameter_rules_are_upstreams
);

#[test]
fn the_watch_list_gate_turns_streaming_lists_off() {
    let s = TestServer::start_with(&["--feature-gates=WatchList=false"]);
    let path = format!("{NS}?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan");
    let err = s.fails(&["get", "--raw", &path]);
    assert!(
        err.contains(
            "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled"
        ),
        "{err}"
    );
    // Plain watches are unaffected.
    let events = watch_events(&s, "resourceVersion=0", 1);
    assert!(events.iter().all(|e| e["type"] == "ADDED"), "{events:?}");
}
