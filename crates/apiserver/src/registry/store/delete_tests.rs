use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::registry::deletion::PropagationPolicy;
use crate::registry::rest::{GarbageCollectionDeleteStrategy, GcPolicy, GracefulDeleteStrategy};
use crate::registry::store::{Mutate, Target, WriteOptions};
use crate::registry::ResourceInfo;

/// Pods' graceful deletion: the requested period, else 30; 0 unscheduled.
struct PodLike;

impl GracefulDeleteStrategy for PodLike {
    fn grace_period(&self, obj: &Value, requested: Option<i64>) -> Option<i64> {
        let scheduled = obj.pointer("/spec/nodeName").is_some();
        Some(if scheduled {
            requested.unwrap_or(30)
        } else {
            0
        })
    }
}

/// A resource whose dependents are orphaned by default.
struct Orphaning;

impl GarbageCollectionDeleteStrategy for Orphaning {
    fn gc_policy(&self) -> GcPolicy {
        GcPolicy::OrphanDependents
    }
}

fn store(strategies: Strategies) -> Store {
    let info = ResourceInfo::testing("", "Widget");
    Store::in_memory(info, strategies)
}

async fn create(store: &Store, obj: Value) {
    store
        .create(obj, &WriteOptions::default())
        .await
        .expect("created");
}

async fn exists(store: &Store, name: &str) -> Option<Object> {
    store
        .get(Some("ns"), name, GetOptions::default())
        .await
        .ok()
}

fn with_grace(seconds: i64) -> DeleteOptions {
    DeleteOptions {
        grace_period_seconds: Some(seconds),
        ..Default::default()
    }
}

#[tokio::test]
async fn unscheduled_pods_go_at_once_and_scheduled_ones_wait() {
    let s = store(Strategies {
        graceful_delete: Arc::new(PodLike),
        ..Strategies::default()
    });
    create(&s, json!({"metadata": {"name": "a", "namespace": "ns"}})).await;
    let out = s.delete(Some("ns"), "a", &Default::default()).await;
    assert!(matches!(out, Ok(DeleteOutcome::Deleted(_))));
    assert!(exists(&s, "a").await.is_none());

    create(
        &s,
        json!({"metadata": {"name": "b", "namespace": "ns"}, "spec": {"nodeName": "n1"}}),
    )
    .await;
    let Ok(DeleteOutcome::Pending(obj)) = s.delete(Some("ns"), "b", &Default::default()).await
    else {
        panic!("a scheduled pod waits for its grace period");
    };
    assert_eq!(obj["metadata"]["deletionGracePeriodSeconds"], 30);
    // A longer period changes nothing; a shorter one is taken.
    let Ok(DeleteOutcome::Pending(same)) = s.delete(Some("ns"), "b", &with_grace(60)).await else {
        panic!("still pending");
    };
    assert_eq!(
        same["metadata"]["resourceVersion"],
        obj["metadata"]["resourceVersion"]
    );
    let Ok(DeleteOutcome::Pending(shorter)) = s.delete(Some("ns"), "b", &with_grace(10)).await
    else {
        panic!("still pending");
    };
    assert_eq!(shorter["metadata"]["deletionGracePeriodSeconds"], 10);
    // Force: zero grace period.
    let out = s.delete(Some("ns"), "b", &with_grace(0)).await;
    assert!(matches!(out, Ok(DeleteOutcome::Deleted(_))), "{out:?}");
    assert!(exists(&s, "b").await.is_none());
}

#[tokio::test]
async fn propagation_policies_set_the_collectors_finalizers() {
    let s = store(Strategies::default());
    create(
        &s,
        json!({"metadata": {"name": "fg", "namespace": "ns", "finalizers": ["x/y"]}}),
    )
    .await;
    let foreground = DeleteOptions {
        propagation_policy: Some(PropagationPolicy::Foreground),
        ..Default::default()
    };
    let Ok(DeleteOutcome::Pending(obj)) = s.delete(Some("ns"), "fg", &foreground).await else {
        panic!("kept for the collector");
    };
    assert_eq!(
        obj["metadata"]["finalizers"],
        json!(["x/y", "foregroundDeletion"])
    );
    assert!(object_meta::is_terminating(&obj));
    // Once deleting, a new policy still updates the finalizers.
    let orphan = DeleteOptions {
        orphan_dependents: Some(true),
        ..Default::default()
    };
    let Ok(DeleteOutcome::Pending(obj)) = s.delete(Some("ns"), "fg", &orphan).await else {
        panic!("still kept");
    };
    assert_eq!(obj["metadata"]["finalizers"], json!(["x/y", "orphan"]));

    create(&s, json!({"metadata": {"name": "bg", "namespace": "ns"}})).await;
    let out = s.delete(Some("ns"), "bg", &Default::default()).await;
    assert!(matches!(out, Ok(DeleteOutcome::Deleted(_))));
}

#[tokio::test]
async fn default_orphaning_and_removal_of_the_last_finalizer() {
    let s = store(Strategies {
        garbage_collection: Arc::new(Orphaning),
        ..Strategies::default()
    });
    create(&s, json!({"metadata": {"name": "rc", "namespace": "ns"}})).await;
    let Ok(DeleteOutcome::Pending(obj)) = s.delete(Some("ns"), "rc", &Default::default()).await
    else {
        panic!("orphaned by default");
    };
    assert_eq!(obj["metadata"]["finalizers"], json!(["orphan"]));
    // The collector removes its finalizer: the object goes.
    let strip: Mutate = Arc::new(|current: Option<&Value>| {
        let mut obj = current.cloned().unwrap_or_default();
        obj["metadata"]["finalizers"] = json!([]);
        Ok(obj)
    });
    let (last, _) = s
        .update(
            Some("ns"),
            "rc",
            Target::Main,
            strip,
            &WriteOptions::default(),
        )
        .await
        .expect("updated");
    assert!(object_meta::is_terminating(&last));
    assert!(exists(&s, "rc").await.is_none());
}

#[tokio::test]
async fn preconditions_are_checked_as_upstream_words_them() {
    let s = store(Strategies::default());
    create(&s, json!({"metadata": {"name": "a", "namespace": "ns"}})).await;
    let opts = DeleteOptions {
        preconditions: Some(Preconditions {
            uid: Some("other".into()),
            resource_version: None,
        }),
        ..Default::default()
    };
    let err = s
        .delete(Some("ns"), "a", &opts)
        .await
        .map(|_| ())
        .expect_err("uid differs");
    assert_eq!(err.code, 409);
    assert!(
        err.message.starts_with(
            "Operation cannot be fulfilled on Widget \"a\": the UID in the precondition (other)"
        ),
        "{}",
        err.message
    );
    assert!(exists(&s, "a").await.is_some());
}

#[tokio::test]
async fn dry_run_leaves_the_object() {
    let s = store(Strategies {
        graceful_delete: Arc::new(PodLike),
        ..Strategies::default()
    });
    create(
        &s,
        json!({"metadata": {"name": "b", "namespace": "ns"}, "spec": {"nodeName": "n"}}),
    )
    .await;
    let opts = DeleteOptions {
        dry_run: true,
        ..Default::default()
    };
    let Ok(DeleteOutcome::Pending(obj)) = s.delete(Some("ns"), "b", &opts).await else {
        panic!("would wait");
    };
    assert!(object_meta::is_terminating(&obj));
    let stored = exists(&s, "b").await.expect("still there");
    assert!(!object_meta::is_terminating(&stored));
}
