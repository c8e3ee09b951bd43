//! Evicting a pod (upstream's pod `EvictionREST`, what `kubectl drain`
//! uses): a POST of a policy/v1 Eviction to `pods/<name>/eviction` deletes
//! the pod when its PodDisruptionBudget allows one more disruption, taking
//! that disruption from the budget's status; otherwise it answers 429 with
//! the budget named in a `DisruptionBudget` cause. Pods that are not
//! running (pending, finished or already deleting) are deleted without
//! consulting budgets.

use std::sync::Arc;

use apimachinery::labels::Selector;
use apimachinery::query_params::QueryParams;
use apimachinery::status::{ApiError, StatusCause, StatusDetails};
use apiserver::admission::GroupVersionKind;
use apiserver::endpoints::virtual_create::{CreateHandler, CreateRequest, VirtualResource};
use apiserver::registry::admission::{admit_create, SubresourceCreate};
use apiserver::registry::store::{Mutate, Store, Target, WriteOptions};
use apiserver::registry::{DeleteOptions, ResourceInfo};
use apiserver::server::GenericApiServer;
use serde_json::{json, Value};
use storage::{GetOptions, ListOptions};

/// Upstream caps the evictions a budget remembers before its controller
/// confirms them.
const MAX_DISRUPTED_PODS: usize = 2000;
const DISRUPTION_BUDGET_CAUSE: &str = "DisruptionBudget";
const VIOLATION: &str = "Cannot evict pod as it would violate the pod's disruption budget.";

/// Serves `pods/eviction` when both pods and poddisruptionbudgets are served.
pub fn install(server: &mut GenericApiServer) {
    let (Some(pods), Some(budgets)) = (
        server.store("", "v1", "pods"),
        server.store("policy", "v1", "poddisruptionbudgets"),
    ) else {
        return;
    };
    let create: CreateHandler = Arc::new(move |req| {
        let (pods, budgets) = (pods.clone(), budgets.clone());
        Box::pin(async move { evict(&pods, &budgets, req).await })
    });
    let resource = VirtualResource {
        info: ResourceInfo::create_only("policy", "v1", "pods/eviction", "Eviction"),
        create,
    };
    server.install_subresource_create("", "v1", "pods/eviction", resource);
}

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn success() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

async fn evict(pods: &Store, budgets: &Store, req: CreateRequest) -> Result<Value, ApiError> {
    let namespace = req
        .namespace
        .clone()
        .ok_or_else(|| ApiError::bad_request("namespace is required"))?;
    let name = req.name.clone().unwrap_or_default();
    if text(&req.body, "/metadata/name") != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    admit(pods, &req, &namespace, &name).await?;
    let options = delete_options(&req.body)?;
    let pod = pods
        .get(Some(&namespace), &name, GetOptions::default())
        .await?;
    if budgets_do_not_apply(&pod) {
        return delete(pods, &namespace, &name, &options).await;
    }
    let matching = matching_budgets(budgets, &namespace, &pod).await?;
    let budget = match matching.as_slice() {
        [] => return delete(pods, &namespace, &name, &options).await,
        [one] => one.clone(),
        _ => {
            return Err(ApiError::internal_error(
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ))
        }
    };
    if !ready(&pod) && unhealthy_may_go(&budget) {
        return delete(pods, &namespace, &name, &options).await;
    }
    take_disruption(budgets, &namespace, &budget, &name, options.dry_run).await?;
    delete(pods, &namespace, &name, &options).await
}

/// The Eviction's `deleteOptions`, as a delete request's body would give.
fn delete_options(eviction: &Value) -> Result<DeleteOptions, ApiError> {
    let body = eviction
        .get("deleteOptions")
        .map(|o| serde_json::to_vec(o).unwrap_or_default())
        .unwrap_or_default();
    DeleteOptions::from_request(&body, &QueryParams::default())
}

async fn delete(
    pods: &Store,
    namespace: &str,
    name: &str,
    options: &DeleteOptions,
) -> Result<Value, ApiError> {
    pods.delete(Some(namespace), name, options).await?;
    Ok(success())
}

/// Runs the admission chain on the Eviction as a create of `pods/eviction`.
async fn admit(
    pods: &Store,
    req: &CreateRequest,
    namespace: &str,
    name: &str,
) -> Result<(), ApiError> {
    let create = SubresourceCreate {
        parent: &pods.info,
        subresource: "eviction",
        kind: GroupVersionKind {
            group: "policy".into(),
            version: "v1".into(),
            kind: "Eviction".into(),
        },
        namespace,
        name,
        user: req.user.clone(),
    };
    admit_create(pods.admission().as_ref(), create, req.body.clone())
        .await
        .map(drop)
}

/// Upstream's `canIgnorePDB`: a pod not running, or already deleting.
fn budgets_do_not_apply(pod: &Value) -> bool {
    matches!(
        text(pod, "/status/phase"),
        "Succeeded" | "Failed" | "Pending"
    ) || pod
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
}

fn ready(pod: &Value) -> bool {
    pod.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// An unready pod may go without taking a disruption when the budget says
/// so (`AlwaysAllow`) or, by default, when the budget is healthy anyway.
fn unhealthy_may_go(budget: &Value) -> bool {
    if text(budget, "/spec/unhealthyPodEvictionPolicy") == "AlwaysAllow" {
        return true;
    }
    let number = |p: &str| budget.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    let desired = number("/status/desiredHealthy");
    desired > 0 && number("/status/currentHealthy") >= desired
}

/// The namespace's budgets whose selector matches the pod (a budget without
/// a selector matches nothing; an empty one matches every pod).
async fn matching_budgets(
    budgets: &Store,
    namespace: &str,
    pod: &Value,
) -> Result<Vec<Value>, ApiError> {
    let empty = serde_json::Map::new();
    let labels = pod
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let listed = budgets
        .list(Some(namespace), ListOptions::default())
        .await?;
    Ok(listed
        .items
        .iter()
        .filter(|b| {
            Selector::from_label_selector(b.pointer("/spec/selector"))
                .is_ok_and(|s| s.matches(labels))
        })
        .map(|b| Value::clone(b))
        .collect())
}

fn too_many_requests(cause: String, retry_after_seconds: i32) -> ApiError {
    let mut err = ApiError::too_many_requests(VIOLATION, retry_after_seconds);
    let details = err
        .details
        .get_or_insert_with(|| Box::new(StatusDetails::default()));
    details.causes.push(StatusCause {
        reason: DISRUPTION_BUDGET_CAUSE.into(),
        message: cause,
        field: String::new(),
    });
    err
}

/// Takes one disruption from the budget (upstream's `checkAndDecrement`).
async fn take_disruption(
    budgets: &Store,
    namespace: &str,
    budget: &Value,
    pod: &str,
    dry_run: bool,
) -> Result<(), ApiError> {
    let budget_name = text(budget, "/metadata/name").to_owned();
    let number = |p: &str| budget.pointer(p).and_then(Value::as_i64).unwrap_or(0);
    if number("/status/observedGeneration") < number("/metadata/generation") {
        let cause =
            format!("The disruption budget {budget_name} is still being processed by the server.");
        return Err(too_many_requests(cause, 10));
    }
    let allowed = number("/status/disruptionsAllowed");
    let forbidden =
        |why: &str| ApiError::forbidden("policy", "poddisruptionbudget", &budget_name, why);
    if allowed < 0 {
        return Err(forbidden("pdb disruptions allowed is negative"));
    }
    let disrupted = budget
        .pointer("/status/disruptedPods")
        .and_then(Value::as_object)
        .map_or(0, |m| m.len());
    if disrupted > MAX_DISRUPTED_PODS {
        return Err(forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        let cause = format!(
            "The disruption budget {budget_name} needs {} healthy pods and has {} currently",
            number("/status/desiredHealthy"),
            number("/status/currentHealthy")
        );
        return Err(too_many_requests(cause, 0));
    }
    if dry_run {
        return Ok(());
    }
    let expected_version = text(budget, "/metadata/resourceVersion").to_owned();
    let pod = pod.to_owned();
    let mutate: Mutate = Arc::new(move |current: Option<&Value>| {
        let mut b = current
            .cloned()
            .ok_or_else(|| ApiError::not_found("policy", "poddisruptionbudgets", ""))?;
        // A budget changed meanwhile must be judged again: conflict.
        if text(&b, "/metadata/resourceVersion") != expected_version {
            return Err(ApiError::conflict("policy", "poddisruptionbudgets", text(&b, "/metadata/name"), "the object has been modified; please apply your changes to the latest version and try again"));
        }
        let left = b
            .pointer("/status/disruptionsAllowed")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            - 1;
        b["status"]["disruptionsAllowed"] = json!(left);
        if !b["status"]["disruptedPods"].is_object() {
            b["status"]["disruptedPods"] = json!({});
        }
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        b["status"]["disruptedPods"][&pod] = json!(now);
        Ok(b)
    });
    budgets
        .update(
            Some(namespace),
            &budget_name,
            Target::Status,
            mutate,
            &WriteOptions::default(),
        )
        .await
        .map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_running_pods_consult_budgets() {
        let pod = |phase: &str| json!({"status": {"phase": phase}});
        assert!(budgets_do_not_apply(&pod("Pending")));
        assert!(budgets_do_not_apply(&pod("Succeeded")));
        assert!(!budgets_do_not_apply(&pod("Running")));
        let deleting = json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": "Running"}});
        assert!(budgets_do_not_apply(&deleting));
    }

    #[test]
    fn unready_pods_go_when_the_budget_is_healthy_or_allows_it() {
        let budget = |policy: &str, desired: i64, current: i64| {
            json!({"spec": {"unhealthyPodEvictionPolicy": policy},
                "status": {"desiredHealthy": desired, "currentHealthy": current}})
        };
        assert!(unhealthy_may_go(&budget("AlwaysAllow", 3, 0)));
        assert!(unhealthy_may_go(&budget("IfHealthyBudget", 2, 2)));
        assert!(!unhealthy_may_go(&budget("IfHealthyBudget", 2, 1)));
        assert!(!unhealthy_may_go(&budget("", 0, 0)));
    }

    #[test]
    fn a_refusal_names_the_budget() {
        let err = too_many_requests(
            "The disruption budget b needs 2 healthy pods and has 2 currently".into(),
            0,
        );
        assert_eq!(err.code, 429);
        assert_eq!(err.message, VIOLATION);
        let details = err.details.unwrap();
        assert_eq!(details.causes[0].reason, "DisruptionBudget");
    }
}
