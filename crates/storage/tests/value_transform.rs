//! Encryption at rest over the embedded backend: values under an encrypted
//! prefix are stored with the provider's prefix and read back in plain
//! form through the store, watch events come out decrypted, and keys
//! rotate by configuration alone.

use std::sync::Arc;

use bytes::Bytes;
use futures::StreamExt;
use storage::value::encrypt::aes::AesCbc;
use storage::value::{
    Identity, PrefixTransformer, PrefixTransformers, Transformer, TransformerRules, TransformingKv,
};
use storage::{Kv, KvWatchItem, RangeRequest, TxnOp, TxnResponse};
use storage_embedded::EmbeddedKv;

const SECRET: &str = "/registry/secrets/default/s1";
const CONFIGMAP: &str = "/registry/configmaps/default/c1";

fn aescbc(keys: &[(&str, u8)]) -> PrefixTransformer {
    let keys = keys
        .iter()
        .map(|(name, byte)| PrefixTransformer {
            prefix: Bytes::from(format!("{name}:")),
            transformer: Arc::new(AesCbc::new(&[*byte; 32]).unwrap_or_else(|e| panic!("{e}"))),
        })
        .collect();
    let inner = PrefixTransformers::new(keys, "no matching key was found");
    PrefixTransformer {
        prefix: Bytes::from_static(b"k8s:enc:aescbc:v1:"),
        transformer: Arc::new(inner.unwrap_or_else(|| panic!("no keys"))),
    }
}

fn identity() -> PrefixTransformer {
    PrefixTransformer {
        prefix: Bytes::new(),
        transformer: Arc::new(Identity),
    }
}

fn rules(providers: Vec<PrefixTransformer>) -> TransformerRules {
    let t: Arc<dyn Transformer> = Arc::new(
        PrefixTransformers::new(providers, "no matching prefix found")
            .unwrap_or_else(|| panic!("no providers")),
    );
    TransformerRules::new(vec![("/registry/secrets/".to_owned(), t)])
}

async fn get(kv: &dyn Kv, key: &str) -> Bytes {
    let resp = kv
        .range(RangeRequest {
            key: key.into(),
            ..Default::default()
        })
        .await
        .unwrap_or_else(|e| panic!("range {key}: {e}"));
    resp.kvs
        .into_iter()
        .next()
        .map(|kv| kv.value)
        .unwrap_or_else(|| panic!("{key} missing"))
}

async fn put(kv: &dyn Kv, key: &str, value: &'static [u8]) {
    let rev = match kv
        .range(RangeRequest {
            key: key.into(),
            ..Default::default()
        })
        .await
    {
        Ok(resp) => resp.kvs.first().map_or(0, |kv| kv.mod_revision),
        Err(e) => panic!("range: {e}"),
    };
    let resp = kv
        .txn(key, rev, TxnOp::Put(Bytes::from_static(value)))
        .await;
    assert!(
        matches!(resp, Ok(TxnResponse::Succeeded { .. })),
        "{resp:?}"
    );
}

#[tokio::test]
async fn encrypted_prefix_rotation_and_identity_first() {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
    let raw: Arc<dyn Kv> =
        Arc::new(EmbeddedKv::open(dir.path()).unwrap_or_else(|e| panic!("open: {e}")));
    let kv = TransformingKv::new(raw.clone(), rules(vec![aescbc(&[("key1", 1)])]));
    let mut watch = kv
        .watch("/registry/", true, 0)
        .await
        .unwrap_or_else(|e| panic!("{e}"));

    put(&kv, SECRET, b"{\"data\":\"one\"}").await;
    put(&kv, CONFIGMAP, b"{\"data\":\"plain\"}").await;
    let stored = get(raw.as_ref(), SECRET).await;
    assert!(stored.starts_with(b"k8s:enc:aescbc:v1:key1:"), "{stored:?}");
    assert!(!stored.windows(3).any(|w| w == b"one"));
    assert_eq!(get(raw.as_ref(), CONFIGMAP).await, "{\"data\":\"plain\"}");
    assert_eq!(get(&kv, SECRET).await, "{\"data\":\"one\"}");
    match watch.next().await {
        Some(Ok(KvWatchItem::Event(ev))) => assert_eq!(ev.kv.value, "{\"data\":\"one\"}"),
        other => panic!("{other:?}"),
    }

    // Rotation: key2 writes, key1 still reads.
    kv.set_rules(rules(vec![aescbc(&[("key2", 2), ("key1", 1)])]));
    assert_eq!(get(&kv, SECRET).await, "{\"data\":\"one\"}");
    put(&kv, SECRET, b"{\"data\":\"two\"}").await;
    assert!(get(raw.as_ref(), SECRET)
        .await
        .starts_with(b"k8s:enc:aescbc:v1:key2:"));

    // Identity first: new writes are plain, encrypted data still reads.
    kv.set_rules(rules(vec![identity(), aescbc(&[("key2", 2)])]));
    assert_eq!(get(&kv, SECRET).await, "{\"data\":\"two\"}");
    put(&kv, SECRET, b"{\"data\":\"three\"}").await;
    assert_eq!(get(raw.as_ref(), SECRET).await, "{\"data\":\"three\"}");

    // A key no configured provider holds cannot be read.
    put(&kv, "/registry/secrets/default/s2", b"x").await;
    kv.set_rules(rules(vec![aescbc(&[("key3", 3)])]));
    let err = kv
        .range(RangeRequest {
            key: SECRET.into(),
            ..Default::default()
        })
        .await
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        err.as_deref(),
        Some("storage internal error: unable to transform key \"/registry/secrets/default/s1\": no matching prefix found")
    );
}
