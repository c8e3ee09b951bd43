//! The controllers upstream runs in kube-controller-manager, elected: two
//! servers on one real etcd, each with its own data dir (so its own cluster
//! CA), hold one `kube-system/kube-controller-manager` Lease between them;
//! only the holder's controllers act (root-CA publisher, service accounts,
//! namespace deletion, resource quota, garbage collector, ClusterRole
//! aggregation), and when it dies the other takes the Lease over within
//! the lease duration and acts in its place.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;
use storage_etcd::testing::EtcdServer;

use crate::harness::{self, TestServer};

/// Two servers on one etcd; `leader` indexes the one holding the Lease.
struct Pair {
    servers: Vec<TestServer>,
    leader: usize,
    // Last: etcd stops after the servers.
    _etcd: EtcdServer,
    _runtime: tokio::runtime::Runtime,
}

impl Pair {
    fn start() -> Pair {
        let runtime = harness::runtime();
        let etcd = runtime.block_on(EtcdServer::start()).expect("etcd starts");
        let flag = format!("--etcd-servers={}", etcd.client_url());
        let servers: Vec<TestServer> = (0..2).map(|_| TestServer::start_with(&[&flag])).collect();
        let leader = wait_for(Duration::from_secs(10), "a leader", || {
            let leading: Vec<usize> = (0..2).filter(|&i| acquired(&servers[i])).collect();
            (leading.len() == 1).then(|| leading[0])
        });
        Pair {
            servers,
            leader,
            _etcd: etcd,
            _runtime: runtime,
        }
    }

    fn leader(&self) -> &TestServer {
        &self.servers[self.leader]
    }

    fn standby(&self) -> &TestServer {
        &self.servers[1 - self.leader]
    }
}

/// Whether the server's log says it took the Lease.
fn acquired(s: &TestServer) -> bool {
    std::fs::read_to_string(s.dir.path().join("server.log"))
        .is_ok_and(|log| log.contains("Successfully acquired lease"))
}

fn wait_for<T>(limit: Duration, what: &str, f: impl Fn() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < limit, "no {what} within {limit:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn get_json(s: &TestServer, args: &[&str]) -> Option<Value> {
    let mut all = vec!["get", "-o", "json"];
    all.extend_from_slice(args);
    let out = s.kubectl(&all);
    out.status
        .success()
        .then(|| serde_json::from_slice(&out.stdout).expect("json"))
}

fn lease(s: &TestServer) -> Option<Value> {
    get_json(
        s,
        &["lease", "-n", "kube-system", "kube-controller-manager"],
    )
}

fn root_ca(s: &TestServer, ns: &str) -> Option<Value> {
    get_json(s, &["configmap", "-n", ns, "kube-root-ca.crt"])
}

fn signal(s: &TestServer, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &s.pid().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

fn ca_of(s: &TestServer) -> String {
    std::fs::read_to_string(s.dir.path().join("pki/ca.crt")).expect("cluster CA")
}

/// Work for every elected controller but the namespace's, made through
/// `s` in namespace `ns`: a quota, a dependent whose owner is absent, a
/// ClusterRole aggregating another (both named after `ns`).
fn give_work(s: &TestServer, ns: &str) {
    s.apply_yaml(&format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dependent\n  namespace: {ns}\n  \
         ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: absent\n    \
         uid: 3f0c1b7e-0000-4000-8000-000000000001\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {ns}-agg\n\
         aggregationRule:\n  clusterRoleSelectors:\n  - matchLabels:\n      agg: {ns}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: {ns}-part\n  \
         labels:\n    agg: {ns}\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get]\n"
    ));
    // Last: a quota without status refuses what it counts until it has one.
    s.ok(&["create", "quota", "q", "-n", ns, "--hard=configmaps=9"]);
}

/// What of [`give_work`] the controllers did: quota status written,
/// dependent collected, rules aggregated.
fn work_done(s: &TestServer, ns: &str) -> [bool; 3] {
    let quota = get_json(s, &["quota", "q", "-n", ns]).expect("quota");
    let dependent = get_json(s, &["configmap", "dependent", "-n", ns]);
    let agg = get_json(s, &["clusterrole", &format!("{ns}-agg")]).expect("role");
    [
        quota["status"]["used"]["configmaps"].is_string(),
        dependent.is_none(),
        agg["rules"].as_array().is_some_and(|r| !r.is_empty()),
    ]
}

#[test]
fn one_server_holds_the_lease_and_only_its_controllers_act() {
    let pair = Pair::start();
    let (leader, standby) = (pair.leader(), pair.standby());
    let spec = lease(standby).expect("the Lease")["spec"].clone();
    let holder = spec["holderIdentity"].as_str().unwrap();
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let (name, uuid) = holder.split_once('_').expect("<hostname>_<uuid>");
    assert_eq!(name, host.trim());
    assert_eq!(uuid.len(), 36, "{uuid}");
    assert_eq!(spec["leaseDurationSeconds"], 15);
    assert_eq!(spec["leaseTransitions"], 0);
    for time in ["acquireTime", "renewTime"] {
        // MicroTime: six fractional digits, UTC.
        let t = spec[time].as_str().unwrap();
        assert_eq!(t.len(), "2026-01-02T15:04:05.000000Z".len(), "{t}");
    }
    // A namespace made through the standby gets the leader's CA, once: the
    // standby publishes nothing (its own CA would fight the leader's).
    standby.ok(&["create", "namespace", "elected"]);
    let published = wait_for(Duration::from_secs(10), "root CA", || {
        root_ca(standby, "elected")
    });
    assert_eq!(published["data"]["ca.crt"], ca_of(leader).as_str());
    std::thread::sleep(Duration::from_secs(3));
    let later = root_ca(standby, "elected").unwrap();
    assert_eq!(
        later["metadata"]["resourceVersion"],
        published["metadata"]["resourceVersion"]
    );
    // With the leader frozen (well within its lease), nothing acts.
    signal(leader, "-STOP");
    standby.ok(&["create", "namespace", "frozen"]);
    give_work(standby, "frozen");
    std::thread::sleep(Duration::from_secs(4));
    let acted = root_ca(standby, "frozen");
    let account = get_json(standby, &["serviceaccount", "-n", "frozen", "default"]);
    let done = work_done(standby, "frozen");
    signal(leader, "-CONT");
    assert!(acted.is_none(), "the standby published the root CA");
    assert!(account.is_none(), "the standby made the default account");
    assert_eq!(
        done, [false; 3],
        "the standby's quota, GC or aggregation acted"
    );
    wait_for(Duration::from_secs(10), "root CA after resuming", || {
        root_ca(standby, "frozen")
    });
    wait_for(
        Duration::from_secs(10),
        "the leader's work after resuming",
        || (work_done(standby, "frozen") == [true; 3]).then_some(()),
    );
    assert!(!acquired(standby));
}

#[test]
fn the_other_server_takes_over_when_the_leader_dies() {
    let pair = Pair::start();
    let holder = lease(pair.standby()).expect("the Lease")["spec"]["holderIdentity"].clone();
    signal(pair.leader(), "-KILL");
    let killed = Instant::now();
    let survivor = pair.standby();
    let spec = wait_for(Duration::from_secs(30), "a new holder", || {
        let spec = lease(survivor)?["spec"].clone();
        (spec["holderIdentity"] != holder).then_some(spec)
    });
    let took = killed.elapsed();
    // The lease (15 s) from the last renewal the survivor saw, which it
    // sees at most a jittered retry (2-4.4 s) late, then its next try.
    assert!(took <= Duration::from_secs(25), "took {took:?}");
    assert!(acquired(survivor));
    assert_eq!(spec["leaseTransitions"], 1);
    // Its controllers act now: the root CA is published and a deleted
    // namespace is emptied and goes.
    survivor.ok(&["create", "namespace", "after"]);
    give_work(survivor, "after");
    wait_for(Duration::from_secs(10), "quota, GC and aggregation", || {
        (work_done(survivor, "after") == [true; 3]).then_some(())
    });
    let published = wait_for(Duration::from_secs(10), "root CA", || {
        root_ca(survivor, "after")
    });
    assert_eq!(published["data"]["ca.crt"], ca_of(survivor).as_str());
    survivor.ok(&["delete", "namespace", "after", "--wait=false"]);
    wait_for(Duration::from_secs(20), "the namespace gone", || {
        get_json(survivor, &["namespace", "after"])
            .is_none()
            .then_some(())
    });
}
