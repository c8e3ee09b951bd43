use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use chrono::{DateTime, Utc};
use futures::FutureExt;
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::testing::Leases;
use super::*;

const NS: &str = "kube-system";
const NAME: &str = "kube-controller-manager";

/// What one candidate's callbacks saw.
#[derive(Default)]
struct Log {
    started: AtomicUsize,
    stopped: AtomicUsize,
    /// Set once the leader's work has seen its token cancelled.
    work_done: AtomicBool,
    token: Mutex<Option<CancellationToken>>,
    leaders: Mutex<Vec<String>>,
}

impl Log {
    fn leading(&self) -> bool {
        let token = self.token.lock().unwrap();
        token.as_ref().is_some_and(|t| !t.is_cancelled())
    }

    fn leaders(&self) -> Vec<String> {
        self.leaders.lock().unwrap().clone()
    }
}

struct Candidate {
    elector: Arc<LeaderElector>,
    log: Arc<Log>,
    stop: CancellationToken,
}

impl Candidate {
    fn new(leases: &Arc<Leases>, id: &str, release_on_cancel: bool) -> Self {
        let log = Arc::new(Log::default());
        let lock = Arc::new(LeaseLock::new(NS, NAME, id, leases.clone()));
        let (l1, l2, l3) = (log.clone(), log.clone(), log.clone());
        let callbacks = LeaderCallbacks {
            on_started_leading: Arc::new(move |token: CancellationToken| {
                let log = l1.clone();
                log.started.fetch_add(1, Ordering::SeqCst);
                *log.token.lock().unwrap() = Some(token.clone());
                async move {
                    token.cancelled().await;
                    log.work_done.store(true, Ordering::SeqCst);
                }
                .boxed()
            }),
            on_stopped_leading: Arc::new(move || {
                l2.stopped.fetch_add(1, Ordering::SeqCst);
            }),
            on_new_leader: Some(Arc::new(move |id: &str| {
                l3.leaders.lock().unwrap().push(id.to_owned())
            })),
        };
        let mut config = LeaderElectionConfig::new(lock, callbacks);
        config.release_on_cancel = release_on_cancel;
        Candidate {
            elector: Arc::new(LeaderElector::new(config).unwrap()),
            log,
            stop: CancellationToken::new(),
        }
    }

    /// A candidate that has taken the free lock, and its run.
    async fn leading(leases: &Arc<Leases>, id: &str) -> (Self, JoinHandle<()>) {
        let candidate = Candidate::new(leases, id, false);
        let run = candidate.start();
        wait_until(Duration::from_secs(1), || candidate.log.leading()).await;
        (candidate, run)
    }

    fn start(&self) -> JoinHandle<()> {
        let (elector, stop) = (self.elector.clone(), self.stop.clone());
        tokio::spawn(async move { elector.run(stop).await })
    }
}

async fn lease(leases: &Leases) -> Value {
    leases.lease(NS, NAME).await
}

/// Sleeps in steps of 100 ms until `done`, for at most `limit`; how long
/// it took.
async fn wait_until(limit: Duration, done: impl Fn() -> bool) -> Duration {
    let start = Instant::now();
    while !done() {
        assert!(start.elapsed() < limit, "not within {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    start.elapsed()
}

/// Candidate a leads and b campaigns for `campaign`, then a is stopped;
/// a's work has stopped by the time its run ends.
async fn stop_leader_after(
    leases: &Arc<Leases>,
    release_on_cancel: bool,
    campaign: Duration,
) -> (Candidate, Candidate) {
    let a = Candidate::new(leases, "a", release_on_cancel);
    let b = Candidate::new(leases, "b", false);
    let a_run = a.start();
    wait_until(Duration::from_secs(1), || a.log.leading()).await;
    b.start();
    tokio::time::sleep(campaign).await;
    a.stop.cancel();
    a_run.await.unwrap();
    assert!(a.log.work_done.load(Ordering::SeqCst));
    (a, b)
}

fn micro_time(v: &Value) -> DateTime<Utc> {
    let text = v.as_str().unwrap();
    // Go's MicroTime: RFC 3339 with exactly six fractional digits, in UTC.
    assert_eq!(text.len(), "2006-01-02T15:04:05.000000Z".len(), "{text}");
    assert!(text.ends_with('Z'), "{text}");
    DateTime::parse_from_rfc3339(text)
        .unwrap()
        .with_timezone(&Utc)
}

#[tokio::test(start_paused = true)]
async fn the_first_candidate_creates_the_lease_and_leads() {
    let leases = Leases::new();
    let a = Candidate::new(&leases, "host_a", false);
    a.start();
    wait_until(Duration::from_secs(1), || a.log.leading()).await;
    assert_eq!(a.log.started.load(Ordering::SeqCst), 1);
    assert!(a.elector.is_leader());
    assert_eq!(a.log.leaders(), ["host_a"]);
    let first = lease(&leases).await;
    let spec = &first["spec"];
    assert_eq!(spec["holderIdentity"], "host_a");
    assert_eq!(spec["leaseDurationSeconds"], 15);
    assert_eq!(spec["leaseTransitions"], 0);
    assert!(micro_time(&spec["acquireTime"]) <= micro_time(&spec["renewTime"]));
    // Renewed every retry period, keeping the acquire time.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let renewed = lease(&leases).await;
    assert_ne!(
        renewed["metadata"]["resourceVersion"],
        first["metadata"]["resourceVersion"]
    );
    assert_eq!(renewed["spec"]["acquireTime"], spec["acquireTime"]);
    assert!(micro_time(&renewed["spec"]["renewTime"]) >= micro_time(&spec["renewTime"]));
    assert_eq!(renewed["spec"]["holderIdentity"], "host_a");
}

#[tokio::test(start_paused = true)]
async fn a_second_candidate_waits_while_the_leader_renews() {
    let leases = Leases::new();
    let (a, b) = (
        Candidate::new(&leases, "a", false),
        Candidate::new(&leases, "b", false),
    );
    a.start();
    wait_until(Duration::from_secs(1), || a.log.leading()).await;
    b.start();
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(b.log.started.load(Ordering::SeqCst), 0);
    assert!(!b.elector.is_leader());
    assert_eq!(b.elector.leader(), "a");
    assert_eq!(b.log.leaders(), ["a"]);
    assert!(a.log.leading());
    assert_eq!(lease(&leases).await["spec"]["leaseTransitions"], 0);
}

#[tokio::test(start_paused = true)]
async fn a_stopped_leader_is_taken_over_once_its_lease_runs_out() {
    let leases = Leases::new();
    let (a, b) = stop_leader_after(&leases, false, Duration::from_secs(10)).await;
    assert_eq!(a.log.stopped.load(Ordering::SeqCst), 1);
    // Not released: the holder stays until the others see it expire.
    assert_eq!(lease(&leases).await["spec"]["holderIdentity"], "a");
    let took = wait_until(Duration::from_secs(30), || b.log.leading()).await;
    // a renewed last within 2 s before the stop; b saw that renewal at its
    // next try (at most a jittered retry, 4.4 s, later) and takes over at
    // its first try after the lease ran out from then.
    assert!(took >= Duration::from_millis(15_000 - 2_100), "{took:?}");
    assert!(
        took <= Duration::from_millis(15_000 + 2 * 4_400 + 200),
        "{took:?}"
    );
    let spec = lease(&leases).await["spec"].clone();
    assert_eq!(spec["holderIdentity"], "b");
    assert_eq!(spec["leaseTransitions"], 1);
    assert_eq!(b.log.leaders(), ["a", "b"]);
}

#[tokio::test(start_paused = true)]
async fn release_on_cancel_hands_over_at_the_next_retry() {
    let leases = Leases::new();
    // Released only after the leader's work had stopped.
    let (_, b) = stop_leader_after(&leases, true, Duration::from_secs(5)).await;
    let released = lease(&leases).await["spec"].clone();
    assert_eq!(released["holderIdentity"], "");
    assert_eq!(released["leaseDurationSeconds"], 1);
    assert_eq!(released["leaseTransitions"], 0);
    let took = wait_until(Duration::from_secs(10), || b.log.leading()).await;
    assert!(took <= Duration::from_millis(4_500), "{took:?}");
    assert_eq!(lease(&leases).await["spec"]["leaseTransitions"], 1);
}

#[tokio::test(start_paused = true)]
async fn a_leader_that_cannot_renew_within_the_deadline_stops_leading() {
    let leases = Leases::new();
    let (a, a_run) = Candidate::leading(&leases, "a").await;
    leases.set_failing(true);
    tokio::time::sleep(Duration::from_millis(9_900)).await;
    assert!(a.log.leading(), "gave up before the renew deadline");
    let took = wait_until(Duration::from_secs(5), || !a.log.leading()).await;
    assert!(took <= Duration::from_millis(2_200), "{took:?}");
    a_run.await.unwrap();
    assert_eq!(a.log.stopped.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_leader_overwritten_by_another_holder_stops_leading() {
    let leases = Leases::new();
    let (a, a_run) = Candidate::leading(&leases, "a").await;
    let now = Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Micros, true);
    let spec = json!({"holderIdentity": "z", "leaseDurationSeconds": 15,
        "acquireTime": now, "renewTime": now, "leaseTransitions": 1});
    leases.overwrite_spec(NS, NAME, spec).await;
    wait_until(Duration::from_secs(13), || !a.log.leading()).await;
    a_run.await.unwrap();
    assert_eq!(a.log.leaders(), ["a", "z"]);
    assert_eq!(lease(&leases).await["spec"]["holderIdentity"], "z");
}

#[test]
fn configs_are_checked_as_upstream_does() {
    let leases = Leases::new();
    let check = |id: &str, lease: u64, renew: u64, retry: u64| {
        let lock = Arc::new(LeaseLock::new(NS, NAME, id, leases.clone()));
        let callbacks = LeaderCallbacks {
            on_started_leading: Arc::new(|_| async {}.boxed()),
            on_stopped_leading: Arc::new(|| {}),
            on_new_leader: None,
        };
        let mut config = LeaderElectionConfig::new(lock, callbacks);
        config.lease_duration = Duration::from_secs(lease);
        config.renew_deadline = Duration::from_secs(renew);
        config.retry_period = Duration::from_secs(retry);
        LeaderElector::new(config).err()
    };
    assert_eq!(check("a", 15, 10, 2), None);
    assert_eq!(
        check("a", 10, 10, 2).as_deref(),
        Some("leaseDuration must be greater than renewDeadline")
    );
    assert_eq!(
        check("a", 15, 10, 9).as_deref(),
        Some("renewDeadline must be greater than retryPeriod*JitterFactor")
    );
    assert_eq!(
        check("", 15, 10, 2).as_deref(),
        Some("Lock identity is empty")
    );
}
