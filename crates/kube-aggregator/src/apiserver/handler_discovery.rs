//! Discovery of remote APIServices (upstream's `handler_discovery.go` and
//! `handler_apis.go`): the APIResourceList each passing availability check
//! fetched is published in the chain's discovery registry, so `/apis` and
//! aggregated discovery (`apidiscovery.k8s.io/v2`) list the remote group
//! versions and their resources; `/apis/<group>` of a remote group is
//! answered here. A group version stays published (stale) while its server
//! is down, and goes with its APIService.

use apiserver::registry::ResourceInfo;
use apiserver::server::{
    discovery, DiscoveryRegistry, GroupVersionDiscovery, SubresourceDiscovery,
};
use axum::body::Body;
use http::{Request, Response};
use serde_json::Value;

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
    }
}

/// Publishes what a backend's `/apis/<group>/<version>` answered (a body
/// that is no APIResourceList leaves discovery as it was).
pub fn publish(registry: &DiscoveryRegistry, group: &str, version: &str, body: &[u8]) {
    match serde_json::from_slice::<Value>(body) {
        Ok(list) if list["kind"] == "APIResourceList" => {
            registry.add(from_resource_list(group, version, &list));
        }
        _ => tracing::debug!(group, version, "the discovery answer is no APIResourceList"),
    }
}

/// `/apis/<group>` (with or without a trailing slash) of a published group.
pub fn serve_group(registry: &DiscoveryRegistry, req: &Request<Body>) -> Option<Response<Body>> {
    let path = req.uri().path().trim_end_matches('/');
    let group = path.strip_prefix("/apis/").filter(|g| !g.contains('/'))?;
    let doc = registry.api_group(group)?;
    Some(discovery::document_response(req.headers(), &doc))
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
        let registry = DiscoveryRegistry::default();
        publish(&registry, "m.io", "v1", list.to_string().as_bytes());
        assert_eq!(
            registry.api_group("m.io").unwrap()["preferredVersion"]["version"],
            "v1"
        );
    }
}
