//! Two servers on one 3-member etcd cluster (issue 21): a write through one
//! is read at once through the other, both watches see the same events in
//! the same order, `default/kubernetes` lists both advertise addresses and
//! drops a killed server within the lease TTL, and across an etcd leader
//! kill and a stopped member no acknowledged write is lost and no client
//! gets an error other than upstream's retriable ones.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use storage_etcd::testing::EtcdCluster;

use crate::harness::TestServer;
use crate::support::http::{admin_curl, request, Answer};

pub(crate) const CONFIGMAPS: &str = "/api/v1/namespaces/default/configmaps";
const ENDPOINTS: &str = "/api/v1/namespaces/default/endpoints/kubernetes";
const SLICE: &str = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes";

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// A server on every member of `cluster`, advertising `address`.
fn server(cluster: &EtcdCluster, address: &str) -> TestServer {
    let servers = format!("--etcd-servers={}", cluster.client_urls().join(","));
    TestServer::start_with(&[&servers, &format!("--advertise-address={address}")])
}

/// The addresses the `kubernetes` Endpoints and EndpointSlice list.
fn endpoint_ips(s: &TestServer) -> (BTreeSet<String>, BTreeSet<String>) {
    let endpoints = request(s, "GET", ENDPOINTS, &[], None).body;
    let subsets = endpoints["subsets"].as_array().cloned().unwrap_or_default();
    let from_endpoints = subsets
        .iter()
        .flat_map(|s| s["addresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a["ip"].as_str().map(str::to_owned))
        .collect();
    let slice = request(s, "GET", SLICE, &[], None).body;
    let from_slice = slice["endpoints"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|e| e["addresses"][0].as_str().map(str::to_owned))
        .collect();
    (from_endpoints, from_slice)
}

/// Waits until both objects list exactly `want`; returns how long it took.
fn wait_for_endpoints(s: &TestServer, want: &[&str], within: Duration) -> Duration {
    let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
    let start = Instant::now();
    loop {
        let (endpoints, slice) = endpoint_ips(s);
        if endpoints == want && slice == want {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "endpoints {endpoints:?} and slice {slice:?} did not become {want:?} within {within:?}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

pub(crate) fn create(s: &TestServer, name: &str, value: &str) -> Answer {
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name}, "data": {"v": value}});
    let headers = ["Content-Type: application/json"];
    request(s, "POST", CONFIGMAPS, &headers, Some(&body.to_string()))
}

/// A watch of the default namespace's ConfigMaps after `rv`, ended by curl
/// after `seconds`.
fn watch(s: &TestServer, rv: &str, seconds: u64) -> Child {
    let mut cmd = admin_curl(s);
    cmd.args(["-N", "--max-time", &seconds.to_string()])
        .arg(format!(
            "https://127.0.0.1:{}{CONFIGMAPS}?watch=1&resourceVersion={rv}",
            s.port
        ))
        .stdout(Stdio::piped());
    cmd.spawn().expect("curl runs")
}

/// The (type, name, resourceVersion) of every event a watch delivered.
fn events(child: Child) -> Vec<(String, String, String)> {
    let out = child.wait_with_output().expect("watch ends");
    BufReader::new(&out.stdout[..])
        .lines()
        .map_while(Result::ok)
        .filter_map(|line| serde_json::from_str::<Value>(&line).ok())
        .map(|e| {
            let meta = &e["object"]["metadata"];
            let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
            (
                text(&e["type"]),
                text(&meta["name"]),
                text(&meta["resourceVersion"]),
            )
        })
        .collect()
}

#[test]
fn two_servers_on_one_etcd_cluster_agree_and_list_each_other() {
    let rt = runtime();
    let cluster = rt
        .block_on(EtcdCluster::start(3))
        .expect("etcd cluster starts");
    let mut a = server(&cluster, "127.0.0.1");
    let mut b = server(&cluster, "127.0.0.2");
    wait_for_endpoints(&a, &["127.0.0.1", "127.0.0.2"], Duration::from_secs(20));

    let rv = request(&a, "GET", CONFIGMAPS, &[], None).body["metadata"]["resourceVersion"]
        .as_str()
        .expect("list resourceVersion")
        .to_owned();
    let (watch_a, watch_b) = (watch(&a, &rv, 8), watch(&b, &rv, 8));
    for i in 0..10 {
        let (writer, reader) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let name = format!("ha-{i}");
        let created = create(writer, &name, &i.to_string());
        assert_eq!(created.code, 201, "{}", created.body);
        // A consistent read through the other server sees the write at once.
        let read = request(reader, "GET", &format!("{CONFIGMAPS}/{name}"), &[], None);
        assert_eq!(read.code, 200, "{}", read.body);
        assert_eq!(read.body["data"]["v"], i.to_string());
        assert_eq!(
            read.body["metadata"]["resourceVersion"],
            created.body["metadata"]["resourceVersion"]
        );
    }
    let (seen_a, seen_b) = (events(watch_a), events(watch_b));
    let ours = |events: Vec<(String, String, String)>| -> Vec<_> {
        events
            .into_iter()
            .filter(|(_, name, _)| name.starts_with("ha-"))
            .collect()
    };
    let (seen_a, seen_b) = (ours(seen_a), ours(seen_b));
    assert_eq!(seen_a.len(), 10, "{seen_a:?}");
    assert_eq!(
        seen_a, seen_b,
        "both watches deliver the same events in the same order"
    );

    b.terminate();
    // A graceful stop removes the server's lease at once.
    let dropped = wait_for_endpoints(&a, &["127.0.0.1"], Duration::from_secs(15));
    eprintln!("terminated server dropped from the endpoints after {dropped:?}");
    b.restart();
    wait_for_endpoints(&a, &["127.0.0.1", "127.0.0.2"], Duration::from_secs(20));
    drop(b); // SIGKILL: the lease expires (15 s TTL, 10 s reconcile interval).
    let dropped = wait_for_endpoints(&a, &["127.0.0.1"], Duration::from_secs(40));
    eprintln!("killed server dropped from the endpoints after {dropped:?}");
    // The last server removes itself too (upstream leaves no subset).
    assert!(a.terminate().success());
    let log = a.log();
    assert!(!log.contains("Unable to remove endpoints"), "{log}");
}

/// What the writers saw.
#[derive(Default)]
pub(crate) struct Record {
    /// Acknowledged writes: name → value.
    pub acked: BTreeMap<String, String>,
    /// When each write was acknowledged, in order.
    pub acked_at: Vec<Instant>,
    /// Answers that were not a success, by code and reason (code 0: no
    /// answer, the connection failed).
    pub errors: BTreeMap<String, usize>,
}

impl Record {
    fn ack(&mut self, name: &str, value: &str) {
        self.acked.insert(name.to_owned(), value.to_owned());
        self.acked_at.push(Instant::now());
    }

    /// The longest time without an acknowledged write.
    pub fn longest_gap(&self) -> Duration {
        let gaps = self.acked_at.windows(2).map(|w| w[1] - w[0]);
        gaps.max().unwrap_or_default()
    }
}

/// Creates `name` through the server `pick` names at each attempt,
/// retrying as client-go does on upstream's retriable answers (429, and
/// 5xx with `Retry-After`: ServerTimeout) and on failed connections; a 409
/// after such an answer means the earlier attempt was stored.
pub(crate) fn write_retrying<'a>(
    pick: &dyn Fn() -> &'a TestServer,
    name: &str,
    value: &str,
    record: &Mutex<Record>,
) {
    let mut retried = false;
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(90) {
        let answer = create(pick(), name, value);
        let reason = answer.body["reason"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        match answer.code {
            201 => return record.lock().unwrap().ack(name, value),
            409 if retried => return record.lock().unwrap().ack(name, value),
            _ => {
                let key = format!("{} {reason}", answer.code);
                *record.lock().unwrap().errors.entry(key).or_default() += 1;
                let retriable = answer.code == 429
                    || (answer.code >= 500
                        && answer.body["details"]["retryAfterSeconds"].as_i64() > Some(0))
                    || answer.code == 0;
                assert!(
                    retriable,
                    "{name}: a non-retriable answer: {} {}",
                    answer.code, answer.body
                );
                retried = true;
                std::thread::sleep(Duration::from_millis(100));
            }
        }
    }
    panic!("{name} was never stored");
}

#[test]
fn etcd_leader_kill_and_a_stopped_member_lose_no_acknowledged_write() {
    let rt = runtime();
    let mut cluster = rt
        .block_on(EtcdCluster::start(3))
        .expect("etcd cluster starts");
    let a = server(&cluster, "127.0.0.1");
    let b = server(&cluster, "127.0.0.2");
    let record = Mutex::new(Record::default());
    let done = AtomicBool::new(false);
    std::thread::scope(|scope| {
        for (w, s) in [&a, &b].into_iter().enumerate() {
            let (record, done) = (&record, &done);
            scope.spawn(move || {
                let mut i = 0;
                while !done.load(Ordering::SeqCst) {
                    let (name, value) = (format!("w{w}-{i}"), format!("{w}.{i}"));
                    write_retrying(&|| s, &name, &value, record);
                    i += 1;
                }
            });
        }
        std::thread::sleep(Duration::from_secs(2));
        let leader = rt.block_on(cluster.leader()).expect("a leader");
        cluster.kill(leader);
        std::thread::sleep(Duration::from_secs(5));
        rt.block_on(cluster.restart(leader))
            .expect("member restarts");
        std::thread::sleep(Duration::from_secs(2));
        // Stop a member that serves clients (the first is the one both
        // servers use first) while the others keep quorum.
        let stopped = if leader == 0 { 1 } else { 0 };
        cluster.kill(stopped);
        std::thread::sleep(Duration::from_secs(5));
        done.store(true, Ordering::SeqCst);
    });
    let record = record.into_inner().unwrap();
    eprintln!(
        "writes acknowledged: {}, errors by code and reason: {:?}",
        record.acked.len(),
        record.errors
    );
    assert!(
        record.acked.len() > 20,
        "too few writes: {}",
        record.acked.len()
    );
    for s in [&a, &b] {
        assert_all_stored(s, &record);
    }
}

/// Checks that every acknowledged write is stored with its value, read
/// through `s`.
pub(crate) fn assert_all_stored(s: &TestServer, record: &Record) {
    let list = request(s, "GET", CONFIGMAPS, &[], None);
    assert_eq!(list.code, 200, "{}", list.body);
    let stored: BTreeMap<String, String> = list.body["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|cm| {
            let name = cm["metadata"]["name"].as_str()?.to_owned();
            Some((name, cm["data"]["v"].as_str()?.to_owned()))
        })
        .collect();
    for (name, value) in &record.acked {
        assert_eq!(stored.get(name), Some(value), "acknowledged {name} lost");
    }
}
