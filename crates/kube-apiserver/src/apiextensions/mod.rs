//! The apiextensions server's custom resources (upstream's
//! apiextensions-apiserver): CRDs turn into REST endpoints served by the
//! generic registry, kept in step with the CRDs by the controllers in
//! [`controller`], and published to the aggregator (APIServices) and to
//! OpenAPI.

mod conditions;
pub mod controller;
pub mod conversion;
pub mod crd;
mod finalizer;
mod jsonpath;
pub mod openapi;
mod printer;
mod registration;
pub mod serving;
mod status;
mod strategy;
mod version;
mod webhook;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use apiserver::admission::Chain;
use apiserver::registry::store::Store;
use apiserver::server::{GenericApiServer, PostStartHookFn};
use client_go::informers::SharedInformerFactory;
use tokio::sync::watch;

use controller::{CrdController, Snapshot};
use serving::StoreFactory;

/// What the rest of the chain needs from the custom resource machinery.
#[derive(Clone)]
pub struct CustomResources {
    snapshots: watch::Receiver<Snapshot>,
    /// The aggregator's APIService store, once the aggregator is built.
    api_services: Arc<OnceLock<Arc<Store>>>,
    /// Shared with the store factory.
    admission: Arc<OnceLock<Arc<Chain>>>,
}

impl CustomResources {
    /// Every CRD, as the controller last saw it; changes are signalled.
    pub fn snapshots(&self) -> watch::Receiver<Snapshot> {
        self.snapshots.clone()
    }

    /// Registers an APIService in `api_services` for every served CRD group
    /// version, and removes those no CRD serves any more.
    pub fn register_api_services(&self, api_services: Arc<Store>) {
        // Set once, by the chain that built the aggregator.
        let _ = self.api_services.set(api_services);
    }

    /// Admits custom resources with `chain` (the built-in stores' chain).
    pub fn set_admission(&self, chain: Arc<Chain>) {
        // Set once, before serving starts; stores built later take it.
        let _ = self.admission.set(chain);
    }
}

fn hook<F, Fut>(f: F) -> PostStartHookFn
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), String>> + Send + 'static,
{
    Arc::new(move |_| Box::pin(f()))
}

/// Starts serving custom resources from the apiextensions server: the CRD
/// controllers run as its post-start hooks (`start-apiextensions-controllers`,
/// with readiness `crd-informer-synced` once every CRD has been handled).
pub fn install(
    server: &mut GenericApiServer,
    informers: &SharedInformerFactory,
    factory: StoreFactory,
) -> CustomResources {
    let (sender, snapshots) = watch::channel(Snapshot::default());
    let resources = CustomResources {
        snapshots,
        api_services: Arc::default(),
        admission: factory.admission.clone(),
    };
    let group = "apiextensions.k8s.io";
    let (Some(crds), Some(informer)) = (
        server.store(group, "v1", "customresourcedefinitions"),
        informers.informer_for(group, "customresourcedefinitions"),
    ) else {
        return resources;
    };
    let synced = Arc::new(AtomicBool::new(false));
    let controller = std::sync::Mutex::new(Some(CrdController::new(
        crds,
        factory,
        server.dynamic_groups(),
        synced.clone(),
        sender,
    )));
    let (registrar, api_services) = (resources.snapshots(), resources.api_services.clone());
    server.add_post_start_hook(
        "start-apiextensions-controllers",
        Arc::new(move |ctx| {
            // The hook runs once; the controller is taken on that run.
            if let Some(c) = controller.lock().ok().and_then(|mut c| c.take()) {
                tokio::spawn(c.run(informer.clone(), ctx.stop));
            }
            if let Some(store) = api_services.get() {
                tokio::spawn(registration::run(store.clone(), registrar.clone()));
            }
            Box::pin(async { Ok(()) })
        }),
    );
    server.add_post_start_hook(
        "crd-informer-synced",
        hook(move || {
            let synced = synced.clone();
            async move {
                while !synced.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Ok(())
            }
        }),
    );
    resources
}
