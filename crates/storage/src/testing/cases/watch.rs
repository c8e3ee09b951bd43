//! Watches: ordering, replay from a revision, initial state, predicate
//! transitions, compaction and bookmarks.

use std::time::Duration;

use crate::error::StorageError;
use crate::interface::{Predicate, WatchEvent, WatchOptions, WatchStream};
use crate::testing::{
    assert_no_change, name, next_change, next_event, object, rv, value_of, Harness,
};

use super::{allow_delete, set_value};

fn from(resource_version: i64) -> WatchOptions {
    WatchOptions {
        resource_version,
        recursive: true,
        ..WatchOptions::default()
    }
}

/// Asserts the next change is of `kind` for object `name` with `value`, and
/// returns its resourceVersion.
async fn expect(stream: &mut WatchStream, kind: &str, name_: &str, value: &str) -> i64 {
    let event = next_change(stream).await;
    let (actual, obj) = match &event {
        WatchEvent::Added(o) => ("Added", o),
        WatchEvent::Modified(o) => ("Modified", o),
        WatchEvent::Deleted(o) => ("Deleted", o),
        other => panic!("expected {kind} {name_}, got {other:?}"),
    };
    assert_eq!(
        (actual, name(obj), value_of(obj)),
        (kind, name_, value),
        "{event:?}"
    );
    rv(obj)
}

pub async fn watch_ordering_many_keys(h: Harness) {
    let start = h.mark().await;
    let mut stream = h.storage.watch(&h.prefix, from(start)).await.unwrap();
    let mut expected = Vec::new();
    for round in 0..4 {
        for n in ["a", "b", "c", "d", "e"] {
            let key = h.key(n);
            let value = round.to_string();
            let obj = match round {
                0 => h.storage.create(&key, object(n, &value)).await.unwrap(),
                3 => h.storage.delete(&key, None, &allow_delete).await.unwrap(),
                _ => h
                    .storage
                    .guaranteed_update(&key, false, None, &set_value(&value))
                    .await
                    .unwrap(),
            };
            let kind = ["Added", "Modified", "Modified", "Deleted"][round];
            let value = if round == 3 { "2".to_string() } else { value };
            expected.push((kind, n, value, rv(&obj)));
        }
    }
    let mut last = start;
    for (kind, n, value, revision) in expected {
        let got = expect(&mut stream, kind, n, &value).await;
        assert_eq!(got, revision, "events carry the write's revision");
        assert!(got > last, "revisions increase");
        last = got;
    }
    assert_no_change(&mut stream, Duration::from_millis(200)).await;
}

pub async fn watch_from_revision_replays_history(h: Harness) {
    let key = h.key("a");
    // Makes sure `v1 - 1` below is a revision, not 0 ("current state").
    h.storage
        .create(&h.key("0"), object("0", ""))
        .await
        .unwrap();
    let v1 = rv(&h.storage.create(&key, object("a", "1")).await.unwrap());
    let v2 = rv(&h
        .storage
        .guaranteed_update(&key, false, None, &set_value("2"))
        .await
        .unwrap());
    let v3 = rv(&h.storage.delete(&key, None, &allow_delete).await.unwrap());

    let mut stream = h.storage.watch(&h.prefix, from(v1)).await.unwrap();
    assert_eq!(expect(&mut stream, "Modified", "a", "2").await, v2);
    // The deleted object is the last state, at the deletion's revision.
    assert_eq!(expect(&mut stream, "Deleted", "a", "2").await, v3);

    let mut all = h.storage.watch(&h.prefix, from(v1 - 1)).await.unwrap();
    assert_eq!(expect(&mut all, "Added", "a", "1").await, v1);
    assert_eq!(expect(&mut all, "Modified", "a", "2").await, v2);
    assert_eq!(expect(&mut all, "Deleted", "a", "2").await, v3);
    assert_no_change(&mut all, Duration::from_millis(200)).await;
}

pub async fn watch_from_zero_sends_current_state(h: Harness) {
    let a = rv(&h
        .storage
        .create(&h.key("a"), object("a", "1"))
        .await
        .unwrap());
    let b = rv(&h
        .storage
        .create(&h.key("b"), object("b", "1"))
        .await
        .unwrap());
    h.storage
        .create(&format!("{}x/c", h.prefix), object("c", "1"))
        .await
        .unwrap();

    let mut stream = h.storage.watch(&h.prefix, from(0)).await.unwrap();
    assert_eq!(expect(&mut stream, "Added", "a", "1").await, a);
    assert_eq!(expect(&mut stream, "Added", "b", "1").await, b);
    let d = rv(&h
        .storage
        .create(&h.key("d"), object("d", "1"))
        .await
        .unwrap());
    assert_eq!(expect(&mut stream, "Added", "d", "1").await, d);
    assert_no_change(&mut stream, Duration::from_millis(200)).await;
}

pub async fn watch_single_key(h: Harness) {
    let created = h
        .storage
        .create(&h.key("a"), object("a", "1"))
        .await
        .unwrap();
    let opts = WatchOptions {
        resource_version: rv(&created),
        ..WatchOptions::default()
    };
    let mut stream = h.storage.watch(&h.key("a"), opts).await.unwrap();
    h.storage
        .create(&h.key("ab"), object("ab", "1"))
        .await
        .unwrap();
    h.storage
        .create(&h.key("b"), object("b", "1"))
        .await
        .unwrap();
    h.storage
        .guaranteed_update(&h.key("a"), false, None, &set_value("2"))
        .await
        .unwrap();
    expect(&mut stream, "Modified", "a", "2").await;
    assert_no_change(&mut stream, Duration::from_millis(200)).await;

    let mut current = h
        .storage
        .watch(&h.key("a"), WatchOptions::default())
        .await
        .unwrap();
    expect(&mut current, "Added", "a", "2").await;
}

pub async fn watch_predicate_transitions(h: Harness) {
    let key = h.key("a");
    let created = h.storage.create(&key, object("a", "no")).await.unwrap();
    let opts = WatchOptions {
        predicate: Predicate::new(|o| value_of(o).starts_with("yes")),
        ..from(rv(&created))
    };
    let mut stream = h.storage.watch(&h.prefix, opts).await.unwrap();
    let update = |value: &str| {
        let (storage, key, f) = (h.storage.clone(), key.clone(), set_value(value));
        async move {
            rv(&storage
                .guaranteed_update(&key, false, None, &f)
                .await
                .unwrap())
        }
    };
    let entered = update("yes").await;
    let changed = update("yes2").await;
    let left = update("no").await;
    update("no2").await;
    let b = rv(&h
        .storage
        .create(&h.key("b"), object("b", "yes"))
        .await
        .unwrap());
    let b_gone = rv(&h
        .storage
        .delete(&h.key("b"), None, &allow_delete)
        .await
        .unwrap());
    h.storage.delete(&key, None, &allow_delete).await.unwrap();
    let c = rv(&h
        .storage
        .create(&h.key("c"), object("c", "yes"))
        .await
        .unwrap());

    assert_eq!(expect(&mut stream, "Added", "a", "yes").await, entered);
    assert_eq!(expect(&mut stream, "Modified", "a", "yes2").await, changed);
    // Leaving the selection: the old object, at the revision it left.
    assert_eq!(expect(&mut stream, "Deleted", "a", "yes2").await, left);
    assert_eq!(expect(&mut stream, "Added", "b", "yes").await, b);
    assert_eq!(expect(&mut stream, "Deleted", "b", "yes").await, b_gone);
    assert_eq!(expect(&mut stream, "Added", "c", "yes").await, c);
    assert_no_change(&mut stream, Duration::from_millis(200)).await;
}

pub async fn watch_compacted_revision(h: Harness) {
    let key = h.key("a");
    let v1 = rv(&h.storage.create(&key, object("a", "1")).await.unwrap());
    h.storage
        .guaranteed_update(&key, false, None, &set_value("2"))
        .await
        .unwrap();
    let v3 = rv(&h
        .storage
        .guaranteed_update(&key, false, None, &set_value("3"))
        .await
        .unwrap());
    h.kv.compact(v3).await.unwrap();

    let mut stream = h.storage.watch(&h.prefix, from(v1)).await.unwrap();
    match next_event(&mut stream).await {
        WatchEvent::Error(StorageError::TooOldResourceVersion { .. }) => {}
        other => panic!("expected Error(TooOldResourceVersion), got {other:?}"),
    }
    let end = tokio::time::timeout(
        crate::testing::EVENT_TIMEOUT,
        futures::StreamExt::next(&mut stream),
    );
    assert!(end.await.expect("the stream ends after an error").is_none());

    // Watching from the compaction revision itself still works.
    let mut fresh = h.storage.watch(&h.prefix, from(v3)).await.unwrap();
    h.storage
        .guaranteed_update(&key, false, None, &set_value("4"))
        .await
        .unwrap();
    expect(&mut fresh, "Modified", "a", "4").await;
}

pub async fn watch_bookmarks(h: Harness) {
    let start = h.mark().await;
    let opts = WatchOptions {
        allow_bookmarks: true,
        predicate: Predicate::new(|_| false),
        ..from(start)
    };
    let mut stream = h.storage.watch(&h.prefix, opts).await.unwrap();
    let mut last = 0;
    for n in ["a", "b", "c"] {
        last = rv(&h.storage.create(&h.key(n), object(n, "")).await.unwrap());
    }
    // Filtered-out events still advance the bookmarked revision.
    loop {
        match next_event(&mut stream).await {
            WatchEvent::Bookmark(revision) if revision >= last => break,
            WatchEvent::Bookmark(revision) => assert!(revision > start),
            other => panic!("expected only bookmarks, got {other:?}"),
        }
    }
}

pub async fn watch_recreated_key(h: Harness) {
    let key = h.key("a");
    let start = h.mark().await;
    let mut stream = h.storage.watch(&h.prefix, from(start)).await.unwrap();
    let first = rv(&h.storage.create(&key, object("a", "1")).await.unwrap());
    let gone = rv(&h.storage.delete(&key, None, &allow_delete).await.unwrap());
    let second = rv(&h.storage.create(&key, object("a", "2")).await.unwrap());
    assert_eq!(expect(&mut stream, "Added", "a", "1").await, first);
    assert_eq!(expect(&mut stream, "Deleted", "a", "1").await, gone);
    assert_eq!(expect(&mut stream, "Added", "a", "2").await, second);
}

pub async fn watch_from_zero_with_predicate(h: Harness) {
    for (n, v) in [("a", "no"), ("b", "yes"), ("c", "no"), ("d", "yes")] {
        h.storage.create(&h.key(n), object(n, v)).await.unwrap();
    }
    let opts = WatchOptions {
        predicate: Predicate::new(|o| value_of(o) == "yes"),
        ..from(0)
    };
    let mut stream = h.storage.watch(&h.prefix, opts).await.unwrap();
    expect(&mut stream, "Added", "b", "yes").await;
    expect(&mut stream, "Added", "d", "yes").await;
    h.storage
        .guaranteed_update(&h.key("a"), false, None, &set_value("yes"))
        .await
        .unwrap();
    expect(&mut stream, "Added", "a", "yes").await;
    assert_no_change(&mut stream, Duration::from_millis(200)).await;
}

pub async fn watch_concurrent_writers(h: Harness) {
    const WRITERS: usize = 4;
    const WRITES: usize = 10;
    let start = h.mark().await;
    let mut stream = h.storage.watch(&h.prefix, from(start)).await.unwrap();
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let (storage, key) = (h.storage.clone(), h.key(&format!("w{w}")));
        tasks.push(tokio::spawn(async move {
            storage
                .create(&key, object(&format!("w{w}"), "0"))
                .await
                .unwrap();
            for i in 1..WRITES {
                let value = i.to_string();
                storage
                    .guaranteed_update(&key, false, None, &set_value(&value))
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let mut last = start;
    let mut next_value = [0usize; WRITERS];
    for _ in 0..WRITERS * WRITES {
        let (kind, obj) = match next_change(&mut stream).await {
            WatchEvent::Added(o) => ("Added", o),
            WatchEvent::Modified(o) => ("Modified", o),
            other => panic!("unexpected {other:?}"),
        };
        assert!(rv(&obj) > last, "revisions strictly increase");
        last = rv(&obj);
        let writer: usize = name(&obj)[1..].parse().unwrap();
        let expected = next_value[writer];
        assert_eq!(value_of(&obj), expected.to_string(), "per-key order kept");
        assert_eq!(kind, if expected == 0 { "Added" } else { "Modified" });
        next_value[writer] += 1;
    }
    assert_no_change(&mut stream, Duration::from_millis(200)).await;
}
