//! The Available condition of local APIServices (upstream's
//! `pkg/controllers/status/local`, the
//! `apiservice-status-local-available-controller`): an APIService served
//! by the chain itself (no `spec.service`) is always available, so
//! `kubectl get apiservices` shows `True` for every built-in and CRD group
//! version. APIServices backed by a Service are the remote controller's.

use std::convert::Infallible;
use std::sync::Arc;

use apiserver::registry::object_meta;
use apiserver::registry::store::Store;
use apiserver::server::GenericApiServer;
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::{ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use serde_json::Value;

use super::metrics::Metrics;
use super::{has, set_available, Available};

const REASON: &str = "Local";
const MESSAGE: &str = "Local APIServices are always available";

/// Starts the controller on `server`; returns the availability series it
/// keeps (added to the server's `/metrics`), for the remote controller to
/// share.
pub fn install(server: &mut GenericApiServer, informers: &SharedInformerFactory) -> Metrics {
    let metrics = Metrics::default();
    server.config().metrics.register_extra(metrics.registry());
    let group = "apiregistration.k8s.io";
    let (Some(informer), Some(api_services)) = (
        informers.informer_for(group, "apiservices"),
        server.store(group, "v1", "apiservices"),
    ) else {
        return metrics;
    };
    let kept = metrics.clone();
    server.add_post_start_hook(
        "apiservice-status-local-available-controller",
        Arc::new(move |ctx| {
            let run = run(
                informer.clone(),
                api_services.clone(),
                kept.clone(),
                ctx.stop,
            );
            tokio::spawn(run);
            Box::pin(async { Ok(()) })
        }),
    );
    metrics
}

/// Follows APIServices and marks the local ones available, by name.
async fn run(
    informer: Arc<SharedInformer>,
    api_services: Arc<Store>,
    metrics: Metrics,
    stop: CancellationToken,
) {
    let queue = RateLimitingQueue::with_default_limiter();
    let enqueue = queue.clone();
    informer.add_event_handler(ResourceEventHandlerFuncs::on_any(move |s| {
        enqueue.add(object_meta::name(s).to_owned());
    }));
    informer.wait_for_sync().await;
    let lister = informer.lister();
    run_workers(queue, 1, stop, move |name: String| {
        let (lister, api_services, metrics) =
            (lister.clone(), api_services.clone(), metrics.clone());
        async move {
            match lister.get(None, &name) {
                None => metrics.forget(&name),
                Some(s) if is_local(&s) => {
                    let written = !has(&s, &wanted()) && mark_available(&api_services, &s).await;
                    metrics.observe(&name, &s, &wanted(), written);
                }
                Some(_) => {}
            }
            Ok::<(), Infallible>(())
        }
    })
    .await;
}

fn wanted() -> Available {
    Available {
        status: "True",
        reason: REASON.to_owned(),
        message: MESSAGE.to_owned(),
    }
}

/// An APIService the chain serves itself (no `spec.service`).
fn is_local(service: &Value) -> bool {
    service.pointer("/spec/service").is_none_or(Value::is_null)
}

async fn mark_available(api_services: &Store, service: &Value) -> bool {
    match service.pointer("/metadata/name").and_then(Value::as_str) {
        Some(name) => set_available(api_services, name, wanted()).await,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn only_local_services_without_the_condition_are_marked() {
        let needs_marking = |s: &Value| is_local(s) && !has(s, &wanted());
        let local = json!({"spec": {"group": "apps", "version": "v1"}});
        assert!(needs_marking(&local));
        let remote = json!({"spec": {"service": {"namespace": "kube-system", "name": "metrics"}}});
        assert!(!needs_marking(&remote));
        let done = json!({"spec": {}, "status": {"conditions": [{"type": "Available",
            "status": "True", "reason": REASON, "message": MESSAGE}]}});
        assert!(!needs_marking(&done));
    }
}
