//! Lists: predicates, prefixes, pagination, resourceVersion semantics and
//! compaction.

use crate::error::StorageError;
use crate::interface::{GetOptions, ListOptions, ListResult, Predicate, ReadVersion};
use crate::testing::{name, object, rv, value_of, Harness};

fn names(result: &ListResult) -> Vec<&str> {
    result.items.iter().map(|o| name(o)).collect()
}

fn recursive(version: ReadVersion) -> ListOptions {
    ListOptions {
        version,
        recursive: true,
        ..ListOptions::default()
    }
}

fn page(limit: i64, continue_token: Option<String>) -> ListOptions {
    ListOptions {
        limit: Some(limit),
        continue_token,
        ..recursive(ReadVersion::MostRecent)
    }
}

async fn create_all(h: &Harness, names: &[&str]) -> i64 {
    let mut last = 0;
    for n in names {
        last = rv(&h.storage.create(&h.key(n), object(n, n)).await.unwrap());
    }
    last
}

pub async fn list_with_predicate(h: Harness) {
    let last = create_all(&h, &["a", "b", "c", "d", "e"]).await;
    let all = h
        .storage
        .get_list(&h.prefix, recursive(ReadVersion::MostRecent))
        .await
        .unwrap();
    assert_eq!(
        names(&all),
        ["a", "b", "c", "d", "e"],
        "items come in key order"
    );
    assert!(all.resource_version >= last);
    assert!(all.continue_token.is_none() && all.remaining_item_count.is_none());
    for item in &all.items {
        assert!(rv(item) > 0 && rv(item) <= all.resource_version);
    }

    let vowels = Predicate::new(|o| matches!(value_of(o), "a" | "e"));
    let opts = ListOptions {
        predicate: vowels,
        ..recursive(ReadVersion::MostRecent)
    };
    let filtered = h.storage.get_list(&h.prefix, opts).await.unwrap();
    assert_eq!(names(&filtered), ["a", "e"]);
}

pub async fn list_recursive_prefix_boundary(h: Harness) {
    create_all(&h, &["a", "b"]).await;
    // `prefix` + "x/…" shares the string prefix but is another collection.
    let sibling = format!("{}x/c", h.prefix);
    h.storage.create(&sibling, object("c", "c")).await.unwrap();

    let list = h
        .storage
        .get_list(&h.prefix, recursive(ReadVersion::MostRecent))
        .await
        .unwrap();
    assert_eq!(names(&list), ["a", "b"]);
    let with_slash = format!("{}/", h.prefix);
    let list = h
        .storage
        .get_list(&with_slash, recursive(ReadVersion::MostRecent))
        .await
        .unwrap();
    assert_eq!(names(&list), ["a", "b"]);

    // Not recursive: just the one key (or nothing).
    let single = h
        .storage
        .get_list(&h.key("a"), ListOptions::default())
        .await
        .unwrap();
    assert_eq!(names(&single), ["a"]);
    let none = h
        .storage
        .get_list(&h.key("zz"), ListOptions::default())
        .await
        .unwrap();
    assert!(none.items.is_empty());
}

pub async fn list_limit_and_continue(h: Harness) {
    create_all(&h, &["a", "b", "c", "d", "e"]).await;
    let first = h.storage.get_list(&h.prefix, page(2, None)).await.unwrap();
    assert_eq!(names(&first), ["a", "b"]);
    assert_eq!(first.remaining_item_count, Some(3));
    let second = h
        .storage
        .get_list(&h.prefix, page(2, first.continue_token.clone()))
        .await
        .unwrap();
    assert_eq!(names(&second), ["c", "d"]);
    assert_eq!(second.remaining_item_count, Some(1));
    assert_eq!(second.resource_version, first.resource_version);
    let third = h
        .storage
        .get_list(&h.prefix, page(2, second.continue_token.clone()))
        .await
        .unwrap();
    assert_eq!(names(&third), ["e"]);
    assert!(third.continue_token.is_none() && third.remaining_item_count.is_none());
    assert_eq!(third.resource_version, first.resource_version);

    // A limit equal to the size: one full page and nothing more.
    let exact = h.storage.get_list(&h.prefix, page(5, None)).await.unwrap();
    assert_eq!(exact.items.len(), 5);
    assert!(exact.continue_token.is_none());
}

pub async fn list_limit_with_predicate(h: Harness) {
    let all: Vec<String> = (0..20).map(|i| format!("item-{i:02}")).collect();
    for n in &all {
        h.storage.create(&h.key(n), object(n, n)).await.unwrap();
    }
    let wanted = ["item-01", "item-07", "item-08", "item-19"];
    let predicate = Predicate::new(move |o| wanted.contains(&value_of(o)));
    let mut seen = Vec::new();
    let mut token = None;
    let mut revision = None;
    loop {
        let opts = ListOptions {
            predicate: predicate.clone(),
            ..page(2, token)
        };
        let result = h.storage.get_list(&h.prefix, opts).await.unwrap();
        assert!(result.items.len() <= 2);
        assert!(
            result.remaining_item_count.is_none(),
            "no count for filtered lists"
        );
        assert_eq!(
            *revision.get_or_insert(result.resource_version),
            result.resource_version
        );
        seen.extend(names(&result).into_iter().map(str::to_string));
        token = result.continue_token;
        if token.is_none() {
            break;
        }
        // A page is filled before it is returned (the store keeps fetching).
        assert_eq!(result.items.len(), 2);
    }
    assert_eq!(seen, wanted);
}

pub async fn list_pages_share_one_revision(h: Harness) {
    create_all(&h, &["a", "b", "c", "d"]).await;
    let first = h.storage.get_list(&h.prefix, page(2, None)).await.unwrap();
    assert_eq!(names(&first), ["a", "b"]);

    // Writes between pages must not show up in later pages.
    h.storage
        .create(&h.key("bb"), object("bb", "bb"))
        .await
        .unwrap();
    h.storage
        .guaranteed_update(&h.key("c"), false, None, &super::set_value("changed"))
        .await
        .unwrap();
    h.storage
        .delete(&h.key("d"), None, &super::allow_delete)
        .await
        .unwrap();

    let second = h
        .storage
        .get_list(&h.prefix, page(10, first.continue_token))
        .await
        .unwrap();
    assert_eq!(names(&second), ["c", "d"]);
    assert_eq!(value_of(&second.items[0]), "c");
    assert_eq!(second.resource_version, first.resource_version);
    assert!(second.continue_token.is_none());
}

pub async fn list_exact_old_revision(h: Harness) {
    let before = create_all(&h, &["a", "b"]).await;
    h.storage
        .guaranteed_update(&h.key("a"), false, None, &super::set_value("new"))
        .await
        .unwrap();
    h.storage
        .delete(&h.key("b"), None, &super::allow_delete)
        .await
        .unwrap();
    create_all(&h, &["c"]).await;

    let old = h
        .storage
        .get_list(&h.prefix, recursive(ReadVersion::Exact(before)))
        .await
        .unwrap();
    assert_eq!(names(&old), ["a", "b"]);
    assert_eq!(value_of(&old.items[0]), "a");
    assert_eq!(old.resource_version, before);
    let now = h
        .storage
        .get_list(&h.prefix, recursive(ReadVersion::MostRecent))
        .await
        .unwrap();
    assert_eq!(names(&now), ["a", "c"]);
    assert_eq!(value_of(&now.items[0]), "new");

    // Paging at an exact revision keeps that revision.
    let opts = ListOptions {
        limit: Some(1),
        ..recursive(ReadVersion::Exact(before))
    };
    let first = h.storage.get_list(&h.prefix, opts).await.unwrap();
    assert_eq!(names(&first), ["a"]);
    let next = h
        .storage
        .get_list(&h.prefix, page(1, first.continue_token))
        .await
        .unwrap();
    assert_eq!(names(&next), ["b"]);
    assert_eq!(next.resource_version, before);
}

pub async fn list_not_older_than(h: Harness) {
    let last = create_all(&h, &["a"]).await;
    let list = h
        .storage
        .get_list(&h.prefix, recursive(ReadVersion::NotOlderThan(last)))
        .await
        .unwrap();
    assert_eq!(names(&list), ["a"]);
    assert!(list.resource_version >= last);
    let any = h
        .storage
        .get_list(&h.prefix, recursive(ReadVersion::Any))
        .await
        .unwrap();
    assert_eq!(names(&any), ["a"]);

    let future = h.storage.current_revision().await.unwrap() + 1000;
    for version in [
        ReadVersion::NotOlderThan(future),
        ReadVersion::Exact(future),
    ] {
        match h.storage.get_list(&h.prefix, recursive(version)).await {
            Err(StorageError::TooLargeResourceVersion { requested, .. }) => {
                assert_eq!(requested, future)
            }
            other => panic!("{version:?}: expected TooLargeResourceVersion, got {other:?}"),
        }
    }
}

pub async fn list_invalid_continue(h: Harness) {
    create_all(&h, &["a", "b"]).await;
    let garbage = page(1, Some("not-a-token!".to_string()));
    assert!(matches!(
        h.storage.get_list(&h.prefix, garbage).await,
        Err(StorageError::InvalidContinue(_))
    ));
    let first = h.storage.get_list(&h.prefix, page(1, None)).await.unwrap();
    let with_rv = ListOptions {
        version: ReadVersion::NotOlderThan(first.resource_version),
        ..page(1, first.continue_token)
    };
    assert!(matches!(
        h.storage.get_list(&h.prefix, with_rv).await,
        Err(StorageError::InvalidContinue(_))
    ));
}

pub async fn compaction_too_old(h: Harness) {
    let key = h.key("a");
    let v1 = rv(&h.storage.create(&key, object("a", "1")).await.unwrap());
    h.storage
        .guaranteed_update(&key, false, None, &super::set_value("2"))
        .await
        .unwrap();
    let v3 = h
        .storage
        .guaranteed_update(&key, false, None, &super::set_value("3"))
        .await
        .unwrap();
    h.kv.compact(rv(&v3)).await.unwrap();

    let exact = GetOptions {
        version: ReadVersion::Exact(v1),
        ignore_not_found: false,
    };
    assert!(matches!(
        h.storage.get(&key, exact).await,
        Err(StorageError::TooOldResourceVersion { .. })
    ));
    assert!(matches!(
        h.storage
            .get_list(&h.prefix, recursive(ReadVersion::Exact(v1)))
            .await,
        Err(StorageError::TooOldResourceVersion { .. })
    ));
    // The state as of the compaction revision and later is still there.
    let at = h
        .storage
        .get_list(&h.prefix, recursive(ReadVersion::Exact(rv(&v3))))
        .await
        .unwrap();
    assert_eq!(value_of(&at.items[0]), "3");
    let latest = h
        .storage
        .get(&key, GetOptions::default())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(value_of(&latest), "3");
}

pub async fn continue_expired_after_compaction(h: Harness) {
    create_all(&h, &["a", "b", "c"]).await;
    let first = h.storage.get_list(&h.prefix, page(1, None)).await.unwrap();
    let later = h
        .storage
        .guaranteed_update(&h.key("a"), false, None, &super::set_value("later"))
        .await
        .unwrap();
    h.kv.compact(rv(&later)).await.unwrap();
    match h
        .storage
        .get_list(&h.prefix, page(1, first.continue_token))
        .await
    {
        Err(StorageError::ContinueExpired { requested }) => {
            assert_eq!(requested, first.resource_version)
        }
        other => panic!("expected ContinueExpired, got {other:?}"),
    }
}

pub async fn list_many_pages(h: Harness) {
    let all: Vec<String> = (0..25).map(|i| format!("item-{i:02}")).collect();
    for n in &all {
        h.storage.create(&h.key(n), object(n, n)).await.unwrap();
    }
    let mut seen = Vec::new();
    let mut remaining = Vec::new();
    let mut token = None;
    loop {
        let result = h
            .storage
            .get_list(&h.prefix, page(10, token))
            .await
            .unwrap();
        seen.extend(names(&result).into_iter().map(str::to_string));
        remaining.push(result.remaining_item_count);
        token = result.continue_token;
        if token.is_none() {
            break;
        }
    }
    assert_eq!(seen, all);
    assert_eq!(remaining, [Some(15), Some(5), None]);
    assert_eq!(h.storage.count(&h.prefix).await.unwrap(), 25);
    assert_eq!(h.storage.count(&h.key("none")).await.unwrap(), 0);
}

pub async fn list_paging_under_concurrent_writes(h: Harness) {
    let all: Vec<String> = (0..30).map(|i| format!("item-{i:02}")).collect();
    for n in &all {
        h.storage.create(&h.key(n), object(n, "0")).await.unwrap();
    }
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (storage, prefix, halt) = (h.storage.clone(), h.prefix.clone(), stop.clone());
    let writer = tokio::spawn(async move {
        let mut round = 0;
        while !halt.load(std::sync::atomic::Ordering::SeqCst) {
            round += 1;
            let n = format!("item-{:02}", round % 30);
            let key = format!("{prefix}/{n}");
            storage
                .guaranteed_update(&key, false, None, &super::set_value(&round.to_string()))
                .await
                .unwrap();
            let extra = format!("{prefix}/new-{round}");
            storage.create(&extra, object("new", "new")).await.unwrap();
            tokio::task::yield_now().await;
        }
    });
    let mut seen = Vec::new();
    let mut token = None;
    let mut revision = None;
    loop {
        let result = h.storage.get_list(&h.prefix, page(7, token)).await.unwrap();
        assert_eq!(
            *revision.get_or_insert(result.resource_version),
            result.resource_version
        );
        seen.extend(result.items);
        token = result.continue_token;
        if token.is_none() {
            break;
        }
        tokio::task::yield_now().await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    writer.await.unwrap();
    // The pages together are exactly the collection as of the first page.
    let revision = revision.unwrap_or_default();
    let snapshot = h
        .storage
        .get_list(&h.prefix, recursive(ReadVersion::Exact(revision)))
        .await
        .unwrap();
    assert_eq!(seen, snapshot.items);
    assert!(seen.iter().all(|o| rv(o) <= revision));
}

pub async fn list_empty_collection(h: Harness) {
    let list = h
        .storage
        .get_list(&h.prefix, recursive(ReadVersion::MostRecent))
        .await
        .unwrap();
    assert!(list.items.is_empty());
    assert!(list.continue_token.is_none() && list.remaining_item_count.is_none());
    // Revision 0 would read as "the current state" to a watch started from
    // this list, so even an empty store reports a revision (etcd's is 1).
    assert!(list.resource_version > 0, "got {}", list.resource_version);
    let paged = h.storage.get_list(&h.prefix, page(5, None)).await.unwrap();
    assert!(paged.items.is_empty() && paged.continue_token.is_none());
}
