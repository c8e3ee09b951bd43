use http::HeaderValue;
use serde_json::json;

use super::*;

fn headers(pairs: &[(http::header::HeaderName, &str)]) -> HeaderMap {
    let mut h = HeaderMap::new();
    for (k, v) in pairs {
        h.insert(k.clone(), HeaderValue::from_str(v).expect("header value"));
    }
    h
}

#[test]
fn apply_is_recognised_by_content_type() {
    let h = headers(&[(
        http::header::CONTENT_TYPE,
        "application/apply-patch+yaml; charset=utf-8",
    )]);
    assert!(is_apply(&h));
    let merge = headers(&[(http::header::CONTENT_TYPE, "application/merge-patch+json")]);
    assert!(!is_apply(&merge));
}

#[test]
fn manager_is_the_query_or_the_user_agent_prefix() {
    let agent = headers(&[(
        http::header::USER_AGENT,
        "kubectl/v1.32.0 (linux/amd64) kubernetes/abc",
    )]);
    assert_eq!(manager_name(&Query::parse(None), &agent), "kubectl");
    assert_eq!(
        manager_name(&Query::parse(Some("fieldManager=mine")), &agent),
        "mine"
    );
    assert_eq!(manager_name(&Query::parse(None), &HeaderMap::new()), "");
    let long = format!("{}/1", "x".repeat(300));
    let long = headers(&[(http::header::USER_AGENT, long.as_str())]);
    assert_eq!(manager_name(&Query::parse(None), &long).len(), 128);
}

#[test]
fn patch_options_follow_upstream() {
    let missing = check_patch_options(&Query::parse(None), true).expect_err("required");
    assert_eq!(missing.code, 422);
    assert_eq!(
        missing.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let forbidden =
        check_patch_options(&Query::parse(Some("force=true")), false).expect_err("forbidden");
    assert_eq!(
        forbidden.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );
    // force converts as upstream's Convert_Slice_string_To_Pointer_bool.
    let yes = check_patch_options(&Query::parse(Some("fieldManager=m&force=yes")), true);
    assert_eq!(yes, Ok(true));
    let no = check_patch_options(&Query::parse(Some("fieldManager=m&force=False")), true);
    assert_eq!(no, Ok(false));
    let bogus = check_patch_options(&Query::parse(Some("dryRun=Bogus")), false)
        .expect_err("unsupported dryRun");
    assert_eq!(
        bogus.message,
        "PatchOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Bogus\"]: supported values: \"All\""
    );
    assert_eq!(
        check_patch_options(&Query::parse(Some("fieldManager=m&force=true")), true),
        Ok(true)
    );
    let too_long = format!("fieldManager={}", "m".repeat(129));
    assert_eq!(
        check_write_options(&Query::parse(Some(&too_long)), "CreateOptions").map_err(|e| e.code),
        Err(422)
    );
    let all = check_write_options(
        &Query::parse(Some("dryRun=All&dryRun=x&fieldValidation=Loose")),
        "UpdateOptions",
    )
    .expect_err("invalid");
    assert_eq!(
        all.message,
        "UpdateOptions.meta.k8s.io \"\" is invalid: [dryRun: Unsupported value: [\"All\",\"x\"]: supported values: \"All\", fieldValidation: Unsupported value: \"Loose\": supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"]"
    );
}

#[test]
fn configurations_are_yaml_or_json_objects() {
    assert_eq!(
        decode_config(b"apiVersion: v1\nkind: ConfigMap\n", false).ok(),
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap"}))
    );
    assert_eq!(
        decode_config(br#"{"kind":"ConfigMap"}"#, false).ok(),
        Some(json!({"kind": "ConfigMap"}))
    );
    assert_eq!(
        decode_config(b"- a\n- b\n", false).map_err(|e| e.code),
        Err(400)
    );
    assert_eq!(decode_config(b"a: [", false).map_err(|e| e.code), Err(400));
    let cbor = kube_cbor::encode(&json!({"kind": "ConfigMap", "data": {"k": "v"}}));
    assert_eq!(
        decode_config(&cbor, true).ok(),
        Some(json!({"kind": "ConfigMap", "data": {"k": "v"}}))
    );
    let err = decode_config(&cbor[..cbor.len() - 1], true).expect_err("truncated");
    assert_eq!(err.message, "error decoding patch: cbor: unexpected EOF");
    let list = kube_cbor::encode(&json!(["a"]));
    assert_eq!(decode_config(&list, true).map_err(|e| e.code), Err(400));
    assert_eq!(
        gvk_of(&json!({"apiVersion": "apps/v1", "kind": "Deployment"})),
        ("apps", "v1", "Deployment")
    );
    assert_eq!(gvk_of(&json!({"kind": "ConfigMap"})), ("", "", "ConfigMap"));
}

fn info(group: &str, kind: &str, has_status: bool) -> ResourceInfo {
    ResourceInfo {
        has_status,
        ..ResourceInfo::testing(group, kind)
    }
}

#[test]
fn trackers_record_with_the_builtin_schema_and_reset_fields() {
    let deployments = Tracker::new(&info("apps", "Deployment", true), Target::Main, "t".into());
    let mut created = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
        "status": {"replicas": 1}});
    deployments.update(None, &mut created);
    let entry = &created["metadata"]["managedFields"][0];
    assert_eq!(entry["manager"], "t");
    assert_eq!(entry["apiVersion"], "apps/v1");
    // Containers merge by name; status is not the main resource's to own.
    assert_eq!(
        entry["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}, "f:template": {".": {}, "f:spec": {".": {},
            "f:containers": {".": {}, "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}})
    );
    let status = Tracker::new(
        &info("apps", "Deployment", true),
        Target::Status,
        "k".into(),
    );
    let live = json!({"metadata": {"uid": "u", "managedFields": created["metadata"]["managedFields"].clone()},
        "spec": {"replicas": 1}, "status": {"replicas": 1}});
    let mut next =
        json!({"metadata": {"uid": "u"}, "spec": {"replicas": 3}, "status": {"replicas": 2}});
    status.update(Some(&live), &mut next);
    let entries = next["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert_eq!(entries.len(), 2);
    let kubelet = entries
        .iter()
        .find(|e| e["manager"] == "k")
        .cloned()
        .unwrap_or_default();
    assert_eq!(kubelet["subresource"], "status");
    assert_eq!(kubelet["fieldsV1"], json!({"f:status": {"f:replicas": {}}}));
    // Kinds without a built-in schema are read as deduced.
    let custom = Tracker::new(
        &info("example.com", "Widget", false),
        Target::Main,
        "w".into(),
    );
    let mut widget = json!({"metadata": {"name": "w"}, "spec": {"list": [1, 2], "m": {"a": 1}}});
    custom.update(None, &mut widget);
    assert_eq!(
        widget["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:spec": {".": {}, "f:list": {}, "f:m": {".": {}, "f:a": {}}}})
    );
}

#[test]
fn scale_writers_own_the_replicas() {
    let deployments = info("apps", "Deployment", true);
    let mut live = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d"}, "spec": {"replicas": 1}});
    Tracker::new(&deployments, Target::Main, "creator".into()).update(None, &mut live);
    live["metadata"]["uid"] = json!("u");
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(4);
    Tracker::for_scale(&deployments, "scaler".into()).update(Some(&live), &mut scaled);
    let entries = scaled["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    // The creator loses the replicas, the scaler owns them through `scale`.
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0]["manager"], "scaler");
    assert_eq!(entries[0]["subresource"], "scale");
    assert_eq!(entries[0]["apiVersion"], "apps/v1");
    assert_eq!(
        entries[0]["fieldsV1"],
        json!({"f:spec": {"f:replicas": {}}})
    );
}

#[test]
fn a_strategy_schema_merges_map_lists_by_key() {
    use structured_merge::schema::{FieldDef, ListDef, ListKind, StructDef, TypeDef};
    let object = |fields: Vec<FieldDef>| {
        TypeRef::Inline(Box::new(TypeDef::Struct(StructDef {
            fields,
            ..StructDef::default()
        })))
    };
    let port = object(vec![
        FieldDef::new("name", TypeRef::scalar()),
        FieldDef::new("port", TypeRef::scalar()),
    ]);
    let ports = TypeRef::Inline(Box::new(TypeDef::List(ListDef {
        elem: port,
        kind: ListKind::Map {
            keys: vec!["name".into()],
        },
    })));
    let mut schema = Schema::new();
    schema.insert(
        "com.example.v1.Widget",
        TypeDef::Struct(StructDef {
            fields: vec![
                FieldDef::new("apiVersion", TypeRef::scalar()),
                FieldDef::new("kind", TypeRef::scalar()),
                FieldDef::new("metadata", TypeRef::untyped()),
                FieldDef::new("spec", object(vec![FieldDef::new("ports", ports)])),
            ],
            ..StructDef::default()
        }),
    );
    let types = Some(Arc::new((schema, "com.example.v1.Widget".to_owned())));
    let widgets = info("example.com", "Widget", false);
    let tracker = |manager: &str| {
        Tracker::new(&widgets, Target::Main, manager.into()).with_type_schema(types.clone())
    };
    let config = |name: &str| {
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"ports": [{"name": name, "port": 1}]}})
    };
    let mut live = tracker("a")
        .apply(None, &config("a"), false)
        .expect("first apply");
    live["metadata"]["uid"] = json!("u");
    let both = tracker("b")
        .apply(Some(&live), &config("b"), false)
        .expect("keyed lists merge");
    let names: Vec<&Value> = both["spec"]["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| &p["name"])
        .collect();
    assert_eq!(names, [&json!("a"), &json!("b")]);
    // Without the schema the list is atomic and b's apply conflicts.
    let untyped = |manager: &str| Tracker::new(&widgets, Target::Main, manager.into());
    let mut live = untyped("a")
        .apply(None, &config("a"), false)
        .expect("first untyped apply");
    live["metadata"]["uid"] = json!("u");
    assert!(matches!(
        untyped("b").apply(Some(&live), &config("b"), false),
        Err(ApplyError::Conflicts(_))
    ));
}
