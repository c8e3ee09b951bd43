//! Admission options (upstream's `AdmissionOptions` with kube-apiserver's
//! plugin list): which plugins run, in upstream's recommended order, and the
//! `--admission-control-config-file` holding their configuration.

use std::path::PathBuf;

use super::{FlagValues, OptionError};

/// Every plugin upstream knows, in the order upstream runs them
/// (`AllOrderedPlugins`): webhooks, quota and deny come last.
pub const ORDERED_PLUGINS: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "NodeDeclaredFeatureValidator",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// The plugins on unless `--disable-admission-plugins` names them.
pub const DEFAULT_ON: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "DefaultStorageClass",
    "PersistentVolumeClaimResize",
    "DefaultTolerationSeconds",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "StorageObjectInUseProtection",
    "Priority",
    "TaintNodesByCondition",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "PodSecurity",
    "PodTopologyLabels",
    "MutatingAdmissionPolicy",
    "ValidatingAdmissionPolicy",
    "NodeDeclaredFeatureValidator",
];

/// The plugins this server has built. Default-on plugins missing here are
/// skipped; turning on a missing default-off one stops startup.
pub const BUILT: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceLifecycle",
    "NamespaceExists",
    "NamespaceAutoProvision",
    "LimitRanger",
    "ServiceAccount",
    "TaintNodesByCondition",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "DenyServiceExternalIPs",
    "PodTopologyLabels",
    "NodeRestriction",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodNodeSelector",
    "PodTolerationRestriction",
    "ExtendedResourceToleration",
    "LimitPodHardAntiAffinityTopology",
    "OwnerReferencesPermissionEnforcement",
    "NodeDeclaredFeatureValidator",
    "EventRateLimit",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "PodSecurity",
    "AlwaysDeny",
];

/// The admission flags as given.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AdmissionOptions {
    /// `--admission-control` (deprecated): the plugins to run instead of
    /// the defaults.
    pub admission_control: Vec<String>,
    /// `--enable-admission-plugins`.
    pub enable: Vec<String>,
    /// `--disable-admission-plugins`.
    pub disable: Vec<String>,
    /// `--admission-control-config-file`.
    pub config_file: Option<PathBuf>,
    /// `--default-not-ready-toleration-seconds`.
    pub not_ready_toleration_seconds: i64,
    /// `--default-unreachable-toleration-seconds`.
    pub unreachable_toleration_seconds: i64,
}

impl AdmissionOptions {
    pub fn from_flags(flags: &FlagValues) -> Self {
        AdmissionOptions {
            admission_control: flags.list("admission-control").unwrap_or_default(),
            enable: flags.list("enable-admission-plugins").unwrap_or_default(),
            disable: flags.list("disable-admission-plugins").unwrap_or_default(),
            config_file: flags.path("admission-control-config-file").ok().flatten(),
            not_ready_toleration_seconds: flags
                .int("default-not-ready-toleration-seconds")
                .unwrap_or(300),
            unreachable_toleration_seconds: flags
                .int("default-unreachable-toleration-seconds")
                .unwrap_or(300),
        }
    }

    /// The plugins that run, in upstream's order: the default-on ones and
    /// those enabled, less those disabled (enabling wins, as upstream).
    pub fn enabled_plugins(&self) -> Vec<&'static str> {
        if !self.admission_control.is_empty() {
            return ORDERED_PLUGINS
                .iter()
                .copied()
                .filter(|name| self.admission_control.iter().any(|p| p == name))
                .collect();
        }
        ORDERED_PLUGINS
            .iter()
            .copied()
            .filter(|name| {
                let enabled = self.enable.iter().any(|e| e == name);
                let disabled = self.disable.iter().any(|d| d == name);
                enabled || (DEFAULT_ON.contains(name) && !disabled)
            })
            .collect()
    }

    /// Upstream's checks: every name known, no plugin both enabled and
    /// disabled.
    pub fn validate(&self) -> Vec<OptionError> {
        let mut errors = Vec::new();
        let known = |name: &String| ORDERED_PLUGINS.contains(&name.as_str());
        let new_flags = !self.enable.is_empty() || !self.disable.is_empty();
        if !self.admission_control.is_empty() && new_flags {
            errors.push(OptionError::new(
                "admission-control",
                "admission-control and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive",
            ));
        }
        for name in self.admission_control.iter().filter(|n| !known(n)) {
            errors.push(OptionError::new(
                "admission-control",
                format!("plugin {name:?} is unknown"),
            ));
        }
        for name in self.enable.iter().filter(|n| !known(n)) {
            errors.push(OptionError::new(
                "enable-admission-plugins",
                format!("plugin {name:?} is unknown"),
            ));
        }
        for name in self.disable.iter().filter(|n| !known(n)) {
            errors.push(OptionError::new(
                "disable-admission-plugins",
                format!("plugin {name:?} is unknown"),
            ));
        }
        let mut both: Vec<&String> = self
            .enable
            .iter()
            .filter(|e| self.disable.contains(e))
            .collect();
        both.sort();
        both.dedup();
        if !both.is_empty() {
            errors.push(OptionError::new(
                "enable-admission-plugins",
                format!(
                    "{both:?} in enable-admission-plugins and disable-admission-plugins overlapped"
                ),
            ));
        }
        errors
    }

    /// One error per explicitly enabled plugin this server has not built.
    pub fn unsupported(&self) -> Vec<OptionError> {
        let unbuilt = |flag: &'static str, names: &[String]| {
            names
                .iter()
                .filter(|name| ORDERED_PLUGINS.contains(&name.as_str()))
                .filter(|name| {
                    !BUILT.contains(&name.as_str()) && !DEFAULT_ON.contains(&name.as_str())
                })
                .map(|name| {
                    OptionError::new(
                        flag,
                        format!("{name:?} is not supported yet by this server"),
                    )
                })
                .collect::<Vec<_>>()
        };
        let mut errors = unbuilt("admission-control", &self.admission_control);
        errors.extend(unbuilt("enable-admission-plugins", &self.enable));
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(enable: &[&str], disable: &[&str]) -> AdmissionOptions {
        AdmissionOptions {
            enable: enable.iter().map(|s| s.to_string()).collect(),
            disable: disable.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        }
    }

    #[test]
    fn defaults_run_in_upstream_order_with_webhooks_and_quota_last() {
        let names = opts(&[], &[]).enabled_plugins();
        assert_eq!(names.first(), Some(&"NamespaceLifecycle"));
        assert_eq!(
            &names[names.len() - 3..],
            &[
                "ValidatingAdmissionPolicy",
                "ValidatingAdmissionWebhook",
                "ResourceQuota"
            ]
        );
        assert_eq!(names.len(), DEFAULT_ON.len());
        assert!(!names.contains(&"AlwaysDeny"));
    }

    #[test]
    fn enable_and_disable_change_the_set_not_the_order() {
        let names =
            opts(&["AlwaysDeny", "NamespaceExists"], &["NamespaceLifecycle"]).enabled_plugins();
        assert!(!names.contains(&"NamespaceLifecycle"));
        assert_eq!(names.first(), Some(&"NamespaceExists"));
        assert_eq!(names.last(), Some(&"AlwaysDeny"));
    }

    #[test]
    fn unknown_and_overlapping_names_are_errors() {
        let errors: Vec<String> = opts(&["Nope", "LimitRanger"], &["LimitRanger", "Gone"])
            .validate()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            errors,
            vec![
                "--enable-admission-plugins: plugin \"Nope\" is unknown".to_string(),
                "--disable-admission-plugins: plugin \"Gone\" is unknown".to_string(),
                "--enable-admission-plugins: [\"LimitRanger\"] in enable-admission-plugins and disable-admission-plugins overlapped".to_string(),
            ]
        );
    }

    #[test]
    fn admission_control_replaces_the_defaults_and_excludes_the_new_flags() {
        let only = AdmissionOptions {
            admission_control: vec!["ResourceQuota".into(), "NamespaceLifecycle".into()],
            ..Default::default()
        };
        assert_eq!(
            only.enabled_plugins(),
            ["NamespaceLifecycle", "ResourceQuota"]
        );
        assert!(only.validate().is_empty());
        let both = AdmissionOptions {
            enable: vec!["AlwaysDeny".into()],
            ..only
        };
        assert_eq!(
            both.validate()[0].to_string(),
            "--admission-control: admission-control and enable-admission-plugins/disable-admission-plugins flags are mutually exclusive"
        );
    }

    #[test]
    fn every_upstream_plugin_can_be_enabled() {
        assert!(opts(ORDERED_PLUGINS, &[]).unsupported().is_empty());
    }
}
