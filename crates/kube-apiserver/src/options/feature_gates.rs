//! Known feature gates of the `kube` component and the resolution of
//! `--feature-gates` against them (unknown names, locked gates, bad values
//! are reported the way upstream words them).

use std::collections::BTreeMap;

use super::syntax::parse_bool_map;

/// The component Kubernetes' own gates belong to; `--feature-gates` pairs
/// without a `component:` prefix apply to it.
pub const KUBE: &str = "kube";

const ALL_ALPHA: &str = "AllAlpha";
const ALL_BETA: &str = "AllBeta";

/// A gate's maturity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stage {
    Alpha,
    Beta,
    Ga,
    Deprecated,
}

impl Stage {
    fn label(self) -> &'static str {
        match self {
            Stage::Alpha => "ALPHA",
            Stage::Beta => "BETA",
            Stage::Ga => "GA",
            Stage::Deprecated => "DEPRECATED",
        }
    }
}

/// A feature gate as of this release.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gate {
    pub name: &'static str,
    pub default: bool,
    pub stage: Stage,
    /// Locked gates cannot be set to anything but their default.
    pub locked: bool,
}

const fn gate(name: &'static str, default: bool, stage: Stage, locked: bool) -> Gate {
    Gate {
        name,
        default,
        stage,
        locked,
    }
}

/// The gates this release knows, sorted by name. Update this table when
/// gates are added, graduate or are removed upstream.
pub const KNOWN: &[Gate] = &[
    gate("APIResponseCompression", true, Stage::Beta, false),
    gate("APIServerIdentity", true, Stage::Beta, false),
    gate(
        "APIServerWebhookAuthenticationToken",
        false,
        Stage::Alpha,
        false,
    ),
    gate("APIServingWithRoutine", false, Stage::Alpha, false),
    gate(
        "AggregatedDiscoveryRemoveBetaType",
        true,
        Stage::Deprecated,
        true,
    ),
    gate("AllAlpha", false, Stage::Alpha, false),
    gate("AllBeta", false, Stage::Beta, false),
    gate("AllowParsingUserUIDFromCertAuth", true, Stage::Beta, false),
    gate(
        "AllowUnsafeMalformedObjectDeletion",
        true,
        Stage::Beta,
        false,
    ),
    gate(
        "AuthorizePodWebsocketUpgradeCreatePermission",
        true,
        Stage::Beta,
        false,
    ),
    gate("CBORServingAndStorage", false, Stage::Alpha, false),
    gate("CPUManagerPolicyAlphaOptions", false, Stage::Alpha, false),
    gate("CPUManagerPolicyBetaOptions", true, Stage::Beta, false),
    gate("CRDObservedGenerationTracking", false, Stage::Beta, false),
    gate("CSIServiceAccountTokenSecrets", true, Stage::Beta, false),
    gate("CSIVolumeHealth", false, Stage::Alpha, false),
    gate(
        "ClearingNominatedNodeNameAfterBinding",
        true,
        Stage::Beta,
        false,
    ),
    gate("ClientsAllowCBOR", false, Stage::Alpha, false),
    gate("ClientsPreferCBOR", false, Stage::Alpha, false),
    gate(
        "CloudControllerManagerWatchBasedRoutesReconciliation",
        false,
        Stage::Alpha,
        false,
    ),
    gate("CloudControllerManagerWebhook", false, Stage::Alpha, false),
    gate("ClusterTrustBundle", false, Stage::Beta, false),
    gate("ClusterTrustBundleProjection", false, Stage::Beta, false),
    gate("ComponentFlagz", true, Stage::Beta, false),
    gate("ComponentStatusz", true, Stage::Beta, false),
    gate("CompositePodGroup", false, Stage::Alpha, false),
    gate("ConcurrentWatchObjectDecode", true, Stage::Beta, false),
    gate(
        "ConsistentListFromCacheSkipTimeoutFallback",
        false,
        Stage::Alpha,
        false,
    ),
    gate("ConstrainedImpersonation", true, Stage::Beta, false),
    gate("ContainerCheckpoint", true, Stage::Beta, false),
    gate("ContainerRestartRules", true, Stage::Beta, false),
    gate("ContainerStopSignals", false, Stage::Alpha, false),
    gate("ContextualLogging", true, Stage::Beta, false),
    gate("CoordinatedLeaderElection", false, Stage::Beta, false),
    gate("CrossNamespaceVolumeDataSource", false, Stage::Alpha, false),
    gate("CustomCPUCFSQuotaPeriod", false, Stage::Alpha, false),
    gate("DRAAdminAccess", true, Stage::Ga, true),
    gate("DRAConsumableCapacity", true, Stage::Beta, false),
    gate("DRADerivedAttributes", false, Stage::Alpha, false),
    gate("DRADeviceBindingConditions", true, Stage::Beta, false),
    gate("DRADeviceCompatibilityGroups", false, Stage::Alpha, false),
    gate("DRADeviceTaintRules", true, Stage::Ga, false),
    gate("DRADeviceTaints", true, Stage::Ga, false),
    gate("DRAExtendedResource", true, Stage::Ga, true),
    gate("DRAFractionalCapacityRange", false, Stage::Beta, false),
    gate("DRAListTypeAttributes", false, Stage::Alpha, false),
    gate("DRANodeAllocatableResources", false, Stage::Alpha, false),
    gate("DRAOptionalNodeOperations", false, Stage::Alpha, false),
    gate("DRAPartitionableDevices", true, Stage::Beta, false),
    gate("DRAPrioritizedList", true, Stage::Ga, true),
    gate("DRAResourceClaimDeviceStatus", true, Stage::Ga, true),
    gate(
        "DRAResourceClaimGranularStatusAuthorization",
        true,
        Stage::Beta,
        false,
    ),
    gate("DRASchedulerFilterTimeout", true, Stage::Beta, false),
    gate("DRAWorkloadResourceClaims", false, Stage::Beta, false),
    gate("DeclarativeValidation", true, Stage::Ga, true),
    gate("DeclarativeValidationBeta", true, Stage::Beta, false),
    gate(
        "DeclarativeValidationTakeover",
        false,
        Stage::Deprecated,
        true,
    ),
    gate(
        "DeploymentReplicaSetTerminatingReplicas",
        true,
        Stage::Beta,
        false,
    ),
    gate("DetectCacheInconsistency", true, Stage::Beta, false),
    gate("DisableCPUQuotaWithExclusiveCPUs", true, Stage::Beta, false),
    gate("DynamicResourceAllocation", true, Stage::Ga, true),
    gate("EnvFiles", true, Stage::Beta, false),
    gate("EtcdRangeStream", true, Stage::Beta, false),
    gate("EventedPLEG", false, Stage::Alpha, false),
    gate(
        "ExcludeAdmissionWebhookVirtualResources",
        true,
        Stage::Beta,
        false,
    ),
    gate(
        "ExternalServiceAccountTokenSigner",
        true,
        Stage::Beta,
        false,
    ),
    gate("GangScheduling", false, Stage::Alpha, false),
    gate("GenericWorkload", false, Stage::Beta, false),
    gate("GracefulNodeShutdown", true, Stage::Beta, false),
    gate(
        "GracefulNodeShutdownBasedOnPodPriority",
        true,
        Stage::Beta,
        false,
    ),
    gate("HPAConfigurableTolerance", true, Stage::Beta, false),
    gate("HPAScaleToZero", false, Stage::Alpha, false),
    gate("HostnameOverride", true, Stage::Beta, false),
    gate("ImageVolume", true, Stage::Beta, false),
    gate("InOrderInformers", true, Stage::Beta, false),
    gate("InOrderInformersBatchProcess", true, Stage::Beta, false),
    gate(
        "InPlacePodLevelResourcesVerticalScaling",
        true,
        Stage::Beta,
        false,
    ),
    gate("InPlacePodVerticalScaling", true, Stage::Ga, true),
    gate(
        "InPlacePodVerticalScalingExclusiveCPUs",
        false,
        Stage::Alpha,
        false,
    ),
    gate(
        "InPlacePodVerticalScalingExclusiveMemory",
        false,
        Stage::Alpha,
        false,
    ),
    gate(
        "InPlacePodVerticalScalingSchedulerPreemption",
        false,
        Stage::Alpha,
        false,
    ),
    gate("InTreePluginPortworxUnregister", false, Stage::Alpha, false),
    gate(
        "InterPodAffinityHostnameFastPath",
        false,
        Stage::Alpha,
        false,
    ),
    gate("KMSv1", false, Stage::Deprecated, false),
    gate("KubeletCrashLoopBackOffMax", true, Stage::Beta, false),
    gate("KubeletEnsureSecretPulledImages", true, Stage::Beta, false),
    gate("KubeletFineGrainedAuthz", true, Stage::Ga, true),
    gate("KubeletInUserNamespace", false, Stage::Alpha, false),
    gate("KubeletPSI", true, Stage::Beta, false),
    gate(
        "KubeletPodResourcesDynamicResources",
        true,
        Stage::Beta,
        false,
    ),
    gate("KubeletPodResourcesGet", true, Stage::Beta, false),
    gate("KubeletSeparateDiskGC", true, Stage::Beta, false),
    gate(
        "KubeletServiceAccountTokenForCredentialProviders",
        true,
        Stage::Beta,
        false,
    ),
    gate("ListFromCacheSnapshot", true, Stage::Beta, false),
    gate(
        "LocalStorageCapacityIsolationFSQuotaMonitoring",
        false,
        Stage::Beta,
        false,
    ),
    gate("LoggingAlphaOptions", false, Stage::Alpha, false),
    gate("LoggingBetaOptions", true, Stage::Beta, false),
    gate(
        "ManifestBasedAdmissionControlConfig",
        true,
        Stage::Beta,
        false,
    ),
    gate(
        "MatchLabelKeysInPodTopologySpread",
        true,
        Stage::Beta,
        false,
    ),
    gate(
        "MatchLabelKeysInPodTopologySpreadSelectorMerge",
        true,
        Stage::Beta,
        false,
    ),
    gate("MaxUnavailableStatefulSet", true, Stage::Beta, false),
    gate("MemoryQoS", false, Stage::Alpha, false),
    gate("MutableCSINodeAllocatableCount", true, Stage::Beta, false),
    gate("MutablePVNodeAffinity", false, Stage::Alpha, false),
    gate(
        "MutablePodResourcesForSuspendedJobs",
        false,
        Stage::Alpha,
        false,
    ),
    gate(
        "MutableSchedulingDirectivesForSuspendedJobs",
        false,
        Stage::Alpha,
        false,
    ),
    gate("MutatingAdmissionPolicy", true, Stage::Ga, false),
    gate("NativeHistograms", true, Stage::Beta, false),
    gate("NodeDeclaredFeatures", true, Stage::Ga, true),
    gate(
        "NodeInclusionPolicyInPodTopologySpread",
        true,
        Stage::Ga,
        true,
    ),
    gate("NodeLogQuery", false, Stage::Beta, false),
    gate("NominatedNodeNameForExpectation", true, Stage::Beta, false),
    gate("OpenAPIEnums", true, Stage::Beta, false),
    gate("OpportunisticBatching", true, Stage::Beta, false),
    gate("PodAndContainerStatsFromCRI", false, Stage::Alpha, false),
    gate("PodCertificateRequest", false, Stage::Beta, false),
    gate("PodDeletionCost", true, Stage::Beta, false),
    gate("PodGroupPreemptionPolicy", false, Stage::Alpha, false),
    gate("PodLevelResources", true, Stage::Beta, false),
    gate("PodLogsQuerySplitStreams", false, Stage::Alpha, false),
    gate(
        "PodReadyToStartContainersCondition",
        true,
        Stage::Beta,
        false,
    ),
    gate("PodTopologyLabelsAdmission", true, Stage::Beta, false),
    gate("PortForwardWebsockets", true, Stage::Beta, false),
    gate("PreventStaticPodAPIReferences", true, Stage::Beta, false),
    gate("ProcMountType", true, Stage::Beta, false),
    gate("QOSReserved", false, Stage::Alpha, false),
    gate(
        "ReduceDefaultCrashLoopBackOffDecay",
        false,
        Stage::Alpha,
        false,
    ),
    gate("RelaxedServiceNameValidation", false, Stage::Alpha, false),
    gate(
        "ReloadKubeletServerCertificateFile",
        true,
        Stage::Beta,
        false,
    ),
    gate("RemoteRequestHeaderUID", true, Stage::Beta, false),
    gate("ResourceHealthStatus", false, Stage::Alpha, false),
    gate(
        "RestartAllContainersOnContainerExits",
        false,
        Stage::Alpha,
        false,
    ),
    gate("RotateKubeletServerCertificate", true, Stage::Beta, false),
    gate("RuntimeClassInImageCriApi", false, Stage::Alpha, false),
    gate("SELinuxChangePolicy", true, Stage::Beta, false),
    gate("SELinuxMount", false, Stage::Beta, false),
    gate("SELinuxMountReadWriteOncePod", true, Stage::Beta, false),
    gate("SchedulerAsyncAPICalls", false, Stage::Beta, false),
    gate("SchedulerAsyncPreemption", true, Stage::Beta, false),
    gate("SchedulerPopFromBackoffQ", true, Stage::Beta, false),
    gate("SchedulerPreQueueingHints", false, Stage::Alpha, false),
    gate("SeparateCacheWatchRPC", false, Stage::Deprecated, true),
    gate(
        "ServiceAccountNodeAudienceRestriction",
        true,
        Stage::Beta,
        false,
    ),
    gate("ShardedListAndWatch", false, Stage::Alpha, false),
    gate("SizeBasedListCostEstimate", true, Stage::Beta, false),
    gate(
        "StatefulSetSemanticRevisionComparison",
        true,
        Stage::Beta,
        false,
    ),
    gate("StorageCapacityScoring", true, Stage::Beta, false),
    gate("StorageVersionAPI", false, Stage::Alpha, false),
    gate("StorageVersionHash", true, Stage::Beta, false),
    gate("StorageVersionMigrator", false, Stage::Beta, false),
    gate("StrictIPCIDRValidation", false, Stage::Alpha, false),
    gate(
        "StructuredAuthenticationConfigurationEgressSelector",
        true,
        Stage::Beta,
        false,
    ),
    gate(
        "StructuredAuthenticationConfigurationJWKSMetrics",
        true,
        Stage::Beta,
        false,
    ),
    gate(
        "TaintTolerationComparisonOperators",
        false,
        Stage::Alpha,
        false,
    ),
    gate(
        "TokenRequestServiceAccountUIDValidation",
        true,
        Stage::Beta,
        false,
    ),
    gate(
        "TopologyAwareWorkloadScheduling",
        false,
        Stage::Alpha,
        false,
    ),
    gate(
        "TopologyManagerPolicyAlphaOptions",
        false,
        Stage::Alpha,
        false,
    ),
    gate("TopologyManagerPolicyBetaOptions", true, Stage::Beta, false),
    gate(
        "TranslateStreamCloseWebsocketRequests",
        true,
        Stage::Beta,
        false,
    ),
    gate(
        "UnauthenticatedHTTP2DOSMitigation",
        true,
        Stage::Beta,
        false,
    ),
    gate(
        "UnknownVersionInteroperabilityProxy",
        true,
        Stage::Beta,
        false,
    ),
    gate(
        "UserNamespacesHostNetworkSupport",
        false,
        Stage::Alpha,
        false,
    ),
    gate("UserNamespacesSupport", true, Stage::Beta, false),
    gate("VolumeAttributesClass", true, Stage::Ga, true),
    gate("VolumeLimitScaling", true, Stage::Beta, false),
    gate(
        "WatchCacheInitializationPostStartHook",
        true,
        Stage::Ga,
        true,
    ),
    gate("WatchList", true, Stage::Beta, false),
    gate("WatchListClient", true, Stage::Beta, false),
    gate("WatchListCompression", true, Stage::Beta, false),
    gate("WebhookRoundTripLoadBalancing", true, Stage::Beta, false),
    gate("WindowsCPUAndMemoryAffinity", false, Stage::Alpha, false),
    gate("WindowsGracefulNodeShutdown", true, Stage::Beta, false),
];

/// Looks a gate up by name.
pub fn find(name: &str) -> Option<&'static Gate> {
    KNOWN
        .binary_search_by(|gate| gate.name.cmp(name))
        .ok()
        .and_then(|index| KNOWN.get(index))
}

/// Every known gate's effective state: its default, changed by `AllAlpha`
/// / `AllBeta` (for unlocked gates of that stage) and by explicit settings.
pub type FeatureGates = BTreeMap<&'static str, bool>;

fn effective(overrides: &BTreeMap<&'static str, bool>) -> FeatureGates {
    let group = |stage: Stage| match stage {
        Stage::Alpha => overrides.get(ALL_ALPHA),
        Stage::Beta => overrides.get(ALL_BETA),
        Stage::Ga | Stage::Deprecated => None,
    };
    KNOWN
        .iter()
        .map(|gate| {
            let value = match (overrides.get(gate.name), group(gate.stage)) {
                (Some(value), _) => *value,
                (None, Some(value)) if !gate.locked => *value,
                _ => gate.default,
            };
            (gate.name, value)
        })
        .collect()
}

/// Applies the parsed `--feature-gates` value (component -> `Name=bool`
/// items). Returns the gates that could be applied and one message per
/// problem.
pub fn resolve(settings: &BTreeMap<String, Vec<String>>) -> (FeatureGates, Vec<String>) {
    let mut overrides = BTreeMap::new();
    let mut errors = Vec::new();
    if settings.contains_key("") && settings.contains_key(KUBE) {
        errors.push(
            "set kube feature gates with default empty prefix or kube: prefix consistently, do not mix use"
                .to_string(),
        );
    }
    for (component, items) in settings {
        if !component.is_empty() && component != KUBE {
            errors.push(format!("component not registered: {component}"));
            continue;
        }
        let parsed = match parse_bool_map(&items.join(",")) {
            Ok(parsed) => parsed,
            Err(err) => {
                errors.push(err.to_string());
                continue;
            }
        };
        for (name, value) in parsed {
            match find(&name) {
                None => errors.push(format!("unrecognized feature gate: {name}")),
                Some(gate) if gate.locked && gate.default != value => errors.push(format!(
                    "cannot set feature gate {name} to {value}, feature is locked to {}",
                    gate.default
                )),
                Some(gate) => {
                    overrides.insert(gate.name, value);
                }
            }
        }
    }
    (effective(&overrides), errors)
}

/// The settable (alpha and beta) gates, one per line, for `--help`.
pub fn help_listing() -> String {
    KNOWN
        .iter()
        .filter(|gate| matches!(gate.stage, Stage::Alpha | Stage::Beta))
        .map(|gate| {
            format!(
                "{KUBE}:{}=true|false ({} - default={})",
                gate.name,
                gate.stage.label(),
                gate.default
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(pairs: &[(&str, &str)]) -> BTreeMap<String, Vec<String>> {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (component, item) in pairs {
            map.entry(component.to_string())
                .or_default()
                .push(item.to_string());
        }
        map
    }

    #[test]
    fn table_is_sorted_and_unique() {
        assert!(KNOWN.windows(2).all(|pair| pair[0].name < pair[1].name));
    }

    #[test]
    fn known_gates_apply() {
        let (gates, errors) = resolve(&settings(&[
            ("", "WatchList=false"),
            ("", "CBORServingAndStorage=true"),
        ]));
        assert!(errors.is_empty(), "{errors:?}");
        assert!(gates.get("WatchList") == Some(&false));
        assert!(gates.get("CBORServingAndStorage") == Some(&true));
        assert!(
            gates.get("APIResponseCompression") == Some(&true),
            "beta default on"
        );
        assert_eq!(gates.get("NoSuchGate"), None);
        assert_eq!(gates.len(), KNOWN.len());
    }

    #[test]
    fn unknown_and_locked_gates_are_errors() {
        let (_, errors) = resolve(&settings(&[
            ("kube", "Bogus=true"),
            ("kube", "WatchCacheInitializationPostStartHook=false"),
        ]));
        assert_eq!(
            errors,
            vec![
                "unrecognized feature gate: Bogus".to_string(),
                "cannot set feature gate WatchCacheInitializationPostStartHook to false, feature is locked to true".to_string(),
            ]
        );
    }

    /// Entries checked against upstream's 1.37 versioned gates.
    #[test]
    fn node_and_dra_authorization_gates_are_as_upstream() {
        let (gates, errors) = resolve(&settings(&[
            ("", "DRAResourceClaimGranularStatusAuthorization=false"),
            ("", "KubeletServiceAccountTokenForCredentialProviders=false"),
            ("", "KubeletFineGrainedAuthz=false"),
        ]));
        assert_eq!(
            errors,
            vec!["cannot set feature gate KubeletFineGrainedAuthz to false, feature is locked to true".to_string()]
        );
        assert_eq!(
            gates.get("DRAResourceClaimGranularStatusAuthorization"),
            Some(&false)
        );
        let listing = help_listing();
        assert!(listing.contains(
            "kube:DRAResourceClaimGranularStatusAuthorization=true|false (BETA - default=true)"
        ));
        assert!(listing.contains(
            "kube:KubeletServiceAccountTokenForCredentialProviders=true|false (BETA - default=true)"
        ));
        assert!(!listing.contains("KubeletFineGrainedAuthz"));
    }

    #[test]
    fn malformed_values_and_components_are_errors() {
        let (_, errors) = resolve(&settings(&[("wardle", "A=true")]));
        assert_eq!(errors, vec!["component not registered: wardle".to_string()]);
        let (_, errors) = resolve(&settings(&[("", "WatchList")]));
        assert_eq!(errors, vec!["missing bool value for WatchList".to_string()]);
        let (_, errors) = resolve(&settings(&[
            ("", "WatchList=true"),
            ("kube", "WatchList=true"),
        ]));
        assert_eq!(errors.len(), 1);
    }

    #[test]
    fn all_alpha_switches_unlocked_alpha_gates() {
        let (gates, errors) = resolve(&settings(&[
            ("", "AllAlpha=true"),
            ("", "APIServingWithRoutine=false"),
        ]));
        assert!(errors.is_empty());
        assert!(gates.get("CBORServingAndStorage") == Some(&true));
        assert!(
            gates.get("APIServingWithRoutine") == Some(&false),
            "explicit setting wins"
        );
        assert!(
            gates.get("WatchList") == Some(&true),
            "beta gates keep their default"
        );
    }

    #[test]
    fn help_lists_only_settable_stages() {
        let listing = help_listing();
        assert!(listing.contains("kube:WatchList=true|false (BETA - default=true)"));
        assert!(listing.contains("kube:AllAlpha=true|false (ALPHA - default=false)"));
        assert!(
            !listing.contains("WatchCacheInitializationPostStartHook"),
            "GA gates are not listed"
        );
    }
}
