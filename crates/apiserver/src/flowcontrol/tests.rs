//! Classification and seat limits over the bootstrap configuration.

use std::time::Duration;

use apimachinery::request_info::RequestInfo;

use super::*;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    }
}

fn get_pods(namespace: &str) -> RequestInfo {
    RequestInfo {
        is_resource_request: true,
        verb: "list".into(),
        resource: "pods".into(),
        namespace: namespace.into(),
        ..Default::default()
    }
}

fn probe() -> RequestInfo {
    RequestInfo {
        verb: "get".into(),
        path: "/readyz".into(),
        ..Default::default()
    }
}

fn suggested_config() -> Arc<FlowControl> {
    let control = FlowControl::new(600, Duration::from_secs(60), Default::default());
    let schemas: Vec<FlowSchema> = bootstrap::suggested()
        .flow_schemas
        .iter()
        .chain(&bootstrap::mandatory().flow_schemas)
        .map(|o| serde_json::from_value(o.clone()).unwrap())
        .collect();
    let levels: Vec<PriorityLevelConfiguration> = bootstrap::suggested()
        .priority_levels
        .iter()
        .chain(&bootstrap::mandatory().priority_levels)
        .map(|o| serde_json::from_value(o.clone()).unwrap())
        .collect();
    let statuses = control.configure(&schemas, &levels);
    assert!(statuses.iter().all(|s| !s.dangling));
    control
}

fn level_of(control: &FlowControl, user: &UserInfo, info: &RequestInfo) -> (String, String) {
    let class = control.classify(user, info).unwrap();
    (class.flow_schema, class.priority_level)
}

#[test]
fn before_configuration_the_mandatory_schemas_apply() {
    let control = FlowControl::new(600, Duration::from_secs(60), Default::default());
    let admin = user("admin", &["system:masters", "system:authenticated"]);
    let alice = user("alice", &["system:authenticated"]);
    assert_eq!(
        level_of(&control, &admin, &get_pods("a")),
        ("exempt".into(), "exempt".into())
    );
    assert_eq!(
        level_of(&control, &alice, &get_pods("a")),
        ("catch-all".into(), "catch-all".into())
    );
}

#[test]
fn requests_land_where_upstreams_bootstrap_sends_them() {
    let control = suggested_config();
    let alice = user("alice", &["system:authenticated"]);
    let node = user("system:node:n1", &["system:nodes", "system:authenticated"]);
    let sa = user(
        "system:serviceaccount:kube-system:job",
        &["system:serviceaccounts", "system:authenticated"],
    );
    let app_sa = user(
        "system:serviceaccount:apps:web",
        &["system:serviceaccounts", "system:authenticated"],
    );
    let pl = |u: &UserInfo, i: &RequestInfo| level_of(&control, u, i).1;
    assert_eq!(pl(&alice, &get_pods("a")), "global-default");
    assert_eq!(pl(&alice, &probe()), "exempt");
    assert_eq!(pl(&node, &get_pods("a")), "system");
    let node_status = RequestInfo {
        is_resource_request: true,
        verb: "patch".into(),
        resource: "nodes".into(),
        subresource: "status".into(),
        ..Default::default()
    };
    assert_eq!(pl(&node, &node_status), "node-high");
    assert_eq!(pl(&sa, &get_pods("a")), "workload-high");
    assert_eq!(pl(&app_sa, &get_pods("a")), "workload-low");
}

#[test]
fn seats_are_shares_of_the_server_limit() {
    let control = suggested_config();
    let seats: HashMap<String, Option<usize>> = control
        .levels()
        .into_iter()
        .map(|(name, limit, _)| (name, limit))
        .collect();
    // 600 seats over 245 shares, rounded up.
    assert_eq!(seats["global-default"], Some(49));
    assert_eq!(seats["workload-low"], Some(245));
    assert_eq!(seats["catch-all"], Some(13));
    assert_eq!(seats["exempt"], None);
}

#[tokio::test]
async fn a_full_reject_level_answers_at_once() {
    let control = FlowControl::new(1, Duration::from_secs(60), Default::default());
    let alice = user("alice", &["system:authenticated"]);
    let class = control.classify(&alice, &get_pods("a")).unwrap();
    let catch_all = control.levels().into_iter().find(|l| l.0 == "catch-all");
    assert_eq!(catch_all.map(|l| l.1), Some(Some(1)));
    let seat = class.acquire(control.wait_limit()).await.unwrap();
    let again = control.classify(&alice, &get_pods("a")).unwrap();
    assert_eq!(
        again.acquire(control.wait_limit()).await.err(),
        Some(Rejection::ConcurrencyLimit)
    );
    drop(seat);
    assert!(again.acquire(control.wait_limit()).await.is_ok());
}

#[test]
fn a_schema_naming_a_missing_level_is_dangling_and_skipped() {
    let control = FlowControl::new(600, Duration::from_secs(60), Default::default());
    let schema: FlowSchema = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "mine", "uid": "u1"},
        "spec": {
            "priorityLevelConfiguration": {"name": "nowhere"},
            "matchingPrecedence": 5,
            "rules": [{"subjects": [{"kind": "Group", "group": {"name": "*"}}],
                       "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"],
                                          "namespaces": ["*"], "clusterScope": true}]}]
        }
    }))
    .unwrap();
    let statuses = control.configure(&[schema], &[]);
    assert_eq!(
        statuses,
        [SchemaStatus {
            name: "mine".into(),
            level: "nowhere".into(),
            dangling: true
        }]
    );
    let alice = user("alice", &["system:authenticated"]);
    assert_eq!(level_of(&control, &alice, &get_pods("a")).0, "catch-all");
}
