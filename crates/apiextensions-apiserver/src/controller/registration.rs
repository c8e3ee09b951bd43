//! The aggregator's APIServices for CRD group versions (upstream's
//! `crdregistration` controller with the autoregister controller's
//! `automanaged: "true"` sync): one per served version of any CRD, removed
//! once no CRD serves it.

use std::collections::BTreeSet;
use std::sync::Arc;

use apimachinery::status::ApiError;
use apiserver::registry::store::{Store, Target, WriteOptions};
use apiserver::registry::DeleteOptions;
use serde_json::{json, Value};
use storage::ListOptions;
use tokio::sync::watch;

use crate::controller::Snapshot;

const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

fn api_service(group: &str, version: &str) -> Value {
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": format!("{version}.{group}"), "labels": {AUTOMANAGED: "true"}},
        // CRDs rank below built-in groups; versions sort kube-like.
        "spec": {"group": group, "version": version,
            "groupPriorityMinimum": 1000, "versionPriority": 100},
    })
}

fn desired(crds: &Snapshot) -> BTreeSet<(String, String)> {
    crds.iter()
        .flat_map(|crd| {
            crd.spec
                .versions
                .iter()
                .filter(|v| v.served)
                .map(|v| (crd.spec.group.clone(), v.name.clone()))
        })
        .collect()
}

async fn relabel(api_services: &Store, name: &str) -> Result<(), ApiError> {
    let mutate = Arc::new(|current: Option<&Value>| {
        let mut obj = current
            .cloned()
            .ok_or_else(|| ApiError::not_found("apiregistration.k8s.io", "apiservices", ""))?;
        obj["metadata"]["labels"][AUTOMANAGED] = json!("true");
        Ok(obj)
    });
    let opts = WriteOptions::default();
    api_services
        .update(None, name, Target::Main, mutate, &opts)
        .await
        .map(|_| ())
}

async fn sync(api_services: &Store, want: &BTreeSet<(String, String)>) -> Result<(), ApiError> {
    let existing = api_services.list(None, ListOptions::default()).await?.items;
    let mut have = BTreeSet::new();
    for svc in &existing {
        let field = |p: &str| svc.pointer(p).and_then(Value::as_str).unwrap_or("");
        let key = (
            field("/spec/group").to_owned(),
            field("/spec/version").to_owned(),
        );
        let managed = field(&format!(
            "/metadata/labels/{}",
            AUTOMANAGED.replace('/', "~1")
        ));
        if managed == "onstart" && want.contains(&key) {
            // Registered at startup from discovery before this controller
            // ran: it is a CRD's, and goes when the CRD does.
            relabel(api_services, field("/metadata/name")).await?;
        }
        if managed == "true" && !want.contains(&key) {
            match api_services
                .delete(None, field("/metadata/name"), &DeleteOptions::default())
                .await
            {
                Ok(_) => {}
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        } else {
            have.insert(key);
        }
    }
    for (group, version) in want.difference(&have) {
        match api_services
            .create(api_service(group, version), &WriteOptions::default())
            .await
        {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Follows the CRD snapshots for as long as the server runs.
pub async fn run(api_services: Arc<Store>, mut snapshots: watch::Receiver<Snapshot>) {
    // The first snapshot comes once the controller has listed every CRD.
    if snapshots.changed().await.is_err() {
        return;
    }
    let mut last = None;
    loop {
        let want = desired(&snapshots.borrow_and_update().clone());
        if last.as_ref() != Some(&want) {
            match sync(&api_services, &want).await {
                Ok(()) => last = Some(want),
                Err(e) => tracing::warn!(error = %e.message, "registering CRD APIServices failed"),
            }
        }
        // Woken by a change, or after a while to retry a failed sync.
        let changed = tokio::time::timeout(std::time::Duration::from_secs(5), snapshots.changed());
        if let Ok(Err(_)) = changed.await {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_served_version_of_every_crd_is_wanted() {
        let crd = |group: &str, versions: Value| {
            serde_json::from_value(json!({
                "metadata": {"name": format!("things.{group}")},
                "spec": {"group": group, "scope": "Namespaced",
                    "names": {"plural": "things", "kind": "Thing"}, "versions": versions},
            }))
            .expect("valid CRD")
        };
        let crds: Snapshot = Arc::new(vec![
            crd(
                "a.example.com",
                json!([{"name": "v1", "served": true, "storage": true},
                {"name": "v2", "served": false, "storage": false}]),
            ),
            crd(
                "b.example.com",
                json!([{"name": "v1beta1", "served": true, "storage": true}]),
            ),
        ]);
        let want: Vec<(String, String)> = desired(&crds).into_iter().collect();
        assert_eq!(
            want,
            vec![
                ("a.example.com".to_owned(), "v1".to_owned()),
                ("b.example.com".to_owned(), "v1beta1".to_owned())
            ]
        );
        let svc = api_service("a.example.com", "v1");
        assert_eq!(svc["metadata"]["name"], "v1.a.example.com");
        assert_eq!(svc["metadata"]["labels"][AUTOMANAGED], "true");
        assert_eq!(svc["spec"]["groupPriorityMinimum"], 1000);
    }
}
