//! Wires the `kubernetes` Service controller into the server (upstream's
//! `pkg/controlplane/instance.go`: `createEndpointReconciler` and the
//! `bootstrap-controller` post-start and pre-shutdown hooks).

use std::sync::Arc;

use apiserver::server::GenericApiServer;

use super::bootstrap::hook;
use crate::controlplane::controller::kubernetesservice::Controller;
use crate::controlplane::reconcilers::endpointsadapter::EndpointsAdapter;
use crate::controlplane::reconcilers::instancecount::MasterCountEndpointReconciler;
use crate::controlplane::reconcilers::lease::{LeaseEndpointReconciler, Leases};
use crate::controlplane::reconcilers::{EndpointReconciler, DEFAULT_INTERVAL, DEFAULT_TTL};
use crate::controlplane::StorageFactory;
use crate::options::CompletedOptions;

/// The hook name upstream gives the controller.
const HOOK: &str = "bootstrap-controller";

pub fn install(server: &mut GenericApiServer, opts: &CompletedOptions, factory: &StorageFactory) {
    let (Some(services), Some(endpoints), Some(slices)) = (
        server.store("", "v1", "services"),
        server.store("", "v1", "endpoints"),
        server.store("discovery.k8s.io", "v1", "endpointslices"),
    ) else {
        return;
    };
    let flags = &opts.options.flags;
    let service_ip = opts.service_ip_ranges.api_server_service_ip;
    let adapter = EndpointsAdapter::new(endpoints, slices, service_ip);
    let kind = flags.string("endpoint-reconciler-type").unwrap_or_default();
    tracing::info!(reconciler = %kind, "Using reconciler");
    let reconciler = match kind.as_str() {
        "master-count" => {
            let count = flags.int("apiserver-count").unwrap_or(1);
            let count = usize::try_from(count).unwrap_or(1);
            EndpointReconciler::MasterCount(MasterCountEndpointReconciler::new(count, adapter))
        }
        "none" => EndpointReconciler::None,
        _ => {
            let codec = Arc::new(factory.codec);
            let leases = Leases::new(factory.kv.clone(), codec, &factory.prefix, DEFAULT_TTL);
            EndpointReconciler::Lease(LeaseEndpointReconciler::new(adapter, leases))
        }
    };
    let controller = Arc::new(Controller {
        public_ip: opts.advertise_address.to_string(),
        reconciler,
        interval: DEFAULT_INTERVAL,
        service_ip: service_ip.to_string(),
        public_port: opts.options.secure_serving.secure_port,
        node_port: flags.int("kubernetes-service-node-port").unwrap_or(0),
        services,
        kv: factory.kv.clone(),
    });
    let started = controller.clone();
    server.add_post_start_hook(
        HOOK,
        hook(move || {
            let controller = started.clone();
            async move {
                controller.start().await;
                Ok(())
            }
        }),
    );
    server.add_pre_shutdown_hook(
        HOOK,
        Arc::new(move || {
            let controller = controller.clone();
            Box::pin(async move {
                controller.stop().await;
                Ok(())
            })
        }),
    );
}
