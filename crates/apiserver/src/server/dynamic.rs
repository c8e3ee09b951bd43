//! Group versions a server adds and removes while it runs (custom
//! resources): a shared table the mux consults after its static groups, kept
//! in step with the discovery registry so `/apis`, `/apis/<group>`,
//! `/apis/<group>/<version>` and aggregated discovery follow every change.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use super::discovery::{DiscoveryRegistry, GroupVersionDiscovery};
use crate::registry::store::Store;
use crate::registry::ResourceInfo;

/// One resource served at run time.
#[derive(Clone)]
pub struct DynamicResource {
    pub store: Arc<Store>,
    /// A `Warning` header sent with every answer (deprecated versions).
    pub warning: Option<String>,
}

/// The resources of one version of a dynamic group.
#[derive(Clone)]
pub struct DynamicVersion {
    pub version: String,
    pub resources: Vec<DynamicResource>,
}

type Table = HashMap<(String, String), HashMap<String, DynamicResource>>;

/// The run-time group versions of one server. Cloning shares the table.
#[derive(Clone)]
pub struct DynamicGroups {
    table: Arc<RwLock<Table>>,
    discovery: DiscoveryRegistry,
}

impl DynamicGroups {
    pub fn new(discovery: DiscoveryRegistry) -> Self {
        DynamicGroups {
            table: Arc::default(),
            discovery,
        }
    }

    /// Replaces everything served for `group` by `versions` (in discovery
    /// preference order, first preferred); an empty list removes the group.
    pub fn set_group(&self, group: &str, versions: Vec<DynamicVersion>) {
        let Ok(mut table) = self.table.write() else {
            return;
        };
        table.retain(|(g, _), _| g != group);
        let mut published = Vec::with_capacity(versions.len());
        for v in versions.into_iter().filter(|v| !v.resources.is_empty()) {
            let mut infos: Vec<ResourceInfo> =
                v.resources.iter().map(|r| r.store.info.clone()).collect();
            infos.sort_by(|a, b| a.resource.cmp(&b.resource));
            published.push(GroupVersionDiscovery {
                group: group.to_owned(),
                version: v.version.clone(),
                resources: infos,
                subresources: Vec::new(),
                stale: false,
            });
            let by_name = v
                .resources
                .into_iter()
                .map(|r| (r.store.info.resource.clone(), r))
                .collect();
            table.insert((group.to_owned(), v.version), by_name);
        }
        // Discovery changes under the table's lock, so the two never disagree
        // for long enough to matter to a reader that checks both.
        self.discovery.set_group(group, published);
    }

    /// The resource serving `group/version/resource`, if any.
    pub fn resource(&self, group: &str, version: &str, resource: &str) -> Option<DynamicResource> {
        let table = self.table.read().ok()?;
        table
            .get(&(group.to_owned(), version.to_owned()))?
            .get(resource)
            .cloned()
    }

    /// Whether `group/version` is served.
    pub fn serves(&self, group: &str, version: &str) -> bool {
        self.table
            .read()
            .is_ok_and(|t| t.contains_key(&(group.to_owned(), version.to_owned())))
    }

    /// Whether any version of `group` is served.
    pub fn serves_group(&self, group: &str) -> bool {
        self.table
            .read()
            .is_ok_and(|t| t.keys().any(|(g, _)| g == group))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::store::Strategies;

    fn store(group: &str, version: &str, resource: &str) -> Arc<Store> {
        let info = ResourceInfo {
            version: version.into(),
            resource: resource.into(),
            verbs: vec!["get".into()],
            storage_root: format!("{group}/{resource}"),
            ..ResourceInfo::testing(group, "Widget")
        };
        Arc::new(Store::in_memory(info, Strategies::default()))
    }

    #[test]
    fn groups_are_served_and_published_until_removed() {
        let discovery = DiscoveryRegistry::default();
        let dynamic = DynamicGroups::new(discovery.clone());
        let versions = ["v2", "v1"].map(|v| DynamicVersion {
            version: v.into(),
            resources: vec![DynamicResource {
                store: store("example.com", v, "widgets"),
                warning: None,
            }],
        });
        dynamic.set_group("example.com", versions.to_vec());
        assert!(dynamic.serves("example.com", "v1"));
        assert!(dynamic.resource("example.com", "v2", "widgets").is_some());
        let group = discovery.api_group("example.com").unwrap_or_default();
        assert_eq!(group["preferredVersion"]["version"], "v2");
        dynamic.set_group("example.com", Vec::new());
        assert!(!dynamic.serves_group("example.com"));
        assert!(discovery.api_group("example.com").is_none());
    }
}
