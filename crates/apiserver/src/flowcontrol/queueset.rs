//! One priority level's admission (upstream's fair-queuing `queueset`):
//! requests run while the level has free seats; otherwise they wait in one
//! of the level's queues, picked by shuffle sharding on the flow so that one
//! heavy flow fills few queues, and are dispatched round-robin across
//! queues as seats free up. A full queue or a wait past the limit rejects.
//!
//! Simplifications against upstream, kept on purpose: every request takes
//! one seat (upstream widens big lists and adds seat-time after writes),
//! and round-robin stands in for virtual-finish-time ordering, which gives
//! the same fairness when requests cost alike.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::oneshot;

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

struct Waiter {
    id: u64,
    wake: oneshot::Sender<()>,
}

struct State {
    /// Seats this level may use at once; None for the exempt level.
    limit: Option<usize>,
    overflow: Overflow,
    executing: usize,
    queues: Vec<VecDeque<Waiter>>,
    /// The queue round-robin dispatch looks at next.
    next_queue: usize,
    next_id: u64,
    totals: Totals,
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
    pub active_queues: usize,
    pub waiting: usize,
    pub executing: usize,
    pub totals: Totals,
}

/// The seats and queues of one priority level; shared by the requests that
/// hold a [`Seat`].
pub struct QueueSet {
    state: Mutex<State>,
}

/// A dispatched request's seat, given back when dropped.
pub struct Seat {
    set: Arc<QueueSet>,
}

impl Drop for Seat {
    fn drop(&mut self) {
        let mut state = self.set.lock();
        state.executing = state.executing.saturating_sub(1);
        state.dispatch();
    }
}

impl State {
    fn has_free_seat(&self) -> bool {
        self.limit.is_none_or(|limit| self.executing < limit)
    }

    /// Hands free seats to waiting requests, round-robin across queues.
    fn dispatch(&mut self) {
        while self.has_free_seat() {
            let count = self.queues.len();
            let Some(index) = (0..count)
                .map(|i| (self.next_queue + i) % count)
                .find(|&i| !self.queues[i].is_empty())
            else {
                return;
            };
            self.next_queue = (index + 1) % count;
            if let Some(waiter) = self.queues[index].pop_front() {
                // A waiter whose request went away no longer wants it.
                if waiter.wake.send(()).is_ok() {
                    self.executing += 1;
                    self.totals.dispatched += 1;
                }
            }
        }
    }

    /// Shuffle sharding: the flow's hand of queues; the shortest of them
    /// gets the request.
    fn pick_queue(&self, flow_hash: u64, hand_size: usize) -> usize {
        deal(flow_hash, hand_size, self.queues.len())
            .into_iter()
            .min_by_key(|&q| self.queues.get(q).map_or(usize::MAX, VecDeque::len))
            .unwrap_or(0)
    }

    fn remove_waiter(&mut self, queue: usize, id: u64) -> bool {
        let Some(q) = self.queues.get_mut(queue) else {
            return false;
        };
        let before = q.len();
        q.retain(|w| w.id != id);
        q.len() != before
    }
}

impl QueueSet {
    pub fn new(limit: Option<usize>, overflow: Overflow) -> Arc<Self> {
        let set = Arc::new(QueueSet {
            state: Mutex::new(State {
                limit,
                overflow,
                executing: 0,
                queues: Vec::new(),
                next_queue: 0,
                next_id: 0,
                totals: Totals::default(),
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
        state.limit = limit;
        state.overflow = overflow;
        let count = match overflow {
            Overflow::Queue { queues, .. } => queues.max(1),
            Overflow::Reject => 1,
        };
        if state.queues.len() != count {
            let waiting: Vec<Waiter> = state.queues.drain(..).flatten().collect();
            state.queues = (0..count).map(|_| VecDeque::new()).collect();
            for (i, waiter) in waiting.into_iter().enumerate() {
                state.queues[i % count].push_back(waiter);
            }
            state.next_queue = 0;
        }
        state.dispatch();
    }

    /// The level's queues and totals now.
    pub fn digest(&self) -> Digest {
        let state = self.lock();
        Digest {
            active_queues: state.queues.iter().filter(|q| !q.is_empty()).count(),
            waiting: state.queues.iter().map(VecDeque::len).sum(),
            executing: state.executing,
            totals: state.totals,
        }
    }

    /// Waits (at most `wait_limit`) for a seat for a request of `flow`.
    pub async fn acquire(
        self: &Arc<Self>,
        flow_hash: u64,
        wait_limit: Duration,
    ) -> Result<Seat, Rejection> {
        let (queue, id, woken) = {
            let mut state = self.lock();
            let queued = state.queues.iter().any(|q| !q.is_empty());
            if state.has_free_seat() && !queued {
                state.executing += 1;
                state.totals.dispatched += 1;
                return Ok(Seat { set: self.clone() });
            }
            let Overflow::Queue {
                hand_size,
                queue_length_limit,
                ..
            } = state.overflow
            else {
                state.totals.rejected += 1;
                return Err(Rejection::ConcurrencyLimit);
            };
            let queue = state.pick_queue(flow_hash, hand_size);
            if state.queues[queue].len() >= queue_length_limit {
                state.totals.rejected += 1;
                return Err(Rejection::QueueFull);
            }
            let (wake, woken) = oneshot::channel();
            let id = state.next_id;
            state.next_id += 1;
            state.queues[queue].push_back(Waiter { id, wake });
            (queue, id, woken)
        };
        let mut pending = Pending {
            set: self,
            queue,
            id,
            armed: true,
        };
        match tokio::time::timeout(wait_limit, woken).await {
            Ok(Ok(())) => {
                pending.armed = false;
                Ok(Seat { set: self.clone() })
            }
            // Timed out; dispatch may still have raced us to it.
            _ => {
                pending.armed = false;
                let mut state = self.lock();
                if state.remove_waiter(queue, id) {
                    state.totals.timed_out += 1;
                    Err(Rejection::TimeOut)
                } else {
                    drop(state);
                    Ok(Seat { set: self.clone() })
                }
            }
        }
    }
}

/// Removes a waiter whose request was dropped while queued.
struct Pending<'a> {
    set: &'a Arc<QueueSet>,
    queue: usize,
    id: u64,
    armed: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut state = self.set.lock();
            if state.remove_waiter(self.queue, self.id) {
                state.totals.cancelled += 1;
            }
        }
    }
}

/// Deals `hand_size` distinct queues out of `count`, the flow's hash
/// picking each card among those left (upstream's shuffle sharding dealer).
fn deal(flow_hash: u64, hand_size: usize, count: usize) -> Vec<usize> {
    let mut remaining = flow_hash;
    let mut hand: Vec<usize> = Vec::with_capacity(hand_size);
    for left in (count.saturating_sub(hand_size.min(count)) + 1..=count).rev() {
        let mut card = (remaining % left as u64) as usize;
        remaining /= left as u64;
        // Count past the cards already dealt, as a real deck would.
        let mut taken = hand.clone();
        taken.sort_unstable();
        for t in taken {
            if card >= t {
                card += 1;
            }
        }
        hand.push(card);
    }
    hand
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Requests running and waiting.
    fn load(set: &QueueSet) -> (usize, usize) {
        let digest = set.digest();
        (digest.executing, digest.waiting)
    }

    const QUEUE: Overflow = Overflow::Queue {
        queues: 4,
        hand_size: 2,
        queue_length_limit: 1,
    };

    #[tokio::test]
    async fn seats_are_limited_and_given_back() {
        let set = QueueSet::new(Some(2), Overflow::Reject);
        let a = set.acquire(1, Duration::ZERO).await.unwrap();
        let _b = set.acquire(1, Duration::ZERO).await.unwrap();
        assert_eq!(
            set.acquire(1, Duration::ZERO).await.err(),
            Some(Rejection::ConcurrencyLimit)
        );
        drop(a);
        assert!(set.acquire(1, Duration::ZERO).await.is_ok());
    }

    #[tokio::test]
    async fn waiters_are_dispatched_when_a_seat_frees() {
        let set = QueueSet::new(Some(1), QUEUE);
        let first = set.acquire(1, Duration::ZERO).await.unwrap();
        let waiting = {
            let set = set.clone();
            tokio::spawn(async move { set.acquire(2, Duration::from_secs(5)).await.is_ok() })
        };
        while load(&set).1 == 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(load(&set), (1, 1));
        drop(first);
        assert!(waiting.await.unwrap());
        assert_eq!(load(&set), (0, 0));
    }

    #[tokio::test(start_paused = true)]
    async fn waiting_past_the_limit_rejects_and_leaves_the_queue() {
        let set = QueueSet::new(Some(1), QUEUE);
        let _held = set.acquire(1, Duration::ZERO).await.unwrap();
        let result = set.acquire(1, Duration::from_secs(1)).await;
        assert_eq!(result.err(), Some(Rejection::TimeOut));
        assert_eq!(load(&set), (1, 0));
        // A waiter whose request goes away is counted as cancelled.
        let gone = tokio::time::timeout(
            Duration::from_millis(10),
            set.acquire(2, Duration::from_secs(5)),
        )
        .await;
        assert!(gone.is_err());
        let totals = set.digest().totals;
        assert_eq!(
            totals,
            Totals {
                dispatched: 1,
                rejected: 0,
                timed_out: 1,
                cancelled: 1
            }
        );
    }

    #[tokio::test]
    async fn a_full_hand_of_queues_rejects() {
        let set = QueueSet::new(Some(1), QUEUE);
        let _held = set.acquire(1, Duration::ZERO).await.unwrap();
        // One flow reaches only its hand of two queues of one slot each.
        let mut waiting = Vec::new();
        for _ in 0..2 {
            let waiter = set.clone();
            waiting.push(tokio::spawn(async move {
                waiter.acquire(1, Duration::from_secs(30)).await.is_ok()
            }));
            while load(&set).1 < waiting.len() {
                tokio::task::yield_now().await;
            }
        }
        assert_eq!(
            set.acquire(1, Duration::from_secs(30)).await.err(),
            Some(Rejection::QueueFull)
        );
        for w in waiting {
            w.abort();
        }
    }

    #[tokio::test]
    async fn exempt_levels_never_wait() {
        let set = QueueSet::new(None, Overflow::Reject);
        let seats: Vec<_> =
            futures::future::join_all((0..100).map(|_| set.acquire(1, Duration::ZERO))).await;
        assert!(seats.iter().all(Result::is_ok));
        assert_eq!(load(&set), (100, 0));
    }

    #[test]
    fn hands_are_distinct_queues() {
        for flow in 0..200u64 {
            let hand = deal(flow.wrapping_mul(0x9e37_79b9_7f4a_7c15), 6, 64);
            assert_eq!(hand.len(), 6);
            assert!(hand.iter().all(|&q| q < 64));
            let mut unique = hand.clone();
            unique.sort_unstable();
            unique.dedup();
            assert_eq!(unique.len(), 6, "{hand:?}");
        }
        assert_eq!(deal(7, 8, 3).len(), 3);
    }
}
