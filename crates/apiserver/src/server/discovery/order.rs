//! The order of groups and versions in discovery, from the priorities the
//! APIServices give them (`groupPriorityMinimum`, `versionPriority`):
//! upstream's aggregated discovery manager (`calculateAPIGroupsLocked` in
//! `endpoints/discovery/aggregated/handler.go`) and, for `/apis`, the
//! aggregator's `SortedByGroupAndVersion` (`apiregistration/v1/helper`).
//!
//! Versions: highest `versionPriority` first, then the kube-aware version
//! order (GA before beta before alpha). Aggregated discovery: groups by the
//! highest `groupPriorityMinimum` of their versions, then by name. `/apis`:
//! each group where its first group version falls when they are ordered by
//! `groupPriorityMinimum`, then by APIService name (`<version>.<group>`).

use std::collections::BTreeMap;

use apimachinery::version::priority_order;

use super::GroupVersionDiscovery;

/// A group version's place in discovery, as its APIService sets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Priority {
    /// `groupPriorityMinimum`: higher groups come first.
    pub group: i64,
    /// `versionPriority`: higher versions come first within the group.
    pub version: i64,
}

impl Priority {
    /// A group version no APIService describes (upstream's default in
    /// `AddGroupVersion`).
    pub const DEFAULT: Priority = Priority {
        group: 1000,
        version: 15,
    };
}

/// Priorities by (group, version).
pub(super) type Priorities = BTreeMap<(String, String), Priority>;

fn priority(priorities: &Priorities, group: &str, version: &str) -> Priority {
    priorities
        .get(&(group.to_owned(), version.to_owned()))
        .copied()
        .unwrap_or(Priority::DEFAULT)
}

/// The versions of `group`, the preferred first.
fn sorted_versions(
    priorities: &Priorities,
    group: &str,
    versions: &[GroupVersionDiscovery],
) -> Vec<GroupVersionDiscovery> {
    let mut versions = versions.to_vec();
    versions.sort_by(|a, b| {
        let (pa, pb) = (
            priority(priorities, group, &a.version),
            priority(priorities, group, &b.version),
        );
        pb.version
            .cmp(&pa.version)
            .then_with(|| priority_order(&a.version, &b.version))
    });
    versions
}

/// Every group with its versions, in aggregated discovery's order.
pub(super) fn aggregated(
    priorities: &Priorities,
    groups: &BTreeMap<String, Vec<GroupVersionDiscovery>>,
) -> Vec<(String, Vec<GroupVersionDiscovery>)> {
    let mut ranked: Vec<(i64, &String, Vec<GroupVersionDiscovery>)> = groups
        .iter()
        .map(|(group, versions)| {
            let top = versions
                .iter()
                .map(|v| priority(priorities, group, &v.version).group)
                .max()
                .unwrap_or(Priority::DEFAULT.group);
            (top, group, sorted_versions(priorities, group, versions))
        })
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    ranked
        .into_iter()
        .map(|(_, group, versions)| (group.clone(), versions))
        .collect()
}

/// The group names in `/apis`' order.
pub(super) fn legacy(
    priorities: &Priorities,
    groups: &BTreeMap<String, Vec<GroupVersionDiscovery>>,
) -> Vec<String> {
    let mut services: Vec<(i64, String, &String)> = groups
        .iter()
        .flat_map(|(group, versions)| {
            versions.iter().map(move |v| {
                let min = priority(priorities, group, &v.version).group;
                (min, format!("{}.{group}", v.version), group)
            })
        })
        .collect();
    services.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    let mut names: Vec<String> = Vec::new();
    for (_, _, group) in services {
        if !names.contains(group) {
            names.push(group.clone());
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gv(group: &str, version: &str) -> GroupVersionDiscovery {
        GroupVersionDiscovery {
            group: group.into(),
            version: version.into(),
            resources: Vec::new(),
            subresources: Vec::new(),
            stale: false,
        }
    }

    fn groups(gvs: &[(&str, &str)]) -> BTreeMap<String, Vec<GroupVersionDiscovery>> {
        let mut map: BTreeMap<String, Vec<GroupVersionDiscovery>> = BTreeMap::new();
        for (g, v) in gvs {
            map.entry((*g).to_owned()).or_default().push(gv(g, v));
        }
        map
    }

    fn set(p: &mut Priorities, group: &str, version: &str, min: i64, vp: i64) {
        let key = (group.to_owned(), version.to_owned());
        p.insert(
            key,
            Priority {
                group: min,
                version: vp,
            },
        );
    }

    #[test]
    fn groups_by_their_highest_minimum_then_by_name() {
        let all = groups(&[
            ("b.io", "v1"),
            ("a.io", "v1"),
            ("low.io", "v1"),
            ("apps", "v1"),
            ("split.io", "v1"),
            ("split.io", "v2"),
        ]);
        let mut p = Priorities::new();
        set(&mut p, "apps", "v1", 17800, 15);
        set(&mut p, "low.io", "v1", 100, 15);
        set(&mut p, "split.io", "v1", 500, 15);
        set(&mut p, "split.io", "v2", 2000, 15);
        let names: Vec<String> = aggregated(&p, &all).into_iter().map(|g| g.0).collect();
        assert_eq!(names, ["apps", "split.io", "a.io", "b.io", "low.io"]);
        assert_eq!(legacy(&p, &all), names);
    }

    #[test]
    fn versions_by_priority_then_kube_aware_order() {
        let all = groups(&[
            ("x.io", "v1alpha1"),
            ("x.io", "v1"),
            ("x.io", "v2beta1"),
            ("x.io", "v1beta1"),
        ]);
        let versions = |p: &Priorities| -> Vec<String> {
            aggregated(p, &all)[0]
                .1
                .iter()
                .map(|v| v.version.clone())
                .collect()
        };
        let mut p = Priorities::new();
        assert_eq!(versions(&p), ["v1", "v2beta1", "v1beta1", "v1alpha1"]);
        set(&mut p, "x.io", "v1alpha1", 1000, 20);
        assert_eq!(versions(&p), ["v1alpha1", "v1", "v2beta1", "v1beta1"]);
    }

    #[test]
    fn apis_breaks_ties_by_api_service_name() {
        // Equal minimums: `v1.zeta.io` sorts before `v2.alpha.io` by name,
        // where aggregated discovery orders by group name.
        let all = groups(&[("alpha.io", "v2"), ("zeta.io", "v1")]);
        let p = Priorities::new();
        assert_eq!(legacy(&p, &all), ["zeta.io", "alpha.io"]);
        let names: Vec<String> = aggregated(&p, &all).into_iter().map(|g| g.0).collect();
        assert_eq!(names, ["alpha.io", "zeta.io"]);
    }
}
