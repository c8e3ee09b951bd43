//! Each object version encoded once per wire format for all its readers,
//! as upstream's `CachingObject` (`storage/cacher/caching_object.go`) does
//! for the watch cache's events: every watcher of a resource receives the
//! same shared object from the cache, so the first one to send it encodes
//! it and the others reuse the bytes. Here the same bytes also serve GETs
//! of that version and the items of LISTs from the cache (upstream encodes
//! those per request), which then only copy them.
//!
//! JSON is kept by the object itself ([`StoredObject::json`]; the watch
//! cache holds its versions as that encoding alone). The other formats'
//! encodings sit beside the objects rather than in a wrapper: a table
//! keyed by the object's address, each entry holding a weak reference so
//! the address cannot be reused while the entry lives. An entry lives as
//! long as its object (the watch cache's copy of that version): entries of
//! dropped objects are swept once the table has doubled in entries or bytes
//! since the last sweep. Only objects held elsewhere too (by the watch
//! cache) are kept: one read from storage alone is encoded and dropped. At
//! most [`CAPACITY_BYTES`] of encodings are kept (a LIST of 12,000 1 KiB
//! ConfigMaps in JSON and protobuf takes ≈ 32 MiB); beyond, objects are
//! encoded per request as before, until dropped objects free some.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, OnceLock, PoisonError, Weak};

use bytes::{Buf, Bytes};
use protobuf_codec::ProtobufError;
use rayon::iter::{IndexedParallelIterator, IntoParallelRefIterator, ParallelIterator};
use storage::{offload, Object, StoredObject};

use super::negotiation::Encoding;
use super::response::encode;

/// Objects per piece of a list's items encoded on one core.
const PARALLEL_RUN: usize = 128;

/// Bytes of encodings kept at most.
const CAPACITY_BYTES: usize = 64 << 20;

/// Entries and bytes below which the table is not swept.
const MIN_SWEEP: (usize, usize) = (1024, 16 << 20);

/// Bytes held by every [`Encodings`] alive.
static BYTES: AtomicUsize = AtomicUsize::new(0);

/// The encodings of one object version, filled on first use.
pub struct Encodings {
    object: Weak<StoredObject>,
    /// Protobuf and CBOR (JSON is kept by the object itself).
    slots: [OnceLock<Bytes>; 2],
    /// Where in the protobuf encoding a list's item lies
    /// (`protobuf_codec::list_item_message`), found on the first list.
    message: OnceLock<Range<usize>>,
}

impl Drop for Encodings {
    fn drop(&mut self) {
        let held: usize = self
            .slots
            .iter()
            .filter_map(OnceLock::get)
            .map(Bytes::len)
            .sum();
        BYTES.fetch_sub(held, Ordering::Relaxed);
    }
}

#[derive(Default)]
struct Table {
    /// Keyed by address, hashed with `foldhash` (no flooding to fear: the
    /// keys are the server's own allocations).
    entries: HashMap<usize, Arc<Encodings>, foldhash::fast::RandomState>,
    /// Entries and bytes at which the next sweep runs.
    sweep_at: (usize, usize),
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(Mutex::default);

impl Table {
    fn entry(&mut self, object: &Object) -> Option<Arc<Encodings>> {
        // Held by this reader alone: nobody would reuse its encodings.
        if Arc::strong_count(object) < 2 {
            return None;
        }
        let key = Arc::as_ptr(object) as usize;
        if let Some(entry) = self.entries.get(&key) {
            return Some(entry.clone());
        }
        if self.entries.len() >= self.sweep_at.0 || BYTES.load(Ordering::Relaxed) >= self.sweep_at.1
        {
            self.sweep();
        }
        let entry = Arc::new(Encodings {
            object: Arc::downgrade(object),
            slots: Default::default(),
            message: OnceLock::new(),
        });
        self.entries.insert(key, entry.clone());
        Some(entry)
    }

    /// Drops the entries of objects nobody holds any more.
    fn sweep(&mut self) {
        self.entries.retain(|_, e| e.object.strong_count() > 0);
        self.sweep_at = (
            (self.entries.len() * 2).max(MIN_SWEEP.0),
            (BYTES.load(Ordering::Relaxed) * 2).max(MIN_SWEEP.1),
        );
    }
}

fn table() -> MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `object` in `encoding` as a response writes it whole: JSON as Go's
/// `json.Encoder` (newline included), protobuf as a watch event embeds it
/// (its full body, or JSON when its kind has none), CBOR self-described.
pub fn encoded(object: &Object, encoding: Encoding) -> Result<Bytes, ProtobufError> {
    if encoding == Encoding::Json {
        return Ok(object.json());
    }
    let entry = table().entry(object);
    fill(entry.as_deref(), object, encoding)
}

/// [`encoded`] for each of `objects`, looked up together. Many objects
/// (a list, always encoded off the async workers) are encoded on every
/// core (rayon's pool, shared with the stores' parallel decode) in runs of
/// [`PARALLEL_RUN`], in order.
pub fn encoded_each(objects: &[Object], encoding: Encoding) -> Result<Vec<Bytes>, ProtobufError> {
    let entries: Vec<_> = if encoding == Encoding::Json {
        // Kept by the objects themselves.
        objects.iter().map(|_| None).collect()
    } else {
        let mut table = table();
        objects.iter().map(|o| table.entry(o)).collect()
    };
    let fill_one = |(object, entry): (&Object, &Option<Arc<Encodings>>)| {
        fill(entry.as_deref(), object, encoding)
    };
    if objects.len() < offload::INLINE_OBJECTS {
        return objects.iter().zip(&entries).map(fill_one).collect();
    }
    objects
        .par_iter()
        .zip(&entries)
        .with_min_len(PARALLEL_RUN)
        .map(fill_one)
        .collect()
}

/// An object's protobuf message as a list's item carries it, read from the
/// encoding kept for that version (the list holds the entry, and touches
/// no other reference count) or made for this list alone.
pub enum ListItem {
    /// A range of the protobuf encoding kept in the entry.
    Kept(Arc<Encodings>, Range<usize>),
    /// The message, encoded for this list alone.
    Made(Bytes),
}

impl ListItem {
    pub fn bytes(&self) -> &[u8] {
        match self {
            ListItem::Kept(entry, range) => match entry.slots[0].get() {
                Some(kept) => &kept[range.clone()],
                None => unreachable!("a kept item's encoding is kept"),
            },
            ListItem::Made(bytes) => bytes,
        }
    }

    /// The item without its first `n` bytes.
    pub fn advance(&mut self, n: usize) {
        match self {
            ListItem::Kept(_, range) => range.start += n,
            ListItem::Made(bytes) => bytes.advance(n),
        }
    }

    pub fn to_bytes(&self) -> Bytes {
        match self {
            ListItem::Kept(entry, range) => match entry.slots[0].get() {
                Some(kept) => kept.slice(range.clone()),
                None => unreachable!("a kept item's encoding is kept"),
            },
            ListItem::Made(bytes) => bytes.clone(),
        }
    }
}

/// The protobuf message of each of `objects` as a list's item, in order
/// (on every core for many, as [`encoded_each`]).
pub fn protobuf_list_items(objects: &[Object]) -> Result<Vec<ListItem>, ProtobufError> {
    let entries: Vec<_> = {
        let mut table = table();
        objects.iter().map(|o| table.entry(o)).collect()
    };
    let item = |(object, entry): (&Object, Option<Arc<Encodings>>)| {
        let kept = |e: &Encodings| e.slots[0].get().is_some();
        let made = match &entry {
            Some(e) if kept(e) => None,
            _ => Some(fill(entry.as_deref(), object, Encoding::Protobuf)?),
        };
        if let Some(entry) = entry.filter(|e| kept(e)) {
            let range = message_range(&entry)?;
            return Ok(ListItem::Kept(entry, range));
        }
        let made = made.unwrap_or_default();
        let range = part_of(&made, protobuf_codec::list_item_message(&made)?);
        Ok(ListItem::Made(made.slice(range)))
    };
    if objects.len() < offload::INLINE_OBJECTS {
        return objects.iter().zip(entries).map(item).collect();
    }
    objects
        .par_iter()
        .zip(entries)
        .with_min_len(PARALLEL_RUN)
        .map(item)
        .collect()
}

/// Where a list's item lies in the protobuf encoding kept in `entry`.
fn message_range(entry: &Encodings) -> Result<Range<usize>, ProtobufError> {
    if let Some(range) = entry.message.get() {
        return Ok(range.clone());
    }
    let kept = entry.slots[0].get().map_or(&[][..], |b| &b[..]);
    let range = part_of(kept, protobuf_codec::list_item_message(kept)?);
    Ok(entry.message.get_or_init(|| range).clone())
}

/// Where `part`, a part of `whole`, lies in it.
pub(super) fn part_of(whole: &[u8], part: &[u8]) -> Range<usize> {
    let start = part.as_ptr() as usize - whole.as_ptr() as usize;
    start..start + part.len()
}

/// `f` of each of `objects`, in order, on every core for many (as
/// [`encoded_each`]).
pub fn map_each<T: Send>(objects: &[Object], f: impl Fn(&Object) -> T + Sync + Send) -> Vec<T> {
    if objects.len() < offload::INLINE_OBJECTS {
        return objects.iter().map(f).collect();
    }
    objects
        .par_iter()
        .with_min_len(PARALLEL_RUN)
        .map(f)
        .collect()
}

fn fill(
    entry: Option<&Encodings>,
    object: &StoredObject,
    encoding: Encoding,
) -> Result<Bytes, ProtobufError> {
    let slot = match encoding {
        Encoding::Json => return Ok(object.json()),
        Encoding::Protobuf => 0,
        Encoding::Cbor => 1,
        Encoding::Yaml => return Ok(object.peek(|tree| encode(tree, encoding, false))),
    };
    let slot = entry.map(|e| &e.slots[slot]);
    if let Some(bytes) = slot.and_then(OnceLock::get) {
        return Ok(bytes.clone());
    }
    // Encoded unlocked: readers on other threads may encode it too, once.
    // An object the cache holds as JSON gets a transient tree (see
    // `storage::object`).
    let bytes = object.peek(|tree| match encoding {
        Encoding::Protobuf => protobuf_codec::watch_event_object(tree).map(Bytes::from),
        _ => Ok(Bytes::from(kube_cbor::encode(tree))),
    })?;
    let Some(slot) = slot else {
        return Ok(bytes);
    };
    if BYTES.load(Ordering::Relaxed) + bytes.len() > CAPACITY_BYTES {
        return Ok(bytes);
    }
    if slot.set(bytes.clone()).is_ok() {
        BYTES.fetch_add(bytes.len(), Ordering::Relaxed);
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn one_encoding_per_shared_object_version_and_format() {
        let object: Object = Arc::new(json!({"metadata": {"name": "a"}}).into());
        let cached = object.clone();
        let first = encoded(&object, Encoding::Json).expect("JSON");
        assert_eq!(first, "{\"metadata\":{\"name\":\"a\"}}\n");
        let again = encoded(&object, Encoding::Json).expect("JSON");
        assert_eq!(first.as_ptr(), again.as_ptr(), "the same bytes");
        let cbor = encoded(&object, Encoding::Cbor).expect("CBOR");
        assert_eq!(cbor, kube_cbor::encode(&object));
        let cbor_again = encoded(&object, Encoding::Cbor).expect("CBOR");
        assert_eq!(cbor.as_ptr(), cbor_again.as_ptr(), "the same CBOR");
        let same_content: Object = Arc::new(object.to_value().into());
        let _held = same_content.clone();
        let other = encoded(&same_content, Encoding::Json).expect("JSON");
        assert_ne!(first.as_ptr(), other.as_ptr(), "another version");
        let each = encoded_each(&[object.clone(), same_content.clone()], Encoding::Json);
        let each = each.expect("JSON");
        assert_eq!(
            (each[0].as_ptr(), each[1].as_ptr()),
            (first.as_ptr(), other.as_ptr())
        );
        drop(cached);
    }

    #[test]
    fn objects_held_by_one_reader_keep_only_their_json() {
        let object: Object = Arc::new(json!({"metadata": {"name": "b"}}).into());
        let first = encoded(&object, Encoding::Json).expect("JSON");
        let again = encoded(&object, Encoding::Json).expect("JSON");
        assert_eq!(first.as_ptr(), again.as_ptr(), "kept by the object");
        let cbor = encoded(&object, Encoding::Cbor).expect("CBOR");
        let cbor_again = encoded(&object, Encoding::Cbor).expect("CBOR");
        assert_eq!(cbor, cbor_again);
        assert_ne!(cbor.as_ptr(), cbor_again.as_ptr(), "encoded per request");
    }

    #[test]
    fn objects_held_as_json_are_encoded_without_keeping_a_tree() {
        let tree = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}});
        let object: Object = Arc::new(StoredObject::from(tree.clone()).compact());
        let _cached = object.clone();
        let items = [object.clone()];
        let json = encoded_each(&items, Encoding::Json).expect("JSON");
        assert_eq!(json[0], go_json::encode::to_vec(&tree).expect("JSON"));
        let protobuf = encoded(&object, Encoding::Protobuf).expect("protobuf");
        let expected = protobuf_codec::watch_event_object(&tree).expect("protobuf");
        assert_eq!(protobuf, expected);
        assert!(!object.has_tree());
    }

    #[test]
    fn entries_of_dropped_objects_are_swept() {
        let mut table = Table::default();
        let object: Object = Arc::new(json!({"metadata": {"name": "c"}}).into());
        let held = object.clone();
        assert!(table.entry(&object).is_some());
        drop((object, held));
        table.sweep();
        assert!(table.entries.is_empty());
    }
}
