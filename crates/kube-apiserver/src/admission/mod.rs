//! kube-apiserver's admission plugins (upstream's `plugin/pkg/admission`
//! and the generic ones of `k8s.io/apiserver`), and the chain built from
//! the enabled ones in upstream's order.

mod certificates;
mod config;
mod limit_ranger;
mod lookup;
mod namespace;
mod pod_security;
mod pods;
mod policy;
mod quota;
mod rbac_escalation;
mod resources;
mod service_account;
mod simple;
mod volumes;
pub mod webhook;

use std::sync::Arc;

use apiserver::admission::{Chain, Plugin};
use apiserver::filters::authorization::Authorization;

pub use config::{AdmissionConfig, ConfigError};
pub use lookup::Stores;

use crate::options::AdmissionOptions;

/// What plugins are built from.
pub struct Setup<'a> {
    pub options: &'a AdmissionOptions,
    pub config: &'a AdmissionConfig,
    pub stores: &'a Stores,
    /// The server's authorizer (plugins that check a user's permissions).
    pub authorization: &'a Arc<Authorization>,
}

/// Builds the chain of the enabled plugins this server has, in upstream's
/// order. Enabled plugins not built yet are skipped (flag validation has
/// refused those that are not on by default).
pub fn chain(setup: &Setup<'_>) -> Chain {
    let mut plugins: Vec<Plugin> = setup
        .options
        .enabled_plugins()
        .into_iter()
        .filter_map(|name| plugin(name, setup))
        .collect();
    // Upstream checks RBAC escalation in the RBAC storage, on every write.
    let escalation = rbac_escalation::RbacEscalation {
        authorization: setup.authorization.clone(),
    };
    plugins.push(Plugin::validating("RBACEscalation", Arc::new(escalation)));
    Chain::new(plugins)
}

fn plugin(name: &'static str, setup: &Setup<'_>) -> Option<Plugin> {
    let (options, config) = (setup.options, setup.config);
    let s = || setup.stores.clone();
    Some(match name {
        "AlwaysAdmit" => Plugin::both(name, Arc::new(simple::AlwaysAdmit)),
        "AlwaysDeny" => Plugin::both(name, Arc::new(simple::AlwaysDeny)),
        "NamespaceLifecycle" => Plugin::validating(
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
            Plugin::mutating(name, Arc::new(webhook::MutatingWebhook::new(s())))
        }
        "ValidatingAdmissionWebhook" => {
            Plugin::validating(name, Arc::new(webhook::ValidatingWebhook::new(s())))
        }
        "MutatingAdmissionPolicy" => {
            Plugin::mutating(name, Arc::new(policy::MutatingAdmissionPolicy::new(s())))
        }
        "ValidatingAdmissionPolicy" => {
            Plugin::validating(name, Arc::new(policy::ValidatingAdmissionPolicy::new(s())))
        }
        "PodSecurity" => Plugin::validating(
            name,
            Arc::new(pod_security::PodSecurity::from_config(s(), config.plugin(name))),
        ),
        "ResourceQuota" => Plugin::validating(
            name,
            Arc::new(quota::ResourceQuota {
                stores: s(),
                limited: quota::LimitedResource::from_config(config.plugin(name)),
            }),
        ),
        _ => return None,
    })
}
