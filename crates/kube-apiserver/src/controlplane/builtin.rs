//! The catalogue of built-in resources served at GA versions: each entry
//! ties a k8s-openapi type (names, scope, decoding) to its discovery
//! details (short names, categories, subresources), its etcd key root and
//! its strategy. Groups are listed in upstream's order.

use std::collections::BTreeMap;
use std::sync::Arc;

use apimachinery::field_errors::FieldError;
use apiserver::registry::resource::ALL_VERBS;
use apiserver::registry::rest::GcPolicy;
use apiserver::registry::store::Strategies;
use apiserver::registry::ResourceInfo;
use k8s_openapi::api::{
    admissionregistration::v1 as admission, apps::v1 as apps, autoscaling::v2 as autoscaling,
    batch::v1 as batch, certificates::v1 as certificates, coordination::v1 as coordination,
    core::v1 as core, discovery::v1 as discovery, events::v1 as events,
    flowcontrol::v1 as flowcontrol, networking::v1 as networking, node::v1 as node,
    policy::v1 as policy, rbac::v1 as rbac, resource::v1 as resource, scheduling::v1 as scheduling,
    storage::v1 as storage,
};
use serde::de::DeserializeOwned;
use serde::Serialize;

use super::openapi::SchemaFn;
use super::typed::Typed;
use crate::registry::admission_policies as policies;
use crate::registry::autoscaling as hpa;
use crate::registry::certificate_approval;
use crate::registry::defaults;
use crate::registry::pod_defaults;
use crate::registry::printers;
use crate::registry::resource_defaults as dra;
use crate::registry::services::{ServiceAllocator, ServiceStrategy};
use crate::registry::validating_policies;
use crate::registry::validation;
use crate::registry::validation::cluster_objects as objects;
use crate::registry::validation::networking as net;
use crate::registry::validation::storage_classes as storage_v;
use crate::registry::validation::update_classes as classes;
use crate::registry::validation::update_storage as storage_rules;
use crate::registry::webhook_configurations;
use crate::registry::{apps as workloads, core as core_types, ResourceStrategy};

/// One built-in resource: what discovery says about it and how it behaves.
pub struct Builtin {
    pub info: ResourceInfo,
    pub strategies: Strategies,
    pub schema: SchemaFn,
}

/// Whether a k8s-openapi scope is namespaced.
pub trait Scope {
    const NAMESPACED: bool;
}

impl Scope for k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl Scope for k8s_openapi::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

/// Upstream's etcd key roots that differ from the resource name.
fn storage_root(group: &str, resource: &str) -> String {
    match (group, resource) {
        ("", "services") => "services/specs".into(),
        ("", "endpoints") => "services/endpoints".into(),
        ("", "nodes") => "minions".into(),
        ("", "replicationcontrollers") => "controllers".into(),
        ("networking.k8s.io", "ingresses") => "ingress".into(),
        ("apiextensions.k8s.io" | "apiregistration.k8s.io", _) => format!("{group}/{resource}"),
        _ => resource.into(),
    }
}

struct Extra {
    short_names: &'static [&'static str],
    categories: &'static [&'static str],
    scale: bool,
}

const PLAIN: Extra = Extra {
    short_names: &[],
    categories: &[],
    scale: false,
};

const fn short(names: &'static [&'static str]) -> Extra {
    Extra {
        short_names: names,
        categories: &[],
        scale: false,
    }
}

const fn all(names: &'static [&'static str]) -> Extra {
    Extra {
        short_names: names,
        categories: &["all"],
        scale: false,
    }
}

const fn scalable(names: &'static [&'static str]) -> Extra {
    Extra {
        short_names: names,
        categories: &["all"],
        scale: true,
    }
}

const API_EXTENSIONS: Extra = Extra {
    short_names: &[],
    categories: &["api-extensions"],
    scale: false,
};

/// What a k8s-openapi type must offer to be served as a built-in resource.
pub trait Kind:
    k8s_openapi::Resource<Scope: Scope>
    + k8s_openapi::ListableResource
    + Serialize
    + DeserializeOwned
    + schemars::JsonSchema
    + Send
    + Sync
    + 'static
{
}

impl<K> Kind for K where
    K: k8s_openapi::Resource<Scope: Scope>
        + k8s_openapi::ListableResource
        + Serialize
        + DeserializeOwned
        + schemars::JsonSchema
        + Send
        + Sync
        + 'static
{
}

fn builtin<K: Kind>(strategy: ResourceStrategy, extra: Extra) -> Builtin {
    let has_status = strategy.status;
    let strategy = match printers::for_kind(K::GROUP, K::VERSION, K::KIND) {
        Some(printer) => strategy
            .printed(printer.columns, printer.row)
            .ordered(printers::row_order(K::GROUP, K::KIND)),
        None => strategy,
    };
    builtin_with::<K>(strategy.into_strategies(), has_status, extra)
}

fn builtin_with<K: Kind>(mut strategies: Strategies, has_status: bool, extra: Extra) -> Builtin {
    let strings = |s: &[&str]| s.iter().map(|x| x.to_string()).collect();
    let info = ResourceInfo {
        group: K::GROUP.into(),
        version: K::VERSION.into(),
        resource: K::URL_PATH_SEGMENT.into(),
        singular: K::KIND.to_lowercase(),
        kind: K::KIND.into(),
        list_kind: K::LIST_KIND.into(),
        namespaced: <K::Scope as Scope>::NAMESPACED,
        short_names: strings(extra.short_names),
        categories: strings(extra.categories),
        verbs: strings(ALL_VERBS),
        has_status,
        has_scale: extra.scale,
        storage_root: storage_root(K::GROUP, K::URL_PATH_SEGMENT),
    };
    strategies.scheme = Arc::new(Typed::<K>::new(strategies.scheme));
    Builtin {
        info,
        strategies,
        schema: |generator| generator.subschema_for::<K>(),
    }
}

fn plain() -> ResourceStrategy {
    ResourceStrategy::default()
}

/// RBAC objects are named as path segments (upstream's `ValidateRBACName`),
/// so `system:` names are valid.
fn rbac_names(validate: fn(&serde_json::Value) -> Vec<FieldError>) -> ResourceStrategy {
    ResourceStrategy {
        name: apimachinery::validation::name_is_path_segment,
        validate,
        ..plain()
    }
}

/// A strategy with `validate` (create and update) set.
fn validated(
    validate: fn(&serde_json::Value) -> Vec<FieldError>,
    strategy: ResourceStrategy,
) -> ResourceStrategy {
    ResourceStrategy {
        validate,
        ..strategy
    }
}

/// A kind whose updates may not change the fields `rules` checks.
fn fixed(
    rules: fn(&serde_json::Value, &serde_json::Value) -> Vec<FieldError>,
    strategy: ResourceStrategy,
) -> ResourceStrategy {
    ResourceStrategy {
        validate_update: rules,
        ..strategy
    }
}

/// Bindings get upstream's defaults and keep their `roleRef` through
/// updates.
fn rbac_binding(validate: fn(&serde_json::Value) -> Vec<FieldError>) -> ResourceStrategy {
    ResourceStrategy {
        validate_update: validation::rbac::validate_binding_update,
        ..defaults::role_bindings(rbac_names(validate))
    }
}

/// Upstream keeps orphaning dependents by default for the versions that
/// did before the garbage collector (core/v1 ReplicationControllers,
/// batch/v1 Jobs).
fn orphans_by_default(strategy: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        gc_policy: GcPolicy::OrphanDependents,
        ..strategy
    }
}

/// A strategy checking `validate_create` on create only (upstream's update
/// rules of the kind keep fields fixed instead).
fn validated_on_create(
    validate_create: fn(&serde_json::Value) -> Vec<FieldError>,
) -> ResourceStrategy {
    ResourceStrategy {
        validate_create,
        ..plain()
    }
}

/// Upstream's `ReturnDeletedObject`: a delete answers with the object.
fn returns_deleted(strategy: ResourceStrategy) -> ResourceStrategy {
    ResourceStrategy {
        returns_deleted_object: true,
        ..strategy
    }
}

fn status() -> ResourceStrategy {
    core_types::with_status()
}

/// The core ("legacy") group, v1.
pub fn core_v1(services: Arc<ServiceAllocator>) -> Vec<Builtin> {
    let service_strategies = ServiceStrategy {
        base: core_types::services(),
        allocator: services,
    }
    .into_strategies();
    vec![
        builtin::<core::ConfigMap>(core_types::configmaps(), short(&["cm"])),
        builtin::<core::Endpoints>(
            ResourceStrategy {
                deprecation: Some(
                    "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice",
                ),
                validate: validation::core_objects::validate_endpoints,
                ..defaults::endpoints(plain())
            },
            short(&["ep"]),
        ),
        builtin::<core::Event>(core_types::events(), short(&["ev"])),
        builtin::<core::LimitRange>(
            ResourceStrategy {
                defaults: validation::limit_range::limit_range_defaults,
                validate: validation::limit_range::validate_limit_range,
                ..plain()
            },
            short(&["limits"]),
        ),
        builtin::<core::Namespace>(core_types::namespaces(), short(&["ns"])),
        builtin::<core::Node>(core_types::nodes(), short(&["no"])),
        builtin::<core::PersistentVolumeClaim>(
            returns_deleted(defaults::persistent_volume_claims(
                core_types::persistent_volume_claims(),
            )),
            short(&["pvc"]),
        ),
        builtin::<core::PersistentVolume>(
            defaults::persistent_volumes(ResourceStrategy {
                validate_create: validation::persistent_volumes::validate_pv,
                validate_update: validation::persistent_volumes::validate_pv_update,
                validate_status_update: Some(
                    validation::persistent_volumes::validate_pv_status_update,
                ),
                ..returns_deleted(status())
            }),
            short(&["pv"]),
        ),
        builtin::<core::Pod>(returns_deleted(core_types::pods()), all(&["po"])),
        builtin::<core::PodTemplate>(
            returns_deleted(ResourceStrategy {
                defaults: pod_defaults::pod_template_defaults,
                validate: validation::pod::validate_pod_template,
                ..plain()
            }),
            PLAIN,
        ),
        builtin::<core::ReplicationController>(
            orphans_by_default(ResourceStrategy {
                defaults: pod_defaults::replication_controller_defaults,
                validate: validation::workloads::validate_replication_controller,
                ..ResourceStrategy::spec_status()
            }),
            scalable(&["rc"]),
        ),
        builtin::<core::ResourceQuota>(
            returns_deleted(ResourceStrategy {
                validate: validation::quota::validate_resource_quota,
                validate_update: validation::quota::validate_resource_quota_update,
                ..status()
            }),
            short(&["quota"]),
        ),
        builtin::<core::Secret>(core_types::secrets(), PLAIN),
        builtin::<core::ServiceAccount>(
            returns_deleted(core_types::service_accounts()),
            short(&["sa"]),
        ),
        builtin_with::<core::Service>(service_strategies, true, all(&["svc"])),
    ]
}

/// `autoscaling/v1` HorizontalPodAutoscalers, served over the storage of
/// `autoscaling/v2` (see [`super::autoscaling_v1`]).
pub fn horizontal_pod_autoscalers_v1() -> Builtin {
    builtin::<k8s_openapi::api::autoscaling::v1::HorizontalPodAutoscaler>(
        hpa::horizontal_pod_autoscalers_v1(),
        all(&["hpa"]),
    )
}

/// `events.k8s.io/v1` Events, served over the storage of core/v1 Events
/// (see [`super::events_v1`]).
pub fn events_v1() -> Builtin {
    builtin::<events::Event>(core_types::events_v1(), short(&["ev"]))
}

/// The named groups, each with its resources at their GA version
/// (`events.k8s.io` is installed apart, over core/v1 Events).
pub fn named_groups() -> Vec<Vec<Builtin>> {
    vec![
        vec![
            builtin::<apps::ControllerRevision>(
                fixed(classes::validate_controller_revision_update, plain()),
                PLAIN,
            ),
            builtin::<apps::DaemonSet>(workloads::daemonsets(), all(&["ds"])),
            builtin::<apps::Deployment>(workloads::deployments(), scalable(&["deploy"])),
            builtin::<apps::ReplicaSet>(workloads::replicasets(), scalable(&["rs"])),
            builtin::<apps::StatefulSet>(workloads::statefulsets(), scalable(&["sts"])),
        ],
        vec![builtin::<autoscaling::HorizontalPodAutoscaler>(
            hpa::horizontal_pod_autoscalers(),
            all(&["hpa"]),
        )],
        vec![
            builtin::<batch::CronJob>(workloads::cronjobs(), all(&["cj"])),
            builtin::<batch::Job>(orphans_by_default(workloads::jobs()), all(&[])),
        ],
        vec![
            builtin::<certificates::CertificateSigningRequest>(
                defaults::certificate_signing_requests(ResourceStrategy {
                    subresources: certificate_approval::CSR,
                    validate_create: validation::certificates::validate_create,
                    validate_update: validation::certificates::validate_update,
                    ..status()
                }),
                short(&["csr"]),
            ),
            builtin::<certificates::ClusterTrustBundle>(
                ResourceStrategy {
                    name: validation::cluster_trust_bundles::any_name,
                    validate: validation::cluster_trust_bundles::validate_cluster_trust_bundle,
                    validate_create:
                        validation::cluster_trust_bundles::validate_cluster_trust_bundle_create,
                    validate_update:
                        validation::cluster_trust_bundles::validate_cluster_trust_bundle_update,
                    ..plain()
                },
                PLAIN,
            ),
        ],
        vec![builtin::<coordination::Lease>(
            validated(objects::validate_lease, plain()),
            PLAIN,
        )],
        vec![builtin::<discovery::EndpointSlice>(
            defaults::endpoint_slices(ResourceStrategy {
                validate_create: objects::validate_endpoint_slice_create,
                validate_update: objects::validate_endpoint_slice_update,
                ..plain()
            }),
            PLAIN,
        )],
        vec![
            builtin::<networking::IngressClass>(
                fixed(
                    classes::validate_ingress_class_update,
                    defaults::ingress_classes(validated(net::validate_ingress_class, plain())),
                ),
                PLAIN,
            ),
            builtin::<networking::Ingress>(
                ResourceStrategy {
                    validate: net::validate_ingress,
                    validate_create: net::validate_ingress_create,
                    ..status()
                },
                short(&["ing"]),
            ),
            builtin::<networking::IPAddress>(
                ResourceStrategy {
                    name: net::ip_address_name,
                    validate_create: net::validate_ip_address,
                    validate_update: classes::validate_ip_address_update,
                    ..plain()
                },
                short(&["ip"]),
            ),
            builtin::<networking::NetworkPolicy>(
                defaults::network_policies(validated(net::validate_network_policy, plain())),
                short(&["netpol"]),
            ),
            builtin::<networking::ServiceCIDR>(
                ResourceStrategy {
                    validate_create: net::validate_service_cidr_spec,
                    validate_update: classes::validate_service_cidr_update,
                    ..status()
                },
                PLAIN,
            ),
        ],
        vec![builtin::<node::RuntimeClass>(
            fixed(
                classes::validate_runtime_class_update,
                validated(objects::validate_runtime_class, plain()),
            ),
            PLAIN,
        )],
        vec![builtin::<policy::PodDisruptionBudget>(
            ResourceStrategy {
                validate: objects::validate_pod_disruption_budget,
                ..ResourceStrategy::spec_status()
            },
            short(&["pdb"]),
        )],
        vec![
            builtin::<rbac::ClusterRoleBinding>(
                rbac_binding(validation::rbac::validate_cluster_role_binding),
                PLAIN,
            ),
            builtin::<rbac::ClusterRole>(
                rbac_names(validation::rbac::validate_cluster_role),
                PLAIN,
            ),
            builtin::<rbac::RoleBinding>(
                rbac_binding(validation::rbac::validate_role_binding),
                PLAIN,
            ),
            builtin::<rbac::Role>(rbac_names(validation::rbac::validate_role), PLAIN),
        ],
        vec![builtin::<scheduling::PriorityClass>(
            fixed(
                classes::validate_priority_class_update,
                defaults::priority_classes(validated(objects::validate_priority_class, plain())),
            ),
            short(&["pc"]),
        )],
        vec![
            builtin::<storage::CSIDriver>(
                returns_deleted(fixed(
                    storage_rules::validate_csi_driver_update,
                    defaults::csi_drivers(validated(storage_v::validate_csi_driver, plain())),
                )),
                PLAIN,
            ),
            builtin::<storage::CSINode>(
                returns_deleted(fixed(
                    storage_rules::validate_csi_node_update,
                    validated(storage_v::validate_csi_node, plain()),
                )),
                PLAIN,
            ),
            builtin::<storage::CSIStorageCapacity>(
                fixed(
                    storage_rules::validate_csi_storage_capacity_update,
                    validated_on_create(storage_v::validate_csi_storage_capacity),
                ),
                PLAIN,
            ),
            builtin::<storage::StorageClass>(
                returns_deleted(fixed(
                    classes::validate_storage_class_update,
                    defaults::storage_classes(validated_on_create(
                        storage_v::validate_storage_class,
                    )),
                )),
                short(&["sc"]),
            ),
            builtin::<storage::VolumeAttachment>(
                returns_deleted(fixed(
                    storage_rules::validate_volume_attachment_update,
                    defaults::volume_attachments(ResourceStrategy {
                        validate: storage_v::validate_volume_attachment,
                        ..status()
                    }),
                )),
                PLAIN,
            ),
            builtin::<storage::VolumeAttributesClass>(
                returns_deleted(fixed(
                    classes::validate_volume_attributes_class_update,
                    validated(storage_v::validate_volume_attributes_class, plain()),
                )),
                short(&["vac"]),
            ),
        ],
        vec![
            builtin::<flowcontrol::FlowSchema>(
                defaults::flow_schemas(validated(
                    validation::flowcontrol::validate_flow_schema,
                    status(),
                )),
                PLAIN,
            ),
            builtin::<flowcontrol::PriorityLevelConfiguration>(
                defaults::priority_levels(validated(
                    validation::flowcontrol::validate_priority_level,
                    status(),
                )),
                PLAIN,
            ),
        ],
        vec![
            builtin::<admission::MutatingAdmissionPolicy>(
                policies::mutating_policies(),
                API_EXTENSIONS,
            ),
            builtin::<admission::MutatingAdmissionPolicyBinding>(
                policies::mutating_policy_bindings(),
                API_EXTENSIONS,
            ),
            builtin::<admission::MutatingWebhookConfiguration>(
                webhook_configurations::mutating(),
                API_EXTENSIONS,
            ),
            builtin::<admission::ValidatingAdmissionPolicy>(
                validating_policies::validating_policies(status()),
                API_EXTENSIONS,
            ),
            builtin::<admission::ValidatingAdmissionPolicyBinding>(
                validating_policies::validating_policy_bindings(),
                API_EXTENSIONS,
            ),
            builtin::<admission::ValidatingWebhookConfiguration>(
                webhook_configurations::validating(),
                API_EXTENSIONS,
            ),
        ],
        vec![
            builtin::<resource::DeviceClass>(returns_deleted(plain()), PLAIN),
            builtin::<resource::DeviceTaintRule>(
                returns_deleted(dra::device_taint_rules(ResourceStrategy {
                    validate: validation::resource::validate_device_taint_rule,
                    validate_create: validation::resource::validate_device_taint_rule_create,
                    validate_update: validation::resource::validate_device_taint_rule_update,
                    ..ResourceStrategy::spec_status()
                })),
                PLAIN,
            ),
            builtin::<resource::ResourceClaim>(
                returns_deleted(fixed(
                    classes::validate_resource_claim_update,
                    dra::resource_claims(status()),
                )),
                PLAIN,
            ),
            builtin::<resource::ResourceClaimTemplate>(
                returns_deleted(fixed(
                    classes::validate_resource_claim_template_update,
                    dra::resource_claim_templates(plain()),
                )),
                PLAIN,
            ),
            builtin::<resource::ResourceSlice>(
                returns_deleted(fixed(
                    classes::validate_resource_slice_update,
                    dra::resource_slices(plain()),
                )),
                PLAIN,
            ),
        ],
    ]
}

/// Resources upstream's storage providers serve only while a feature gate
/// is on: (group, resource, gate).
const GATED: &[(&str, &str, &str)] =
    &[("resource.k8s.io", "devicetaintrules", "DRADeviceTaintRules")];

/// Whether the resulting feature gates let `info` be served.
pub fn gate_allows(info: &ResourceInfo, gates: &BTreeMap<&'static str, bool>) -> bool {
    GATED
        .iter()
        .filter(|(group, resource, _)| info.group == *group && info.resource == *resource)
        .all(|(_, _, gate)| gates.get(gate) != Some(&false))
}

/// apiextensions.k8s.io/v1 CustomResourceDefinitions (served by the
/// apiextensions server).
pub fn crd() -> Builtin {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
    builtin::<apiextensions::CustomResourceDefinition>(
        status(),
        Extra {
            short_names: &["crd", "crds"],
            categories: &["api-extensions"],
            scale: false,
        },
    )
}

/// apiregistration.k8s.io/v1 APIServices (served by the aggregator).
pub fn api_service() -> Builtin {
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
    // APIService names are "<version>.<group>" ("v1." for the core group),
    // checked only as path segments, as upstream's aggregator does.
    let strategy = ResourceStrategy {
        name: apimachinery::validation::name_is_path_segment,
        ..status()
    };
    builtin::<apiregistration::APIService>(strategy, API_EXTENSIONS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_names_match_upstream() {
        let alloc = ServiceAllocator::new(
            crate::options::Cidr::from_v4(std::net::Ipv4Addr::new(10, 0, 0, 0), 24),
            crate::options::PortRange {
                base: 30000,
                size: 2768,
            },
            None,
        );
        let core = core_v1(alloc);
        let pods = core
            .iter()
            .find(|b| b.info.resource == "pods")
            .map(|b| &b.info);
        let pods = pods.cloned().unwrap_or_else(|| panic!("pods missing"));
        assert!(pods.namespaced);
        assert_eq!(pods.list_kind, "PodList");
        assert_eq!(pods.short_names, vec!["po"]);
        let svc = core
            .iter()
            .find(|b| b.info.resource == "services")
            .map(|b| b.info.storage_root.clone());
        assert_eq!(svc.as_deref(), Some("services/specs"));
        let groups = named_groups();
        let deploy = groups
            .iter()
            .flatten()
            .find(|b| b.info.resource == "deployments")
            .map(|b| &b.info);
        assert!(deploy.is_some_and(|d| d.has_scale && d.has_status && d.group == "apps"));
        let ns = core
            .iter()
            .find(|b| b.info.resource == "namespaces")
            .map(|b| b.info.namespaced);
        assert_eq!(ns, Some(false));
    }
}

#[cfg(test)]
mod fixtures_tests;

#[cfg(test)]
mod defaults_tests;

#[cfg(test)]
mod defaults_groups_tests;

#[cfg(test)]
mod defaults_workloads_tests;
