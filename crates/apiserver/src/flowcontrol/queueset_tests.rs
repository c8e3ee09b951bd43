//! Dispatch with widths, fair queuing between flows, lingering seats,
//! rejections, and the dump of a queue set.

use super::*;

const QUEUE: Overflow = Overflow::Queue {
    queues: 4,
    hand_size: 1,
    queue_length_limit: 2,
};
const LONG: Duration = Duration::from_secs(30);

fn meta(user: &str) -> Arc<RequestMeta> {
    Arc::new(RequestMeta {
        flow_schema: "fs".into(),
        distinguisher: Distinguisher::ByUser,
        user: Arc::new(UserInfo {
            name: user.into(),
            ..Default::default()
        }),
        info: Arc::default(),
    })
}

fn one() -> WorkEstimate {
    WorkEstimate::MINIMAL
}

async fn take(set: &Arc<QueueSet>, seats: u64) -> Result<Seat, Rejection> {
    set.acquire(0, WorkEstimate::seats(seats), meta("u"), Duration::ZERO)
        .await
}

/// Queues a request of `flow` in a task; returns once it waits.
async fn enqueue(
    set: &Arc<QueueSet>,
    flow: u64,
    seats: u64,
    user: &str,
) -> tokio::task::JoinHandle<Result<Seat, Rejection>> {
    let before = set.digest().waiting;
    let (s, m) = (set.clone(), meta(user));
    let task =
        tokio::spawn(async move { s.acquire(flow, WorkEstimate::seats(seats), m, LONG).await });
    while set.digest().waiting == before {
        tokio::task::yield_now().await;
    }
    task
}

/// The users of the requests executing now.
fn running(set: &QueueSet) -> Vec<String> {
    let dump = set.dump();
    let mut users: Vec<String> = dump
        .queues
        .iter()
        .flat_map(|q| &q.executing)
        .chain(&dump.queueless)
        .map(|r| r.meta.user.name.clone())
        .collect();
    users.sort();
    users
}

#[tokio::test]
async fn requests_need_their_width_in_free_seats() {
    let set = QueueSet::new(Some(4), Overflow::Reject);
    let wide = take(&set, 3).await.unwrap();
    assert_eq!(wide.seats(), 3);
    assert_eq!(take(&set, 2).await.err(), Some(Rejection::ConcurrencyLimit));
    let narrow = take(&set, 1).await.unwrap();
    assert_eq!(set.digest().seats_in_use, 4);
    drop(wide);
    assert!(take(&set, 2).await.is_ok());
    drop(narrow);
    assert_eq!(set.digest().seats_in_use, 0);
}

#[tokio::test]
async fn a_request_wider_than_the_level_runs_alone() {
    let set = QueueSet::new(Some(2), Overflow::Reject);
    let huge = take(&set, 5).await.unwrap();
    assert_eq!(take(&set, 1).await.err(), Some(Rejection::ConcurrencyLimit));
    drop(huge);
    let small = take(&set, 1).await.unwrap();
    assert_eq!(take(&set, 5).await.err(), Some(Rejection::ConcurrencyLimit));
    drop(small);
}

#[tokio::test]
async fn a_wide_waiter_is_not_overtaken_once_it_is_next() {
    let set = QueueSet::new(Some(2), QUEUE);
    let a = take(&set, 1).await.unwrap();
    let b = take(&set, 1).await.unwrap();
    let wide = enqueue(&set, 0, 2, "wide").await;
    let narrow = enqueue(&set, 1, 1, "narrow").await;
    assert_eq!(set.digest().seats_waiting, 3);
    // The narrow request finishes first in virtual time and fits.
    drop(a);
    let narrow = narrow.await.unwrap().unwrap();
    assert_eq!(running(&set), ["narrow", "u"]);
    // One seat free is not enough for the wide one, and nothing passes it.
    drop(b);
    assert_eq!(set.digest().waiting, 1);
    drop(narrow);
    let wide = wide.await.unwrap().unwrap();
    assert_eq!(set.digest().seats_in_use, 2);
    drop(wide);
}

#[tokio::test]
async fn a_flow_with_a_backlog_does_not_starve_another() {
    let set = QueueSet::new(
        Some(1),
        Overflow::Queue {
            queues: 4,
            hand_size: 1,
            queue_length_limit: 10,
        },
    );
    let held = take(&set, 1).await.unwrap();
    let mut heavy = Vec::new();
    for _ in 0..3 {
        heavy.push(enqueue(&set, 0, 1, "heavy").await);
    }
    let light = enqueue(&set, 1, 1, "light").await;
    drop(held);
    // Whichever queue goes first, the light flow's one request is served
    // within the first two dispatches.
    let first = running(&set);
    if first == ["heavy"] {
        drop(heavy.remove(0).await.unwrap().unwrap());
        assert_eq!(running(&set), ["light"]);
    } else {
        assert_eq!(first, ["light"]);
    }
    drop(light.await.unwrap().unwrap());
    for task in heavy {
        task.abort();
    }
}

#[tokio::test(start_paused = true)]
async fn finished_writes_linger_on_their_final_seats() {
    let set = QueueSet::new(Some(3), Overflow::Reject);
    let estimate = WorkEstimate {
        initial_seats: 1,
        final_seats: 3,
        additional_latency: Duration::from_millis(100),
    };
    let gauge = Gauge::default();
    let mut seat = set.acquire(0, estimate, meta("w"), LONG).await.unwrap();
    seat.track(gauge.clone());
    assert_eq!(gauge.get(), 3);
    drop(seat);
    // The request is done but its seats are not free yet.
    assert_eq!(set.digest().executing, 0);
    assert_eq!(set.digest().seats_in_use, 3);
    assert_eq!(take(&set, 1).await.err(), Some(Rejection::ConcurrencyLimit));
    tokio::time::sleep(Duration::from_millis(101)).await;
    assert_eq!(set.digest().seats_in_use, 0);
    assert_eq!(gauge.get(), 0);
    assert!(take(&set, 3).await.is_ok());
}

#[tokio::test(start_paused = true)]
async fn waiting_past_the_limit_rejects_and_leaves_the_queue() {
    let set = QueueSet::new(Some(1), QUEUE);
    let _held = take(&set, 1).await.unwrap();
    let result = set
        .acquire(1, one(), meta("u"), Duration::from_secs(1))
        .await;
    assert_eq!(result.err(), Some(Rejection::TimeOut));
    assert_eq!(set.digest().waiting, 0);
    // A waiter whose request goes away is counted as cancelled.
    let gone = tokio::time::timeout(
        Duration::from_millis(10),
        set.acquire(2, one(), meta("u"), LONG),
    )
    .await;
    assert!(gone.is_err());
    let digest = set.digest();
    assert_eq!((digest.waiting, digest.seats_waiting), (0, 0));
    assert_eq!(
        digest.totals,
        Totals {
            dispatched: 1,
            rejected: 0,
            timed_out: 1,
            cancelled: 1
        }
    );
}

#[tokio::test]
async fn a_full_queue_rejects() {
    let set = QueueSet::new(Some(1), QUEUE);
    let _held = take(&set, 1).await.unwrap();
    let waiting = [
        enqueue(&set, 5, 1, "a").await,
        enqueue(&set, 5, 1, "b").await,
    ];
    assert_eq!(
        set.acquire(5, one(), meta("c"), LONG).await.err(),
        Some(Rejection::QueueFull)
    );
    // Another flow's queue still has room.
    let other = enqueue(&set, 6, 1, "d").await;
    assert_eq!(set.digest().active_queues, 2);
    other.abort();
    for w in waiting {
        w.abort();
    }
}

#[tokio::test]
async fn raising_the_limit_dispatches_waiters() {
    let set = QueueSet::new(Some(1), QUEUE);
    let _held = take(&set, 1).await.unwrap();
    let waiter = enqueue(&set, 0, 2, "w").await;
    let demand = set.take_demand();
    assert_eq!(demand.max, 3.0);
    set.set_limit(3);
    let seat = waiter.await.unwrap().unwrap();
    assert_eq!(seat.seats(), 2);
    assert_eq!(set.digest().seats_in_use, 3);
}

#[tokio::test]
async fn exempt_levels_never_wait() {
    let set = QueueSet::new(None, Overflow::Reject);
    let seats: Vec<_> = futures::future::join_all((0..100).map(|_| take(&set, 10))).await;
    assert!(seats.iter().all(Result::is_ok));
    assert_eq!(set.digest().executing, 100);
}

#[tokio::test]
async fn the_dump_shows_queues_and_requests() {
    let set = QueueSet::new(Some(1), QUEUE);
    let held = set.acquire(2, one(), meta("runner"), LONG).await.unwrap();
    let waiter = enqueue(&set, 3, 2, "waiter").await;
    let dump = set.dump();
    assert_eq!(dump.queues.len(), 4);
    assert!(dump.queueless.is_empty());
    let waiting = &dump.queues[3];
    assert_eq!(waiting.waiting.len(), 1);
    assert_eq!(waiting.waiting[0].meta.flow_distinguisher(), "waiter");
    assert_eq!(waiting.waiting[0].start, None);
    assert_eq!((waiting.initial_seats_sum, waiting.max_seats_sum), (2, 2));
    assert_eq!(waiting.total_work_sum.to_string(), "0.00600000ss");
    // The running request went through its queue too.
    assert_eq!(dump.queues[2].executing.len(), 1);
    assert_eq!(dump.queues[2].seats_in_use, 1);
    assert!(dump.queues[2].executing[0].start.is_some());
    drop(held);
    drop(waiter);
    let reject = QueueSet::new(Some(1), Overflow::Reject);
    let _seat = take(&reject, 1).await.unwrap();
    let dump = reject.dump();
    assert!(dump.queues.is_empty());
    assert_eq!(dump.queueless.len(), 1);
    assert!(dump.queueless[0].start.is_some());
}

#[tokio::test]
async fn shrinking_the_queues_keeps_waiters() {
    let set = QueueSet::new(Some(1), QUEUE);
    let held = take(&set, 1).await.unwrap();
    let waiters = [
        enqueue(&set, 0, 1, "a").await,
        enqueue(&set, 1, 1, "b").await,
    ];
    set.reconfigure(Some(1), Overflow::Reject);
    assert_eq!(set.digest().waiting, 2);
    assert_eq!(set.dump().queues.len(), 1);
    drop(held);
    for w in waiters {
        drop(w.await.unwrap().unwrap());
    }
    assert_eq!(set.digest().seats_in_use, 0);
}
