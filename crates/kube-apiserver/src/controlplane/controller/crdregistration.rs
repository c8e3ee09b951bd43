//! The CRD registration controller (upstream's
//! `pkg/controlplane/controller/crdregistration`): every group version a
//! CRD serves gets an APIService kept by the autoregistration controller
//! (`groupPriorityMinimum` 1000, `versionPriority` 100); one no CRD serves
//! is handed back. It follows the shared CRD informer; each group version
//! of a changed CRD is a key on a rate-limited work queue.

use std::sync::Arc;

use client_go::tools::cache::{Lister, ResourceEventHandlerFuncs, SharedInformer};
use client_go::util::workqueue::{run_workers, RateLimitingQueue};
use client_go::CancellationToken;
use kube_aggregator::controllers::autoregister::{api_service, AutoRegisterController};
use serde_json::Value;

/// Upstream's `Run(5, stop)`.
const WORKERS: usize = 5;
/// CRDs rank below built-in groups; their versions sort kube-like.
const PRIORITIES: (i64, i64) = (1000, 100);

type GroupVersion = (String, String);

/// The group versions a CRD names, served or not.
fn group_versions(crd: &Value) -> Vec<GroupVersion> {
    let group = crd
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array);
    versions
        .into_iter()
        .flatten()
        .filter_map(|v| v.get("name").and_then(Value::as_str))
        .map(|v| (group.to_owned(), v.to_owned()))
        .collect()
}

/// Whether some CRD serves the group version.
fn served(crds: &[storage::Object], (group, version): &GroupVersion) -> bool {
    crds.iter()
        .filter(|crd| crd.pointer("/spec/group").and_then(Value::as_str) == Some(group))
        .flat_map(|crd| {
            crd.pointer("/spec/versions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .any(|v| {
            v.get("name").and_then(Value::as_str) == Some(version)
                && v.get("served").and_then(Value::as_bool) == Some(true)
        })
}

/// Upstream's `handleVersionUpdate`.
fn handle_version_update(
    lister: &Lister,
    registration: &AutoRegisterController,
    gv: &GroupVersion,
) {
    let (group, version) = gv;
    if served(&lister.list(), gv) {
        registration.add_api_service_to_sync(api_service(group, version, PRIORITIES));
    } else {
        registration.remove_api_service_to_sync(&format!("{version}.{group}"));
    }
}

/// Follows `informer` (CRDs) until `stop`: every CRD's group versions are
/// handled once, then `initial` is cancelled (upstream's
/// `WaitForInitialSync`), then changes are worked from the queue.
pub async fn run(
    informer: Arc<SharedInformer>,
    registration: Arc<AutoRegisterController>,
    initial: CancellationToken,
    stop: CancellationToken,
) {
    let queue = RateLimitingQueue::<GroupVersion>::with_default_limiter();
    let (added, updated, deleted) = (queue.clone(), queue.clone(), queue.clone());
    let handler = ResourceEventHandlerFuncs {
        add: Some(Box::new(move |crd| {
            group_versions(crd).into_iter().for_each(|gv| added.add(gv))
        })),
        // Both states: versions removed are handed back, added ones kept.
        update: Some(Box::new(move |old, new| {
            for gv in group_versions(old).into_iter().chain(group_versions(new)) {
                updated.add(gv);
            }
        })),
        delete: Some(Box::new(move |crd| {
            group_versions(crd)
                .into_iter()
                .for_each(|gv| deleted.add(gv))
        })),
    };
    informer.add_event_handler_until(handler, &stop);
    informer.wait_for_sync().await;
    let lister = informer.lister();
    for crd in lister.list() {
        for gv in group_versions(&crd) {
            handle_version_update(&lister, &registration, &gv);
        }
    }
    initial.cancel();
    run_workers(queue, WORKERS, stop, move |gv: GroupVersion| {
        handle_version_update(&lister, &registration, &gv);
        std::future::ready(Ok::<(), std::convert::Infallible>(()))
    })
    .await;
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_group_version_is_wanted_while_some_crd_serves_it() {
        let crd = |group: &str, versions: Value| -> storage::Object {
            Arc::new(
                json!({"metadata": {"name": format!("things.{group}")},
                "spec": {"group": group, "versions": versions}})
                .into(),
            )
        };
        let crds = vec![
            crd(
                "a.example.com",
                json!([{"name": "v1", "served": true}, {"name": "v2", "served": false}]),
            ),
            crd("a.example.com", json!([{"name": "v2", "served": false}])),
        ];
        let gv = |v: &str| ("a.example.com".to_owned(), v.to_owned());
        assert_eq!(group_versions(&crds[0]), vec![gv("v1"), gv("v2")]);
        assert!(served(&crds, &gv("v1")));
        assert!(!served(&crds, &gv("v2")));
        assert!(!served(
            &crds,
            &("b.example.com".to_owned(), "v1".to_owned())
        ));
    }
}
