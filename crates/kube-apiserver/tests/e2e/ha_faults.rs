//! Faults under load on a 3-member etcd cluster with two servers (issue
//! 21): writers and a watcher go through a load balancer that follows each
//! server's `/readyz`, while an etcd member is partitioned (SIGSTOP, then
//! SIGCONT) or a server is stopped (SIGTERM) or killed (SIGKILL). Checked
//! with the clients' own records: every acknowledged write is stored with
//! its value, no answer is an error a client may not retry, the watch
//! resumes from its last resourceVersion (on the other server when its own
//! goes) with no event missed, repeated or out of order, and after SIGTERM
//! the server fails `/readyz`, keeps serving for `--shutdown-delay-duration`
//! and exits cleanly, so clients see no gap. `HA_FAULT_SCALE=<n>` stretches
//! every phase n times (`scripts/ha-faults` runs them so); each run prints
//! one `ha-faults:` line with its numbers.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::Value;
use storage_etcd::testing::EtcdCluster;

use crate::ha::{assert_all_stored, write_retrying, Record, CONFIGMAPS};
use crate::harness::{runtime, TestServer};
use crate::support::http::{admin_curl, request};

const WRITERS: usize = 2;
/// How long one watch request lasts before the watcher resumes it.
const WATCH_WINDOW_SECS: u64 = 3;

/// A phase of `secs` seconds, stretched by `HA_FAULT_SCALE`.
fn phase(secs: f64) -> Duration {
    let scale = std::env::var("HA_FAULT_SCALE")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(1.0);
    Duration::from_secs_f64(secs * scale)
}

/// The etcd cluster and two servers on it.
struct Rig {
    servers: Vec<TestServer>,
    cluster: EtcdCluster,
    /// The member that led at the start; the servers list it last, so they
    /// send their requests to a follower first.
    leader: usize,
    rt: tokio::runtime::Runtime,
}

impl Rig {
    fn start(extra: &[&str]) -> Rig {
        let rt = runtime();
        let cluster = rt
            .block_on(EtcdCluster::start(3))
            .expect("etcd cluster starts");
        let leader = rt.block_on(cluster.leader()).expect("an etcd leader");
        let mut urls = cluster.client_urls();
        let leader_url = urls.remove(leader);
        urls.push(leader_url);
        let servers = ["127.0.0.1", "127.0.0.2"]
            .map(|address| {
                let mut args = vec![
                    format!("--etcd-servers={}", urls.join(",")),
                    format!("--advertise-address={address}"),
                ];
                args.extend(extra.iter().map(|a| a.to_string()));
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                TestServer::start_with(&args)
            })
            .into();
        Rig {
            servers,
            cluster,
            leader,
            rt,
        }
    }

    /// The member the servers send to first.
    fn pinned(&self) -> usize {
        (0..3).find(|&i| i != self.leader).expect("a follower")
    }
}

/// A load balancer in front of the servers: round robin over those whose
/// `/readyz` passed at the last probe (every 200 ms).
struct Balancer<'a> {
    servers: &'a [TestServer],
    ready: Vec<AtomicBool>,
    next: AtomicUsize,
}

impl<'a> Balancer<'a> {
    fn new(servers: &'a [TestServer]) -> Self {
        let ready = servers.iter().map(|_| AtomicBool::new(true)).collect();
        Balancer {
            servers,
            ready,
            next: AtomicUsize::new(0),
        }
    }

    fn pick(&self) -> &'a TestServer {
        let n = self.servers.len();
        let start = self.next.fetch_add(1, Ordering::Relaxed);
        let ready = (0..n)
            .map(|k| (start + k) % n)
            .find(|&i| self.ready[i].load(Ordering::Relaxed));
        &self.servers[ready.unwrap_or(start % n)]
    }

    fn probe_until(&self, done: &AtomicBool) {
        while !done.load(Ordering::SeqCst) {
            for (s, ready) in self.servers.iter().zip(&self.ready) {
                let ok = request(s, "GET", "/readyz", &[], None).code == 200;
                ready.store(ok, Ordering::Relaxed);
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

/// What the watcher saw: (type, name, resourceVersion) of every event,
/// how often it resumed and how often it had to relist (410).
#[derive(Default, Debug)]
struct Watched {
    events: Vec<(String, String, u64)>,
    resumed: usize,
    expired: usize,
}

/// One watch request from `rv` to `s` for at most `secs`; its events are
/// added to `seen`. Returns the resourceVersion to resume from, or None
/// after a 410 (the watcher must relist).
fn watch_once(s: &TestServer, rv: u64, secs: u64, seen: &mut Watched) -> Option<u64> {
    let url = format!(
        "https://127.0.0.1:{}{CONFIGMAPS}?watch=1&resourceVersion={rv}",
        s.port
    );
    let mut child = admin_curl(s)
        .args(["-N", "--max-time", &secs.to_string(), &url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("curl runs");
    let out = child.stdout.take().expect("stdout");
    let mut last = rv;
    for line in BufReader::new(out).lines().map_while(Result::ok) {
        let Ok(event) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let kind = event["type"].as_str().unwrap_or_default().to_owned();
        if kind == "ERROR" {
            assert_eq!(event["object"]["code"], 410, "watch error {event}");
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        let meta = &event["object"]["metadata"];
        let name = meta["name"].as_str().unwrap_or_default().to_owned();
        last = meta["resourceVersion"]
            .as_str()
            .and_then(|v| v.parse().ok())
            .expect("a resourceVersion");
        seen.events.push((kind, name, last));
    }
    let _ = child.wait();
    Some(last)
}

/// The list's resourceVersion, through whichever server answers.
fn list_rv(lb: &Balancer) -> u64 {
    for _ in 0..50 {
        let list = request(lb.pick(), "GET", CONFIGMAPS, &[], None);
        if let Some(rv) = list.body["metadata"]["resourceVersion"].as_str() {
            return rv.parse().expect("a number");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("no server lists");
}

/// Watches through the balancer from `rv` until `done`, resuming each
/// ended request from its last event, then once more to catch up.
fn follow(lb: &Balancer, mut rv: u64, done: &AtomicBool) -> Watched {
    let mut seen = Watched::default();
    loop {
        let last_round = done.load(Ordering::SeqCst);
        let secs = if last_round { 2 } else { WATCH_WINDOW_SECS };
        match watch_once(lb.pick(), rv, secs, &mut seen) {
            Some(next) => rv = next,
            None => {
                seen.expired += 1;
                rv = list_rv(lb);
            }
        }
        if last_round {
            return seen;
        }
        seen.resumed += 1;
    }
}

/// Checks the watch against the writes: resourceVersions strictly
/// increasing (no repeat, no reorder) and, without a relist, every
/// acknowledged write seen added exactly once.
fn check_watch(seen: &Watched, record: &Record) {
    let rvs: Vec<u64> = seen.events.iter().map(|e| e.2).collect();
    assert!(
        rvs.windows(2).all(|w| w[0] < w[1]),
        "events repeated or out of order: {:?}",
        seen.events
    );
    let added: Vec<&str> = seen
        .events
        .iter()
        .filter(|e| e.0 == "ADDED")
        .map(|e| e.1.as_str())
        .collect();
    let unique: BTreeSet<&str> = added.iter().copied().collect();
    assert_eq!(unique.len(), added.len(), "an object added twice");
    if seen.expired == 0 {
        let missed: Vec<&String> = record
            .acked
            .keys()
            .filter(|name| !unique.contains(name.as_str()))
            .collect();
        assert!(missed.is_empty(), "the watch missed {missed:?}");
    }
}

/// Runs writers, a watcher and the balancer's probe through `servers`
/// while `faults` runs; returns what the clients saw.
fn under_load(servers: &[TestServer], faults: impl FnOnce(&Balancer) + Send) -> (Record, Watched) {
    let lb = Balancer::new(servers);
    let record = Mutex::new(Record::default());
    let (done, probing) = (AtomicBool::new(false), AtomicBool::new(false));
    let rv = list_rv(&lb);
    let watched = std::thread::scope(|scope| {
        let (lb, record, done) = (&lb, &record, &done);
        scope.spawn(|| lb.probe_until(&probing));
        for w in 0..WRITERS {
            scope.spawn(move || {
                let mut i = 0;
                while !done.load(Ordering::SeqCst) {
                    let (name, value) = (format!("w{w}-{i}"), format!("{w}.{i}"));
                    write_retrying(&|| lb.pick(), &name, &value, record);
                    i += 1;
                }
            });
        }
        let watcher = scope.spawn(move || follow(lb, rv, done));
        std::thread::sleep(phase(2.0));
        // The clients stop even when a check of `faults` fails.
        let faulted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| faults(lb)));
        done.store(true, Ordering::SeqCst);
        let watched = watcher.join().expect("watcher");
        probing.store(true, Ordering::SeqCst);
        if let Err(panic) = faulted {
            std::panic::resume_unwind(panic);
        }
        watched
    });
    (record.into_inner().expect("record"), watched)
}

/// Prints the run's numbers and checks them.
fn report(scenario: &str, record: &Record, watched: &Watched, extra: &str) {
    let mut others: BTreeMap<String, usize> = BTreeMap::new();
    for (kind, name, _) in &watched.events {
        if !(kind == "ADDED" && record.acked.contains_key(name)) {
            *others.entry(format!("{kind} {name}")).or_default() += 1;
        }
    }
    eprintln!(
        "ha-faults: {scenario}: writes acknowledged {}, errors by code {:?}, longest gap \
         between acknowledged writes {:?}, watch events {} (besides the writes' {others:?}), \
         resumed {}, relisted {}{extra}",
        record.acked.len(),
        record.errors,
        record.longest_gap(),
        watched.events.len(),
        watched.resumed,
        watched.expired,
    );
    assert!(
        record.acked.len() > 10,
        "too few writes: {}",
        record.acked.len()
    );
    check_watch(watched, record);
}

/// Whether process `pid` has exited (a zombie not yet reaped, or gone).
fn exited(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit_once(") ")
                .is_some_and(|(_, rest)| rest.starts_with('Z'))
        })
        .unwrap_or(true)
}

fn signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([signal, &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
}

#[test]
fn etcd_partitions_lose_no_write_and_the_watch_misses_nothing() {
    let rig = Rig::start(&[]);
    let (leader, pinned) = (rig.leader, rig.pinned());
    let (record, watched) = under_load(&rig.servers, |_| {
        // The leader partitioned: the others elect a new one.
        rig.cluster.pause(leader);
        std::thread::sleep(phase(4.0));
        rig.cluster.resume(leader);
        std::thread::sleep(phase(2.0));
        // A follower the servers do not send to, partitioned: not the
        // member that leads now (the election may have picked it).
        let now = rig.rt.block_on(rig.cluster.leader());
        let other = (0..3).find(|&i| Some(i) != now && i != pinned).unwrap();
        rig.cluster.pause(other);
        std::thread::sleep(phase(3.0));
        rig.cluster.resume(other);
        std::thread::sleep(phase(2.0));
    });
    let new_leader = rig.rt.block_on(rig.cluster.leader());
    report(
        "etcd leader and follower SIGSTOP/SIGCONT",
        &record,
        &watched,
        &format!(", etcd leader {leader} then {new_leader:?}"),
    );
    for s in &rig.servers {
        assert_all_stored(s, &record);
    }
}

/// The member the servers send to partitioned for longer than their etcd
/// keepalive (30 s ping, 10 s timeout, upstream's): requests hang until
/// the connection is declared dead and they move to the next member. Long,
/// so run by `scripts/ha-faults` only.
#[test]
#[ignore = "about 70 s: run by scripts/ha-faults"]
fn etcd_partition_of_the_servers_member_is_ridden_out_after_keepalive() {
    let rig = Rig::start(&[]);
    let pinned = rig.pinned();
    let (record, watched) = under_load(&rig.servers, |_| {
        rig.cluster.pause(pinned);
        std::thread::sleep(Duration::from_secs(45));
        rig.cluster.resume(pinned);
        std::thread::sleep(phase(2.0));
    });
    report(
        "etcd SIGSTOP of the servers' member (45 s)",
        &record,
        &watched,
        "",
    );
    for s in &rig.servers {
        assert_all_stored(s, &record);
    }
}

/// `GET /readyz/etcd` through `s`.
fn etcd_ready(s: &TestServer) -> bool {
    request(s, "GET", "/readyz/etcd", &[], None).code == 200
}

#[test]
fn etcd_leader_sigkill_and_restart_from_its_data_dir() {
    let mut rig = Rig::start(&[]);
    let leader = rig.leader;
    let (servers, cluster, rt) = (&rig.servers, &mut rig.cluster, &rig.rt);
    let mut timings = String::new();
    let (record, watched) = under_load(servers, |_| {
        cluster.kill(leader);
        let killed = Instant::now();
        // The others keep a quorum: once they elect a leader, etcd is
        // ready again through both servers.
        wait_until(phase(4.0) + Duration::from_secs(10), || {
            servers.iter().all(etcd_ready)
        });
        timings = format!(
            ", /readyz/etcd passing again {:?} after the kill",
            killed.elapsed()
        );
        std::thread::sleep(phase(4.0).saturating_sub(killed.elapsed()));
        rt.block_on(cluster.restart(leader))
            .expect("member restarts");
        std::thread::sleep(phase(3.0));
    });
    let new_leader = rt.block_on(cluster.leader());
    report(
        "etcd leader SIGKILL, restarted from its data dir",
        &record,
        &watched,
        &format!("{timings}, etcd leader {leader} then {new_leader:?}"),
    );
    for s in servers {
        assert_all_stored(s, &record);
    }
}

#[test]
fn whole_etcd_cluster_stopped_and_restarted() {
    let mut rig = Rig::start(&[]);
    let (servers, cluster, rt) = (&rig.servers, &mut rig.cluster, &rig.rt);
    let mut timings = String::new();
    let (record, watched) = under_load(servers, |_| {
        for i in 0..3 {
            cluster.kill(i);
        }
        // No etcd: readiness fails on both servers (liveness too, as
        // upstream's, whose etcd check is in /livez).
        wait_until(Duration::from_secs(10), || !servers.iter().any(etcd_ready));
        for s in servers {
            assert_eq!(request(s, "GET", "/readyz", &[], None).code, 500);
        }
        std::thread::sleep(phase(3.0));
        rt.block_on(cluster.restart_all())
            .expect("cluster restarts");
        let restarted = Instant::now();
        wait_until(Duration::from_secs(20), || servers.iter().all(etcd_ready));
        timings = format!(
            ", /readyz/etcd passing {:?} after the restart",
            restarted.elapsed()
        );
        std::thread::sleep(phase(3.0));
    });
    report(
        "whole etcd cluster SIGKILL, restarted",
        &record,
        &watched,
        &timings,
    );
    for s in servers {
        assert_all_stored(s, &record);
    }
}

#[test]
fn sigterm_hands_over_to_the_other_server_without_a_gap() {
    let mut rig = Rig::start(&["--shutdown-delay-duration=3s"]);
    let pid = rig.servers[0].pid();
    let mut timings = String::new();
    let (record, watched) = under_load(&rig.servers, |lb| {
        signal(pid, "-TERM");
        let asked = Instant::now();
        let unready = wait_until(Duration::from_secs(5), || {
            !lb.ready[0].load(Ordering::Relaxed)
        });
        wait_until(phase(2.0) + Duration::from_secs(15), || exited(pid));
        let gone = asked.elapsed();
        timings = format!(", balancer saw /readyz fail after {unready:?}, exited after {gone:?}");
        assert!(
            gone >= Duration::from_secs(3),
            "exited within the shutdown delay"
        );
        std::thread::sleep(phase(2.0));
    });
    report("server SIGTERM", &record, &watched, &timings);
    let status = rig.servers[0].terminate();
    assert!(status.success(), "exit status {status:?}");
    assert!(
        record.errors.is_empty(),
        "clients got errors: {:?}",
        record.errors
    );
    assert!(record.longest_gap() < Duration::from_secs(1));
    assert_all_stored(&rig.servers[1], &record);
}

#[test]
fn sigkill_of_a_server_loses_no_acknowledged_write() {
    let rig = Rig::start(&[]);
    let pid = rig.servers[0].pid();
    let (record, watched) = under_load(&rig.servers, |_| {
        signal(pid, "-KILL");
        std::thread::sleep(phase(4.0));
    });
    report(
        "server SIGKILL",
        &record,
        &watched,
        &format!(", longest gap {:?}", record.longest_gap()),
    );
    assert!(record.longest_gap() < Duration::from_secs(2));
    assert_all_stored(&rig.servers[1], &record);
}

/// Polls `f` every 50 ms until true; returns how long that took.
fn wait_until(limit: Duration, f: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while !f() {
        assert!(start.elapsed() < limit, "not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
    start.elapsed()
}
