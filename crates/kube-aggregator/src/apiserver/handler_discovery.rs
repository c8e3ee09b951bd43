//! Discovery of remote APIServices (upstream's `handler_discovery.go`, the
//! discovery manager, and `handler_apis.go`): a remote APIService's group
//! version is read from its server's aggregated discovery (`/apis` as
//! `apidiscovery.k8s.io/v2`, or its `/apis/<group>/<version>`
//! APIResourceList when the server answers 406 or with no aggregated
//! document) as `system:kube-aggregator` in `system:masters`, within 5
//! seconds, when the APIService is added or changes and every minute, and
//! published in the chain's discovery registry, so `/apis`, `/apis/<group>`
//! (answered here) and aggregated discovery list it. When the read fails
//! the group version is published without resources and `Stale`, as
//! upstream's; it goes with its APIService. Every APIService, local or
//! remote, sets its group version's place in discovery
//! (`groupPriorityMinimum`, `versionPriority`; [`follow_priorities`]).

use std::sync::Arc;
use std::time::Duration;

use apiserver::authentication::user::UserInfo;
use apiserver::registry::ResourceInfo;
use apiserver::server::{
    discovery, DiscoveryRegistry, GroupVersionDiscovery, Priority, SubresourceDiscovery,
};
use axum::body::Body;
use client_go::tools::cache::{Lister, ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use http::{Request, Response, StatusCode};
use serde_json::Value;

use crate::controllers::openapi::downloader::{self, Handler, Handlers};
use crate::controllers::{follow_remote, is_remote};

/// How long one read of a server's discovery may take.
const TIMEOUT: Duration = Duration::from_secs(5);
/// Every remote APIService is read again this often.
const REFRESH: Duration = Duration::from_secs(60);

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The group version an APIResourceList describes.
pub fn from_resource_list(group: &str, version: &str, list: &Value) -> GroupVersionDiscovery {
    let entries = list["resources"].as_array().map_or(&[][..], Vec::as_slice);
    let text = |e: &Value, k: &str| e[k].as_str().unwrap_or_default().to_owned();
    let mut resources: Vec<ResourceInfo> = entries
        .iter()
        .filter(|e| !text(e, "name").contains('/'))
        .map(|e| ResourceInfo {
            group: group.to_owned(),
            version: version.to_owned(),
            resource: text(e, "name"),
            singular: text(e, "singularName"),
            kind: text(e, "kind"),
            list_kind: format!("{}List", text(e, "kind")),
            namespaced: e["namespaced"].as_bool().unwrap_or(false),
            short_names: strings(&e["shortNames"]),
            categories: strings(&e["categories"]),
            verbs: strings(&e["verbs"]),
            has_status: false,
            has_scale: false,
            storage_root: String::new(),
        })
        .collect();
    let mut subresources = Vec::new();
    for e in entries {
        let path = text(e, "name");
        let Some((parent, sub)) = path.split_once('/') else {
            continue;
        };
        let owner = resources.iter_mut().find(|r| r.resource == parent);
        match (sub, owner) {
            ("status", Some(r)) => r.has_status = true,
            ("scale", Some(r)) => r.has_scale = true,
            _ => subresources.push(SubresourceDiscovery {
                path: path.clone(),
                group: e["group"].as_str().unwrap_or(group).to_owned(),
                version: e["version"].as_str().unwrap_or(version).to_owned(),
                kind: text(e, "kind"),
                verbs: strings(&e["verbs"]),
            }),
        }
    }
    GroupVersionDiscovery {
        group: group.to_owned(),
        version: version.to_owned(),
        resources,
        subresources,
        stale: false,
    }
}

/// The group version of an aggregated discovery entry
/// (`APIVersionDiscovery`).
pub fn from_aggregated(group: &str, version: &str, entry: &Value) -> GroupVersionDiscovery {
    let text = |e: &Value, k: &str| e[k].as_str().unwrap_or_default().to_owned();
    let mut gv = GroupVersionDiscovery {
        group: group.to_owned(),
        version: version.to_owned(),
        resources: Vec::new(),
        subresources: Vec::new(),
        stale: false,
    };
    for r in entry["resources"].as_array().map_or(&[][..], Vec::as_slice) {
        let kind = text(&r["responseKind"], "kind");
        let subs = r["subresources"].as_array().map_or(&[][..], Vec::as_slice);
        let has = |name: &str| subs.iter().any(|s| s["subresource"] == name);
        gv.resources.push(ResourceInfo {
            group: group.to_owned(),
            version: version.to_owned(),
            resource: text(r, "resource"),
            singular: text(r, "singularResource"),
            list_kind: format!("{kind}List"),
            kind,
            namespaced: r["scope"] == "Namespaced",
            short_names: strings(&r["shortNames"]),
            categories: strings(&r["categories"]),
            verbs: strings(&r["verbs"]),
            has_status: has("status"),
            has_scale: has("scale"),
            storage_root: String::new(),
        });
        for s in subs
            .iter()
            .filter(|s| s["subresource"] != "status" && s["subresource"] != "scale")
        {
            let response = &s["responseKind"];
            gv.subresources.push(SubresourceDiscovery {
                path: format!("{}/{}", text(r, "resource"), text(s, "subresource")),
                group: response["group"].as_str().unwrap_or(group).to_owned(),
                version: response["version"].as_str().unwrap_or(version).to_owned(),
                kind: text(response, "kind"),
                verbs: strings(&s["verbs"]),
            });
        }
    }
    gv
}

/// `/apis/<group>` (with or without a trailing slash) of a published group.
pub fn serve_group(registry: &DiscoveryRegistry, req: &Request<Body>) -> Option<Response<Body>> {
    let path = req.uri().path().trim_end_matches('/');
    let group = path.strip_prefix("/apis/").filter(|g| !g.contains('/'))?;
    let doc = registry.api_group(group)?;
    Some(discovery::document_response(req.headers(), &doc))
}

/// Where `apiregistration.k8s.io/v1` stands: ahead of every group
/// (upstream's `APIRegistrationGroupPriority`, version priority 0).
const API_REGISTRATION: Priority = Priority {
    group: 20001,
    version: 0,
};

/// The group, version and priority an APIService gives discovery.
fn priority(api_service: &Value) -> (String, String, Priority) {
    let spec = &api_service["spec"];
    let text = |k: &str| spec[k].as_str().unwrap_or_default().to_owned();
    let number = |k: &str| spec[k].as_i64().unwrap_or_default();
    let priority = Priority {
        group: number("groupPriorityMinimum"),
        version: number("versionPriority"),
    };
    (text("group"), text("version"), priority)
}

/// Orders `registry`'s groups and versions by the priorities of the
/// APIServices `informer` follows, as upstream's discovery manager sets
/// them (`SetGroupVersionPriority`) for every APIService;
/// `apiregistration.k8s.io` stays first.
pub fn follow_priorities(informer: &SharedInformer, registry: &DiscoveryRegistry) {
    let (group, version) = ("apiregistration.k8s.io", "v1");
    registry.set_priority(group, version, Some(API_REGISTRATION));
    let set = |registry: DiscoveryRegistry, keep: bool| {
        move |api_service: &storage::Object| {
            let (group, version, priority) = self::priority(api_service);
            if group != "apiregistration.k8s.io" {
                registry.set_priority(&group, &version, keep.then_some(priority));
            }
        }
    };
    let (added, updated) = (set(registry.clone(), true), set(registry.clone(), true));
    informer.add_event_handler(ResourceEventHandlerFuncs {
        add: Some(Box::new(added)),
        update: Some(Box::new(move |_, new| updated(new))),
        delete: Some(Box::new(set(registry.clone(), false))),
    });
}

/// Keeps the discovery of remote APIServices (upstream's
/// `discoveryManager`).
#[derive(Clone)]
pub struct Manager {
    pub handlers: Handlers,
    pub registry: DiscoveryRegistry,
}

fn kube_aggregator() -> UserInfo {
    UserInfo {
        name: "system:kube-aggregator".into(),
        groups: vec!["system:masters".into()],
        ..UserInfo::default()
    }
}

impl Manager {
    /// Follows the APIServices of `informer` with two workers until `stop`.
    pub async fn run(self, informer: Arc<SharedInformer>, stop: CancellationToken) {
        let queue = RateLimitingQueue::with_default_limiter();
        follow_remote(&informer, &queue, Duration::ZERO, REFRESH, stop.clone());
        informer.wait_for_sync().await;
        let lister = informer.lister();
        run_workers(queue, 2, stop, move |name: String| {
            let (this, lister) = (self.clone(), lister.clone());
            async move { this.sync(&lister, &name).await }
        })
        .await;
    }

    /// Reads and publishes the group version of the APIService `name`.
    async fn sync(&self, lister: &Lister, name: &str) -> Result<(), String> {
        let Some(api_service) = lister.get(None, name).filter(|s| is_remote(s)) else {
            return Ok(());
        };
        let spec = &api_service["spec"];
        let group = spec["group"].as_str().unwrap_or_default();
        let version = spec["version"].as_str().unwrap_or_default();
        let service = &spec["service"];
        let service = format!(
            "{}/{}:{}",
            service["namespace"].as_str().unwrap_or_default(),
            service["name"].as_str().unwrap_or_default(),
            service["port"].as_i64().unwrap_or(443)
        );
        let read = match (self.handlers)(group, version) {
            Some(handler) => {
                tokio::time::timeout(TIMEOUT, read(&handler, &service, group, version))
                    .await
                    .unwrap_or_else(|_| Err("request timed out".to_owned()))
            }
            None => Err(format!("no route to APIService {name} yet")),
        };
        let (published, result) = match read {
            Ok(gv) => (gv, Ok(())),
            Err(e) => {
                let mut stale = from_aggregated(group, version, &Value::Null);
                stale.stale = true;
                (stale, Err(e))
            }
        };
        self.registry.add(published);
        result
    }
}

/// The discovery of `group`/`version` by the server `handler` reaches
/// (the Service `service` names, for errors).
async fn read(
    handler: &Handler,
    service: &str,
    group: &str,
    version: &str,
) -> Result<GroupVersionDiscovery, String> {
    let accept = discovery::AGGREGATED_V2;
    let got = downloader::get(handler, "/apis", accept, None, kube_aggregator()).await?;
    let failed = |status: StatusCode| {
        format!(
            "service {service} returned non-success response code: {}",
            status.as_u16()
        )
    };
    let list: Value = match got.status {
        StatusCode::OK | StatusCode::NOT_ACCEPTABLE => {
            serde_json::from_slice(&got.body).unwrap_or_default()
        }
        status => return Err(failed(status)),
    };
    if list["kind"] == "APIGroupDiscoveryList" {
        let items = list["items"].as_array().map_or(&[][..], Vec::as_slice);
        let entry = items
            .iter()
            .filter(|g| g["metadata"]["name"] == group)
            .flat_map(|g| g["versions"].as_array().into_iter().flatten())
            .find(|v| v["version"] == version);
        return Ok(from_aggregated(
            group,
            version,
            entry.unwrap_or(&Value::Null),
        ));
    }
    // A server without aggregated discovery: its APIResourceList.
    let path = format!("/apis/{group}/{version}");
    let accept = "application/json";
    let got = downloader::get(handler, &path, accept, None, kube_aggregator()).await?;
    if got.status != StatusCode::OK {
        return Err(failed(got.status));
    }
    let list: Value = serde_json::from_slice(&got.body).map_err(|e| e.to_string())?;
    Ok(from_resource_list(group, version, &list))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn resource_lists_become_discovery_entries() {
        let list = json!({"kind": "APIResourceList", "groupVersion": "m.io/v1", "resources": [
            {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget",
             "verbs": ["get", "list"], "shortNames": ["wd"]},
            {"name": "widgets/status", "namespaced": true, "kind": "Widget", "verbs": ["get"]},
            {"name": "widgets/log", "namespaced": true, "kind": "Log", "verbs": ["get"]}]});
        let gv = from_resource_list("m.io", "v1", &list);
        assert_eq!(gv.resources.len(), 1);
        let r = &gv.resources[0];
        assert!(r.has_status && !r.has_scale && r.namespaced);
        assert_eq!(
            (r.kind.as_str(), r.short_names.clone()),
            ("Widget", vec!["wd".to_owned()])
        );
        assert_eq!(gv.subresources[0].path, "widgets/log");
    }

    #[test]
    fn aggregated_entries_become_discovery_entries() {
        let entry = json!({"version": "v1", "freshness": "Current", "resources": [
            {"resource": "widgets", "singularResource": "widget", "scope": "Namespaced",
             "responseKind": {"group": "m.io", "version": "v1", "kind": "Widget"},
             "verbs": ["get", "list"], "shortNames": ["wd"], "subresources": [
                {"subresource": "status", "responseKind": {"group": "m.io", "version": "v1", "kind": "Widget"}, "verbs": ["get"]},
                {"subresource": "log", "responseKind": {"group": "", "version": "v1", "kind": "Log"}, "verbs": ["get"]}]}]});
        let gv = from_aggregated("m.io", "v1", &entry);
        let r = &gv.resources[0];
        assert!(r.has_status && !r.has_scale && r.namespaced && !gv.stale);
        assert_eq!(
            (r.kind.as_str(), r.list_kind.as_str()),
            ("Widget", "WidgetList")
        );
        assert_eq!(r.short_names, ["wd"]);
        assert_eq!(gv.subresources.len(), 1);
        assert_eq!(
            (
                gv.subresources[0].path.as_str(),
                gv.subresources[0].group.as_str()
            ),
            ("widgets/log", "")
        );
        let registry = DiscoveryRegistry::default();
        registry.add(gv);
        assert_eq!(
            registry.api_group("m.io").unwrap()["preferredVersion"]["version"],
            "v1"
        );
    }
}
