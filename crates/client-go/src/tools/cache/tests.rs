//! The informer against [`Fake`]: list then watch, relist after a failed
//! watch, reopen after a closed one, resync, late handlers.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use storage::Object;
use tokio_util::sync::CancellationToken;

use super::testing::Fake;
use super::{meta_namespace_key, ResourceEventHandler, SharedInformer};

#[derive(Default, Clone)]
struct Recorder(Arc<Mutex<Vec<String>>>);

impl Recorder {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut self.0.lock().unwrap())
    }

    fn push(&self, what: &str, obj: &Object) {
        let line = format!("{what} {}", meta_namespace_key(obj));
        self.0.lock().unwrap().push(line);
    }
}

impl ResourceEventHandler for Recorder {
    fn on_add(&self, obj: &Object, initial: bool) {
        self.push(if initial { "initial" } else { "add" }, obj);
    }

    fn on_update(&self, old: &Object, new: &Object) {
        self.push(if old == new { "unchanged" } else { "update" }, new);
    }

    fn on_delete(&self, obj: &Object) {
        self.push("delete", obj);
    }
}

/// Lets the informer's task run (time is paused: nothing else moves).
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

fn start(fake: &Arc<Fake>, resync: Option<Duration>) -> (Arc<SharedInformer>, Recorder) {
    let informer = SharedInformer::new(fake.clone(), resync);
    let recorder = Recorder::default();
    informer.add_event_handler(recorder.clone());
    tokio::spawn(informer.clone().run(CancellationToken::new()));
    (informer, recorder)
}

fn data(v: &Value) -> Value {
    json!({"v": v})
}

#[tokio::test(start_paused = true)]
async fn lists_then_watches_from_the_lists_revision() {
    let fake = Arc::new(Fake::default());
    fake.put("a", "x", data(&json!(1)));
    fake.put("b", "y", data(&json!(1)));
    let (informer, recorder) = start(&fake, None);
    informer.wait_for_sync().await;
    assert_eq!(recorder.take(), ["initial a/x", "initial b/y"]);
    settle().await;
    assert_eq!(fake.watches(), [2]);
    fake.put("a", "x", data(&json!(2)));
    fake.put("a", "z", data(&json!(1)));
    fake.delete("b", "y");
    settle().await;
    assert_eq!(recorder.take(), ["update a/x", "add a/z", "delete b/y"]);
    let lister = informer.lister();
    assert_eq!(lister.get(Some("a"), "x").unwrap()["data"]["v"], 2);
    assert!(lister.get(Some("b"), "y").is_none());
    assert_eq!(lister.list_namespace("a").len(), 2);
    assert_eq!(lister.list().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn an_expired_watch_relists_after_a_backoff_and_reports_what_it_missed() {
    let fake = Arc::new(Fake::default());
    fake.put("a", "x", data(&json!(1)));
    fake.put("a", "y", data(&json!(1)));
    let (informer, recorder) = start(&fake, None);
    informer.wait_for_sync().await;
    settle().await;
    recorder.take();
    fake.end_watches(true);
    fake.delete_quietly("a", "y");
    settle().await;
    // Nothing before the backoff's first wait (at least 800 ms).
    tokio::time::advance(Duration::from_millis(799)).await;
    settle().await;
    assert_eq!(fake.lists(), 1);
    tokio::time::advance(Duration::from_millis(801)).await;
    settle().await;
    assert_eq!(fake.lists(), 2);
    assert_eq!(recorder.take(), ["unchanged a/x", "delete a/y"]);
    assert!(informer.lister().get(Some("a"), "y").is_none());
}

#[tokio::test(start_paused = true)]
async fn a_closed_watch_is_reopened_from_the_last_revision_without_a_list() {
    let fake = Arc::new(Fake::default());
    fake.put("a", "x", data(&json!(1)));
    let (informer, _recorder) = start(&fake, None);
    informer.wait_for_sync().await;
    settle().await;
    fake.put("a", "x", data(&json!(2)));
    settle().await;
    fake.end_watches(false);
    settle().await;
    tokio::time::advance(Duration::from_secs(2)).await;
    settle().await;
    assert_eq!(fake.lists(), 1);
    assert_eq!(fake.watches(), [1, 2]);
}

#[tokio::test(start_paused = true)]
async fn resync_reports_every_object_each_period() {
    let fake = Arc::new(Fake::default());
    fake.put("a", "x", data(&json!(1)));
    let (informer, recorder) = start(&fake, Some(Duration::from_secs(10)));
    informer.wait_for_sync().await;
    settle().await;
    recorder.take();
    tokio::time::advance(Duration::from_secs(9)).await;
    settle().await;
    assert!(recorder.take().is_empty());
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    assert_eq!(recorder.take(), ["unchanged a/x"]);
}

#[tokio::test(start_paused = true)]
async fn a_late_handler_is_told_of_every_cached_object() {
    let fake = Arc::new(Fake::default());
    fake.put("a", "x", data(&json!(1)));
    let (informer, _) = start(&fake, None);
    informer.wait_for_sync().await;
    let late = Recorder::default();
    informer.add_event_handler(late.clone());
    assert_eq!(late.take(), ["add a/x"]);
}

#[tokio::test(start_paused = true)]
async fn a_removed_handler_is_told_nothing_more() {
    let fake = Arc::new(Fake::default());
    let (informer, kept) = start(&fake, None);
    let removed = Recorder::default();
    let registration = informer.add_event_handler(removed.clone());
    informer.wait_for_sync().await;
    fake.put("a", "x", data(&json!(1)));
    settle().await;
    informer.remove_event_handler(registration);
    informer.remove_event_handler(registration);
    fake.put("a", "y", data(&json!(1)));
    settle().await;
    assert_eq!(removed.take(), ["add a/x"]);
    assert_eq!(kept.take(), ["add a/x", "add a/y"]);
    assert_eq!(informer.handler_count(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_handler_added_until_a_token_goes_with_it() {
    let fake = Arc::new(Fake::default());
    let (informer, _) = start(&fake, None);
    informer.wait_for_sync().await;
    let stop = CancellationToken::new();
    let term = Recorder::default();
    informer.add_event_handler_until(term.clone(), &stop);
    fake.put("a", "x", data(&json!(1)));
    settle().await;
    assert_eq!(term.take(), ["add a/x"]);
    assert_eq!(informer.handler_count(), 2);
    stop.cancel();
    // Told nothing from the cancellation on, even before it is removed.
    fake.put("a", "x", data(&json!(2)));
    settle().await;
    assert!(term.take().is_empty());
    assert_eq!(informer.handler_count(), 1);
}
