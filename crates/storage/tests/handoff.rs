//! Writes of this process reach the watch cache as the very objects the
//! writers stored (no second decode), on the embedded backend with
//! encryption at rest; writes of another process are decoded from the
//! event as before.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use serde_json::{json, Value};
use storage::cacher::{Cacher, CacherConfig};
use storage::store::Store;
use storage::value::encrypt::aes::AesCbc;
use storage::value::{PrefixTransformer, PrefixTransformers, TransformerRules, TransformingKv};
use storage::{
    Codec, GetOptions, JsonCodec, Kv, Object, RangeRequest, ReadVersion, Storage, TxnOp,
    WatchEvent, WatchOptions, WatchStream,
};
use storage_embedded::EmbeddedKv;
use tokio::time::timeout;

const PREFIX: &str = "/registry/secrets/";
const WAIT: Duration = Duration::from_secs(10);

/// The embedded store with every secret encrypted (aescbc).
fn encrypted_kv(dir: &std::path::Path) -> Arc<dyn Kv> {
    let raw: Arc<dyn Kv> = Arc::new(EmbeddedKv::open(dir).unwrap_or_else(|e| panic!("{e}")));
    let key = PrefixTransformer {
        prefix: Bytes::from_static(b"key1:"),
        transformer: Arc::new(AesCbc::new(&[1; 32]).unwrap_or_else(|e| panic!("{e}"))),
    };
    let keys = PrefixTransformers::new(vec![key], "no key").unwrap_or_else(|| panic!("no keys"));
    let provider = PrefixTransformer {
        prefix: Bytes::from_static(b"k8s:enc:aescbc:v1:"),
        transformer: Arc::new(keys),
    };
    let providers =
        PrefixTransformers::new(vec![provider], "no provider").unwrap_or_else(|| panic!("none"));
    let rules = TransformerRules::new(vec![(PREFIX.to_owned(), Arc::new(providers))]);
    Arc::new(TransformingKv::new(raw, rules))
}

fn secret(name: &str, data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
           "metadata": {"name": name, "namespace": "ns"}, "data": {"k": data}})
}

fn rv(obj: &Value) -> i64 {
    let rv = obj["metadata"]["resourceVersion"].as_str();
    rv.and_then(|s| s.parse().ok()).unwrap_or_default()
}

fn key(name: &str) -> String {
    format!("{PREFIX}ns/{name}")
}

async fn next(stream: &mut WatchStream) -> Object {
    match timeout(WAIT, stream.next()).await {
        Ok(Some(WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o))) => o,
        other => panic!("unexpected {other:?}"),
    }
}

/// JSON storage whose decoding reshapes what it stored (as protobuf
/// storage may), and which does not say which trees it gives back.
struct Reshaping;

impl Codec for Reshaping {
    fn encode(&self, obj: &Value) -> storage::error::Result<Bytes> {
        JsonCodec.encode(obj)
    }
    fn decode(&self, key: &str, data: &[u8]) -> storage::error::Result<Value> {
        let mut obj = JsonCodec.decode(key, data)?;
        obj["decoded"] = json!(true);
        Ok(obj)
    }
}

/// A watch cache over `codec` on `kv`, whose own watch of the store is open.
async fn cache(kv: &Arc<dyn Kv>, codec: Arc<dyn Codec>) -> (Cacher, WatchStream) {
    let store: Arc<dyn Storage> = Arc::new(Store::new(kv.clone(), codec));
    let cacher = Cacher::new(store, CacherConfig::new(PREFIX));
    timeout(WAIT, cacher.wait_ready())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Once a write has reached the cache, the cache's own watch of the
    // store is open (the cache is ready as soon as its list is in).
    let warm = cacher.create(&key("warm"), secret("warm", "0")).await;
    let warm = warm.unwrap_or_else(|e| panic!("{e}"));
    let at = GetOptions {
        version: ReadVersion::NotOlderThan(rv(&warm)),
        ignore_not_found: false,
    };
    cacher
        .get(&key("warm"), at)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let opts = WatchOptions {
        resource_version: rv(&warm),
        recursive: true,
        ..WatchOptions::default()
    };
    let watch = cacher
        .watch(PREFIX, opts)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    (cacher, watch)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_keeps_the_written_objects_encodings() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kv = encrypted_kv(dir.path());
    let (cacher, mut watch) = cache(&kv, Arc::new(JsonCodec)).await;

    let created = cacher.create(&key("a"), secret("a", "one")).await;
    let created = created.unwrap_or_else(|e| panic!("{e}"));
    assert!(shares_encoding(&next(&mut watch).await, &created), "create");
    let any = GetOptions {
        version: ReadVersion::Any,
        ignore_not_found: false,
    };
    let cached = cacher.get(&key("a"), any.clone()).await;
    let cached = cached.unwrap_or_else(|e| panic!("{e}"));
    let cached = cached.unwrap_or_else(|| panic!("cached"));
    assert!(shares_encoding(&cached, &created), "the cache's copy");
    assert!(!cached.has_tree(), "held as JSON");

    let update = |_: Option<Object>| async { Ok(secret("a", "two")) }.boxed();
    let a = key("a");
    let updated = cacher.guaranteed_update(&a, false, None, &update).await;
    let updated = updated.unwrap_or_else(|e| panic!("{e}"));
    assert!(shares_encoding(&next(&mut watch).await, &updated), "update");

    let allow = |_: Object| async { Ok(()) }.boxed();
    let deleted = cacher.delete(&a, None, &allow).await;
    let deleted = deleted.unwrap_or_else(|e| panic!("{e}"));
    assert!(shares_encoding(&next(&mut watch).await, &deleted), "delete");

    // Another writer of the KV (another API server on etcd): decoded, and
    // still in plain form although stored encrypted.
    let other = Bytes::from(secret("b", "three").to_string());
    kv.txn(&key("b"), 0, TxnOp::Put(other))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let event = next(&mut watch).await;
    assert_eq!(event["data"]["k"], "three");
    let stored = kv
        .range(RangeRequest {
            key: key("b"),
            ..RangeRequest::default()
        })
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        event["metadata"]["resourceVersion"],
        stored.kvs[0].mod_revision.to_string()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writers_answer_and_hand_over_what_decoding_gives() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let kv = encrypted_kv(dir.path());
    let (cacher, mut watch) = cache(&kv, Arc::new(Reshaping)).await;
    // As upstream's store, a create answers with the stored bytes decoded.
    let created = cacher.create(&key("a"), secret("a", "one")).await;
    let created = created.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(created["decoded"], true);
    assert_eq!(created["data"]["k"], "one");
    assert!(shares_encoding(&next(&mut watch).await, &created), "create");

    let update = |_: Option<Object>| async { Ok(secret("a", "two")) }.boxed();
    let a = key("a");
    let updated = cacher.guaranteed_update(&a, false, None, &update).await;
    let updated = updated.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        (&updated["decoded"], &updated["data"]["k"]),
        (&json!(true), &json!("two"))
    );
    assert!(shares_encoding(&next(&mut watch).await, &updated), "update");

    let allow = |_: Object| async { Ok(()) }.boxed();
    let deleted = cacher.delete(&key("a"), None, &allow).await;
    let deleted = deleted.unwrap_or_else(|e| panic!("{e}"));
    assert!(shares_encoding(&next(&mut watch).await, &deleted), "delete");
}

/// Whether two objects are one version whose JSON was encoded once: the
/// watch cache keeps a written object as the encoding its writer made
/// (see `storage::object`), where a decoded event is encoded anew.
fn shares_encoding(a: &Object, b: &Object) -> bool {
    a.json().as_ptr() == b.json().as_ptr()
}
