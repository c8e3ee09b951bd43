//! The default ServiceCIDR controller (upstream's
//! `pkg/controlplane/controller/defaultservicecidr`, the post-start hook
//! `start-kubernetes-service-cidr-controller`): the ServiceCIDR
//! `kubernetes` made from `--service-cluster-ip-range`, recreated when
//! deleted and marked Ready; serving waits for it. After that it is synced
//! whenever the informer reports a change to it and every ten seconds, as
//! upstream's `wait.Until(c.sync, c.interval)`.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::registry::object_meta;
use apiserver::registry::store::{Store, Target, WriteOptions};
use apiserver::server::GenericApiServer;
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::{ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use serde_json::{json, Value};

use crate::options::Cidr;

/// The default ServiceCIDR's name.
pub const DEFAULT_SERVICE_CIDR: &str = "kubernetes";
const NETWORKING: &str = "networking.k8s.io";
/// How often the default ServiceCIDR is checked (upstream's interval).
const RESYNC: Duration = Duration::from_secs(10);

/// Installs the hook; nothing when `--runtime-config` leaves ServiceCIDRs
/// off.
pub fn install(server: &mut GenericApiServer, informers: &SharedInformerFactory, cidrs: &[Cidr]) {
    let (Some(store), Some(informer)) = (
        server.store(NETWORKING, "v1", "servicecidrs"),
        informers.informer_for(NETWORKING, "servicecidrs"),
    ) else {
        return;
    };
    let wanted: Vec<String> = cidrs.iter().map(Cidr::to_string).collect();
    server.add_post_start_hook(
        "start-kubernetes-service-cidr-controller",
        Arc::new(move |ctx| {
            let (store, wanted, informer) = (store.clone(), wanted.clone(), informer.clone());
            Box::pin(async move {
                // Serving waits for the default range, as upstream's does.
                while let Err(e) = sync(&store, &wanted).await {
                    tracing::info!(error = %e.message, "creating the default ServiceCIDR");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                tokio::spawn(run(informer, store, wanted, ctx.stop));
                Ok(())
            })
        }),
    );
}

/// Syncs the default ServiceCIDR when it changes and every [`RESYNC`],
/// until `stop`.
async fn run(
    informer: Arc<SharedInformer>,
    store: Arc<Store>,
    wanted: Vec<String>,
    stop: CancellationToken,
) {
    let queue = RateLimitingQueue::<()>::with_default_limiter();
    let enqueue = queue.clone();
    informer.add_event_handler(ResourceEventHandlerFuncs::on_any(move |cidr| {
        if object_meta::name(cidr) == DEFAULT_SERVICE_CIDR {
            enqueue.add(());
        }
    }));
    queue.add_every((), RESYNC, stop.clone());
    let wanted = Arc::new(wanted);
    run_workers(queue, 1, stop, move |()| {
        let (store, wanted) = (store.clone(), wanted.clone());
        async move {
            let synced = sync(&store, &wanted).await;
            if let Err(e) = &synced {
                tracing::info!(error = %e.message, "syncing the default ServiceCIDR");
            }
            synced
        }
    })
    .await;
}

/// Creates or recreates the default ServiceCIDR and marks it Ready, as
/// upstream's `kubernetes-service-cidr-controller` does: a single-stack
/// one becomes dual-stack when a second range is configured; one that
/// differs from the flags is left alone.
async fn sync(store: &Store, wanted: &[String]) -> Result<(), ApiError> {
    let current = match store
        .get(None, DEFAULT_SERVICE_CIDR, Default::default())
        .await
    {
        Ok(obj) => obj,
        Err(e) if e.code == 404 => {
            let obj = json!({"apiVersion": "networking.k8s.io/v1", "kind": "ServiceCIDR",
                "metadata": {"name": DEFAULT_SERVICE_CIDR}, "spec": {"cidrs": wanted}});
            match store.create(obj, &WriteOptions::default()).await {
                Ok(obj) => obj,
                Err(e) if e.code == 409 => return Ok(()),
                Err(e) => return Err(e),
            }
        }
        Err(e) => return Err(e),
    };
    let cidrs = current.pointer("/spec/cidrs").cloned().unwrap_or(json!([]));
    let single = cidrs.as_array().map_or(0, Vec::len) == 1;
    if wanted.len() == 2 && single && cidrs[0].as_str() == Some(&wanted[0]) {
        let wanted = wanted.to_vec();
        let mutate = Arc::new(move |obj: Option<&Value>| {
            let mut obj = obj.cloned().unwrap_or_default();
            obj["spec"]["cidrs"] = json!(wanted);
            Ok(obj)
        });
        let target = Target::Main;
        store
            .update(
                None,
                DEFAULT_SERVICE_CIDR,
                target,
                mutate,
                &WriteOptions::default(),
            )
            .await?;
        return Ok(());
    }
    if current.pointer("/metadata/deletionTimestamp").is_some() || cidrs != json!(wanted) {
        return Ok(());
    }
    let ready = current
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .and_then(|c| c["status"].as_str());
    if matches!(ready, Some("True" | "False")) {
        return Ok(());
    }
    let mutate = Arc::new(|obj: Option<&Value>| {
        let mut obj = obj.cloned().unwrap_or_default();
        obj["status"] = json!({"conditions": [{"type": "Ready", "status": "True",
            "lastTransitionTime": object_meta::now(), "reason": "",
            "message": "Kubernetes default Service CIDR is ready"}]});
        Ok(obj)
    });
    let opts = WriteOptions::default();
    store
        .update(None, DEFAULT_SERVICE_CIDR, Target::Status, mutate, &opts)
        .await?;
    Ok(())
}
