//! The aggregator's controllers (upstream's `pkg/controllers`).

pub mod autoregister;
pub mod openapi;
pub mod status;

use std::sync::Arc;
use std::time::Duration;

use client_go::tools::cache::{Lister, ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::RateLimitingQueue;
use client_go::CancellationToken;
use serde_json::Value;

/// Whether an APIService is served by a Service (a remote one).
pub fn is_remote(api_service: &Value) -> bool {
    !api_service["spec"]["service"].is_null()
}

fn name(api_service: &Value) -> String {
    api_service["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

/// Queues every remote APIService of `informer` after `delay` when it is
/// added, changed or deleted (dropping the backoff of a failing one, as
/// upstream's controllers do on an update), and every `period` those not
/// backing off, until `stop`.
pub fn follow_remote(
    informer: &SharedInformer,
    queue: &Arc<RateLimitingQueue<String>>,
    delay: Duration,
    period: Duration,
    stop: CancellationToken,
) {
    let enqueue = queue.clone();
    informer.add_event_handler(ResourceEventHandlerFuncs::on_any(move |s| {
        if is_remote(s) {
            let name = name(s);
            enqueue.forget(&name);
            enqueue.add_after(name, delay);
        }
    }));
    let (queue, lister) = (queue.clone(), informer.lister());
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(period);
        ticks.tick().await;
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = ticks.tick() => requeue(&queue, &lister),
            }
        }
    });
}

fn requeue(queue: &RateLimitingQueue<String>, lister: &Lister) {
    for api_service in lister.list().iter().filter(|s| is_remote(s)) {
        let name = name(api_service);
        if queue.num_requeues(&name) == 0 {
            queue.add(name);
        }
    }
}
