//! Lists that take the versions a caller already holds instead of decoding
//! them: the store's `get_list_reusing`, and the watch cache's lists from
//! storage, which hand it the cache's copies.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use tokio::sync::watch;

use super::{allow_delete, set_value};
use crate::cacher::{Cacher, CacherConfig};
use crate::error::Result;
use crate::interface::{
    GetOptions, KnownVersion, KnownVersions, ListOptions, ListResult, Object, Preconditions,
    Predicate, ReadVersion, Storage, UpdateFn, ValidateDeletionFn, WatchOptions, WatchStream,
};
use crate::kv::KeyValue;
use crate::testing::{name, object, rv, value_of, Harness};

fn recursive(version: ReadVersion) -> ListOptions {
    ListOptions {
        version,
        recursive: true,
        ..ListOptions::default()
    }
}

fn page(limit: i64, predicate: Predicate) -> ListOptions {
    ListOptions {
        limit: Some(limit),
        predicate,
        ..recursive(ReadVersion::MostRecent)
    }
}

fn not_named(excluded: &'static str) -> Predicate {
    Predicate::new(move |o| value_of(o) != excluded)
}

/// The item named `n` of a list.
fn item<'a>(list: &'a ListResult, n: &str) -> &'a Object {
    let found = list.items.iter().find(|o| name(o) == n);
    found.unwrap_or_else(|| panic!("{n} is not listed"))
}

fn names(list: &ListResult) -> Vec<&str> {
    list.items.iter().map(|o| name(o)).collect()
}

async fn get(storage: &dyn Storage, key: &str) -> Object {
    let found = storage.get(key, GetOptions::default()).await.unwrap();
    found.unwrap_or_else(|| panic!("{key} is missing"))
}

/// Creates `names` (each with its name as value); the last one's revision.
async fn create_all(h: &Harness, names: &[&str]) -> i64 {
    let mut last = 0;
    for n in names {
        last = rv(&h.storage.create(&h.key(n), object(n, n)).await.unwrap());
    }
    last
}

async fn write(h: &Harness, n: &str, value: &str) -> i64 {
    let (key, update) = (h.key(n), set_value(value));
    let written = h.storage.guaranteed_update(&key, false, None, &update);
    rv(&written.await.unwrap())
}

/// The store's `get_list_reusing` with copies of some versions: those
/// items are the copies (the predicate and the limit apply to them as to
/// the others), the rest are decoded, and the list is what `get_list`
/// gives in every other respect.
pub async fn list_reuses_known_versions(h: Harness) {
    let before = create_all(&h, &["a", "b", "c", "d", "e", "f"]).await;
    let old_c = get(h.storage.as_ref(), &h.key("c")).await;
    write(&h, "c", "c2").await;
    // Copies of b, d and f as they are, and of c as it was.
    let mut held: HashMap<String, Object> = HashMap::new();
    for n in ["b", "d", "f"] {
        held.insert(h.key(n), get(h.storage.as_ref(), &h.key(n)).await);
    }
    held.insert(h.key("c"), old_c.clone());
    let copies = held.clone();
    let known: KnownVersions = Arc::new(move |kvs: &[KeyValue]| {
        let copy = |kv: &KeyValue| {
            let held = copies.get(&kv.key)?;
            (rv(held) == kv.mod_revision).then(|| held.clone())
        };
        kvs.iter().map(copy).collect()
    });
    let list = |opts: ListOptions| {
        let (h, known) = (&h, known.clone());
        async move {
            let plain = h.storage.get_list(&h.prefix, opts.clone()).await.unwrap();
            let reusing = h.storage.get_list_reusing(&h.prefix, opts, known);
            let reusing = reusing.await.unwrap();
            assert_eq!(reusing.items, plain.items);
            assert_eq!(reusing.resource_version, plain.resource_version);
            assert_eq!(reusing.continue_token, plain.continue_token);
            assert_eq!(reusing.remaining_item_count, plain.remaining_item_count);
            reusing
        }
    };
    let is_copy = |list: &ListResult, n: &str| Arc::ptr_eq(item(list, n), &held[&h.key(n)]);

    let all = list(recursive(ReadVersion::MostRecent)).await;
    assert_eq!(names(&all), ["a", "b", "c", "d", "e", "f"]);
    assert!(is_copy(&all, "b") && is_copy(&all, "d") && is_copy(&all, "f"));
    assert!(!is_copy(&all, "c"));
    assert_eq!(value_of(item(&all, "c")), "c2");

    let filtered = ListOptions {
        predicate: not_named("d"),
        ..recursive(ReadVersion::MostRecent)
    };
    let filtered = list(filtered).await;
    assert_eq!(names(&filtered), ["a", "b", "c", "e", "f"]);
    assert!(is_copy(&filtered, "b") && is_copy(&filtered, "f"));

    // Pages: the cut, the continue token and the remaining count.
    let first = list(page(2, Predicate::everything())).await;
    assert_eq!(names(&first), ["a", "b"]);
    assert_eq!(first.remaining_item_count, Some(4));
    assert!(is_copy(&first, "b"));
    let next = ListOptions {
        continue_token: first.continue_token.clone(),
        ..page(2, Predicate::everything())
    };
    let second = list(next).await;
    assert_eq!(names(&second), ["c", "d"]);
    assert!(is_copy(&second, "d"));
    // A filtered page fetches again until it is full.
    let sparse = Predicate::new(|o| matches!(value_of(o), "a" | "d" | "f"));
    let sparse = list(page(2, sparse)).await;
    assert_eq!(names(&sparse), ["a", "d"]);
    assert!(is_copy(&sparse, "d") && sparse.continue_token.is_some());

    // At the revision before c changed, c's old version is the copy.
    let old = list(recursive(ReadVersion::Exact(before))).await;
    assert_eq!(value_of(item(&old, "c")), "c");
    assert!(is_copy(&old, "c") && is_copy(&old, "b"));
}

/// A list reusing known versions reads the keys first and fetches only
/// the values it lacks: a few one key each, many as one range, and either
/// way beside copies in between and after. The list is `get_list`'s.
pub async fn list_reuse_fetches_the_values_it_lacks(h: Harness) {
    let keys: Vec<String> = (0..100).map(|i| format!("k{i:03}")).collect();
    let names: Vec<&str> = keys.iter().map(String::as_str).collect();
    create_all(&h, &names).await;
    let all = h
        .storage
        .get_list(&h.prefix, recursive(ReadVersion::MostRecent));
    let all = all.await.unwrap();
    // Known: every key but those `lacking` picks.
    let known_but = |lacking: fn(usize) -> bool| -> KnownVersions {
        let held: HashMap<String, Object> = all
            .items
            .iter()
            .enumerate()
            .filter(|(i, _)| !lacking(*i))
            .map(|(_, o)| (h.key(name(o)), o.clone()))
            .collect();
        Arc::new(move |kvs: &[KeyValue]| {
            let copy = |kv: &KeyValue| held.get(&kv.key).cloned();
            kvs.iter().map(copy).collect()
        })
    };
    let cases: [fn(usize) -> bool; 4] = [
        |i| i % 25 == 7,           // a few
        |i| i % 5 != 0,            // many, spread out
        |i| (40..90).contains(&i), // many, together
        |_| true,                  // none known
    ];
    for lacking in cases {
        for opts in [
            recursive(ReadVersion::MostRecent),
            page(60, not_named("k003")),
        ] {
            let plain = h.storage.get_list(&h.prefix, opts.clone()).await.unwrap();
            let reusing = h
                .storage
                .get_list_reusing(&h.prefix, opts, known_but(lacking));
            let reusing = reusing.await.unwrap();
            assert_eq!(reusing.items, plain.items);
            assert_eq!(reusing.continue_token, plain.continue_token);
            for (i, obj) in reusing.items.iter().enumerate() {
                let n: usize = name(obj)[1..].parse().unwrap();
                assert_eq!(Arc::ptr_eq(obj, &all.items[n]), !lacking(n), "{i}");
            }
        }
    }
}

/// Lists through a watch cache that go to storage take the cache's copy
/// of every version it holds: a consistent list while the cache is behind
/// (a write it has not seen is decoded), its pages, and a list at an old
/// revision (a version the cache no longer holds is decoded).
pub async fn cacher_lists_from_storage_reuse_cached_versions(h: Harness) {
    let (open, gate) = watch::channel(true);
    let gated = Arc::new(Gated {
        inner: h.storage.clone(),
        open: gate,
    });
    let mut config = CacherConfig::new(format!("{}/", h.prefix));
    config.fresh_timeout = Duration::from_millis(100);
    let cacher = Cacher::new(gated, config);
    let last = create_all(&h, &["a", "b", "c", "d", "e"]).await;
    caught_up(&cacher, last).await;
    let any = GetOptions {
        version: ReadVersion::Any,
        ..GetOptions::default()
    };
    let mut cached = HashMap::new();
    for n in ["a", "b", "c", "d", "e"] {
        let copy = cacher.get(&h.key(n), any.clone()).await.unwrap();
        cached.insert(n, copy.unwrap_or_else(|| panic!("{n} is not cached")));
    }
    let is_cached = |list: &ListResult, n: &str| Arc::ptr_eq(item(list, n), &cached[n]);

    // The cache stops hearing of writes: consistent lists read storage.
    open.send_replace(false);
    let b2 = write(&h, "b", "b2").await;
    let all = cacher.get_list(&h.prefix, recursive(ReadVersion::MostRecent));
    let all = all.await.unwrap();
    assert_eq!(names(&all), ["a", "b", "c", "d", "e"]);
    assert!(all.resource_version >= b2);
    assert_eq!(value_of(item(&all, "b")), "b2");
    assert!(!is_cached(&all, "b"));
    for n in ["a", "c", "d", "e"] {
        assert!(is_cached(&all, n), "{n}");
    }
    let first = cacher.get_list(&h.prefix, page(2, not_named("c")));
    let first = first.await.unwrap();
    assert_eq!(names(&first), ["a", "b"]);
    assert!(is_cached(&first, "a") && !is_cached(&first, "b"));
    let next = ListOptions {
        continue_token: first.continue_token.clone(),
        ..page(2, not_named("c"))
    };
    let second = cacher.get_list(&h.prefix, next).await.unwrap();
    assert_eq!(names(&second), ["d", "e"]);
    assert!(is_cached(&second, "d") && is_cached(&second, "e"));
    assert!(second.continue_token.is_none());

    // Caught up again, the cache holds b's new version only: b as of
    // before is decoded, a deleted key's last version too.
    open.send_replace(true);
    h.storage
        .delete(&h.key("e"), None, &allow_delete)
        .await
        .unwrap();
    let now = write(&h, "c", "c2").await;
    caught_up(&cacher, now).await;
    let old = cacher.get_list(&h.prefix, recursive(ReadVersion::Exact(last)));
    let old = old.await.unwrap();
    assert_eq!(names(&old), ["a", "b", "c", "d", "e"]);
    assert_eq!(**item(&old, "b"), *cached["b"]);
    assert!(!is_cached(&old, "b") && !is_cached(&old, "c") && !is_cached(&old, "e"));
    assert!(is_cached(&old, "a") && is_cached(&old, "d"));
}

async fn caught_up(cacher: &Cacher, rv: i64) {
    let wait = async {
        while !cacher.is_ready() || cacher.resource_version() < rv {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    if tokio::time::timeout(Duration::from_secs(10), wait)
        .await
        .is_err()
    {
        panic!("the cache did not reach {rv} within 10 s");
    }
}

/// A storage whose watches deliver events only while `open` says true:
/// the cache over it falls behind while it is closed.
struct Gated {
    inner: Arc<dyn Storage>,
    open: watch::Receiver<bool>,
}

#[async_trait]
impl Storage for Gated {
    async fn create(&self, key: &str, obj: serde_json::Value) -> Result<Object> {
        self.inner.create(key, obj).await
    }
    async fn delete(
        &self,
        key: &str,
        preconditions: Option<&Preconditions>,
        validate: ValidateDeletionFn<'_>,
    ) -> Result<Object> {
        self.inner.delete(key, preconditions, validate).await
    }
    async fn watch(&self, key: &str, opts: WatchOptions) -> Result<WatchStream> {
        let events = self.inner.watch(key, opts).await?;
        let open = self.open.clone();
        let gated = events.then(move |event| {
            let mut open = open.clone();
            async move {
                // Once the test drops the sender, events flow.
                let _ = open.wait_for(|open| *open).await;
                event
            }
        });
        Ok(Box::pin(gated))
    }
    async fn get(&self, key: &str, opts: GetOptions) -> Result<Option<Object>> {
        self.inner.get(key, opts).await
    }
    async fn get_latest(
        &self,
        key: &str,
        ignore_not_found: bool,
        known: KnownVersion<'_>,
    ) -> Result<Option<Object>> {
        self.inner.get_latest(key, ignore_not_found, known).await
    }
    async fn get_list(&self, key: &str, opts: ListOptions) -> Result<ListResult> {
        self.inner.get_list(key, opts).await
    }
    async fn get_list_reusing(
        &self,
        key: &str,
        opts: ListOptions,
        known: KnownVersions,
    ) -> Result<ListResult> {
        self.inner.get_list_reusing(key, opts, known).await
    }
    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        preconditions: Option<&Preconditions>,
        update: UpdateFn<'_>,
    ) -> Result<Object> {
        let updating = self
            .inner
            .guaranteed_update(key, ignore_not_found, preconditions, update);
        updating.await
    }
    async fn count(&self, key: &str) -> Result<i64> {
        self.inner.count(key).await
    }
    async fn current_revision(&self) -> Result<i64> {
        self.inner.current_revision().await
    }
    async fn health(&self) -> Result<()> {
        self.inner.health().await
    }
}
