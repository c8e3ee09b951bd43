//! The static description of one served resource: what discovery publishes
//! (upstream's `metav1.APIResource`) and what the REST handler needs to
//! route, store and name it. A package of its own, below admission and the
//! registry, which both describe writes by it.

/// The verbs a resource supports, as discovery lists them.
pub const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group; empty for the core ("legacy") group.
    pub group: String,
    pub version: String,
    /// Plural lower-case name used in URLs, e.g. `deployments`.
    pub resource: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<String>,
    /// Whether the resource has a `status` subresource (spec/status split).
    pub has_status: bool,
    /// Whether the resource has a `scale` subresource (autoscaling/v1 Scale).
    pub has_scale: bool,
    /// Storage key root below the storage prefix, e.g. `pods` or
    /// `apiextensions.k8s.io/customresourcedefinitions` (upstream's layout).
    pub storage_root: String,
}

impl ResourceInfo {
    /// A namespaced resource of `kind` in `group`/v1, named as most are
    /// (`<kind>s`, stored under that name), without verbs or subresources:
    /// the resource unit tests build, set apart with struct update syntax.
    #[cfg(any(test, feature = "testing"))]
    pub fn testing(group: &str, kind: &str) -> Self {
        let singular = kind.to_lowercase();
        let resource = format!("{singular}s");
        ResourceInfo {
            group: group.into(),
            version: "v1".into(),
            storage_root: resource.clone(),
            resource,
            singular,
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            namespaced: true,
            ..ResourceInfo::default()
        }
    }

    /// Core v1 ConfigMaps, the resource most unit tests use.
    #[cfg(any(test, feature = "testing"))]
    pub fn configmaps() -> Self {
        ResourceInfo::testing("", "ConfigMap")
    }

    /// A namespaced resource or subresource that only takes POSTs of `kind`
    /// in `group`/`version` (bindings, evictions, token requests), stored
    /// nowhere.
    pub fn create_only(group: &str, version: &str, resource: &str, kind: &str) -> Self {
        ResourceInfo {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            singular: String::new(),
            kind: kind.into(),
            list_kind: String::new(),
            namespaced: true,
            short_names: Vec::new(),
            categories: Vec::new(),
            verbs: vec!["create".into()],
            has_status: false,
            has_scale: false,
            storage_root: String::new(),
        }
    }

    /// `apps/v1`, or `v1` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `deployments.apps`, or `pods` for the core group (as errors name it).
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }
}
