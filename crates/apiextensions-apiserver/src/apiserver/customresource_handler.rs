//! What an established CRD serves: for each served version a generic
//! registry store (custom resource strategy over the CRD's storage, with
//! conversion to the storage version), grouped by API group for the
//! server's dynamic group table.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use apiserver::admission::{Chain, Equivalents, GroupVersionKind, GroupVersionResource};
use apiserver::registry::converting::{Converter, ConvertingStorage, ReadDefaults, ServedVersions};
use apiserver::registry::resource::ALL_VERBS;
use apiserver::registry::store::Store;
use apiserver::registry::ResourceInfo;
use apiserver::server::{DynamicResource, DynamicVersion};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames, CustomResourceDefinitionVersion,
};
use storage::cacher::{Cacher, CacherConfig};
use storage::{Kv, Storage};

use super::conversion::webhook_converter::WebhookConverter;
use super::conversion::CrdConverter;
use crate::apis::helpers::{self, ESTABLISHED, NAMES_ACCEPTED};
use crate::registry::customresource::codec::CustomResourceCodec;
use crate::registry::customresource::tableconvertor::Printer;
use crate::registry::customresource::{
    CustomResourceStrategy, ScaleFields, ServedKind, VersionSchema,
};
use apimachinery::version::priority_order;
use client_go::util::jsonpath::JsonPath;

/// Builds custom resource stores over the server's KV backend.
#[derive(Clone)]
pub struct StoreFactory {
    pub kv: Arc<dyn Kv>,
    /// `--etcd-prefix`.
    pub prefix: String,
    /// `--watch-cache`: each CRD's storage gets a watch cache, shared by
    /// its served versions.
    pub watch_cache: bool,
    /// The admission chain of the built-in stores, once it exists: custom
    /// resources are admitted by the same plugins and webhooks.
    pub admission: Arc<OnceLock<Arc<Chain>>>,
}

/// Whether the CRD's resources are served (upstream serves once the names
/// are accepted, and keeps serving an established CRD).
pub fn is_served(crd: &CustomResourceDefinition) -> bool {
    helpers::is_true(crd, NAMES_ACCEPTED) || helpers::is_true(crd, ESTABLISHED)
}

fn accepted_names(crd: &CustomResourceDefinition) -> CustomResourceDefinitionNames {
    crd.status
        .as_ref()
        .and_then(|s| s.accepted_names.clone())
        .filter(|n| !n.kind.is_empty())
        .unwrap_or_else(|| crd.spec.names.clone())
}

/// The default deprecation warning (upstream's wording), advising the
/// highest-priority served version that is newer and not deprecated.
pub fn deprecation_warning(crd: &CustomResourceDefinition, version: &str) -> String {
    let spec = &crd.spec;
    let kind = &spec.names.kind;
    let mut msg = format!("{}/{version} {kind} is deprecated", spec.group);
    let mut newer: Vec<&str> = spec
        .versions
        .iter()
        .filter(|v| v.served && !v.deprecated.unwrap_or(false))
        .map(|v| v.name.as_str())
        .filter(|v| priority_order(v, version).is_lt())
        .collect();
    newer.sort_by(|a, b| priority_order(a, b));
    if let Some(best) = newer.first() {
        msg.push_str(&format!("; use {}/{best} {kind}", spec.group));
    }
    msg
}

/// The CRD's conversion: `None` unless a usable webhook is configured.
fn converter(crd: &CustomResourceDefinition) -> CrdConverter {
    let Some(conversion) = crd.spec.conversion.as_ref() else {
        return CrdConverter::None;
    };
    if conversion.strategy != "Webhook" {
        return CrdConverter::None;
    }
    let kind = format!("{}/{}", crd.spec.group, crd.spec.names.kind);
    let config = conversion
        .webhook
        .as_ref()
        .and_then(|w| w.client_config.as_ref());
    let Some(config) = config else {
        return CrdConverter::Broken(format!("conversion webhook for {kind} has no clientConfig"));
    };
    let name = crd.metadata.name.clone().unwrap_or_default();
    match WebhookConverter::new(config, crd.spec.names.kind.clone(), name) {
        Ok(w) => CrdConverter::Webhook(w),
        Err(e) => CrdConverter::Broken(format!("conversion webhook for {kind}: {e}")),
    }
}

/// The schema's defaults as applied to what is read, when it has any.
fn read_defaults(schema: &Option<Arc<VersionSchema>>) -> Option<Arc<dyn ReadDefaults>> {
    schema
        .clone()
        .filter(|s| s.has_defaults())
        .map(|s| s as Arc<dyn ReadDefaults>)
}

/// The version's compiled schema, when it has a usable one.
fn version_schema(v: &CustomResourceDefinitionVersion) -> Option<Arc<VersionSchema>> {
    v.schema
        .as_ref()
        .and_then(|s| s.open_api_v3_schema.as_ref())
        .and_then(|s| serde_json::to_value(s).ok())
        .and_then(|s| VersionSchema::new(&s))
        .map(Arc::new)
}

fn strategy(
    served: ServedKind,
    v: &CustomResourceDefinitionVersion,
    schema: Option<Arc<VersionSchema>>,
) -> CustomResourceStrategy {
    let subresources = v.subresources.as_ref();
    let scale = subresources
        .and_then(|s| s.scale.as_ref())
        .map(|s| ScaleFields {
            spec_replicas: s.spec_replicas_path.clone(),
            status_replicas: s.status_replicas_path.clone(),
            label_selector: s.label_selector_path.clone(),
        });
    let columns: Vec<serde_json::Value> = v
        .additional_printer_columns
        .iter()
        .flatten()
        .filter_map(|c| serde_json::to_value(c).ok())
        .collect();
    let selectable = v
        .selectable_fields
        .iter()
        .flatten()
        .filter_map(|f| {
            let path = JsonPath::parse(&f.json_path).ok()?;
            Some((f.json_path.trim_start_matches('.').to_owned(), path))
        })
        .collect();
    let type_schema = schema.as_ref().map(|s| {
        Arc::new(
            s.compiled
                .structured(&served.group, &served.version, &served.kind),
        )
    });
    CustomResourceStrategy {
        served,
        schema,
        type_schema,
        status: subresources.is_some_and(|s| s.status.is_some()),
        scale,
        printer: Printer::new(&columns),
        selectable,
    }
}

pub(crate) fn resource_info(
    crd: &CustomResourceDefinition,
    v: &CustomResourceDefinitionVersion,
) -> ResourceInfo {
    let names = accepted_names(crd);
    let group = crd.spec.group.clone();
    let terminating = helpers::is_terminating(crd);
    let verbs = ALL_VERBS
        .iter()
        // A CRD being deleted takes no new objects.
        .filter(|verb| !(terminating && **verb == "create"))
        .map(|v| (*v).to_owned())
        .collect();
    let subresources = v.subresources.as_ref();
    ResourceInfo {
        storage_root: format!("{group}/{}", names.plural),
        group,
        version: v.name.clone(),
        resource: names.plural.clone(),
        singular: names
            .singular
            .clone()
            .unwrap_or_else(|| names.kind.to_lowercase()),
        list_kind: names
            .list_kind
            .clone()
            .unwrap_or_else(|| format!("{}List", names.kind)),
        kind: names.kind,
        namespaced: crd.spec.scope == "Namespaced",
        short_names: names.short_names.unwrap_or_default(),
        categories: names.categories.unwrap_or_default(),
        verbs,
        has_status: subresources.is_some_and(|s| s.status.is_some()),
        has_scale: subresources.is_some_and(|s| s.scale.is_some()),
    }
}

/// The resource and kind of each served version of a CRD.
fn served_versions(
    crd: &CustomResourceDefinition,
) -> Vec<(GroupVersionResource, GroupVersionKind)> {
    let served = crd.spec.versions.iter().filter(|v| v.served);
    served
        .map(|v| {
            let info = resource_info(crd, v);
            (GroupVersionResource::of(&info), GroupVersionKind::of(&info))
        })
        .collect()
}

impl StoreFactory {
    /// The served versions of one CRD, by version name.
    fn crd_resources(&self, crd: &CustomResourceDefinition) -> Vec<(String, DynamicResource)> {
        let prefix = self.prefix.trim_end_matches('/');
        let group = &crd.spec.group;
        let mut raw: Arc<dyn Storage> = Arc::new(
            storage::store::Store::new(self.kv.clone(), Arc::new(CustomResourceCodec::from_gate()))
                .with_resource(group, &accepted_names(crd).plural),
        );
        if self.watch_cache {
            let root = format!("{prefix}/{group}/{}/", accepted_names(crd).plural);
            raw = Arc::new(Cacher::new(raw, CacherConfig::new(root)));
        }
        let Some(storage_version) = crd.spec.versions.iter().find(|v| v.storage) else {
            return Vec::new();
        };
        let converter = Arc::new(Converter::new(converter(crd)));
        let equivalents = Equivalents(Arc::new(ServedVersions {
            versions: served_versions(crd),
            converter: converter.clone(),
        }));
        crd.spec
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| {
                let schema = version_schema(v);
                let storage = ConvertingStorage::new(
                    raw.clone(),
                    converter.clone(),
                    format!("{group}/{}", v.name),
                    format!("{group}/{}", storage_version.name),
                )
                .with_read_defaults(read_defaults(&schema));
                let info = resource_info(crd, v);
                let served = ServedKind {
                    group: info.group.clone(),
                    version: info.version.clone(),
                    kind: info.kind.clone(),
                };
                let strategies = strategy(served, v, schema).into_strategies();
                let store = Store::new(info, strategies, Arc::new(storage), prefix);
                if let Some(chain) = self.admission.get() {
                    store.set_admission(chain.clone());
                }
                store.set_equivalents(equivalents.clone());
                let warning = v.deprecated.unwrap_or(false).then(|| {
                    v.deprecation_warning
                        .clone()
                        .unwrap_or_else(|| deprecation_warning(crd, &v.name))
                });
                let resource = DynamicResource {
                    store: Arc::new(store),
                    warning,
                };
                (v.name.clone(), resource)
            })
            .collect()
    }

    /// Everything one group serves, given every CRD of the group; versions
    /// in priority order.
    pub fn group_versions(&self, crds: &[&CustomResourceDefinition]) -> Vec<DynamicVersion> {
        let mut by_version: BTreeMap<String, Vec<DynamicResource>> = BTreeMap::new();
        for crd in crds.iter().filter(|c| is_served(c)) {
            for (version, resource) in self.crd_resources(crd) {
                by_version.entry(version).or_default().push(resource);
            }
        }
        let mut versions: Vec<DynamicVersion> = by_version
            .into_iter()
            .map(|(version, resources)| DynamicVersion { version, resources })
            .collect();
        versions.sort_by(|a, b| priority_order(&a.version, &b.version));
        versions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn crd(versions: serde_json::Value) -> CustomResourceDefinition {
        serde_json::from_value(json!({
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": versions},
        }))
        .expect("valid CRD")
    }

    #[test]
    fn deprecation_warning_names_the_newest_undeprecated_version() {
        let c = crd(json!([
            {"name": "v1alpha1", "served": true, "storage": false, "deprecated": true},
            {"name": "v1beta1", "served": true, "storage": false},
            {"name": "v1", "served": true, "storage": true},
        ]));
        assert_eq!(
            deprecation_warning(&c, "v1alpha1"),
            "example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget"
        );
        assert_eq!(
            deprecation_warning(&c, "v1"),
            "example.com/v1 Widget is deprecated"
        );
    }

    #[test]
    fn resource_info_follows_the_version_and_scope() {
        let c = crd(json!([{"name": "v1", "served": true, "storage": true,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                "statusReplicasPath": ".status.replicas"}}}]));
        let info = resource_info(&c, &c.spec.versions[0]);
        assert_eq!(info.storage_root, "example.com/widgets");
        assert!(info.namespaced && info.has_status && info.has_scale);
        assert!(info.supports("create"));
    }
}
