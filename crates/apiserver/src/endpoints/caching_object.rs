//! Each object version encoded once per wire format for all its watchers,
//! as upstream's `CachingObject` (`storage/cacher/caching_object.go`) does
//! for the watch cache's events: every watcher of a resource receives the
//! same shared object from the cache, so the first one to send it encodes
//! it and the others reuse the bytes.
//!
//! Here the encodings sit beside the objects rather than in a wrapper: a
//! bounded table keyed by the object's address, each entry holding the
//! object so the address cannot be reused while the entry lives. Watchers
//! read it in step (an event reaches them all within moments), so the most
//! recent [`CAPACITY`] encodings (at most [`CAPACITY_BYTES`] in all) cover
//! them; a watcher that lags further behind encodes again.

use std::collections::{HashMap, VecDeque};
use std::sync::{LazyLock, Mutex, PoisonError};

use bytes::Bytes;
use serde_json::Value;
use storage::Object;

use super::negotiation::Encoding;

/// Encodings kept at most.
const CAPACITY: usize = 4096;

/// Bytes of encodings kept at most.
const CAPACITY_BYTES: usize = 64 << 20;

type Key = (usize, Encoding);

#[derive(Default)]
struct Table {
    entries: HashMap<Key, (Object, Bytes)>,
    /// Keys in insertion order.
    order: VecDeque<Key>,
    bytes: usize,
}

static TABLE: LazyLock<Mutex<Table>> = LazyLock::new(Mutex::default);

/// `object` as `encode` writes it in `encoding`, encoded once while it is
/// being sent to watchers. An error is returned, not kept.
pub fn encoded<E>(
    object: &Object,
    encoding: Encoding,
    encode: impl FnOnce(&Value) -> Result<Bytes, E>,
) -> Result<Bytes, E> {
    let key = (std::sync::Arc::as_ptr(object) as usize, encoding);
    if let Some((_, bytes)) = table().entries.get(&key) {
        return Ok(bytes.clone());
    }
    // Encoded unlocked: watchers on other threads may encode it too, once.
    let bytes = encode(object)?;
    let mut table = table();
    if table.entries.contains_key(&key) {
        return Ok(bytes);
    }
    table.bytes += bytes.len();
    table.entries.insert(key, (object.clone(), bytes.clone()));
    table.order.push_back(key);
    while table.order.len() > CAPACITY || table.bytes > CAPACITY_BYTES {
        let Some(oldest) = table.order.pop_front() else {
            break;
        };
        if let Some((_, evicted)) = table.entries.remove(&oldest) {
            table.bytes -= evicted.len();
        }
    }
    Ok(bytes)
}

fn table() -> std::sync::MutexGuard<'static, Table> {
    TABLE.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    #[test]
    fn one_encoding_per_object_and_format() {
        let calls = AtomicUsize::new(0);
        let encode = |v: &Value| {
            calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Infallible>(Bytes::from(v.to_string()))
        };
        let object: Object = Arc::new(json!({"metadata": {"name": "a"}}));
        let same_content: Object = Arc::new(json!({"metadata": {"name": "a"}}));
        for _ in 0..3 {
            let Ok(bytes) = encoded(&object, Encoding::Json, encode);
            assert_eq!(bytes, r#"{"metadata":{"name":"a"}}"#);
        }
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        let _ = encoded(&object, Encoding::Cbor, encode);
        let _ = encoded(&same_content, Encoding::Json, encode);
        assert_eq!(calls.load(Ordering::SeqCst), 3, "by format and version");
        let failed = encoded(&Arc::new(json!(1)), Encoding::Json, |_| Err("no"));
        assert_eq!(failed, Err("no"));
    }
}
