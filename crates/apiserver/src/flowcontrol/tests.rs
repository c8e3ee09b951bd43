//! Classification and seat limits over the bootstrap configuration.

use std::time::Duration;

use apimachinery::request_info::RequestInfo;

use super::*;

fn user(name: &str, groups: &[&str]) -> Arc<UserInfo> {
    Arc::new(UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    })
}

fn get_pods(namespace: &str) -> Arc<RequestInfo> {
    Arc::new(RequestInfo {
        is_resource_request: true,
        verb: "list".into(),
        resource: "pods".into(),
        namespace: namespace.into(),
        ..Default::default()
    })
}

fn probe() -> Arc<RequestInfo> {
    Arc::new(RequestInfo {
        verb: "get".into(),
        path: "/readyz".into(),
        ..Default::default()
    })
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

fn level_of(
    control: &FlowControl,
    user: &Arc<UserInfo>,
    info: &Arc<RequestInfo>,
) -> (String, String) {
    let class = control.classify(user, info).unwrap();
    (
        class.flow_schema.to_string(),
        class.priority_level.to_string(),
    )
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
    let pl = |u: &Arc<UserInfo>, i: &Arc<RequestInfo>| level_of(&control, u, i).1;
    assert_eq!(pl(&alice, &get_pods("a")), "global-default");
    assert_eq!(pl(&alice, &probe()), "exempt");
    assert_eq!(pl(&node, &get_pods("a")), "system");
    let node_status = Arc::new(RequestInfo {
        is_resource_request: true,
        verb: "patch".into(),
        resource: "nodes".into(),
        subresource: "status".into(),
        ..Default::default()
    });
    assert_eq!(pl(&node, &node_status), "node-high");
    assert_eq!(pl(&sa, &get_pods("a")), "workload-high");
    assert_eq!(pl(&app_sa, &get_pods("a")), "workload-low");
}

#[test]
fn seats_are_shares_of_the_server_limit_and_idle_levels_lend() {
    let control = suggested_config();
    let levels: HashMap<String, LevelLimits> = control
        .levels()
        .into_iter()
        .map(|(name, limits, _)| (name, limits))
        .collect();
    // 600 seats over 245 shares, rounded up; lendable percent off the
    // bottom, the whole server's limit on top.
    assert_eq!(
        levels["global-default"],
        LevelLimits {
            nominal: 49,
            lower: 24,
            upper: 649,
            // All idle: lower limits scaled by 602/258.
            current: Some(56)
        }
    );
    assert_eq!(levels["workload-low"].nominal, 245);
    assert_eq!(levels["workload-low"].current, Some(56));
    assert_eq!(levels["catch-all"].nominal, 13);
    assert_eq!(levels["catch-all"].current, Some(30));
    assert_eq!(levels["exempt"].current, None);
    let rendered = control.metrics.render().unwrap();
    for line in [
        "apiserver_flowcontrol_nominal_limit_seats{priority_level=\"global-default\"} 49",
        "apiserver_flowcontrol_lower_limit_seats{priority_level=\"global-default\"} 24",
        "apiserver_flowcontrol_upper_limit_seats{priority_level=\"global-default\"} 649",
        "apiserver_flowcontrol_current_limit_seats{priority_level=\"global-default\"} 56",
        "apiserver_flowcontrol_target_seats{priority_level=\"global-default\"} 24.0",
    ] {
        assert!(rendered.contains(line), "{line} missing from\n{rendered}");
    }
    assert!(rendered.contains("apiserver_flowcontrol_seat_fair_frac 2.33"));
}

fn limited_level(
    name: &str,
    shares: i32,
    lendable: i32,
    borrowing: Option<i32>,
) -> PriorityLevelConfiguration {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "spec": {"type": "Limited", "limited": {
            "nominalConcurrencyShares": shares,
            "lendablePercent": lendable,
            "borrowingLimitPercent": borrowing,
            "limitResponse": {"type": "Queue", "queuing": {"queues": 4, "handSize": 1, "queueLengthLimit": 50}}
        }}
    }))
    .unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_busy_level_borrows_what_idle_ones_lend() {
    // 100 seats: catch-all 5 shares, a 50, b 45; half of each lendable.
    let control = FlowControl::new(100, Duration::from_secs(60), Default::default());
    let levels = [
        limited_level("a", 50, 50, None),
        limited_level("b", 45, 50, Some(10)),
    ];
    control.configure(&[], &levels);
    let limits = |name: &str| {
        control
            .levels()
            .into_iter()
            .find(|l| l.0 == name)
            .map(|l| l.1)
            .unwrap()
    };
    // Idle, the levels share the seats in proportion to their lower
    // limits (25, 22 and 5).
    assert_eq!(
        limits("a"),
        LevelLimits {
            nominal: 50,
            lower: 25,
            upper: 150,
            current: Some(48)
        }
    );
    assert_eq!((limits("b").lower, limits("b").upper), (22, 50));
    assert_eq!(limits("b").current, Some(42));
    assert_eq!(limits("catch-all").current, Some(10));
    let queues = control.current().levels["a"].queues.clone();
    let meta = || {
        Arc::new(RequestMeta {
            flow_schema: "fs".into(),
            distinguisher: Distinguisher::None,
            user: user("u", &[]),
            info: get_pods("a"),
        })
    };
    let one = WorkEstimate::MINIMAL;
    // Level a runs 48 requests and 22 more wait: a demand of 70 seats
    // for ten seconds.
    let mut seats = Vec::new();
    for _ in 0..48 {
        seats.push(
            queues
                .acquire(0, one, meta(), Duration::ZERO)
                .await
                .unwrap(),
        );
    }
    let mut waiting = Vec::new();
    for _ in 0..22 {
        let (q, m) = (queues.clone(), meta());
        waiting.push(tokio::spawn(async move {
            q.acquire(1, one, m, Duration::from_secs(30)).await
        }));
    }
    while queues.digest().waiting < 22 {
        tokio::task::yield_now().await;
    }
    tokio::time::advance(ADJUSTMENT_PERIOD).await;
    control.update_borrowing();
    // Targets 70, 22 and 5 for 100 seats: a borrows beyond its nominal 50.
    assert_eq!(limits("a").current, Some(72));
    assert_eq!(limits("b").current, Some(23));
    assert_eq!(limits("catch-all").current, Some(5));
    assert_eq!(queues.digest().executing, 70);
    let rendered = control.metrics.render().unwrap();
    for line in [
        "apiserver_flowcontrol_current_limit_seats{priority_level=\"a\"} 72",
        "apiserver_flowcontrol_demand_seats_high_watermark{priority_level=\"a\"} 70.0",
        "apiserver_flowcontrol_demand_seats_average{priority_level=\"a\"} 70.0",
        "apiserver_flowcontrol_demand_seats_smoothed{priority_level=\"a\"} 70.0",
        "apiserver_flowcontrol_target_seats{priority_level=\"a\"} 70.0",
    ] {
        assert!(rendered.contains(line), "{line} missing from\n{rendered}");
    }
    for w in waiting {
        w.abort();
    }
}

#[tokio::test]
async fn a_full_reject_level_answers_at_once() {
    let control = FlowControl::new(1, Duration::from_secs(60), Default::default());
    let alice = user("alice", &["system:authenticated"]);
    let class = control.classify(&alice, &get_pods("a")).unwrap();
    let catch_all = control.levels().into_iter().find(|l| l.0 == "catch-all");
    assert_eq!(catch_all.map(|l| l.1.current), Some(Some(1)));
    let one = WorkEstimate::MINIMAL;
    let seat = class.acquire(one, control.wait_limit()).await.unwrap();
    let again = control.classify(&alice, &get_pods("a")).unwrap();
    assert_eq!(
        again.acquire(one, control.wait_limit()).await.err(),
        Some(Rejection::ConcurrencyLimit)
    );
    drop(seat);
    assert!(again.acquire(one, control.wait_limit()).await.is_ok());
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
