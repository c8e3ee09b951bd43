//! The controllers around Service addresses (upstream's
//! `pkg/registry/core/service/ipallocator/controller` and the allocator's
//! ServiceCIDR informer), on the shared informers: the ranges ServiceCIDRs
//! add, and the IPAddress objects that record each ClusterIP (created for
//! every address a stored Service holds, deleted with the Service,
//! recreated when deleted under a Service, orphans removed at startup).
//! The allocator stays the authority on what is free, so concurrent
//! creates never collide; the objects follow within milliseconds through
//! the informer of Services. The default ServiceCIDR is
//! `controlplane::controller::defaultservicecidr`'s.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::registry::object_meta;
use apiserver::registry::store::{Store, WriteOptions};
use apiserver::server::GenericApiServer;
use client_go::informers::SharedInformerFactory;
use client_go::tools::cache::{Lister, ResourceEventHandlerFuncs, SharedInformer};
use client_go::CancellationToken;
use serde_json::{json, Value};
use storage::{ListOptions, Object};
use tokio::sync::mpsc;

use super::super::{cluster_ips, ip_family, ServiceAllocator};
use crate::options::Cidr;

const NETWORKING: &str = "networking.k8s.io";
const FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
/// Upstream's allocator's name, the managed-by value of its IPAddresses.
pub const MANAGED_BY: &str = "ipallocator.k8s.io";

/// A Service as an IPAddress's parent: namespace and name.
type Parent = (String, String);

/// Feeds the allocator the ServiceCIDRs and installs the post-start hook
/// `start-service-ip-repair-controllers`; nothing for the resources
/// `--runtime-config` leaves off.
pub fn install(
    server: &mut GenericApiServer,
    informers: &SharedInformerFactory,
    allocator: Arc<ServiceAllocator>,
) {
    if let Some(cidrs) = informers.informer_for(NETWORKING, "servicecidrs") {
        follow_service_cidrs(&cidrs, allocator.clone());
    }
    let (Some(services), Some(address_informer), Some(addresses)) = (
        informers.informer_for("", "services"),
        informers.informer_for(NETWORKING, "ipaddresses"),
        server.store(NETWORKING, "v1", "ipaddresses"),
    ) else {
        return;
    };
    server.add_post_start_hook(
        "start-service-ip-repair-controllers",
        Arc::new(move |ctx| {
            let recorder = Recorder {
                addresses: addresses.clone(),
                allocator: allocator.clone(),
                held: HashMap::new(),
            };
            let informers = [services.clone(), address_informer.clone()];
            tokio::spawn(recorder.run(informers, ctx.stop));
            Box::pin(async { Ok(()) })
        }),
    );
}

/// Marks what stored Services and IPAddress objects hold as used, before
/// the server takes requests (upstream's ClusterIP and NodePort repair).
pub async fn repair(
    allocator: &ServiceAllocator,
    services: &Store,
    addresses: Option<&Store>,
) -> Result<(), ApiError> {
    for svc in &services.list(None, ListOptions::default()).await?.items {
        allocator.mark_used(svc);
    }
    if let Some(addresses) = addresses {
        for obj in &addresses.list(None, ListOptions::default()).await?.items {
            if let Some(ip) = address_of(obj) {
                allocator.mark_ip_used(ip);
            }
        }
    }
    Ok(())
}

fn name(obj: &Value) -> &str {
    object_meta::name(obj)
}

/// The address an IPAddress object names.
fn address_of(obj: &Value) -> Option<IpAddr> {
    name(obj).parse().ok()
}

fn parent_of(obj: &Value) -> Option<Parent> {
    let parent = obj.pointer("/spec/parentRef")?;
    let field = |f: &str| parent.get(f).and_then(Value::as_str);
    let group = field("group").unwrap_or("");
    (group.is_empty() && field("resource") == Some("services")).then(|| {
        let ns = field("namespace").unwrap_or("").to_owned();
        (ns, field("name").unwrap_or("").to_owned())
    })
}

fn is_managed(obj: &Value) -> bool {
    obj.pointer("/metadata/labels")
        .and_then(|l| l.get(MANAGED_BY_LABEL))
        .and_then(Value::as_str)
        == Some(MANAGED_BY)
}

fn service_parent(svc: &Value) -> Parent {
    let ns = object_meta::namespace(svc).unwrap_or("");
    (ns.to_owned(), name(svc).to_owned())
}

/// The IPAddress object recording that `parent` holds `ip`.
pub fn ip_address_object(ip: IpAddr, parent: &Parent) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "IPAddress",
        "metadata": {"name": ip.to_string(), "labels": {
            FAMILY_LABEL: ip_family(ip),
            MANAGED_BY_LABEL: MANAGED_BY,
        }},
        "spec": {"parentRef": {"resource": "services",
            "namespace": parent.0, "name": parent.1}},
    })
}

/// The ranges a ServiceCIDR adds: none unless it is ready (no Ready
/// condition counts as ready, as upstream assumes without a controller
/// manager) and not being deleted.
fn usable_ranges(obj: &Value) -> Option<Vec<Cidr>> {
    let ready = obj
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .is_none_or(|c| c["status"] == "True");
    if !ready || obj.pointer("/metadata/deletionTimestamp").is_some() {
        return None;
    }
    let cidrs = obj.pointer("/spec/cidrs")?.as_array()?;
    Some(
        cidrs
            .iter()
            .filter_map(|c| c.as_str()?.parse().ok())
            .collect(),
    )
}

/// Feeds the allocator the ranges of every ServiceCIDR as they change.
fn follow_service_cidrs(informer: &SharedInformer, allocator: Arc<ServiceAllocator>) {
    let deleted = allocator.clone();
    informer.add_event_handler(ResourceEventHandlerFuncs {
        add: Some(Box::new(move |o| {
            allocator.set_service_cidr(name(o), usable_ranges(o))
        })),
        update: None,
        delete: Some(Box::new(move |o| deleted.set_service_cidr(name(o), None))),
    });
}

/// What the informers of Services and IPAddresses report, in order.
enum Change {
    Service(Object),
    ServiceGone(Object),
    Address(Object),
    AddressGone(Object),
}

struct Recorder {
    addresses: Arc<Store>,
    allocator: Arc<ServiceAllocator>,
    /// Which Service holds each ClusterIP, as the watch last said.
    held: HashMap<IpAddr, Parent>,
}

impl Recorder {
    /// Keeps IPAddress objects in step with the ClusterIPs Services hold,
    /// from the informers' first lists until `stop`.
    async fn run(mut self, informers: [Arc<SharedInformer>; 2], stop: CancellationToken) {
        let [services, addresses] = informers;
        let (tx, mut changes) = mpsc::unbounded_channel();
        let report = |upserted: fn(Object) -> Change, gone: fn(Object) -> Change, tx| {
            ResourceEventHandlerFuncs::send_to(tx, upserted, gone)
        };
        services.add_event_handler(report(Change::Service, Change::ServiceGone, tx.clone()));
        addresses.add_event_handler(report(Change::Address, Change::AddressGone, tx));
        services.wait_for_sync().await;
        addresses.wait_for_sync().await;
        self.remove_orphans(&services.lister(), &addresses.lister())
            .await;
        loop {
            let change = tokio::select! {
                _ = stop.cancelled() => return,
                change = changes.recv() => change,
            };
            match change {
                Some(Change::Service(svc)) => self.held_by(&svc).await,
                Some(Change::ServiceGone(svc)) => self.let_go(&svc).await,
                Some(Change::Address(obj)) => self.added(&obj),
                Some(Change::AddressGone(obj)) => self.deleted(&obj).await,
                None => return,
            }
        }
    }

    /// Deletes this allocator's IPAddresses that no Service holds any more
    /// (a deletion the server did not live to record), freeing them.
    async fn remove_orphans(&mut self, services: &Lister, addresses: &Lister) {
        let mut holders: HashSet<(IpAddr, Parent)> = HashSet::new();
        for svc in &services.list() {
            let parent = service_parent(svc);
            holders.extend(cluster_ips(svc).into_iter().map(|ip| (ip, parent.clone())));
        }
        for obj in &addresses.list() {
            let (Some(ip), Some(parent)) = (address_of(obj), parent_of(obj)) else {
                continue;
            };
            if is_managed(obj) && !holders.contains(&(ip, parent)) {
                self.delete(ip).await;
                if !holders.iter().any(|(held, _)| *held == ip) {
                    self.allocator.release_ip(ip);
                }
            }
        }
    }

    /// A Service exists: each of its ClusterIPs gets its IPAddress.
    async fn held_by(&mut self, svc: &Value) {
        let parent = service_parent(svc);
        for ip in cluster_ips(svc) {
            if self.held.get(&ip) != Some(&parent) {
                self.held.insert(ip, parent.clone());
                self.record(ip, &parent).await;
            }
        }
    }

    /// A Service is gone: its IPAddresses go too.
    async fn let_go(&mut self, svc: &Value) {
        let parent = service_parent(svc);
        for ip in cluster_ips(svc) {
            if self.held.get(&ip) == Some(&parent) {
                self.held.remove(&ip);
                self.delete(ip).await;
            }
        }
    }

    /// An IPAddress someone else made reserves its address.
    fn added(&self, obj: &Value) {
        if let (false, Some(ip)) = (is_managed(obj), address_of(obj)) {
            self.allocator.mark_ip_used(ip);
        }
    }

    /// An IPAddress deleted under a Service is put back (upstream's
    /// repair); one someone else made frees its address.
    async fn deleted(&self, obj: &Value) {
        let Some(ip) = address_of(obj) else {
            return;
        };
        match self.held.get(&ip) {
            Some(parent) => self.record(ip, &parent.clone()).await,
            None if !is_managed(obj) => self.allocator.release_ip(ip),
            None => {}
        }
    }

    /// Creates `ip`'s IPAddress for `parent`, replacing a stale one.
    async fn record(&self, ip: IpAddr, parent: &Parent) {
        let opts = WriteOptions::default();
        for _ in 0..2 {
            match self
                .addresses
                .create(ip_address_object(ip, parent), &opts)
                .await
            {
                Err(e) if e.code == 409 => {
                    let name = ip.to_string();
                    let current = self.addresses.get(None, &name, Default::default()).await;
                    match current {
                        Ok(obj) if parent_of(&obj).as_ref() != Some(parent) && is_managed(&obj) => {
                            self.delete(ip).await
                        }
                        _ => return,
                    }
                }
                Err(e) => {
                    tracing::warn!(%ip, error = %e.message, "recording an IPAddress failed");
                    return;
                }
                Ok(_) => return,
            }
        }
    }

    async fn delete(&self, ip: IpAddr) {
        let name = ip.to_string();
        if let Err(e) = self
            .addresses
            .delete(None, &name, &Default::default())
            .await
        {
            if e.code != 404 {
                tracing::warn!(%ip, error = %e.message, "deleting an IPAddress failed");
            }
        }
    }
}
