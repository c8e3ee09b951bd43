//! Written objects handed from the store's writers to its watches, so the
//! watch cache's feed does not decode again an object this process has just
//! written. Upstream has no counterpart: its etcd3 watcher decodes every
//! event (`watchChan.transform` in `storage/etcd3/watcher.go`).
//!
//! While a watch of the store is open, a writer takes a [`Ticket`] for the
//! key and the plaintext bytes it is about to store (for a delete, the bytes
//! it is removing) and fills it with the object and the revision once its
//! transaction has succeeded. That object is what decoding the event gives:
//! a writer answers, as upstream's store, with the object decoding the
//! stored bytes gives (and decodes them, unless the codec found while
//! encoding that decoding gives back the tree written:
//! [`crate::codec::Encoded::exact`]), and a delete with the object decoded
//! from the very bytes the event carries. A watch translating an event
//! looks for a ticket with the event's key and bytes; when one is there the
//! transaction has committed, so it waits (briefly) for the writer to fill
//! it and uses the object if the revisions match. Everything else decodes
//! as before: writes of other API servers on etcd, events replayed after a
//! restart, a writer that failed or was cancelled before filling its
//! ticket.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::oneshot;

use crate::interface::Object;

/// Tickets outstanding at most: a ticket no watch takes (its event was
/// outside every open watch) is dropped after this many later writes.
const CAPACITY: usize = 512;

/// How long a watch waits for the writer of a committed event to fill its
/// ticket before decoding the event instead.
const FILL_WAIT: Duration = Duration::from_secs(1);

/// The tickets of one store (shared by its clones).
#[derive(Default)]
pub(super) struct Handoff {
    /// Open watches; writers take tickets only while there is one.
    watches: AtomicUsize,
    slots: Mutex<Slots>,
}

#[derive(Default)]
struct Slots {
    next_id: u64,
    by_key: HashMap<String, Vec<Slot>>,
    /// Ticket ids in the order they were taken (some already gone).
    order: VecDeque<(u64, String)>,
}

struct Slot {
    id: u64,
    data: Bytes,
    filled: oneshot::Receiver<Written>,
}

struct Written {
    revision: i64,
    obj: Object,
}

impl Slots {
    fn remove(&mut self, key: &str, id: u64) {
        if let Some(slots) = self.by_key.get_mut(key) {
            slots.retain(|slot| slot.id != id);
            if slots.is_empty() {
                self.by_key.remove(key);
            }
        }
    }
}

impl Handoff {
    fn slots(&self) -> MutexGuard<'_, Slots> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A ticket for a write of `data` at `key` (an empty one when no watch
    /// could take it).
    pub(super) fn expect(self: &Arc<Self>, key: &str, data: &Bytes) -> Ticket {
        if self.watches.load(Ordering::Acquire) == 0 {
            return Ticket::none();
        }
        let (sender, filled) = oneshot::channel();
        let mut slots = self.slots();
        let id = slots.next_id;
        slots.next_id += 1;
        let slot = Slot {
            id,
            data: data.clone(),
            filled,
        };
        slots.by_key.entry(key.to_owned()).or_default().push(slot);
        slots.order.push_back((id, key.to_owned()));
        while slots.order.len() > CAPACITY {
            if let Some((old, old_key)) = slots.order.pop_front() {
                slots.remove(&old_key, old);
            }
        }
        Ticket(Some(Held {
            handoff: self.clone(),
            key: key.to_owned(),
            id,
            sender,
        }))
    }

    /// Registers a watch that takes tickets for as long as it lives.
    pub(super) fn subscribe(self: &Arc<Self>) -> Subscription {
        self.watches.fetch_add(1, Ordering::AcqRel);
        Subscription(self.clone())
    }
}

/// A writer's promise to hand over what it stored.
pub(super) struct Ticket(Option<Held>);

struct Held {
    handoff: Arc<Handoff>,
    key: String,
    id: u64,
    sender: oneshot::Sender<Written>,
}

impl Ticket {
    /// A ticket nobody takes.
    fn none() -> Self {
        Ticket(None)
    }

    /// Hands `obj`, stored at `revision`, to the watch that takes the ticket.
    pub(super) fn fill(mut self, revision: i64, obj: &Object) {
        if let Some(held) = self.0.take() {
            let obj = obj.clone();
            // A ticket evicted meanwhile has no receiver: nothing to do.
            let _ = held.sender.send(Written { revision, obj });
        }
    }
}

impl Drop for Ticket {
    /// An unfilled ticket (the write failed) is withdrawn.
    fn drop(&mut self) {
        if let Some(held) = self.0.take() {
            held.handoff.slots().remove(&held.key, held.id);
        }
    }
}

/// An open watch's access to the tickets.
pub(super) struct Subscription(Arc<Handoff>);

impl Subscription {
    /// The object a writer of this store stored as `data` at `key` in the
    /// write of `revision`, if it took a ticket for it.
    pub(super) async fn take(&self, key: &str, data: &[u8], revision: i64) -> Option<Object> {
        let filled = {
            let mut slots = self.0.slots();
            let candidates = slots.by_key.get_mut(key)?;
            let at = candidates.iter().position(|slot| slot.data == data)?;
            let slot = candidates.swap_remove(at);
            if candidates.is_empty() {
                slots.by_key.remove(key);
            }
            slot.filled
        };
        match tokio::time::timeout(FILL_WAIT, filled).await {
            Ok(Ok(written)) if written.revision == revision => Some(written.obj),
            _ => None,
        }
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.0.watches.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object() -> Object {
        Arc::new(json!({"metadata": {"name": "a"}}).into())
    }

    #[tokio::test]
    async fn tickets_are_taken_only_while_a_watch_is_open() {
        let handoff = Arc::new(Handoff::default());
        handoff
            .expect("/k", &Bytes::from_static(b"v"))
            .fill(7, &object());
        assert!(handoff.slots().by_key.is_empty(), "no watch, no ticket");
        let watch = handoff.subscribe();
        let obj = object();
        handoff
            .expect("/k", &Bytes::from_static(b"v"))
            .fill(7, &obj);
        assert!(watch.take("/k", b"other bytes", 7).await.is_none());
        let taken = watch.take("/k", b"v", 7).await.unwrap();
        assert!(Arc::ptr_eq(&taken, &obj));
        assert!(watch.take("/k", b"v", 7).await.is_none(), "taken once");
        drop(watch);
        handoff
            .expect("/k", &Bytes::from_static(b"v"))
            .fill(8, &obj);
        assert!(handoff.slots().by_key.is_empty(), "no watch, no ticket");
    }

    #[tokio::test]
    async fn another_revision_or_an_unfilled_ticket_means_decoding() {
        let handoff = Arc::new(Handoff::default());
        let watch = handoff.subscribe();
        let data = Bytes::from_static(b"v");
        handoff.expect("/k", &data).fill(7, &object());
        assert!(watch.take("/k", b"v", 8).await.is_none());
        drop(handoff.expect("/k", &data));
        assert!(
            handoff.slots().by_key.is_empty(),
            "a failed write withdraws"
        );
        let pending = handoff.expect("/k", &data);
        let taking = watch.take("/k", b"v", 9);
        let (taken, ()) = tokio::join!(taking, async move { drop(pending) });
        assert!(taken.is_none(), "a writer that gives up is not waited for");
    }

    #[tokio::test]
    async fn old_tickets_nobody_took_are_evicted() {
        let handoff = Arc::new(Handoff::default());
        let _watch = handoff.subscribe();
        for i in 0..CAPACITY + 10 {
            let key = format!("/k{i}");
            handoff.expect(&key, &Bytes::new()).fill(1, &object());
        }
        let slots = handoff.slots();
        assert_eq!(slots.by_key.len(), CAPACITY);
        assert!(!slots.by_key.contains_key("/k0"));
    }
}
