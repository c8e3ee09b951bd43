//! Admission flags: which admission plugins run and their configuration.

use super::spec::{FlagSpec, Kind};

/// Every admission plugin upstream knows, as listed in its help.
macro_rules! all_plugins {
    () => {
        "AlwaysAdmit, AlwaysDeny, AlwaysPullImages, CertificateApproval, CertificateSigning, \
         CertificateSubjectRestriction, ClusterTrustBundleAttest, DefaultIngressClass, \
         DefaultStorageClass, DefaultTolerationSeconds, DenyServiceExternalIPs, EventRateLimit, \
         ExtendedResourceToleration, ImagePolicyWebhook, LimitPodHardAntiAffinityTopology, \
         LimitRanger, MutatingAdmissionPolicy, MutatingAdmissionWebhook, NamespaceAutoProvision, \
         NamespaceExists, NamespaceLifecycle, NodeDeclaredFeatureValidator, NodeRestriction, \
         OwnerReferencesPermissionEnforcement, PersistentVolumeClaimResize, PodNodeSelector, \
         PodSecurity, PodTolerationRestriction, PodTopologyLabels, Priority, ResourceQuota, \
         RuntimeClass, ServiceAccount, StorageObjectInUseProtection, TaintNodesByCondition, \
         ValidatingAdmissionPolicy, ValidatingAdmissionWebhook"
    };
}

/// The plugins enabled when no flag says otherwise.
macro_rules! default_plugins {
    () => {
        "NamespaceLifecycle, LimitRanger, ServiceAccount, TaintNodesByCondition, PodSecurity, \
         Priority, DefaultTolerationSeconds, DefaultStorageClass, StorageObjectInUseProtection, \
         PersistentVolumeClaimResize, RuntimeClass, CertificateApproval, CertificateSigning, \
         ClusterTrustBundleAttest, CertificateSubjectRestriction, DefaultIngressClass, \
         PodTopologyLabels, NodeDeclaredFeatureValidator, MutatingAdmissionPolicy, \
         MutatingAdmissionWebhook, ValidatingAdmissionPolicy, ValidatingAdmissionWebhook, \
         ResourceQuota"
    };
}

pub const FLAGS: &[FlagSpec] = &[
    FlagSpec::new("admission-control", Kind::StringSlice, "",
        concat!(
            "Admission plugins to run, replacing the defaults. Mutating plugins run first, then validating ones; the order given does not matter. Known plugins: ",
            all_plugins!(), "."))
        .deprecated_shown("Use --enable-admission-plugins or --disable-admission-plugins instead. Will be removed in a future version."),
    FlagSpec::new("admission-control-config-file", Kind::Str, "",
        "File with the AdmissionConfiguration holding per-plugin settings."),
    FlagSpec::new("disable-admission-plugins", Kind::StringSlice, "",
        concat!(
            "Comma-separated admission plugins to turn off even though they are on by default (",
            default_plugins!(), "). Known plugins: ", all_plugins!(), ". Order does not matter.")),
    FlagSpec::new("enable-admission-plugins", Kind::StringSlice, "",
        concat!(
            "Comma-separated admission plugins to turn on in addition to the default ones (",
            default_plugins!(), "). Known plugins: ", all_plugins!(), ". Order does not matter.")),
];
