//! The apiextensions server (upstream's `pkg/apiserver/apiserver.go`): its
//! [`Config`] (the generic config shared by the chain plus what only this
//! server needs) and `New(delegate)`: a generic server named
//! `apiextensions-apiserver` serving `apiextensions.k8s.io/v1`
//! CustomResourceDefinitions, whose custom resources turn into REST
//! endpoints served by the generic registry, kept in step with the CRDs by
//! the controllers in [`crate::controller`] and published to the aggregator
//! (APIServices, by kube-apiserver's CRD registration controller) and to
//! OpenAPI.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use apiserver::admission::Chain;
use apiserver::registry::store::{Store, Strategies};
use apiserver::registry::ResourceInfo;
use apiserver::server::{CompletedConfig, DelegationTarget, GenericApiServer, PostStartHookFn};
use client_go::informers::SharedInformerFactory;
use tokio::sync::watch;

use crate::apiserver::customresource_handler::StoreFactory;
use crate::controller::{CrdController, Snapshot};
use crate::registry::customresourcedefinition;

/// Builds the store of a resource over the chain's storage (upstream's
/// `RESTOptionsGetter` from the kube-apiserver's storage factory).
pub type RestOptionsGetter<'a> = Box<dyn Fn(ResourceInfo, Strategies) -> Arc<Store> + 'a>;

/// What the apiextensions server needs beyond the generic config
/// (upstream's `ExtraConfig`).
pub struct ExtraConfig<'a> {
    /// The CRD resource as the built-in catalogue types it (names,
    /// decoding, table, field selectors); `None` when `--runtime-config`
    /// disables it.
    pub crd: Option<(ResourceInfo, Strategies)>,
    pub rest_options_getter: RestOptionsGetter<'a>,
    /// Builds custom resources' stores (upstream's `CRDRESTOptionsGetter`).
    pub crd_rest_options: StoreFactory,
    /// The chain's shared informers: the CRD informer is added here.
    pub informers: &'a SharedInformerFactory,
}

/// The apiextensions server's configuration.
pub struct Config<'a> {
    pub generic: &'a CompletedConfig,
    pub extra: ExtraConfig<'a>,
}

/// The built apiextensions server (upstream's `CustomResourceDefinitions`).
pub struct CustomResourceDefinitions {
    pub generic_api_server: GenericApiServer,
    pub custom_resources: CustomResources,
}

impl Config<'_> {
    /// Upstream's `New(delegationTarget)`: the CRD resource with its
    /// strategy over the typed one, the CRD informer, and the controllers
    /// as post-start hooks.
    pub fn new_server(self, delegate: &dyn DelegationTarget) -> CustomResourceDefinitions {
        let ExtraConfig {
            crd,
            rest_options_getter,
            crd_rest_options,
            informers,
        } = self.extra;
        let mut server = self.generic.new_server("apiextensions-apiserver", delegate);
        if let Some((info, typed)) = crd {
            let (group, version) = (info.group.clone(), info.version.clone());
            let store = rest_options_getter(info, customresourcedefinition::strategies(typed));
            informers.add_source(&group, &store.info.resource.clone(), store.clone());
            server.install_group_version(&group, &version, vec![store], Vec::new());
        }
        let custom_resources = start_controllers(&mut server, informers, crd_rest_options);
        CustomResourceDefinitions {
            generic_api_server: server,
            custom_resources,
        }
    }
}

/// What the rest of the chain needs from the custom resource machinery.
#[derive(Clone)]
pub struct CustomResources {
    snapshots: watch::Receiver<Snapshot>,
    /// Shared with the store factory.
    admission: Arc<OnceLock<Arc<Chain>>>,
}

impl CustomResources {
    /// Every CRD, as the controller last saw it; changes are signalled.
    pub fn snapshots(&self) -> watch::Receiver<Snapshot> {
        self.snapshots.clone()
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
fn start_controllers(
    server: &mut GenericApiServer,
    informers: &SharedInformerFactory,
    factory: StoreFactory,
) -> CustomResources {
    let (sender, snapshots) = watch::channel(Snapshot::default());
    let resources = CustomResources {
        snapshots,
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
    server.add_post_start_hook(
        "start-apiextensions-controllers",
        Arc::new(move |ctx| {
            // The hook runs once; the controller is taken on that run.
            if let Some(c) = controller.lock().ok().and_then(|mut c| c.take()) {
                tokio::spawn(c.run(informer.clone(), ctx.stop));
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
