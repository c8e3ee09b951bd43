//! kube-apiserver's admission plugins (upstream's `plugin/pkg/admission`
//! and the generic ones of `k8s.io/apiserver`), and the chain built from
//! the enabled ones in upstream's order.

mod certificates;
mod config;
mod crd_types;
mod events;
mod image_policy;
mod images;
mod limit_ranger;
mod namespace;
mod network;
mod node_features;
mod node_restriction;
mod owner_references;
mod pod_security;
mod pods;
pub mod quota;
mod rbac_escalation;
mod scheduling;
mod service_account;
mod simple;
#[cfg(test)]
mod testing;
mod tolerations;
mod volumes;

use std::collections::BTreeMap;
use std::sync::Arc;

use apiserver::admission::initializer::Stores;
use apiserver::admission::plugin::policy::{mutating, validating};
use apiserver::admission::plugin::webhook;
use apiserver::admission::{Chain, Plugin};
use apiserver::filters::authorization::Authorization;

use crate::authorization::rbac::RbacAuthorizer;

pub use config::{AdmissionConfig, ConfigError};

use crate::options::AdmissionOptions;

/// What plugins are built from.
pub struct Setup<'a> {
    pub options: &'a AdmissionOptions,
    pub config: &'a AdmissionConfig,
    pub stores: &'a Stores,
    /// The server's authorizer (plugins that check a user's permissions).
    pub authorization: &'a Arc<Authorization>,
    /// The RBAC authorizer, when RBAC is a mode (escalation checks).
    pub rbac: Option<Arc<RbacAuthorizer>>,
    /// Every feature gate and whether it is on.
    pub feature_gates: &'a BTreeMap<&'static str, bool>,
}

/// Builds the chain of the enabled plugins this server has, in upstream's
/// order. Enabled plugins not built yet are skipped (flag validation has
/// refused those that are not on by default).
pub fn chain(setup: &Setup<'_>) -> Result<Chain, ConfigError> {
    let mut plugins = Vec::new();
    for name in setup.options.enabled_plugins() {
        plugins.extend(plugin(name, setup)?);
    }
    // Upstream checks RBAC escalation in the RBAC storage, on every write.
    let escalation = rbac_escalation::RbacEscalation {
        authorization: setup.authorization.clone(),
        rbac: setup.rbac.clone(),
    };
    plugins.push(Plugin::validating("RBACEscalation", Arc::new(escalation)));
    Ok(Chain::new(plugins))
}

fn plugin(name: &'static str, setup: &Setup<'_>) -> Result<Option<Plugin>, ConfigError> {
    let (options, config) = (setup.options, setup.config);
    let s = || setup.stores.clone();
    let gate = |name: &str| setup.feature_gates.get(name).copied().unwrap_or(false);
    Ok(Some(match name {
        "AlwaysAdmit" => Plugin::both(name, Arc::new(simple::AlwaysAdmit)),
        "AlwaysDeny" => Plugin::both(name, Arc::new(simple::AlwaysDeny)),
        "NamespaceLifecycle" => Plugin::mutating(
            name,
            Arc::new(namespace::NamespaceLifecycle { stores: s() }),
        ),
        "NamespaceExists" => {
            Plugin::validating(name, Arc::new(namespace::NamespaceExists { stores: s() }))
        }
        "NamespaceAutoProvision" => Plugin::mutating(
            name,
            Arc::new(namespace::NamespaceAutoProvision { stores: s() }),
        ),
        "LimitRanger" => Plugin::both(name, Arc::new(limit_ranger::LimitRanger { stores: s() })),
        "ServiceAccount" => Plugin::both(
            name,
            Arc::new(service_account::ServiceAccount { stores: s() }),
        ),
        "TaintNodesByCondition" => Plugin::mutating(name, Arc::new(pods::TaintNodesByCondition)),
        "Priority" => Plugin::both(name, Arc::new(pods::Priority { stores: s() })),
        "DefaultTolerationSeconds" => Plugin::mutating(
            name,
            Arc::new(pods::DefaultTolerationSeconds {
                not_ready_seconds: options.not_ready_toleration_seconds,
                unreachable_seconds: options.unreachable_toleration_seconds,
            }),
        ),
        "RuntimeClass" => Plugin::mutating(name, Arc::new(pods::RuntimeClass { stores: s() })),
        "DefaultStorageClass" => {
            Plugin::mutating(name, Arc::new(volumes::DefaultStorageClass { stores: s() }))
        }
        "StorageObjectInUseProtection" => {
            Plugin::mutating(name, Arc::new(volumes::StorageObjectInUseProtection))
        }
        "PersistentVolumeClaimResize" => Plugin::validating(
            name,
            Arc::new(volumes::PersistentVolumeClaimResize { stores: s() }),
        ),
        "CertificateApproval" => Plugin::validating(
            name,
            Arc::new(certificates::CertificateApproval {
                authorization: setup.authorization.clone(),
            }),
        ),
        "ClusterTrustBundleAttest" => Plugin::validating(
            name,
            Arc::new(certificates::ClusterTrustBundleAttest {
                authorization: setup.authorization.clone(),
            }),
        ),
        "DefaultIngressClass" => {
            Plugin::mutating(name, Arc::new(network::DefaultIngressClass { stores: s() }))
        }
        "DenyServiceExternalIPs" => {
            Plugin::validating(name, Arc::new(network::DenyServiceExternalIPs))
        }
        "AlwaysPullImages" => Plugin::both(name, Arc::new(images::AlwaysPullImages)),
        "ImagePolicyWebhook" => Plugin::validating(
            name,
            Arc::new(image_policy::ImagePolicyWebhook::from_config(
                config.plugin(name),
            )?),
        ),
        "NodeRestriction" => Plugin::mutating(
            name,
            Arc::new(node_restriction::NodeRestriction { stores: s() }),
        ),
        "PodNodeSelector" => Plugin::both(
            name,
            Arc::new(scheduling::PodNodeSelector {
                stores: s(),
                cluster: scheduling::node_selector_config(config.plugin(name)),
            }),
        ),
        "LimitPodHardAntiAffinityTopology" => {
            Plugin::validating(name, Arc::new(scheduling::LimitPodHardAntiAffinityTopology))
        }
        "PodTopologyLabels" => Plugin::mutating(
            name,
            Arc::new(scheduling::PodTopologyLabels {
                stores: s(),
                enabled: gate("PodTopologyLabelsAdmission"),
            }),
        ),
        "PodTolerationRestriction" => Plugin::both(
            name,
            Arc::new(tolerations::PodTolerationRestriction {
                stores: s(),
                config: tolerations::TolerationConfig::from_config(config.plugin(name))?,
            }),
        ),
        "OwnerReferencesPermissionEnforcement" => Plugin::validating(
            name,
            Arc::new(owner_references::OwnerReferencesPermissionEnforcement {
                authorization: setup.authorization.clone(),
                stores: s(),
            }),
        ),
        "NodeDeclaredFeatureValidator" => Plugin::validating(
            name,
            Arc::new(node_features::NodeDeclaredFeatureValidator { stores: s() }),
        ),
        "EventRateLimit" => Plugin::validating(
            name,
            Arc::new(events::EventRateLimit::from_config(config.plugin(name))?),
        ),
        "ExtendedResourceToleration" => {
            Plugin::mutating(name, Arc::new(tolerations::ExtendedResourceToleration))
        }
        "CertificateSigning" => Plugin::validating(
            name,
            Arc::new(certificates::CertificateSigning {
                authorization: setup.authorization.clone(),
            }),
        ),
        "CertificateSubjectRestriction" => {
            Plugin::validating(name, Arc::new(certificates::CertificateSubjectRestriction))
        }
        "MutatingAdmissionWebhook" => {
            Plugin::mutating(name, Arc::new(webhook::mutating::MutatingWebhook::new(s())))
        }
        "ValidatingAdmissionWebhook" => Plugin::validating(
            name,
            Arc::new(webhook::validating::ValidatingWebhook::new(s())),
        ),
        "MutatingAdmissionPolicy" => {
            let types = Arc::new(crd_types::CrdTypes::default());
            let policy = mutating::MutatingAdmissionPolicy::new(s(), types);
            Plugin::mutating(name, Arc::new(policy))
        }
        "ValidatingAdmissionPolicy" => Plugin::validating(
            name,
            Arc::new(validating::ValidatingAdmissionPolicy::new(s())),
        ),
        "PodSecurity" => Plugin::validating(
            name,
            Arc::new(
                pod_security::PodSecurity::from_config(s(), config.plugin(name)).map_err(
                    |err| ConfigError::Plugin {
                        plugin: "PodSecurity",
                        message: err.to_string(),
                    },
                )?,
            ),
        ),
        "ResourceQuota" => Plugin::validating(
            name,
            Arc::new(quota::ResourceQuota {
                stores: s(),
                limited: quota::LimitedResource::from_config(config.plugin(name)),
            }),
        ),
        _ => return Ok(None),
    }))
}
