//! API discovery documents: `/api`, `/apis`, `/apis/<group>`,
//! `/apis/<group>/<version>` (upstream's `endpoints/discovery`), and
//! aggregated discovery (`apidiscovery.k8s.io/v2`), which current kubectl
//! asks for first.
//!
//! The registry is shared by the three servers of the chain: each registers
//! the groups it serves, and the outermost server answers `/apis` for all.
//!
//! Documents are written as upstream negotiates them: JSON, YAML, protobuf,
//! and CBOR while the `CBORServingAndStorage` gate is on; aggregated
//! discovery in any of them with the `g=apidiscovery.k8s.io;v=v2;
//! as=APIGroupDiscoveryList` parameters, with an ETag (upstream's
//! `discovery/aggregated` handler, negotiation and etag). Groups and
//! versions are ordered by their APIServices' priorities ([`order`]).

mod order;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use axum::body::Body;
use base64::Engine;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use serde_json::{json, Value};
use sha2::{Digest, Sha256, Sha512};

use crate::endpoints::negotiation::{self, cbor_enabled, Encoding};
use crate::endpoints::response;
use crate::registry::ResourceInfo;
pub use order::Priority;

/// Media type parameters of an aggregated discovery request/response.
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// The parameters naming aggregated discovery in a media type.
const AGGREGATED_V2_PARAMS: &str = ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// One group version and the resources it serves.
#[derive(Debug, Clone, PartialEq)]
pub struct GroupVersionDiscovery {
    pub group: String,
    pub version: String,
    pub resources: Vec<ResourceInfo>,
    /// Subresources beyond `status` and `scale` (which the resources'
    /// infos declare), e.g. `pods/binding`.
    pub subresources: Vec<SubresourceDiscovery>,
    /// Aggregated discovery's `freshness: Stale`: the server of this
    /// group version (an aggregated API server) could not be read.
    pub stale: bool,
}

/// One subresource as discovery lists it: its path below the group
/// version, the kind it takes and answers, and its verbs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubresourceDiscovery {
    /// `<resource>/<subresource>`.
    pub path: String,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub verbs: Vec<String>,
}

#[derive(Debug, Default)]
struct Groups {
    /// Group name → versions.
    versions: BTreeMap<String, Vec<GroupVersionDiscovery>>,
    priorities: order::Priorities,
    /// Aggregated discovery of `/api` and of `/apis`, built when first
    /// asked for after a change (upstream's cached response).
    aggregated: [Option<Value>; 2],
}

impl Groups {
    /// Drops the cached aggregated documents after a change.
    fn changed(&mut self) {
        self.aggregated = [None, None];
    }
}

/// The discovery state of the whole server chain.
#[derive(Debug, Clone, Default)]
pub struct DiscoveryRegistry {
    inner: Arc<RwLock<Groups>>,
    /// `aggregator_discovery_aggregation_count_total`: how many times an
    /// aggregated document was built.
    aggregations: Counter,
}

impl DiscoveryRegistry {
    /// Adds (or replaces) a group version. Versions are ordered by their
    /// priorities ([`Priority`]); the first is preferred.
    pub fn add(&self, gv: GroupVersionDiscovery) {
        let Ok(mut groups) = self.inner.write() else {
            return;
        };
        let versions = groups.versions.entry(gv.group.clone()).or_default();
        match versions.iter_mut().find(|v| v.version == gv.version) {
            // The same again changes nothing (upstream keeps its cache).
            Some(existing) if *existing == gv => return,
            Some(existing) => *existing = gv,
            None => versions.push(gv),
        }
        groups.changed();
    }

    /// Sets (None: forgets) the priority of a group version, as its
    /// APIService gives it; one without is ordered by [`Priority::DEFAULT`].
    pub fn set_priority(&self, group: &str, version: &str, priority: Option<Priority>) {
        let Ok(mut groups) = self.inner.write() else {
            return;
        };
        let key = (group.to_owned(), version.to_owned());
        let old = match priority {
            Some(p) => groups.priorities.insert(key, p),
            None => groups.priorities.remove(&key),
        };
        if old != priority {
            groups.changed();
        }
    }

    /// The registry of `aggregator_discovery_aggregation_count_total`, to
    /// join the server's `/metrics`.
    pub fn metrics(&self) -> Registry {
        let mut registry = Registry::default();
        registry.register(
            "aggregator_discovery_aggregation_count",
            "Counter of number of times discovery was aggregated",
            self.aggregations.clone(),
        );
        registry
    }

    /// Lists one more resource in a group version already added.
    pub fn add_resource(&self, group: &str, version: &str, info: ResourceInfo) {
        self.edit(group, version, |gv| {
            gv.resources.retain(|r| r.resource != info.resource);
            gv.resources.push(info);
            gv.resources.sort_by(|a, b| a.resource.cmp(&b.resource));
        });
    }

    /// Lists a subresource of a group version already added.
    pub fn add_subresource(&self, group: &str, version: &str, sub: SubresourceDiscovery) {
        self.edit(group, version, |gv| {
            gv.subresources.retain(|s| s.path != sub.path);
            gv.subresources.push(sub);
        });
    }

    /// Changes a group version already added; nothing when it is not.
    fn edit(&self, group: &str, version: &str, change: impl FnOnce(&mut GroupVersionDiscovery)) {
        let Ok(mut groups) = self.inner.write() else {
            return;
        };
        let found = groups
            .versions
            .get_mut(group)
            .and_then(|vs| vs.iter_mut().find(|v| v.version == version));
        if let Some(gv) = found {
            change(gv);
            groups.changed();
        }
    }

    /// Removes a group version (and the group when it has none left).
    pub fn remove(&self, group: &str, version: &str) {
        let Ok(mut groups) = self.inner.write() else {
            return;
        };
        if let Some(versions) = groups.versions.get_mut(group) {
            versions.retain(|v| v.version != version);
            if versions.is_empty() {
                groups.versions.remove(group);
            }
            groups.changed();
        }
    }

    /// Replaces every version of `group` by `versions` (first preferred);
    /// an empty list removes the group. Used for groups served at run time.
    pub fn set_group(&self, group: &str, versions: Vec<GroupVersionDiscovery>) {
        let Ok(mut groups) = self.inner.write() else {
            return;
        };
        if versions.is_empty() {
            groups.versions.remove(group);
        } else {
            groups.versions.insert(group.to_owned(), versions);
        }
        groups.changed();
    }

    /// Every group with its versions, in aggregated discovery's order.
    fn snapshot(&self) -> Vec<(String, Vec<GroupVersionDiscovery>)> {
        let Ok(groups) = self.inner.read() else {
            return Vec::new();
        };
        order::aggregated(&groups.priorities, &groups.versions)
    }

    /// Every (group, version) served, the preferred ones first.
    pub fn group_versions(&self) -> Vec<(String, String)> {
        self.snapshot()
            .into_iter()
            .flat_map(|(g, vs)| vs.into_iter().map(move |v| (g.clone(), v.version)))
            .collect()
    }

    pub fn group_version(&self, group: &str, version: &str) -> Option<GroupVersionDiscovery> {
        let groups = self.inner.read().ok()?;
        groups
            .versions
            .get(group)?
            .iter()
            .find(|v| v.version == version)
            .cloned()
    }

    /// The named groups in `/apis`' order, each with its versions.
    fn named_groups(&self) -> Vec<(String, Vec<GroupVersionDiscovery>)> {
        let Ok(groups) = self.inner.read() else {
            return Vec::new();
        };
        let mut all = order::aggregated(&groups.priorities, &groups.versions);
        let names = order::legacy(&groups.priorities, &groups.versions);
        names
            .into_iter()
            .filter(|g| !g.is_empty())
            .filter_map(|g| {
                let at = all.iter().position(|(name, _)| *name == g)?;
                Some(all.swap_remove(at))
            })
            .collect()
    }

    /// `/api`: the core group's versions.
    pub fn api_versions(&self, server_address: &str) -> Value {
        let versions: Vec<String> = self
            .snapshot()
            .into_iter()
            .filter(|(g, _)| g.is_empty())
            .flat_map(|(_, vs)| vs.into_iter().map(|v| v.version))
            .collect();
        json!({
            "kind": "APIVersions",
            "versions": versions,
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        })
    }

    /// `/apis`: every named group.
    pub fn api_group_list(&self) -> Value {
        let groups: Vec<Value> = self
            .named_groups()
            .into_iter()
            .map(|(g, vs)| group_doc(&g, &vs))
            .collect();
        json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
    }

    /// `/apis/<group>`.
    pub fn api_group(&self, group: &str) -> Option<Value> {
        let snapshot = self.snapshot();
        let (_, versions) = snapshot.iter().find(|(g, _)| g == group && !g.is_empty())?;
        let mut doc = group_doc(group, versions);
        doc["kind"] = json!("APIGroup");
        doc["apiVersion"] = json!("v1");
        Some(doc)
    }

    /// Aggregated discovery for `/api` (core only) or `/apis` (named
    /// groups): the cached document, or one built now (and counted).
    pub fn aggregated(&self, core: bool) -> Value {
        let slot = usize::from(!core);
        if let Some(doc) = self
            .inner
            .read()
            .ok()
            .and_then(|g| g.aggregated[slot].clone())
        {
            return doc;
        }
        let Ok(mut groups) = self.inner.write() else {
            return Value::Null;
        };
        if let Some(doc) = &groups.aggregated[slot] {
            return doc.clone();
        }
        self.aggregations.inc();
        let doc = aggregated_document(
            &order::aggregated(&groups.priorities, &groups.versions),
            core,
        );
        groups.aggregated[slot] = Some(doc.clone());
        doc
    }
}

/// The aggregated discovery document of the core group (`core`) or of the
/// named groups among `groups`.
fn aggregated_document(groups: &[(String, Vec<GroupVersionDiscovery>)], core: bool) -> Value {
    let items: Vec<Value> = groups
        .iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, vs)| {
            json!({
                "metadata": {"name": g, "creationTimestamp": null},
                "versions": vs.iter().map(aggregated_version).collect::<Vec<_>>(),
            })
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": "apidiscovery.k8s.io/v2",
        "metadata": {},
        "items": items,
    })
}

fn group_version_string(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

fn group_doc(group: &str, versions: &[GroupVersionDiscovery]) -> Value {
    let entries: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": group_version_string(group, &v.version), "version": v.version}))
        .collect();
    let preferred = entries.first().cloned().unwrap_or(Value::Null);
    json!({"name": group, "versions": entries, "preferredVersion": preferred})
}

/// Upstream's storageVersionHash: the first 8 bytes of the SHA-256 of the
/// storage group/version/kind, base64-encoded.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    let digest = Sha256::digest(format!("{group}/{version}/{kind}").as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

/// The subresources of `r`: status and scale as its info declares, then
/// those registered for it.
fn subresources(gv: &GroupVersionDiscovery, r: &ResourceInfo) -> Vec<SubresourceDiscovery> {
    let verbs = || vec!["get".to_owned(), "patch".to_owned(), "update".to_owned()];
    let mut subs = Vec::new();
    if r.has_status {
        subs.push(SubresourceDiscovery {
            path: format!("{}/status", r.resource),
            group: r.group.clone(),
            version: r.version.clone(),
            kind: r.kind.clone(),
            verbs: verbs(),
        });
    }
    if r.has_scale {
        subs.push(SubresourceDiscovery {
            path: format!("{}/scale", r.resource),
            group: "autoscaling".into(),
            version: "v1".into(),
            kind: "Scale".into(),
            verbs: verbs(),
        });
    }
    let prefix = format!("{}/", r.resource);
    let mut registered: Vec<&SubresourceDiscovery> = gv
        .subresources
        .iter()
        .filter(|s| s.path.starts_with(&prefix))
        .collect();
    registered.sort_by(|a, b| a.path.cmp(&b.path));
    subs.extend(registered.into_iter().cloned());
    subs
}

/// `/apis/<group>/<version>` (or `/api/v1`): an APIResourceList.
pub fn resource_list(gv: &GroupVersionDiscovery) -> Value {
    let mut resources = Vec::new();
    for r in &gv.resources {
        let mut doc = json!({
            "name": r.resource,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs,
            "storageVersionHash": storage_version_hash(&r.group, &r.version, &r.kind),
        });
        if !r.short_names.is_empty() {
            doc["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            doc["categories"] = json!(r.categories);
        }
        resources.push(doc);
        for sub in subresources(gv, r) {
            let mut sub_doc = json!({
                "name": sub.path,
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": sub.kind,
                "verbs": sub.verbs,
            });
            // Only a kind of another group version names its own.
            if (sub.group.as_str(), sub.version.as_str()) != (r.group.as_str(), r.version.as_str())
            {
                sub_doc["group"] = json!(sub.group);
                sub_doc["version"] = json!(sub.version);
            }
            resources.push(sub_doc);
        }
    }
    json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": group_version_string(&gv.group, &gv.version),
        "resources": resources,
    })
}

fn aggregated_version(gv: &GroupVersionDiscovery) -> Value {
    let resources: Vec<Value> = gv
        .resources
        .iter()
        .map(|r| {
            let mut doc = json!({
                "resource": r.resource,
                "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
                "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
                "singularResource": r.singular,
                "verbs": r.verbs,
            });
            if !r.short_names.is_empty() {
                doc["shortNames"] = json!(r.short_names);
            }
            if !r.categories.is_empty() {
                doc["categories"] = json!(r.categories);
            }
            let subs: Vec<Value> = subresources(gv, r)
                .into_iter()
                .map(|sub| {
                    let name = sub.path.split_once('/').map_or("", |(_, n)| n);
                    let kind =
                        json!({"group": sub.group, "version": sub.version, "kind": sub.kind});
                    json!({"subresource": name, "responseKind": kind, "verbs": sub.verbs})
                })
                .collect();
            if !subs.is_empty() {
                doc["subresources"] = json!(subs);
            }
            doc
        })
        .collect();
    let freshness = if gv.stale { "Stale" } else { "Current" };
    let mut doc = json!({"version": gv.version, "freshness": freshness});
    // `resources` is omitted when empty, as upstream's `omitempty`.
    if !resources.is_empty() {
        doc["resources"] = json!(resources);
    }
    doc
}

/// The encoding of aggregated discovery the Accept header asks for
/// (ranges by quality, then in order): JSON, YAML, protobuf or CBOR with
/// the `apidiscovery.k8s.io/v2` parameters, as upstream's
/// `DiscoveryEndpointRestrictions` allow; `None` when no range asks for it.
pub fn aggregated_encoding(headers: &HeaderMap) -> Option<Encoding> {
    let accept = headers.get(header::ACCEPT)?.to_str().ok()?;
    let mut ranges: Vec<(f32, Encoding)> = accept
        .split(',')
        .filter_map(|range| {
            let mut parts = range.split(';').map(str::trim);
            let essence = parts.next()?.to_ascii_lowercase();
            let (mut g, mut v, mut kind, mut q) = (None, None, None, 1.0);
            for param in parts {
                match param.split_once('=').map(|(k, v)| (k.trim(), v.trim())) {
                    Some(("g", value)) => g = Some(value),
                    Some(("v", value)) => v = Some(value),
                    Some(("as", value)) => kind = Some(value),
                    Some(("q", value)) => q = value.parse().unwrap_or(0.0),
                    _ => {}
                }
            }
            let wanted = g == Some("apidiscovery.k8s.io")
                && v == Some("v2")
                && kind == Some("APIGroupDiscoveryList");
            let encoding = match essence.as_str() {
                "application/json" => Encoding::Json,
                "application/yaml" => Encoding::Yaml,
                protobuf_codec::CONTENT_TYPE => Encoding::Protobuf,
                "application/cbor" if cbor_enabled() => Encoding::Cbor,
                _ => return None,
            };
            (wanted && q > 0.0).then_some((q, encoding))
        })
        .collect();
    // Stable: equal qualities keep the client's order.
    ranges.sort_by(|a, b| b.0.total_cmp(&a.0));
    ranges.first().map(|(_, e)| *e)
}

/// Upstream's ETag of aggregated discovery: the SHA-512 of its JSON.
fn etag(json: &[u8]) -> String {
    let hex: String = Sha512::digest(json)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect();
    format!("\"{hex}\"")
}

/// Aggregated discovery `doc` in `encoding`, or 304 when the client's
/// `If-None-Match` names the current ETag.
pub fn aggregated_response(headers: &HeaderMap, doc: &Value, encoding: Encoding) -> Response<Body> {
    let json = response::encode(doc, Encoding::Json, false);
    let tag = etag(&json);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|tags| tags.split(',').any(|t| t.trim() == tag));
    let mut resp = if fresh {
        let mut resp = Response::new(Body::empty());
        *resp.status_mut() = StatusCode::NOT_MODIFIED;
        resp
    } else {
        let body = match encoding {
            Encoding::Json => json,
            other => response::encode(doc, other, false),
        };
        let mut resp = response::respond(StatusCode::OK, body, Encoding::Json);
        let content_type = format!("{}{AGGREGATED_V2_PARAMS}", encoding.content_type());
        if let Ok(v) = HeaderValue::from_str(&content_type) {
            resp.headers_mut().insert(header::CONTENT_TYPE, v);
        }
        resp
    };
    let h = resp.headers_mut();
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("public"));
    if let Ok(tag) = HeaderValue::from_str(&tag) {
        h.insert(header::ETAG, tag);
    }
    resp
}

/// A discovery document (`/api`, `/apis`, a group, a group version) in
/// the encoding the client accepts; 406 when it accepts none.
pub fn document_response(headers: &HeaderMap, doc: &Value) -> Response<Body> {
    let negotiated = match negotiation::negotiate(headers, None, false, true) {
        Ok(n) => n,
        Err(e) => return response::error(&e, Encoding::Json),
    };
    let body = if negotiated.encoding == Encoding::Protobuf && doc.get("apiVersion").is_none() {
        // /api's APIVersions has no apiVersion in JSON; protobuf needs it.
        let mut typed = doc.clone();
        typed["apiVersion"] = json!("v1");
        response::encode(&typed, Encoding::Protobuf, false)
    } else {
        response::encode(doc, negotiated.encoding, negotiated.pretty)
    };
    response::respond(StatusCode::OK, body, negotiated.encoding)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(group: &str, resource: &str, kind: &str) -> ResourceInfo {
        ResourceInfo {
            resource: resource.into(),
            verbs: vec!["get".into()],
            has_status: true,
            storage_root: resource.into(),
            ..ResourceInfo::testing(group, kind)
        }
    }

    #[test]
    fn groups_and_versions_are_listed_in_order() {
        let reg = DiscoveryRegistry::default();
        reg.add(GroupVersionDiscovery {
            group: "".into(),
            version: "v1".into(),
            resources: vec![info("", "pods", "Pod")],
            subresources: Vec::new(),
            stale: false,
        });
        reg.add(GroupVersionDiscovery {
            group: "apps".into(),
            version: "v1".into(),
            resources: vec![info("apps", "deployments", "Deployment")],
            subresources: Vec::new(),
            stale: false,
        });
        let list = reg.api_group_list();
        assert_eq!(list["groups"][0]["name"], "apps");
        assert_eq!(
            list["groups"][0]["preferredVersion"]["groupVersion"],
            "apps/v1"
        );
        assert_eq!(reg.api_versions("1.2.3.4:6443")["versions"][0], "v1");
        let agg = reg.aggregated(true);
        assert_eq!(
            agg["items"][0]["versions"][0]["resources"][0]["subresources"][0]["subresource"],
            "status"
        );
        reg.remove("apps", "v1");
        assert!(reg.api_group("apps").is_none());
    }

    #[test]
    fn aggregated_documents_are_cached_until_a_change() {
        let reg = DiscoveryRegistry::default();
        let gv = |group: &str| GroupVersionDiscovery {
            group: group.into(),
            version: "v1".into(),
            resources: Vec::new(),
            subresources: Vec::new(),
            stale: false,
        };
        let names = |reg: &DiscoveryRegistry| -> Vec<Value> {
            let doc = reg.aggregated(false);
            let items = doc["items"].as_array().cloned().unwrap_or_default();
            items
                .iter()
                .map(|g| g["metadata"]["name"].clone())
                .collect()
        };
        reg.add(gv("b.io"));
        reg.add(gv("a.io"));
        assert_eq!(names(&reg), ["a.io", "b.io"]);
        assert_eq!(names(&reg), ["a.io", "b.io"]);
        assert_eq!(reg.aggregations.get(), 1);
        // The same group version again changes nothing; a priority does.
        reg.add(gv("a.io"));
        let high = Priority {
            group: 2000,
            version: 15,
        };
        reg.set_priority("b.io", "v1", Some(high));
        reg.set_priority("b.io", "v1", Some(high));
        assert_eq!(names(&reg), ["b.io", "a.io"]);
        assert_eq!(reg.aggregations.get(), 2);
        reg.set_priority("b.io", "v1", None);
        assert_eq!(names(&reg), ["a.io", "b.io"]);
        let mut text = String::new();
        prometheus_client::encoding::text::encode_registry(&mut text, &reg.metrics()).unwrap();
        assert!(
            text.contains("aggregator_discovery_aggregation_count_total 3"),
            "{text}"
        );
    }

    #[test]
    fn resource_list_includes_subresources() {
        let gv = GroupVersionDiscovery {
            group: "".into(),
            version: "v1".into(),
            resources: vec![info("", "pods", "Pod")],
            subresources: vec![SubresourceDiscovery {
                path: "pods/eviction".into(),
                group: "policy".into(),
                version: "v1".into(),
                kind: "Eviction".into(),
                verbs: vec!["create".into()],
            }],
            stale: false,
        };
        let doc = resource_list(&gv);
        assert_eq!(doc["resources"][1]["name"], "pods/status");
        assert_eq!(doc["resources"][1].get("group"), None);
        assert_eq!(
            doc["resources"][2],
            json!({"name": "pods/eviction", "singularName": "", "namespaced": true,
                "kind": "Eviction", "group": "policy", "version": "v1", "verbs": ["create"]})
        );
        let agg = aggregated_version(&gv);
        assert_eq!(
            agg["resources"][0]["subresources"][1],
            json!({"subresource": "eviction", "verbs": ["create"],
                "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"}})
        );
        assert_eq!(
            doc["resources"][0]["storageVersionHash"]
                .as_str()
                .map(str::len),
            Some(12)
        );
    }

    fn accept(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            header::ACCEPT,
            HeaderValue::from_str(value).expect("header"),
        );
        h
    }

    async fn body(resp: Response<Body>) -> Vec<u8> {
        axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .map(|b| b.to_vec())
            .unwrap_or_default()
    }

    #[tokio::test]
    async fn aggregated_discovery_negotiates_json_and_cbor_with_an_etag() {
        let kubectl =
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
        assert_eq!(aggregated_encoding(&accept(kubectl)), Some(Encoding::Json));
        assert_eq!(aggregated_encoding(&accept("application/json")), None);
        assert_eq!(aggregated_encoding(&HeaderMap::new()), None);
        let cbor = "application/cbor;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        // Without the gate a CBOR range is not served.
        assert_eq!(aggregated_encoding(&accept(cbor)), None);

        let reg = DiscoveryRegistry::default();
        reg.add(GroupVersionDiscovery {
            group: "apps".into(),
            version: "v1".into(),
            resources: vec![info("apps", "deployments", "Deployment")],
            subresources: Vec::new(),
            stale: false,
        });
        let doc = reg.aggregated(false);
        let resp = aggregated_response(&accept(kubectl), &doc, Encoding::Cbor);
        assert_eq!(resp.status(), StatusCode::OK);
        assert_eq!(
            resp.headers()[header::CONTENT_TYPE],
            "application/cbor;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
        );
        let tag = resp.headers()[header::ETAG].clone();
        let decoded = kube_cbor::decode(&body(resp).await).expect("CBOR body");
        assert_eq!(decoded, doc);

        let pb = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
        assert_eq!(aggregated_encoding(&accept(pb)), Some(Encoding::Protobuf));
        let resp = aggregated_response(&accept(pb), &doc, Encoding::Protobuf);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], pb);
        assert_eq!(resp.headers()[header::ETAG], tag);
        let decoded = protobuf_codec::decode(&body(resp).await).expect("protobuf body");
        assert_eq!(
            decoded.pointer("/items/0/versions/0/resources/0/resource"),
            Some(&json!("deployments"))
        );

        let mut conditional = accept(kubectl);
        conditional.insert(header::IF_NONE_MATCH, tag.clone());
        let resp = aggregated_response(&conditional, &doc, Encoding::Json);
        assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(resp.headers()[header::ETAG], tag);
        assert!(body(resp).await.is_empty());
    }

    #[tokio::test]
    async fn documents_are_written_in_the_accepted_encoding() {
        let reg = DiscoveryRegistry::default();
        reg.add(GroupVersionDiscovery {
            group: "".into(),
            version: "v1".into(),
            resources: vec![info("", "pods", "Pod")],
            subresources: Vec::new(),
            stale: false,
        });
        let versions = reg.api_versions("10.0.0.1:6443");
        let resp = document_response(&accept("application/yaml"), &versions);
        assert_eq!(resp.headers()[header::CONTENT_TYPE], "application/yaml");
        let yaml = String::from_utf8(body(resp).await).unwrap_or_default();
        assert!(yaml.contains("kind: APIVersions"), "{yaml}");

        let resp = document_response(&accept(protobuf_codec::CONTENT_TYPE), &versions);
        assert_eq!(
            resp.headers()[header::CONTENT_TYPE],
            protobuf_codec::CONTENT_TYPE
        );
        let proto = body(resp).await;
        assert!(proto.starts_with(b"k8s\0"), "{proto:?}");

        let resp = document_response(&accept("text/html"), &versions);
        assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);
    }
}
