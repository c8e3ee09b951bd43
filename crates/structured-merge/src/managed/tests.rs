use chrono::TimeZone;
use serde_json::{json, Value};

use super::*;
use crate::schema::{Schema, TypeRef};
use crate::typed::tests::{root, schema};
use crate::typed::{Ty, Typer};

fn at(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_700_000_000 + secs, 0)
        .single()
        .unwrap_or_default()
}

fn manager<'a>(s: &'a Schema, root: &'a TypeRef) -> FieldManager<'a> {
    FieldManager::new(Typer::new(s), Ty::Ref(root), "v1", "")
}

fn obj(body: Value) -> Value {
    let mut o = json!({"apiVersion": "v1", "kind": "Obj"});
    if let (Some(map), Value::Object(extra)) = (o.as_object_mut(), body) {
        map.extend(extra);
    }
    o
}

/// Stores an object the way the registry does: it gets a uid.
fn stored(mut o: Value) -> Value {
    o["metadata"]["uid"] = json!("u-1");
    o
}

/// `manager operation` and the fieldsV1 of each entry.
fn owners(o: &Value) -> Vec<(String, Value)> {
    o.pointer("/metadata/managedFields")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .map(|e| {
                    let who = format!(
                        "{} {}",
                        e["manager"].as_str().unwrap_or(""),
                        e["operation"].as_str().unwrap_or("")
                    );
                    (who, e["fieldsV1"].clone())
                })
                .collect()
        })
        .unwrap_or_default()
}

fn conflicts(r: Result<Value, ApplyError>) -> Conflicts {
    match r {
        Err(ApplyError::Conflicts(c)) => c,
        other => panic!("expected conflicts, got {other:?}"),
    }
}

fn apply(fm: &FieldManager<'_>, live: Option<&Value>, config: Value, who: &str) -> Value {
    match fm.apply(live, &obj(config), who, false, at(1)) {
        Ok(v) => stored(v),
        Err(e) => panic!("apply by {who} failed: {e}"),
    }
}

#[test]
fn apply_creates_and_records_the_applier() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let config =
        obj(json!({"metadata": {"name": "a", "labels": {"app": "x"}}, "spec": {"replicas": 1}}));
    let out = fm
        .apply(None, &config, "kubectl", false, at(5))
        .expect("applies");
    assert_eq!(out["spec"]["replicas"], 1);
    assert_eq!(
        out["metadata"]["managedFields"],
        json!([{
            "manager": "kubectl",
            "operation": "Apply",
            "apiVersion": "v1",
            "time": "2023-11-14T22:13:25Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {"f:app": {}}}, "f:spec": {"f:replicas": {}}},
        }])
    );
}

#[test]
fn second_applier_conflicts_until_forced() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let live = apply(
        &fm,
        None,
        json!({"metadata": {"name": "a", "labels": {"app": "x"}}, "spec": {"replicas": 1}}),
        "kubectl",
    );
    let change = obj(json!({"metadata": {"name": "a"}, "spec": {"replicas": 3}}));
    let c = conflicts(fm.apply(Some(&live), &change, "other", false, at(2)));
    assert_eq!(
        c.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas"
    );
    assert_eq!(
        c.causes(),
        vec![(
            ".spec.replicas".to_owned(),
            "conflict with \"kubectl\"".to_owned()
        )]
    );
    // The same value is shared, not a conflict.
    let same = obj(json!({"metadata": {"name": "a"}, "spec": {"replicas": 1}}));
    let shared = fm
        .apply(Some(&live), &same, "other", false, at(2))
        .expect("shared");
    assert_eq!(owners(&shared).len(), 2);
    let forced = fm
        .apply(Some(&live), &change, "other", true, at(2))
        .expect("forced");
    assert_eq!(forced["spec"]["replicas"], 3);
    assert_eq!(
        owners(&forced),
        vec![
            (
                "kubectl Apply".to_owned(),
                json!({"f:metadata": {"f:labels": {"f:app": {}}}})
            ),
            (
                "other Apply".to_owned(),
                json!({"f:spec": {"f:replicas": {}}})
            ),
        ]
    );
}

#[test]
fn updates_take_fields_from_their_owners() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let live = apply(
        &fm,
        None,
        json!({"metadata": {"name": "a", "labels": {"app": "x"}}, "spec": {"replicas": 1}}),
        "kubectl",
    );
    let mut edited = live.clone();
    edited["spec"]["replicas"] = json!(5);
    fm.update(Some(&live), &mut edited, "kubectl-edit", at(3));
    assert_eq!(
        owners(&edited),
        vec![
            (
                "kubectl Apply".to_owned(),
                json!({"f:metadata": {"f:labels": {"f:app": {}}}})
            ),
            (
                "kubectl-edit Update".to_owned(),
                json!({"f:spec": {"f:replicas": {}}})
            ),
        ]
    );
    let reapply =
        obj(json!({"metadata": {"name": "a", "labels": {"app": "x"}}, "spec": {"replicas": 1}}));
    let c = conflicts(fm.apply(Some(&stored(edited)), &reapply, "kubectl", false, at(4)));
    assert_eq!(
        c.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-edit\" using v1: .spec.replicas"
    );
}

#[test]
fn several_conflicts_are_grouped_by_manager() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let mut created = obj(json!({"metadata": {"name": "a", "labels": {"x": "1"}}}));
    fm.update(None, &mut created, "a", at(1));
    let live = stored(created);
    let mut next = live.clone();
    next["metadata"]["labels"]["y"] = json!("1");
    next["spec"] = json!({"replicas": 1});
    fm.update(Some(&live), &mut next, "b", at(2));
    let config =
        obj(json!({"metadata": {"labels": {"x": "2", "y": "2"}}, "spec": {"replicas": 2}}));
    let c = conflicts(fm.apply(Some(&stored(next)), &config, "c", false, at(3)));
    assert_eq!(
        c.to_string(),
        "Apply failed with 3 conflicts: conflicts with \"a\" using v1:\n- .metadata.labels.x\nconflicts with \"b\" using v1:\n- .metadata.labels.y\n- .spec.replicas"
    );
}

#[test]
fn fields_no_longer_applied_are_removed_unless_owned() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let labels = |l: Value| json!({"metadata": {"name": "a", "labels": l}});
    let live = apply(&fm, None, labels(json!({"a": "1", "b": "2"})), "kubectl");
    let live = apply(&fm, Some(&live), labels(json!({"a": "1"})), "kubectl");
    assert_eq!(live["metadata"]["labels"], json!({"a": "1"}));
    let live = apply(&fm, Some(&live), labels(json!({"c": "3"})), "other");
    let live = apply(
        &fm,
        Some(&live),
        labels(json!({"a": "1", "c": "3"})),
        "kubectl",
    );
    let live = apply(&fm, Some(&live), labels(json!({"a": "1"})), "kubectl");
    // "other" still applies c, so it stays.
    assert_eq!(live["metadata"]["labels"], json!({"a": "1", "c": "3"}));
    let live = apply(
        &fm,
        Some(&live),
        json!({"metadata": {"name": "a"}}),
        "kubectl",
    );
    assert_eq!(live["metadata"]["labels"], json!({"c": "3"}));
}

#[test]
fn removing_a_list_element_removes_it_whole() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let two =
        json!({"spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]}});
    let live = apply(&fm, None, two, "kubectl");
    let mut defaulted = live.clone();
    // A server default below an applied element goes with the element.
    defaulted["spec"]["containers"][1]["ports"] = json!([{"containerPort": 80, "protocol": "TCP"}]);
    let one = json!({"spec": {"containers": [{"name": "a", "image": "1"}]}});
    let live = apply(&fm, Some(&defaulted), one, "kubectl");
    assert_eq!(
        live["spec"]["containers"],
        json!([{"name": "a", "image": "1"}])
    );
}

#[test]
fn creation_by_update_owns_what_it_sets() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let mut created =
        obj(json!({"metadata": {"name": "a", "labels": {"app": "x"}}, "spec": {"replicas": 2}}));
    fm.update(None, &mut created, "kubectl-create", at(0));
    assert_eq!(
        created["metadata"]["managedFields"],
        json!([{
            "manager": "kubectl-create",
            "operation": "Update",
            "apiVersion": "v1",
            "time": "2023-11-14T22:13:20Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}, "f:spec": {"f:replicas": {}}},
        }])
    );
    // An update that changes nothing leaves the entry (and its time) alone.
    let live = stored(created);
    let mut same = live.clone();
    fm.update(Some(&live), &mut same, "kubectl-create", at(9));
    assert_eq!(
        same["metadata"]["managedFields"],
        live["metadata"]["managedFields"]
    );
}

#[test]
fn managed_fields_in_a_request_are_honoured_or_reset() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let live = apply(
        &fm,
        None,
        json!({"metadata": {"name": "a", "labels": {"app": "x"}}}),
        "kubectl",
    );
    let mut reset = live.clone();
    reset["metadata"]["managedFields"] = json!([]);
    fm.update(Some(&live), &mut reset, "u", at(2));
    assert!(reset["metadata"].get("managedFields").is_none());
    // Without managed fields an object stays without them on update…
    let live = stored(reset);
    let mut next = live.clone();
    next["spec"] = json!({"replicas": 4});
    fm.update(Some(&live), &mut next, "u", at(3));
    assert!(next["metadata"].get("managedFields").is_none());
    // …and the first apply gives what is there to before-first-apply.
    let c = conflicts(fm.apply(
        Some(&stored(next.clone())),
        &obj(json!({"spec": {"replicas": 1}})),
        "kubectl",
        false,
        at(4),
    ));
    assert_eq!(
        c.to_string(),
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using v1: .spec.replicas"
    );
    // Entries the request sets replace the live ones.
    let mut chosen = stored(next);
    chosen["metadata"]["managedFields"] = json!([{"manager": "me", "operation": "Update",
        "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {"f:replicas": {}}}}]);
    let before = chosen.clone();
    fm.update(Some(&before), &mut chosen, "u", at(5));
    assert_eq!(
        owners(&chosen),
        vec![(
            "me Update".to_owned(),
            json!({"f:spec": {"f:replicas": {}}})
        )]
    );
}

#[test]
fn no_op_apply_keeps_object_and_time() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let config = obj(json!({"metadata": {"name": "a"}, "spec": {"replicas": 1}}));
    let live = stored(
        fm.apply(None, &config, "kubectl", false, at(1))
            .expect("applies"),
    );
    let again = fm
        .apply(Some(&live), &config, "kubectl", false, at(100))
        .expect("applies");
    assert_eq!(again, live);
}

#[test]
fn update_managers_are_capped() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let mut live = stored(obj(json!({"metadata": {"name": "a", "labels": {}}})));
    live["metadata"]["managedFields"] = json!([{"manager": "seed", "operation": "Apply",
        "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:name": {}}}}]);
    for i in 0..11 {
        let mut next = live.clone();
        next["metadata"]["labels"][format!("l{i}")] = json!("v");
        fm.update(Some(&live), &mut next, &format!("m{i}"), at(i));
        live = stored(next);
    }
    let who: Vec<String> = owners(&live).into_iter().map(|(w, _)| w).collect();
    assert_eq!(who.len(), 11, "{who:?}");
    assert!(
        who.contains(&"ancient-changes Update".to_owned()),
        "{who:?}"
    );
    assert!(!who.contains(&"m0 Update".to_owned()) && !who.contains(&"m1 Update".to_owned()));
    let ancient = owners(&live)
        .into_iter()
        .find(|(w, _)| w.starts_with("ancient"))
        .map(|(_, f)| f);
    assert_eq!(
        ancient,
        Some(json!({"f:metadata": {"f:labels": {"f:l0": {}, "f:l1": {}}}}))
    );
}

#[test]
fn status_writes_own_only_status() {
    let (s, r) = (schema(), root());
    let mut reset = Set::new();
    reset.insert(&[crate::fieldpath::PathElement::field("spec")]);
    let fm =
        FieldManager::new(Typer::new(&s), Ty::Ref(&r), "v1", "status").with_reset_fields(reset);
    let main = manager(&s, &r);
    let live = apply(
        &main,
        None,
        json!({"metadata": {"name": "a"}, "spec": {"replicas": 1}}),
        "kubectl",
    );
    let mut next = live.clone();
    next["spec"]["replicas"] = json!(9);
    next["status"] = json!({"ready": 1});
    fm.update(Some(&live), &mut next, "kubelet", at(2));
    assert_eq!(
        owners(&next),
        vec![
            (
                "kubectl Apply".to_owned(),
                json!({"f:spec": {"f:replicas": {}}})
            ),
            (
                // Go objects always have a status: it is not added whole.
                "kubelet Update".to_owned(),
                json!({"f:status": {"f:ready": {}}})
            ),
        ]
    );
    assert_eq!(
        next["metadata"]["managedFields"][1]["subresource"],
        "status"
    );
    let c = conflicts(fm.apply(
        Some(&stored(next)),
        &obj(json!({"status": {"ready": 2}})),
        "x",
        false,
        at(3),
    ));
    assert_eq!(
        c.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubelet\" with subresource \"status\" using v1: .status.ready"
    );
}

#[test]
fn kubectl_may_take_over_what_client_side_apply_last_set() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let last = r#"{"apiVersion":"v1","kind":"Obj","metadata":{"name":"a"},"spec":{"replicas":1}}"#;
    let mut created = obj(json!({"metadata": {"name": "a",
        "annotations": {"kubectl.kubernetes.io/last-applied-configuration": last}},
        "spec": {"replicas": 1}}));
    fm.update(None, &mut created, "kubectl-client-side-apply", at(1));
    let live = stored(created);
    let config = obj(json!({"metadata": {"name": "a"}, "spec": {"replicas": 2}}));
    let out = fm
        .apply(Some(&live), &config, "kubectl", false, at(2))
        .expect("allowed");
    assert_eq!(out["spec"]["replicas"], 2);
    let annotation =
        out["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"].clone();
    assert_eq!(
        annotation,
        json!(r#"{"apiVersion":"v1","kind":"Obj","metadata":{"name":"a"},"spec":{"replicas":2}}"#)
    );
    // Another manager gets no such allowance.
    assert!(matches!(
        fm.apply(Some(&live), &config, "other", false, at(2)),
        Err(ApplyError::Conflicts(_))
    ));
}

#[test]
fn invalid_configurations_and_managed_fields_are_errors() {
    let (s, r) = (schema(), root());
    let fm = manager(&s, &r);
    let err = fm
        .apply(None, &obj(json!({"spec": {"bogus": 1}})), "m", false, at(0))
        .expect_err("undeclared");
    assert_eq!(err.to_string(), ".spec.bogus: field not declared in schema");
    let mut live = stored(obj(json!({"metadata": {"name": "a"}})));
    live["metadata"]["managedFields"] = json!([{"manager": "m", "operation": "Merge", "apiVersion": "v1", "fieldsType": "FieldsV1"}]);
    let err = fm
        .apply(Some(&live), &obj(json!({})), "m", false, at(0))
        .expect_err("bad");
    assert_eq!(
        err.to_string(),
        "failed to decode managed fields: operation must be `Apply` or `Update`"
    );
}

#[test]
fn managed_fields_decode_and_encode_in_upstreams_order() {
    let list = json!([
        {"manager": "b", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:a": {}}},
        {"manager": "z", "operation": "Apply", "apiVersion": "v1", "time": "2024-01-02T00:00:00+01:00", "fieldsType": "FieldsV1", "fieldsV1": {"f:b": {}}},
        {"manager": "a", "operation": "Update", "apiVersion": "v1", "time": "2024-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": {"f:c": {}}, "subresource": "status"},
    ]);
    let managed = Managed::decode(&list).expect("decodes");
    let out = managed.encode().expect("entries");
    let order: Vec<&str> = out
        .as_array()
        .map(|l| l.iter().filter_map(|e| e["manager"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(order, vec!["z", "a", "b"]);
    assert_eq!(out[0]["time"], "2024-01-01T23:00:00Z");
    assert_eq!(
        ManagerId::new("z", Operation::Apply, "v1", "").key(),
        r#"{"manager":"z","operation":"Apply"}"#
    );
    assert_eq!(
        Managed::decode(&json!([{"manager": "m", "operation": "Update", "apiVersion": "v1"}])),
        Err(ManagedError::MissingFieldsType(0))
    );
}
