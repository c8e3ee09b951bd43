//! LISTs and GETs served from the watch cache's shared per-version
//! encodings, in JSON, protobuf and CBOR: an update serves the new version's
//! bytes (no stale encoding), a LIST from the cache is byte for byte the
//! LIST storage serves at the same resourceVersion, and label selectors and
//! pages (limit/continue) list the right items in every format.

use serde_json::Value;

use crate::cbor::{request, Answer, GATE};
use crate::harness::TestServer;

const CM: &str = "/api/v1/namespaces/default/configmaps";
const FORMATS: [&str; 3] = [
    "application/json",
    "application/vnd.kubernetes.protobuf",
    "application/cbor",
];

fn get(s: &TestServer, path: &str, accept: &str) -> Answer {
    let answer = request(s, "GET", path, &[&format!("Accept: {accept}")], None);
    assert_eq!(answer.code, 200, "{path} as {accept}: {:?}", answer.json());
    assert_eq!(answer.content_type, accept, "{path}");
    answer
}

fn decoded(answer: &Answer, accept: &str) -> Value {
    match accept {
        "application/cbor" => answer.cbor(),
        "application/json" => answer.json(),
        _ => protobuf_codec::decode(&answer.body).expect("a protobuf body"),
    }
}

fn item<'a>(list: &'a Value, name: &str) -> &'a Value {
    let items = list["items"].as_array().expect("items");
    let found = items.iter().find(|i| i["metadata"]["name"] == name);
    found.unwrap_or_else(|| panic!("{name} not in {list}"))
}

fn names(list: &Value) -> Vec<String> {
    let items = list["items"].as_array().into_iter().flatten();
    let names = items.filter_map(|i| i["metadata"]["name"].as_str());
    names.map(str::to_owned).collect()
}

#[test]
fn an_update_is_listed_and_got_in_its_new_bytes_in_every_format() {
    let s = TestServer::start_with(&[GATE]);
    for i in 0..5 {
        s.ok(&[
            "create",
            "configmap",
            &format!("cm-{i}"),
            "--from-literal=k=v0",
        ]);
    }
    // Every format read once, so each version's encodings are kept.
    for accept in FORMATS {
        let list = decoded(&get(&s, CM, accept), accept);
        assert_eq!(item(&list, "cm-1")["data"]["k"], "v0", "{accept}");
        let got = decoded(&get(&s, &format!("{CM}/cm-1"), accept), accept);
        assert_eq!(got["data"]["k"], "v0");
    }
    s.ok(&[
        "patch",
        "configmap",
        "cm-1",
        "--type=merge",
        "-p",
        r#"{"data":{"k":"v1"}}"#,
    ]);
    for accept in FORMATS {
        let answer = get(&s, CM, accept);
        let list = decoded(&answer, accept);
        assert_eq!(item(&list, "cm-1")["data"]["k"], "v1", "{accept}");
        assert_eq!(item(&list, "cm-2")["data"]["k"], "v0", "{accept}");
        let got = decoded(&get(&s, &format!("{CM}/cm-1"), accept), accept);
        assert_eq!(got["data"]["k"], "v1", "{accept}");
        assert_eq!(got["kind"], "ConfigMap", "{accept}");
        let version = &got["metadata"]["resourceVersion"];
        assert_eq!(&item(&list, "cm-1")["metadata"]["resourceVersion"], version);
        // The same list encoded from storage, item by item afresh.
        let rv = list["metadata"]["resourceVersion"].as_str().expect("an rv");
        let exact = format!("{CM}?resourceVersion={rv}&resourceVersionMatch=Exact");
        let from_storage = get(&s, &exact, accept);
        assert!(
            from_storage.body == answer.body,
            "{accept}: cache and storage differ"
        );
    }
    // Built-in items carry no kind or apiVersion in a JSON list.
    let list = get(&s, CM, "application/json").json();
    assert_eq!(item(&list, "cm-1").get("kind"), None, "{list}");
    assert_eq!(list["kind"], "ConfigMapList");
}

#[test]
fn selected_and_paged_lists_are_right_in_every_format() {
    let s = TestServer::start_with(&[GATE]);
    let yaml: String = (0..7)
        .map(|i| {
            let parity = if i % 2 == 1 { "odd" } else { "even" };
            format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lc-{i}\n  labels:\n    \
                 set: paged\n    parity: {parity}\ndata:\n  i: \"{i}\"\n---\n"
            )
        })
        .collect();
    s.apply_yaml(&yaml);
    let all: Vec<String> = (0..7).map(|i| format!("lc-{i}")).collect();
    for accept in FORMATS {
        // Warm: every item's encoding is kept by the first full list.
        let full = decoded(
            &get(&s, &format!("{CM}?labelSelector=set=paged"), accept),
            accept,
        );
        assert_eq!(names(&full), all, "{accept}");
        let odd = get(&s, &format!("{CM}?labelSelector=parity=odd"), accept);
        let odd = decoded(&odd, accept);
        assert_eq!(names(&odd), ["lc-1", "lc-3", "lc-5"], "{accept}");
        assert_eq!(item(&odd, "lc-3")["data"]["i"], "3", "{accept}");
        let mut paged = Vec::new();
        let mut token = String::new();
        for page in 0.. {
            let path = format!("{CM}?labelSelector=set=paged&limit=3&continue={token}");
            let list = decoded(&get(&s, &path, accept), accept);
            paged.extend(names(&list));
            let next = list["metadata"]["continue"].as_str().unwrap_or_default();
            assert_eq!(next.is_empty(), page == 2, "{accept} page {page}: {list}");
            if next.is_empty() {
                break;
            }
            token = next.to_owned();
        }
        assert_eq!(paged, all, "{accept}");
    }
}

/// A list larger than the server's body chunks (256 KiB each) arrives
/// whole in every format: every item decodes with its value, JSON byte for
/// byte as Go re-encodes the parsed list, and the cache's list is the one
/// storage serves at the same resourceVersion. Asked as a client other
/// than curl (to which upstream writes JSON indented).
#[test]
fn a_list_over_several_body_chunks_arrives_whole() {
    let s = TestServer::start_with(&[GATE]);
    let value = "v".repeat(60 * 1024);
    for i in 0..10 {
        let literal = format!("--from-literal=k={value}");
        s.ok(&["create", "configmap", &format!("big-{i}"), &literal]);
    }
    let get = |path: &str, accept: &str| {
        let headers = [&format!("Accept: {accept}")[..], "User-Agent: e2e-lists"];
        let answer = request(&s, "GET", path, &headers, None);
        assert_eq!(answer.code, 200, "{path} as {accept}");
        answer
    };
    for accept in FORMATS {
        let answer = get(CM, accept);
        assert!(answer.body.len() > 2 * 256 * 1024, "{accept}");
        let list = decoded(&answer, accept);
        for i in 0..10 {
            let data = &item(&list, &format!("big-{i}"))["data"]["k"];
            assert!(data == value.as_str(), "{accept}: big-{i}");
        }
        if accept == "application/json" {
            let again = go_json::encode::to_vec(&list).expect("encodes");
            assert!(again == answer.body, "the JSON list is not whole");
        }
        let rv = list["metadata"]["resourceVersion"].as_str().expect("an rv");
        let exact = format!("{CM}?resourceVersion={rv}&resourceVersionMatch=Exact");
        assert!(get(&exact, accept).body == answer.body, "{accept}");
    }
}
