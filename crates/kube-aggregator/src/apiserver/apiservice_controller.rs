//! Keeps the proxy's routes in step with the APIServices (upstream's
//! `APIServiceRegistrationController`, `apiservice_controller.go`): a
//! remote APIService routes its group version to its Service, with the
//! availability its condition records; a deleted or local one routes
//! nothing, and a deleted remote one leaves discovery.

use std::convert::Infallible;
use std::sync::Arc;

use apiserver::server::DiscoveryRegistry;
use client_go::tools::cache::{ResourceEventHandlerFuncs, SharedInformer};
use client_go::transport::ClientAuth;
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;

use super::handler_proxy::{ProxyTable, ProxyTarget};

pub struct Controller {
    pub table: ProxyTable,
    pub discovery: DiscoveryRegistry,
    pub client: Option<Arc<ClientAuth>>,
}

impl Controller {
    /// Follows the APIServices of `informer` until `stop`.
    pub async fn run(self, informer: Arc<SharedInformer>, stop: CancellationToken) {
        let queue = RateLimitingQueue::with_default_limiter();
        let enqueue = queue.clone();
        informer.add_event_handler(ResourceEventHandlerFuncs::on_any(move |s| {
            enqueue.add(
                s["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
        }));
        informer.wait_for_sync().await;
        let (lister, this) = (informer.lister(), Arc::new(self));
        run_workers(queue, 1, stop, move |name: String| {
            let (lister, this) = (lister.clone(), this.clone());
            async move {
                let current = lister.get(None, &name);
                let target = current
                    .as_deref()
                    .and_then(|s| ProxyTarget::of(s, this.client.as_deref()));
                let gone = this.table.remove_named(&name);
                let spec = current.as_ref().map(|s| &s["spec"]);
                let kept = spec.map(|s| {
                    let text = |k: &str| s[k].as_str().unwrap_or_default().to_owned();
                    (text("group"), text("version"))
                });
                for gv in gone
                    .into_iter()
                    .filter(|gv| Some(gv) != kept.as_ref() || target.is_none())
                {
                    this.discovery.remove(&gv.0, &gv.1);
                }
                if let (Some(target), Some((group, version))) = (target, kept) {
                    this.table.set(&group, &version, Some(target));
                }
                Ok::<(), Infallible>(())
            }
        })
        .await;
    }
}
