//! Which checks a level at a version runs (upstream's check registry): each
//! check has versions from a minimum minor on; a restricted check may
//! replace baseline checks while it applies; checks run baseline first,
//! then restricted, each group ordered by ID.

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::api::{Level, LevelVersion, Version};
use crate::policy::result::AggregateResult;
use crate::policy::{host, profiles, restricted, CheckFn};

/// One version of a check: applies from `v1.<since>` until the next one.
struct Versioned {
    since: u32,
    check: CheckFn,
    /// Baseline check IDs this (restricted) version replaces.
    overrides: &'static [&'static str],
}

struct Check {
    id: &'static str,
    level: Level,
    versions: &'static [Versioned],
}

const fn v(since: u32, check: CheckFn) -> Versioned {
    Versioned {
        since,
        check,
        overrides: &[],
    }
}

const fn replacing(since: u32, check: CheckFn, overrides: &'static [&'static str]) -> Versioned {
    Versioned {
        since,
        check,
        overrides,
    }
}

const fn baseline(id: &'static str, versions: &'static [Versioned]) -> Check {
    Check {
        id,
        level: Level::Baseline,
        versions,
    }
}

const fn restricted(id: &'static str, versions: &'static [Versioned]) -> Check {
    Check {
        id,
        level: Level::Restricted,
        versions,
    }
}

/// Every check: baseline ones, then restricted ones, each sorted by ID
/// (byte order, as upstream sorts them).
const CHECKS: &[Check] = &[
    baseline("appArmorProfile", &[v(0, profiles::app_armor_1_0)]),
    baseline(
        "capabilities_baseline",
        &[v(0, profiles::capabilities_baseline_1_0)],
    ),
    baseline("hostNamespaces", &[v(0, host::host_namespaces_1_0)]),
    baseline("hostPathVolumes", &[v(0, host::host_path_volumes_1_0)]),
    baseline("hostPorts", &[v(0, host::host_ports_1_0)]),
    baseline(
        "hostProbesAndHostLifecycle",
        &[v(34, host::host_probes_1_34)],
    ),
    baseline("privileged", &[v(0, host::privileged_1_0)]),
    baseline(
        "procMount",
        &[
            v(0, profiles::proc_mount_1_0),
            v(35, profiles::proc_mount_1_35),
        ],
    ),
    baseline(
        "seLinuxOptions",
        &[v(0, profiles::se_linux_1_0), v(31, profiles::se_linux_1_31)],
    ),
    baseline(
        "seccompProfile_baseline",
        &[
            v(0, profiles::seccomp_baseline_1_0),
            v(19, profiles::seccomp_baseline_1_19),
        ],
    ),
    baseline(
        "sysctls",
        &[
            v(0, profiles::sysctls_1_0),
            v(27, profiles::sysctls_1_27),
            v(29, profiles::sysctls_1_29),
            v(32, profiles::sysctls_1_32),
            v(37, profiles::sysctls_1_37),
        ],
    ),
    baseline(
        "windowsHostProcess",
        &[v(0, host::windows_host_process_1_0)],
    ),
    restricted(
        "allowPrivilegeEscalation",
        &[
            v(8, restricted::allow_privilege_escalation_1_8),
            v(25, restricted::allow_privilege_escalation_1_25),
        ],
    ),
    restricted(
        "capabilities_restricted",
        &[
            replacing(
                22,
                restricted::capabilities_restricted_1_22,
                &["capabilities_baseline"],
            ),
            replacing(
                25,
                restricted::capabilities_restricted_1_25,
                &["capabilities_baseline"],
            ),
        ],
    ),
    restricted(
        "procMount_restricted",
        &[replacing(35, profiles::proc_mount_1_0, &["procMount"])],
    ),
    restricted(
        "restrictedVolumes",
        &[replacing(
            0,
            restricted::restricted_volumes_1_0,
            &["hostPathVolumes"],
        )],
    ),
    restricted(
        "runAsNonRoot",
        &[
            v(0, restricted::run_as_non_root_1_0),
            v(35, restricted::run_as_non_root_1_35),
        ],
    ),
    restricted(
        "runAsUser",
        &[
            v(23, restricted::run_as_user_1_23),
            v(35, restricted::run_as_user_1_35),
        ],
    ),
    restricted(
        "seccompProfile_restricted",
        &[
            replacing(
                19,
                profiles::seccomp_restricted_1_19,
                &["seccompProfile_baseline"],
            ),
            replacing(
                25,
                profiles::seccomp_restricted_1_25,
                &["seccompProfile_baseline"],
            ),
        ],
    ),
];

/// The newest policy version any check defines; `latest` and newer
/// versions evaluate as this one (the server's own version, 1.37).
pub const MAX_VERSION: u32 = 37;

/// The version of `check` that applies at minor `minor`.
fn version_at(check: &Check, minor: u32) -> Option<&Versioned> {
    check.versions.iter().rev().find(|v| v.since <= minor)
}

/// The checks a level at a version runs, in order.
fn checks_for(lv: LevelVersion) -> Vec<(&'static str, CheckFn)> {
    if lv.level == Level::Privileged {
        return Vec::new();
    }
    let minor = match lv.version {
        Version::Latest => MAX_VERSION,
        Version::Minor(m) => m.min(MAX_VERSION),
    };
    let active = |level: Level| {
        CHECKS
            .iter()
            .filter(move |c| c.level == level)
            .filter_map(move |c| version_at(c, minor).map(|v| (c.id, v)))
    };
    let restricted: Vec<(&str, &Versioned)> = if lv.level == Level::Restricted {
        active(Level::Restricted).collect()
    } else {
        Vec::new()
    };
    let overridden = |id: &str| restricted.iter().any(|(_, v)| v.overrides.contains(&id));
    active(Level::Baseline)
        .filter(|(id, _)| !overridden(id))
        .chain(restricted.iter().copied())
        .map(|(id, v)| (id, v.check))
        .collect()
}

/// The IDs of the checks a level at a version runs, in order.
pub fn check_ids(lv: LevelVersion) -> Vec<&'static str> {
    checks_for(lv).into_iter().map(|(id, _)| id).collect()
}

/// Evaluates a pod (or pod template) against a level at a version.
pub fn evaluate_pod(lv: LevelVersion, meta: &ObjectMeta, spec: &PodSpec) -> AggregateResult {
    AggregateResult {
        forbidden: checks_for(lv)
            .into_iter()
            .filter_map(|(_, check)| check(meta, spec))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_are_sorted_by_level_then_id() {
        for level in [Level::Baseline, Level::Restricted] {
            let ids: Vec<&str> = CHECKS
                .iter()
                .filter(|c| c.level == level)
                .map(|c| c.id)
                .collect();
            let mut sorted = ids.clone();
            sorted.sort_unstable();
            assert_eq!(ids, sorted);
        }
        let first_restricted = CHECKS.iter().position(|c| c.level == Level::Restricted);
        assert!(CHECKS[first_restricted.unwrap_or(0)..]
            .iter()
            .all(|c| c.level == Level::Restricted));
    }

    #[test]
    fn versions_increase_and_max_version_is_the_newest() {
        let newest = CHECKS
            .iter()
            .flat_map(|c| c.versions.windows(2).map(|w| (w[0].since, w[1].since)))
            .inspect(|(a, b)| assert!(a < b))
            .count();
        assert!(newest > 0);
        let max = CHECKS
            .iter()
            .filter_map(|c| c.versions.last().map(|v| v.since))
            .max();
        assert_eq!(max, Some(MAX_VERSION));
    }
}
