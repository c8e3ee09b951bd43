//! Work estimation (upstream's `flowcontrol/request` package): how many
//! seats a request occupies and for how long. Lists (and watches that
//! start with a list) take a seat per hundred objects they are expected to
//! read, from the last count of stored objects; writes take one seat, and
//! when many watches will receive the change, extra seats for a short
//! while after they finish, standing for the fan-out of the event.
//!
//! Upstream 1.37 estimates lists by bytes (`SizeBasedListCostEstimate`)
//! when storage reports average object sizes; ours reports counts only, so
//! lists are estimated by object count, upstream's estimate without that
//! gate.

use std::collections::HashMap;
use std::fmt;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use apimachinery::fields::FieldSelector;
use apimachinery::query_params::QueryParams;
use apimachinery::request_info::RequestInfo;

const MINIMUM_SEATS: u64 = 1;
/// The most seats a list may take (upstream's count-based limit).
const MAXIMUM_LIST_SEATS: u64 = 10;
const MAXIMUM_MUTATING_SEATS: u64 = 10;
const OBJECTS_PER_SEAT: f64 = 100.0;
const WATCHES_PER_SEAT: f64 = 10.0;
/// The seat-time one watch event costs after a write.
const EVENT_ADDITIONAL_DURATION: Duration = Duration::from_millis(5);
/// Stands for the count of a resource whose counting failed.
const INFINITE_OBJECT_COUNT: i64 = 1_000_000_000;
/// The share of a level's nominal seats one request may take at most.
const MAX_SEATS_FRACTION: f64 = 0.15;

/// The seats a request occupies: `initial_seats` while it runs, then
/// `final_seats` for `additional_latency` after it finishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkEstimate {
    pub initial_seats: u64,
    pub final_seats: u64,
    pub additional_latency: Duration,
}

impl WorkEstimate {
    /// One seat, no lingering: most requests.
    pub const MINIMAL: WorkEstimate = WorkEstimate::seats(MINIMUM_SEATS);

    pub const fn seats(initial_seats: u64) -> Self {
        WorkEstimate {
            initial_seats,
            final_seats: 0,
            additional_latency: Duration::ZERO,
        }
    }

    /// The seats the request holds from dispatch until it is done.
    pub fn max_seats(&self) -> usize {
        usize::try_from(self.initial_seats.max(self.final_seats)).unwrap_or(usize::MAX)
    }
}

/// Work in seat-seconds, fixed point with 8 decimals (upstream's
/// `SeatSeconds`); the unit of fair queuing's virtual time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct SeatSeconds(pub u64);

const SEAT_SECONDS_SCALE: f64 = 1e8;

impl SeatSeconds {
    pub fn of(seats: f64, duration: Duration) -> Self {
        let nanos = duration.as_nanos() as f64;
        SeatSeconds((seats * nanos / (1e9 / SEAT_SECONDS_SCALE)).round() as u64)
    }

    /// How long `seats` seats take to do this work.
    pub fn duration_per_seat(self, seats: f64) -> Duration {
        let nanos_per_unit = 1e9 / SEAT_SECONDS_SCALE;
        Duration::from_nanos((self.0 as f64 / seats * nanos_per_unit) as u64)
    }
}

impl fmt::Display for SeatSeconds {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let scale = SEAT_SECONDS_SCALE as u64;
        write!(f, "{}.{:08}ss", self.0 / scale, self.0 % scale)
    }
}

/// The most seats one request of a level may take (upstream's
/// `MaxSeatsTracker`): 15% of its nominal seats but no more than a queue's
/// share of them, at least one; none (0) for levels without queues.
pub fn max_seats(nominal: usize, hand_size: Option<usize>) -> u64 {
    let Some(hand_size) = hand_size.filter(|&h| h > 0) else {
        return 0;
    };
    let share = (nominal as f64 * MAX_SEATS_FRACTION).ceil();
    let per_hand = (nominal / hand_size) as f64;
    share.min(per_hand).max(1.0) as u64
}

/// The last count of a resource's stored objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ObjectCount {
    Known(i64),
    /// Counting failed: assume the worst.
    Stale,
    /// Never counted: assume the least.
    Unknown,
}

/// The list options of a request's query that matter to the estimate.
#[derive(Debug, Default)]
struct ListQuery {
    limit: i64,
    resource_version: String,
    resource_version_match: String,
    has_continue: bool,
    send_initial_events: bool,
}

impl ListQuery {
    /// None when the list options do not decode (upstream then assumes
    /// the most); values are converted as the handlers convert them.
    fn parse(query: &str) -> Option<Self> {
        let q = QueryParams::parse(query);
        q.int64("timeoutSeconds").ok()?;
        let text = |key: &str| q.first(key).unwrap_or("").to_owned();
        Some(ListQuery {
            limit: q.int64("limit").ok()?.unwrap_or(0),
            resource_version: text("resourceVersion"),
            resource_version_match: text("resourceVersionMatch"),
            has_continue: !text("continue").is_empty(),
            send_initial_events: q.bool("sendInitialEvents"),
        })
    }

    /// Whether the list bypasses the watch cache (upstream's
    /// `ShouldDelegateListMeta` with a cache that serves consistent reads).
    fn reads_storage(&self) -> bool {
        match self.resource_version_match.as_str() {
            "Exact" => true,
            "NotOlderThan" => false,
            "" => {
                self.has_continue
                    || (self.limit > 0 && !matches!(self.resource_version.as_str(), "" | "0"))
            }
            _ => true,
        }
    }
}

/// The work of one request of a level whose requests may take at most
/// `level_max_seats` seats (0: no level limit).
pub fn estimate(
    info: &RequestInfo,
    query: &str,
    level_max_seats: u64,
    objects: impl FnOnce() -> ObjectCount,
    watches: impl FnOnce() -> usize,
) -> WorkEstimate {
    match info.verb.as_str() {
        "list" | "watch" => estimate_list(info, query, level_max_seats, objects),
        "create" | "update" | "patch" | "delete" => {
            estimate_mutating(info, level_max_seats, watches)
        }
        _ => WorkEstimate::MINIMAL,
    }
}

fn cap(level_max_seats: u64, limit: u64) -> u64 {
    if level_max_seats == 0 || level_max_seats > limit {
        limit
    } else {
        level_max_seats
    }
}

fn estimate_list(
    info: &RequestInfo,
    query: &str,
    level_max_seats: u64,
    objects: impl FnOnce() -> ObjectCount,
) -> WorkEstimate {
    let max = cap(level_max_seats, MAXIMUM_LIST_SEATS);
    let Some(q) = ListQuery::parse(query) else {
        return WorkEstimate::seats(max);
    };
    let is_watch = info.verb == "watch";
    // A watch from a given version lists nothing first.
    if is_watch && !q.send_initial_events && !matches!(q.resource_version.as_str(), "" | "0") {
        return WorkEstimate::MINIMAL;
    }
    let stored = match objects() {
        ObjectCount::Known(n) if n >= 0 => n,
        ObjectCount::Known(_) | ObjectCount::Stale => INFINITE_OBJECT_COUNT,
        ObjectCount::Unknown => return WorkEstimate::MINIMAL,
    };
    let limited = if q.limit > 0 {
        q.limit.min(stored)
    } else {
        stored
    };
    let processed = if !info.name.is_empty() {
        1
    } else if is_watch || !q.reads_storage() {
        stored
    } else if !info.field_selector.is_empty() || !info.label_selector.is_empty() {
        stored + limited
    } else {
        2 * limited
    };
    let seats = (processed as f64 / OBJECTS_PER_SEAT).ceil() as u64;
    WorkEstimate::seats(seats.clamp(MINIMUM_SEATS, max.max(MINIMUM_SEATS)))
}

fn estimate_mutating(
    info: &RequestInfo,
    level_max_seats: u64,
    watches: impl FnOnce() -> usize,
) -> WorkEstimate {
    // Token requests produce no watch events.
    if info.resource == "serviceaccounts" && info.subresource == "token" {
        return WorkEstimate::MINIMAL;
    }
    let watch_count = watches();
    if (watch_count as f64) < WATCHES_PER_SEAT {
        return WorkEstimate::MINIMAL;
    }
    let needed = (watch_count as f64 / WATCHES_PER_SEAT).ceil();
    let final_work = SeatSeconds::of(needed, EVENT_ADDITIONAL_DURATION);
    let final_seats = (needed as u64).min(cap(level_max_seats, MAXIMUM_MUTATING_SEATS));
    WorkEstimate {
        initial_seats: MINIMUM_SEATS,
        final_seats,
        additional_latency: final_work.duration_per_seat(final_seats.max(1) as f64),
    }
}

/// The open watches by what they watch (upstream's `WatchTracker`), which
/// tell how many watchers a write wakes. Keys are hashes of group,
/// resource, namespace and name, so lookups need no allocation.
#[derive(Debug, Default)]
pub struct WatchTracker {
    counts: Mutex<HashMap<u64, usize>>,
}

/// An open watch, counted until dropped.
#[derive(Debug)]
pub struct WatchRegistration {
    tracker: Arc<WatchTracker>,
    key: u64,
}

impl Drop for WatchRegistration {
    fn drop(&mut self) {
        let mut counts = self.tracker.lock();
        if let Some(n) = counts.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(&self.key);
            }
        }
    }
}

fn watch_key(group: &str, resource: &str, namespace: &str, name: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    (group, resource, namespace, name).hash(&mut hasher);
    hasher.finish()
}

impl WatchTracker {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, usize>> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Counts a watch request until the registration is dropped. Pod
    /// watches of one node (by `spec.nodeName`) are served from an index
    /// and cost writes nothing, so they are not counted.
    pub fn register(self: &Arc<Self>, info: &RequestInfo) -> Option<WatchRegistration> {
        if info.verb != "watch" {
            return None;
        }
        if info.resource == "pods" && !info.field_selector.is_empty() {
            let node = FieldSelector::parse(&info.field_selector)
                .ok()
                .and_then(|s| s.requires_exact_match("spec.nodeName").map(str::to_owned));
            if node.is_some_and(|n| !n.is_empty()) {
                return None;
            }
        }
        let key = watch_key(&info.api_group, &info.resource, &info.namespace, &info.name);
        *self.lock().entry(key).or_default() += 1;
        Some(WatchRegistration {
            tracker: self.clone(),
            key,
        })
    }

    /// The watches a write of this request reaches: those of the whole
    /// resource, of its namespace and of the object.
    pub fn interested(&self, info: &RequestInfo) -> usize {
        if matches!(info.verb.as_str(), "get" | "list" | "watch" | "proxy") {
            return 0;
        }
        let (group, resource) = (&info.api_group, &info.resource);
        let counts = self.lock();
        let count = |ns: &str, name: &str| {
            counts
                .get(&watch_key(group, resource, ns, name))
                .copied()
                .unwrap_or(0)
        };
        let mut total = count("", "");
        if !info.namespace.is_empty() {
            total += count(&info.namespace, "");
            if !info.name.is_empty() {
                total += count(&info.namespace, &info.name);
            }
        } else if !info.name.is_empty() {
            total += count("", &info.name);
        }
        total
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(verb: &str, resource: &str, namespace: &str, name: &str) -> RequestInfo {
        RequestInfo {
            is_resource_request: true,
            verb: verb.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..Default::default()
        }
    }

    fn list(query: &str, stored: i64) -> u64 {
        let request = info("list", "pods", "", "");
        estimate(&request, query, 0, || ObjectCount::Known(stored), || 0).initial_seats
    }

    #[test]
    fn lists_take_a_seat_per_hundred_objects_read() {
        // Served from the cache: every stored object is read.
        assert_eq!(list("", 450), 5);
        assert_eq!(list("", 0), 1);
        // A paged list from etcd reads twice its page.
        assert_eq!(list("limit=100&resourceVersion=5", 5000), 2);
        assert_eq!(list("continue=abc&limit=250", 5000), 5);
        // Capped at ten seats.
        assert_eq!(list("", 50_000), 10);
        let selected = RequestInfo {
            label_selector: "app=web".into(),
            ..info("list", "pods", "", "")
        };
        let seats = estimate(
            &selected,
            "limit=200&resourceVersionMatch=Exact&resourceVersion=9",
            0,
            || ObjectCount::Known(600),
            || 0,
        );
        assert_eq!(seats.initial_seats, 8);
    }

    #[test]
    fn list_estimates_respect_the_level_and_the_count_state() {
        let request = info("list", "pods", "", "");
        let est = |max, count| estimate(&request, "", max, || count, || 0).initial_seats;
        assert_eq!(est(3, ObjectCount::Known(900)), 3);
        assert_eq!(est(0, ObjectCount::Stale), 10);
        assert_eq!(est(0, ObjectCount::Unknown), 1);
        // A list for one object by name reads one.
        let single = info("list", "pods", "", "web");
        assert_eq!(
            estimate(&single, "", 0, || ObjectCount::Known(900), || 0).initial_seats,
            1
        );
        // An unparsable limit gets the maximum.
        assert_eq!(
            estimate(&request, "limit=x", 4, || ObjectCount::Known(1), || 0).initial_seats,
            4
        );
    }

    #[test]
    fn watches_cost_only_their_initial_list() {
        let watch = info("watch", "pods", "", "");
        let est = |query| estimate(&watch, query, 0, || ObjectCount::Known(700), || 0);
        assert_eq!(est("resourceVersion=100").initial_seats, 1);
        assert_eq!(est("").initial_seats, 7);
        assert_eq!(
            est("resourceVersion=100&sendInitialEvents=true").initial_seats,
            7
        );
        // Values convert as the handlers convert them.
        assert_eq!(
            est("resourceVersion=100&sendInitialEvents=Yes").initial_seats,
            7
        );
        assert_eq!(
            est("resourceVersion=100&sendInitialEvents=False").initial_seats,
            1
        );
        // Options that do not decode get the most (no level limit: 10).
        assert_eq!(
            est("resourceVersion=100&timeoutSeconds=x").initial_seats,
            10
        );
    }

    #[test]
    fn writes_watched_by_many_linger_on_extra_seats() {
        let write = info("update", "configmaps", "default", "a");
        let est = |watches, max| estimate(&write, "", max, || ObjectCount::Unknown, || watches);
        assert_eq!(est(9, 0), WorkEstimate::MINIMAL);
        // 25 watchers: 3 seats for 5ms.
        assert_eq!(
            est(25, 0),
            WorkEstimate {
                initial_seats: 1,
                final_seats: 3,
                additional_latency: Duration::from_millis(5)
            }
        );
        // 400 watchers over at most 10 seats: the same work, for longer.
        let capped = est(400, 0);
        assert_eq!(capped.final_seats, 10);
        assert_eq!(capped.additional_latency, Duration::from_millis(20));
        assert_eq!(capped.max_seats(), 10);
        let token = info("create", "serviceaccounts", "default", "sa");
        let token = RequestInfo {
            subresource: "token".into(),
            ..token
        };
        assert_eq!(
            estimate(&token, "", 0, || ObjectCount::Unknown, || 500),
            WorkEstimate::MINIMAL
        );
    }

    #[test]
    fn watch_tracker_counts_watches_writes_reach() {
        let tracker = Arc::new(WatchTracker::default());
        let all = tracker.register(&info("watch", "configmaps", "", ""));
        let ns = tracker.register(&info("watch", "configmaps", "default", ""));
        let other = tracker.register(&info("watch", "configmaps", "kube-system", ""));
        assert!(tracker
            .register(&info("list", "configmaps", "", ""))
            .is_none());
        let node_pods = RequestInfo {
            field_selector: "spec.nodeName=n1".into(),
            ..info("watch", "pods", "", "")
        };
        assert!(tracker.register(&node_pods).is_none());
        let write = info("update", "configmaps", "default", "a");
        assert_eq!(tracker.interested(&write), 2);
        assert_eq!(
            tracker.interested(&info("get", "configmaps", "default", "a")),
            0
        );
        drop(all);
        assert_eq!(tracker.interested(&write), 1);
        drop((ns, other));
        assert_eq!(tracker.interested(&write), 0);
        assert!(tracker.lock().is_empty());
    }

    #[test]
    fn level_max_seats_follow_nominal_seats_and_hand_size() {
        // global-default at 600 server seats: 49 nominal, hand of 6.
        assert_eq!(max_seats(49, Some(6)), 8);
        assert_eq!(max_seats(245, Some(6)), 37);
        assert_eq!(max_seats(3, Some(8)), 1);
        assert_eq!(max_seats(13, None), 0);
    }

    #[test]
    fn seat_seconds_print_as_upstream() {
        assert_eq!(
            SeatSeconds::of(3.0, Duration::from_millis(5)).to_string(),
            "0.01500000ss"
        );
        assert_eq!(
            SeatSeconds::of(2.0, Duration::from_secs(2)).to_string(),
            "4.00000000ss"
        );
    }
}
