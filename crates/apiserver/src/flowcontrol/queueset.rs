//! One priority level's admission (upstream's fair-queuing `queueset`):
//! a request runs when the level has as many free seats as its work
//! estimate asks; otherwise it waits in one of the level's queues, picked
//! by shuffle sharding on its flow, and queues are served in order of the
//! virtual finish time of their oldest request (fair queuing in
//! seat-seconds, with upstream's 3 ms estimate of service time). A full
//! queue, a level without queues and without seats, or a wait past the
//! limit rejects. Writes watched by many hold extra seats for a short
//! while after they finish. The level's seat demand is integrated over
//! time for borrowing.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use prometheus_client::metrics::gauge::Gauge;
use tokio::sync::oneshot;
use tokio::time::Instant;

use super::borrowing::{Integrator, IntegratorResults};
use super::shuffle::deal;
use super::width::{SeatSeconds, WorkEstimate};
use apimachinery::request_info::RequestInfo;

use crate::authentication::user::UserInfo;

/// Upstream's estimate of how long a request runs, for virtual time.
const ESTIMATED_SERVICE_DURATION: Duration = Duration::from_millis(3);

/// How a limited level answers when its seats are taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Overflow {
    /// Reject at once.
    Reject,
    /// Wait in a queue.
    Queue {
        queues: usize,
        hand_size: usize,
        queue_length_limit: usize,
    },
}

/// Why a request was not dispatched (upstream's `reason` metric label).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    QueueFull,
    ConcurrencyLimit,
    TimeOut,
}

impl Rejection {
    pub fn reason(self) -> &'static str {
        match self {
            Rejection::QueueFull => "queue-full",
            Rejection::ConcurrencyLimit => "concurrency-limit",
            Rejection::TimeOut => "time-out",
        }
    }
}

/// How a schema tells its flows apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distinguisher {
    None,
    ByUser,
    ByNamespace,
}

/// Who made a request, for the debug dumps.
#[derive(Debug, Clone)]
pub struct RequestMeta {
    pub flow_schema: Arc<str>,
    pub distinguisher: Distinguisher,
    pub user: Arc<UserInfo>,
    pub info: Arc<RequestInfo>,
}

impl RequestMeta {
    /// The flow distinguisher: the user, the namespace, or nothing.
    pub fn flow_distinguisher(&self) -> &str {
        match self.distinguisher {
            Distinguisher::None => "",
            Distinguisher::ByUser => &self.user.name,
            Distinguisher::ByNamespace => &self.info.namespace,
        }
    }
}

/// A work estimate with its work in seat-seconds.
#[derive(Debug, Clone, Copy)]
struct Work {
    estimate: WorkEstimate,
    total: SeatSeconds,
    final_work: SeatSeconds,
}

impl Work {
    fn new(estimate: WorkEstimate) -> Self {
        let initial = SeatSeconds::of(estimate.initial_seats as f64, ESTIMATED_SERVICE_DURATION);
        let final_work = SeatSeconds::of(estimate.final_seats as f64, estimate.additional_latency);
        Work {
            estimate,
            total: SeatSeconds(initial.0.saturating_add(final_work.0)),
            final_work,
        }
    }

    fn seats(&self) -> usize {
        self.estimate.max_seats()
    }
}

struct Waiting {
    id: u64,
    meta: Arc<RequestMeta>,
    work: Work,
    arrival: SystemTime,
    arrival_r: SeatSeconds,
    wake: oneshot::Sender<()>,
}

struct Executing {
    meta: Arc<RequestMeta>,
    work: Work,
    arrival: SystemTime,
    start: SystemTime,
    started: Instant,
    queue: Option<usize>,
}

#[derive(Default)]
struct Queue {
    waiting: VecDeque<Waiting>,
    executing: usize,
    seats_in_use: usize,
    next_dispatch_r: SeatSeconds,
    initial_seats_sum: usize,
    max_seats_sum: usize,
    total_work_sum: SeatSeconds,
}

/// What becomes of an arriving request.
enum Admission {
    Run(u64),
    Wait(u64, oneshot::Receiver<()>),
    Reject(Rejection),
}

/// Seats still held after a request finished.
struct Lingering {
    seats: usize,
    queue: Option<usize>,
    generation: u64,
    latency: Duration,
}

struct State {
    /// Seats this level may use at once; None for the exempt level.
    limit: Option<usize>,
    overflow: Overflow,
    queues: Vec<Queue>,
    /// Bumped when the queues are rebuilt, so that late seat releases
    /// leave the new queues alone.
    generation: u64,
    robin: usize,
    enqueues: usize,
    current_r: SeatSeconds,
    last_sync: Instant,
    executing: HashMap<u64, Executing>,
    seats_in_use: usize,
    seats_waiting: usize,
    waiting: usize,
    next_id: u64,
    totals: Totals,
    demand: Integrator,
}

/// What a level has done since it was created, for the debug dump.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Totals {
    pub dispatched: u64,
    /// Refused on arrival (queue full, or no seat at a Reject level).
    pub rejected: u64,
    pub timed_out: u64,
    /// Gave up waiting (the client went away).
    pub cancelled: u64,
}

/// A level's state now (upstream's queue-set digest).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Digest {
    /// Queues with waiting requests.
    pub active_queues: usize,
    pub waiting: usize,
    pub executing: usize,
    pub seats_in_use: usize,
    pub seats_waiting: usize,
    pub totals: Totals,
}

/// One request in a dump.
#[derive(Debug, Clone)]
pub struct RequestDump {
    pub meta: Arc<RequestMeta>,
    pub estimate: WorkEstimate,
    pub arrival: SystemTime,
    /// None while waiting.
    pub start: Option<SystemTime>,
}

/// One queue in a dump.
#[derive(Debug, Clone, Default)]
pub struct QueueDump {
    pub waiting: Vec<RequestDump>,
    pub executing: Vec<RequestDump>,
    pub seats_in_use: usize,
    pub next_dispatch_r: SeatSeconds,
    pub initial_seats_sum: usize,
    pub max_seats_sum: usize,
    pub total_work_sum: SeatSeconds,
}

/// A level's queues and the requests running outside them.
#[derive(Debug, Clone, Default)]
pub struct SetDump {
    pub queues: Vec<QueueDump>,
    pub queueless: Vec<RequestDump>,
}

/// The seats and queues of one priority level; shared by the requests that
/// hold a [`Seat`].
pub struct QueueSet {
    state: Mutex<State>,
}

/// A dispatched request's seats, given back when dropped (after the
/// request's additional latency, if any).
pub struct Seat {
    set: Arc<QueueSet>,
    id: u64,
    seats: usize,
    gauge: Option<Gauge>,
}

impl Seat {
    /// How many seats the request holds.
    pub fn seats(&self) -> usize {
        self.seats
    }

    /// Counts the seats in `gauge` until they are given back.
    pub fn track(&mut self, gauge: Gauge) {
        gauge.inc_by(i64::try_from(self.seats).unwrap_or(i64::MAX));
        self.gauge = Some(gauge);
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        let lingering = self.set.lock().finish(self.id, Instant::now());
        let gauge = self.gauge.take();
        let seats = i64::try_from(self.seats).unwrap_or(i64::MAX);
        let Some(lingering) = lingering else {
            if let Some(g) = gauge {
                g.dec_by(seats);
            }
            return;
        };
        let set = self.set.clone();
        let release = move |lingering: Lingering| {
            let mut state = set.lock();
            state.release(&lingering, Instant::now());
            state.dispatch_all(Instant::now());
            drop(state);
            if let Some(g) = gauge {
                g.dec_by(seats);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    tokio::time::sleep(lingering.latency).await;
                    release(lingering);
                });
            }
            Err(_) => release(lingering),
        }
    }
}

impl State {
    fn sync_time(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last_sync);
        self.last_sync = now;
        let increment = SeatSeconds::of(self.virtual_time_ratio(), elapsed);
        self.current_r = SeatSeconds(self.current_r.0.saturating_add(increment.0));
    }

    /// How fast virtual time runs: the seats the active queues could use,
    /// up to the limit, shared among them.
    fn virtual_time_ratio(&self) -> f64 {
        let (mut active, mut requested) = (0usize, 0usize);
        for q in &self.queues {
            requested += q.seats_in_use + q.max_seats_sum;
            if !q.waiting.is_empty() || q.executing > 0 {
                active += 1;
            }
        }
        match self.limit {
            Some(limit) if active > 0 => requested.min(limit) as f64 / active as f64,
            _ => 0.0,
        }
    }

    fn note_demand(&mut self, now: Instant) {
        let demand = (self.seats_in_use + self.seats_waiting) as f64;
        self.demand.set(demand, now);
    }

    fn can_accommodate(&self, seats: usize) -> bool {
        match self.limit {
            None => true,
            // A request wider than the level runs alone.
            Some(limit) if seats > limit => self.executing.is_empty(),
            Some(limit) => self.seats_in_use + seats <= limit,
        }
    }

    fn start(&mut self, id: u64, meta: Arc<RequestMeta>, work: Work, arrival: SystemTime) {
        let seats = work.seats();
        self.seats_in_use += seats;
        self.totals.dispatched += 1;
        self.executing.insert(
            id,
            Executing {
                meta,
                work,
                arrival,
                start: SystemTime::now(),
                started: Instant::now(),
                queue: None,
            },
        );
    }

    fn push_waiting(&mut self, queue: usize, waiting: Waiting) {
        let current_r = self.current_r;
        let q = &mut self.queues[queue];
        if q.waiting.is_empty() && q.executing == 0 {
            q.next_dispatch_r = current_r;
        }
        let seats = waiting.work.seats();
        q.initial_seats_sum += usize::try_from(waiting.work.estimate.initial_seats).unwrap_or(0);
        q.max_seats_sum += seats;
        q.total_work_sum = SeatSeconds(q.total_work_sum.0.saturating_add(waiting.work.total.0));
        q.waiting.push_back(waiting);
        self.waiting += 1;
        self.seats_waiting += seats;
    }

    fn note_removed(&mut self, queue: usize, waiting: &Waiting) {
        let seats = waiting.work.seats();
        let q = &mut self.queues[queue];
        let initial = usize::try_from(waiting.work.estimate.initial_seats).unwrap_or(0);
        q.initial_seats_sum = q.initial_seats_sum.saturating_sub(initial);
        q.max_seats_sum = q.max_seats_sum.saturating_sub(seats);
        q.total_work_sum = SeatSeconds(q.total_work_sum.0.saturating_sub(waiting.work.total.0));
        self.waiting -= 1;
        self.seats_waiting = self.seats_waiting.saturating_sub(seats);
    }

    /// Keeps a queue's virtual dispatch time from falling behind the
    /// arrival of its oldest request (upstream's anti-windup).
    fn bound_next_dispatch(&mut self, queue: usize) {
        let q = &mut self.queues[queue];
        if let Some(head) = q.waiting.front() {
            q.next_dispatch_r = q.next_dispatch_r.max(head.arrival_r);
        }
    }

    /// Shuffle sharding: of the flow's hand of queues, the one with the
    /// least waiting work, starting at a rotating offset.
    fn pick_queue(&mut self, flow_hash: u64, hand_size: usize) -> usize {
        let hand = deal(flow_hash, hand_size, self.queues.len());
        let offset = self.enqueues % hand.len().max(1);
        self.enqueues = self.enqueues.wrapping_add(1);
        let mut best = (0, SeatSeconds(u64::MAX));
        for i in 0..hand.len() {
            let queue = hand[(offset + i) % hand.len()];
            let work = self.queues[queue].total_work_sum;
            if work < best.1 {
                best = (queue, work);
            }
        }
        best.0
    }

    /// Runs a request at once, queues it, or rejects it.
    fn admit(&mut self, flow_hash: u64, work: Work, meta: Arc<RequestMeta>) -> Admission {
        let now = Instant::now();
        self.sync_time(now);
        let id = self.next_id;
        self.next_id += 1;
        let arrival = SystemTime::now();
        let queuing = match self.overflow {
            Overflow::Queue {
                hand_size,
                queue_length_limit,
                ..
            } if self.limit.is_some() && !self.queues.is_empty() => {
                Some((hand_size, queue_length_limit))
            }
            _ => None,
        };
        let Some((hand_size, queue_length_limit)) = queuing else {
            if !self.can_accommodate(work.seats()) {
                self.totals.rejected += 1;
                return Admission::Reject(Rejection::ConcurrencyLimit);
            }
            self.start(id, meta, work, arrival);
            self.note_demand(now);
            return Admission::Run(id);
        };
        let queue = self.pick_queue(flow_hash, hand_size);
        let full = self.limit.is_some_and(|l| self.seats_in_use >= l);
        if full && self.queues[queue].waiting.len() >= queue_length_limit {
            self.totals.rejected += 1;
            return Admission::Reject(Rejection::QueueFull);
        }
        let (wake, woken) = oneshot::channel();
        let arrival_r = self.current_r;
        let waiting = Waiting {
            id,
            meta,
            work,
            arrival,
            arrival_r,
            wake,
        };
        self.push_waiting(queue, waiting);
        self.bound_next_dispatch(queue);
        self.note_demand(now);
        self.dispatch_all(now);
        Admission::Wait(id, woken)
    }

    fn dispatch_all(&mut self, now: Instant) {
        self.sync_time(now);
        while self.waiting > 0
            && self.limit.is_none_or(|l| self.seats_in_use < l)
            && self.dispatch_one(now)
        {}
    }

    /// Dispatches the head of the queue with the earliest virtual finish
    /// time, if it fits.
    fn dispatch_one(&mut self, now: Instant) -> bool {
        let count = self.queues.len();
        let mut best: Option<(usize, SeatSeconds)> = None;
        for _ in 0..count {
            self.robin = (self.robin + 1) % count;
            let q = &self.queues[self.robin];
            if let Some(head) = q.waiting.front() {
                let finish = SeatSeconds(q.next_dispatch_r.0.saturating_add(head.work.total.0));
                if best.is_none_or(|(_, b)| finish < b) {
                    best = Some((self.robin, finish));
                }
            }
        }
        let Some((queue, _)) = best else {
            return false;
        };
        let fits = self.queues[queue]
            .waiting
            .front()
            .is_some_and(|head| self.can_accommodate(head.work.seats()));
        if !fits {
            return false;
        }
        let Some(mut request) = self.queues[queue].waiting.pop_front() else {
            return false;
        };
        self.note_removed(queue, &request);
        self.robin = queue;
        // Final seats beyond the level's limit are spread over more time.
        if let Some(limit) = self
            .limit
            .filter(|&l| request.work.estimate.final_seats > l as u64)
        {
            request.work.estimate.final_seats = limit as u64;
            request.work.estimate.additional_latency = request
                .work
                .final_work
                .duration_per_seat(limit.max(1) as f64);
        }
        if request.wake.send(()).is_ok() {
            self.start(request.id, request.meta, request.work, request.arrival);
            if let Some(e) = self.executing.get_mut(&request.id) {
                e.queue = Some(queue);
            }
            let q = &mut self.queues[queue];
            q.executing += 1;
            q.seats_in_use += request.work.seats();
            q.next_dispatch_r =
                SeatSeconds(q.next_dispatch_r.0.saturating_add(request.work.total.0));
        }
        self.bound_next_dispatch(queue);
        self.note_demand(now);
        true
    }

    fn remove_waiter(&mut self, id: u64, now: Instant) -> bool {
        for queue in 0..self.queues.len() {
            let q = &mut self.queues[queue];
            if let Some(at) = q.waiting.iter().position(|w| w.id == id) {
                if let Some(w) = q.waiting.remove(at) {
                    self.note_removed(queue, &w);
                    self.bound_next_dispatch(queue);
                    self.note_demand(now);
                    return true;
                }
            }
        }
        false
    }

    /// Ends a request's execution; its seats are released now (and
    /// waiting requests dispatched), or returned for release later.
    fn finish(&mut self, id: u64, now: Instant) -> Option<Lingering> {
        self.sync_time(now);
        let request = self.executing.remove(&id)?;
        if let Some(queue) = request.queue.filter(|&q| q < self.queues.len()) {
            let q = &mut self.queues[queue];
            q.executing = q.executing.saturating_sub(1);
            // The queue's virtual time is corrected by how far the actual
            // service time differed from the estimate.
            let actual = now.saturating_duration_since(request.started);
            let seats = request.work.estimate.initial_seats as f64;
            let correction = SeatSeconds::of(seats, actual.abs_diff(ESTIMATED_SERVICE_DURATION));
            q.next_dispatch_r = if actual > ESTIMATED_SERVICE_DURATION {
                SeatSeconds(q.next_dispatch_r.0.saturating_add(correction.0))
            } else {
                SeatSeconds(q.next_dispatch_r.0.saturating_sub(correction.0))
            };
            self.bound_next_dispatch(queue);
        }
        let lingering = Lingering {
            seats: request.work.seats(),
            queue: request.queue,
            generation: self.generation,
            latency: request.work.estimate.additional_latency,
        };
        if lingering.latency.is_zero() {
            self.release(&lingering, now);
            self.dispatch_all(now);
            return None;
        }
        Some(lingering)
    }

    fn release(&mut self, lingering: &Lingering, now: Instant) {
        self.sync_time(now);
        self.seats_in_use = self.seats_in_use.saturating_sub(lingering.seats);
        if lingering.generation == self.generation {
            if let Some(q) = lingering.queue.and_then(|q| self.queues.get_mut(q)) {
                q.seats_in_use = q.seats_in_use.saturating_sub(lingering.seats);
            }
        }
        self.note_demand(now);
    }

    fn dump_request(e: &Executing) -> RequestDump {
        RequestDump {
            meta: e.meta.clone(),
            estimate: e.work.estimate,
            arrival: e.arrival,
            start: Some(e.start),
        }
    }

    fn dump(&self) -> SetDump {
        let mut queues: Vec<QueueDump> = self
            .queues
            .iter()
            .map(|q| QueueDump {
                waiting: q
                    .waiting
                    .iter()
                    .map(|w| RequestDump {
                        meta: w.meta.clone(),
                        estimate: w.work.estimate,
                        arrival: w.arrival,
                        start: None,
                    })
                    .collect(),
                executing: Vec::new(),
                seats_in_use: q.seats_in_use,
                next_dispatch_r: q.next_dispatch_r,
                initial_seats_sum: q.initial_seats_sum,
                max_seats_sum: q.max_seats_sum,
                total_work_sum: q.total_work_sum,
            })
            .collect();
        let mut queueless = Vec::new();
        let mut executing: Vec<(&u64, &Executing)> = self.executing.iter().collect();
        executing.sort_by_key(|(id, _)| **id);
        for (_, e) in executing {
            match e.queue.and_then(|q| queues.get_mut(q)) {
                Some(q) => q.executing.push(Self::dump_request(e)),
                None => queueless.push(Self::dump_request(e)),
            }
        }
        SetDump { queues, queueless }
    }
}

impl QueueSet {
    pub fn new(limit: Option<usize>, overflow: Overflow) -> Arc<Self> {
        let now = Instant::now();
        let set = Arc::new(QueueSet {
            state: Mutex::new(State {
                limit,
                overflow,
                queues: Vec::new(),
                generation: 0,
                robin: 0,
                enqueues: 0,
                current_r: SeatSeconds::default(),
                last_sync: now,
                executing: HashMap::new(),
                seats_in_use: 0,
                seats_waiting: 0,
                waiting: 0,
                next_id: 0,
                totals: Totals::default(),
                demand: Integrator::new(now),
            }),
        });
        set.reconfigure(limit, overflow);
        set
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // The state stays consistent at every unlock, so a poisoned lock
        // (a panic elsewhere while holding it) is still usable.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Applies a new configuration of the level, keeping the requests that
    /// run and wait.
    pub fn reconfigure(&self, limit: Option<usize>, overflow: Overflow) {
        let mut state = self.lock();
        let now = Instant::now();
        state.sync_time(now);
        state.limit = limit;
        state.overflow = overflow;
        let wanted = match overflow {
            Overflow::Queue { queues, .. } if limit.is_some() => queues.max(1),
            // Requests still waiting drain through one queue.
            _ if state.waiting > 0 => 1,
            _ => 0,
        };
        if state.queues.len() != wanted {
            let waiting: Vec<Waiting> = state
                .queues
                .drain(..)
                .flat_map(|q| q.waiting.into_iter())
                .collect();
            state.queues = (0..wanted).map(|_| Queue::default()).collect();
            state.generation += 1;
            state.robin = 0;
            (state.waiting, state.seats_waiting) = (0, 0);
            for e in state.executing.values_mut() {
                e.queue = None;
            }
            for (i, w) in waiting.into_iter().enumerate() {
                state.push_waiting(i % wanted.max(1), w);
            }
        }
        state.dispatch_all(now);
    }

    /// Sets the seats the level may use now (after borrowing).
    pub fn set_limit(&self, limit: usize) {
        let mut state = self.lock();
        if state.limit.is_some() {
            state.sync_time(Instant::now());
            state.limit = Some(limit);
            state.dispatch_all(Instant::now());
        }
    }

    /// The seat demand since the last call.
    pub fn take_demand(&self) -> IntegratorResults {
        let mut state = self.lock();
        let now = Instant::now();
        let demand = (state.seats_in_use + state.seats_waiting) as f64;
        state.demand.set(demand, now);
        state.demand.reset(now)
    }

    /// The level's queues and totals now.
    pub fn digest(&self) -> Digest {
        let state = self.lock();
        Digest {
            active_queues: state
                .queues
                .iter()
                .filter(|q| !q.waiting.is_empty())
                .count(),
            waiting: state.waiting,
            executing: state.executing.len(),
            seats_in_use: state.seats_in_use,
            seats_waiting: state.seats_waiting,
            totals: state.totals,
        }
    }

    /// Every queue and request now.
    pub fn dump(&self) -> SetDump {
        self.lock().dump()
    }

    /// Waits (at most `wait_limit`) for the seats of a request of `flow`.
    pub async fn acquire(
        self: &Arc<Self>,
        flow_hash: u64,
        estimate: WorkEstimate,
        meta: Arc<RequestMeta>,
        wait_limit: Duration,
    ) -> Result<Seat, Rejection> {
        let work = Work::new(estimate);
        let seat = |id| Seat {
            set: self.clone(),
            id,
            seats: work.seats(),
            gauge: None,
        };
        let (id, woken) = match self.lock().admit(flow_hash, work, meta) {
            Admission::Run(id) => return Ok(seat(id)),
            Admission::Reject(rejection) => return Err(rejection),
            Admission::Wait(id, woken) => (id, woken),
        };
        let mut pending = Pending {
            set: self,
            id,
            armed: true,
        };
        let result = tokio::time::timeout(wait_limit, woken).await;
        pending.armed = false;
        if let Ok(Ok(())) = result {
            return Ok(seat(id));
        }
        // Timed out; dispatch may still have raced us to it.
        let mut state = self.lock();
        if state.remove_waiter(id, Instant::now()) {
            state.totals.timed_out += 1;
            Err(Rejection::TimeOut)
        } else {
            drop(state);
            Ok(seat(id))
        }
    }
}

/// Cleans up after a request dropped while queued: removes it from its
/// queue, or gives back the seats it was just given.
struct Pending<'a> {
    set: &'a Arc<QueueSet>,
    id: u64,
    armed: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let mut state = self.set.lock();
        let now = Instant::now();
        if state.remove_waiter(self.id, now) {
            state.totals.cancelled += 1;
        } else if let Some(lingering) = state.finish(self.id, now) {
            state.release(&lingering, now);
            state.dispatch_all(now);
        }
    }
}

#[cfg(test)]
#[path = "queueset_tests.rs"]
mod tests;
