//! The controllers around Service addresses, run inside the server as
//! upstream runs them: the default ServiceCIDR `kubernetes` (created from
//! `--service-cluster-ip-range` and marked Ready), the ranges other
//! ServiceCIDRs add, and the IPAddress objects that record each ClusterIP
//! (created for every address a stored Service holds, deleted with the
//! Service, recreated when deleted under a Service, orphans removed at
//! startup). The allocator stays the authority on what is free, so
//! concurrent creates never collide; the objects follow within
//! milliseconds through the watch of Services.

use std::collections::{HashMap, HashSet};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use apiserver::registry::object_meta;
use apiserver::registry::store::{Store, Target, WriteOptions};
use apiserver::server::GenericApiServer;
use apiserver::server::HookFn;
use futures::{Stream, StreamExt};
use serde_json::{json, Value};
use storage::{ListOptions, WatchEvent, WatchOptions};

use super::{cluster_ips, ip_family, ServiceAllocator};
use crate::options::Cidr;

/// The default ServiceCIDR's name.
pub const DEFAULT_SERVICE_CIDR: &str = "kubernetes";
const NETWORKING: &str = "networking.k8s.io";
const FAMILY_LABEL: &str = "ipaddress.kubernetes.io/ip-family";
const MANAGED_BY_LABEL: &str = "ipaddress.kubernetes.io/managed-by";
/// Upstream's allocator's name, the managed-by value of its IPAddresses.
pub const MANAGED_BY: &str = "ipallocator.k8s.io";
/// How often the default ServiceCIDR is checked (upstream's interval).
const RESYNC: Duration = Duration::from_secs(10);

/// A Service as an IPAddress's parent: namespace and name.
type Parent = (String, String);

/// Installs the post-start hooks that run the controllers; nothing for the
/// resources `--runtime-config` leaves off.
pub fn install(server: &mut GenericApiServer, allocator: Arc<ServiceAllocator>, cidrs: Vec<Cidr>) {
    let services = server.store("", "v1", "services");
    let addresses = server.store(NETWORKING, "v1", "ipaddresses");
    if let Some(service_cidrs) = server.store(NETWORKING, "v1", "servicecidrs") {
        let wanted: Vec<String> = cidrs.iter().map(Cidr::to_string).collect();
        let allocator = allocator.clone();
        let run: HookFn = Arc::new(move || {
            let (store, wanted, allocator) =
                (service_cidrs.clone(), wanted.clone(), allocator.clone());
            Box::pin(async move {
                // Serving waits for the default range, as upstream's does.
                while let Err(e) = sync_default_cidr(&store, &wanted).await {
                    tracing::info!(error = %e.message, "creating the default ServiceCIDR");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                tokio::spawn(resync_default_cidr(store.clone(), wanted));
                tokio::spawn(follow_service_cidrs(store, allocator));
                Ok(())
            })
        });
        server.add_post_start_hook("start-kubernetes-service-cidr-controller", run);
    }
    if let (Some(services), Some(addresses)) = (services, addresses) {
        let run: HookFn = Arc::new(move || {
            let (services, addresses) = (services.clone(), addresses.clone());
            let allocator = allocator.clone();
            Box::pin(async move {
                tokio::spawn(record_addresses(services, addresses, allocator));
                Ok(())
            })
        });
        server.add_post_start_hook("start-service-ip-repair-controllers", run);
    }
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

/// Creates or recreates the default ServiceCIDR and marks it Ready, as
/// upstream's `kubernetes-service-cidr-controller` does: a single-stack
/// one becomes dual-stack when a second range is configured; one that
/// differs from the flags is left alone.
async fn sync_default_cidr(store: &Store, wanted: &[String]) -> Result<(), ApiError> {
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

async fn resync_default_cidr(store: Arc<Store>, wanted: Vec<String>) {
    loop {
        tokio::time::sleep(RESYNC).await;
        if let Err(e) = sync_default_cidr(&store, &wanted).await {
            tracing::info!(error = %e.message, "syncing the default ServiceCIDR");
        }
    }
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
async fn follow_service_cidrs(store: Arc<Store>, allocator: Arc<ServiceAllocator>) {
    loop {
        match store.watch(None, watch_all()).await {
            Ok(mut events) => {
                while let Some(event) = events.next().await {
                    match event {
                        WatchEvent::Added(o) | WatchEvent::Modified(o) => {
                            allocator.set_service_cidr(name(&o), usable_ranges(&o))
                        }
                        WatchEvent::Deleted(o) => allocator.set_service_cidr(name(&o), None),
                        WatchEvent::Error(_) => break,
                        WatchEvent::Bookmark(_) => {}
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e.message, "ServiceCIDR watch failed"),
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

fn watch_all() -> WatchOptions {
    WatchOptions {
        recursive: true,
        ..Default::default()
    }
}

/// Keeps IPAddress objects in step with the ClusterIPs Services hold.
async fn record_addresses(
    services: Arc<Store>,
    addresses: Arc<Store>,
    allocator: Arc<ServiceAllocator>,
) {
    let mut recorder = Recorder {
        addresses,
        allocator,
        held: HashMap::new(),
    };
    loop {
        // Every address is recorded again after a broken watch.
        recorder.held.clear();
        if let Err(e) = recorder.remove_orphans(&services).await {
            tracing::warn!(error = %e.message, "IPAddress repair failed");
        }
        let watches = (
            services.watch(None, watch_all()).await,
            recorder.addresses.watch(None, watch_all()).await,
        );
        match watches {
            (Ok(svc_events), Ok(ip_events)) => recorder.follow(svc_events, ip_events).await,
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(error = %e.message, "IPAddress watch failed")
            }
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

struct Recorder {
    addresses: Arc<Store>,
    allocator: Arc<ServiceAllocator>,
    /// Which Service holds each ClusterIP, as the watch last said.
    held: HashMap<IpAddr, Parent>,
}

impl Recorder {
    /// Deletes this allocator's IPAddresses that no Service holds any more
    /// (a deletion the server did not live to record), freeing them.
    async fn remove_orphans(&mut self, services: &Store) -> Result<(), ApiError> {
        let mut holders: HashSet<(IpAddr, Parent)> = HashSet::new();
        for svc in &services.list(None, ListOptions::default()).await?.items {
            let parent = service_parent(svc);
            holders.extend(cluster_ips(svc).into_iter().map(|ip| (ip, parent.clone())));
        }
        for obj in &self
            .addresses
            .list(None, ListOptions::default())
            .await?
            .items
        {
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
        Ok(())
    }

    async fn follow(
        &mut self,
        mut services: impl Stream<Item = WatchEvent> + Unpin,
        mut addresses: impl Stream<Item = WatchEvent> + Unpin,
    ) {
        loop {
            tokio::select! {
                event = services.next() => match event {
                    Some(WatchEvent::Added(svc) | WatchEvent::Modified(svc)) => self.held_by(&svc).await,
                    Some(WatchEvent::Deleted(svc)) => self.let_go(&svc).await,
                    Some(WatchEvent::Bookmark(_)) => {}
                    Some(WatchEvent::Error(_)) | None => return,
                },
                event = addresses.next() => match event {
                    Some(WatchEvent::Added(obj) | WatchEvent::Modified(obj)) => self.added(&obj),
                    Some(WatchEvent::Deleted(obj)) => self.deleted(&obj).await,
                    Some(WatchEvent::Bookmark(_)) => {}
                    Some(WatchEvent::Error(_)) | None => return,
                },
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
