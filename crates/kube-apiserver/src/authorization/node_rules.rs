//! The static rules of nodes (upstream's `bootstrappolicy.NodeRules`): what
//! every kubelet may do regardless of which pods it runs. The Node
//! authorizer applies them to requests it does not subdivide; they are also
//! the rules of the `system:node` ClusterRole.

use serde_json::{json, Value};

const READ: &[&str] = &["get", "list", "watch"];

fn rule(verbs: &[&str], group: &str, resources: &[&str]) -> Value {
    json!({"verbs": verbs, "apiGroups": [group], "resources": resources})
}

/// The node rules, in upstream's order.
pub fn node_rules() -> Vec<Value> {
    let storage = "storage.k8s.io";
    vec![
        // Access checks; these creates change nothing.
        rule(&["create"], "authentication.k8s.io", &["tokenreviews"]),
        rule(
            &["create"],
            "authorization.k8s.io",
            &["subjectaccessreviews", "localsubjectaccessreviews"],
        ),
        // Service environment variables.
        rule(READ, "", &["services"]),
        // Registering and reporting on the Node object.
        rule(&["create", "get", "list", "watch"], "", &["nodes"]),
        rule(&["update", "patch"], "", &["nodes/status"]),
        rule(&["update", "patch"], "", &["nodes"]),
        rule(&["create", "update", "patch"], "", &["events"]),
        rule(READ, "", &["pods"]),
        // Mirror pods, pod status, evictions.
        rule(&["create", "delete"], "", &["pods"]),
        rule(&["update", "patch"], "", &["pods/status"]),
        rule(&["create"], "", &["pods/eviction"]),
        // Volumes, image pull secrets and environment variables.
        rule(READ, "", &["secrets", "configmaps"]),
        rule(
            &["get"],
            "",
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        rule(&["get"], "", &["endpoints"]),
        // Rotating the kubelet's client certificate.
        rule(
            &["create", "get", "list", "watch"],
            "certificates.k8s.io",
            &["certificatesigningrequests"],
        ),
        rule(
            &["get", "create", "update", "patch", "delete"],
            "coordination.k8s.io",
            &["leases"],
        ),
        rule(&["get"], storage, &["volumeattachments"]),
        rule(
            &["get", "update", "patch"],
            "",
            &["persistentvolumeclaims/status"],
        ),
        rule(&["create"], "", &["serviceaccounts/token"]),
        rule(&["get", "watch", "list"], storage, &["csidrivers"]),
        rule(
            &["get", "create", "update", "patch", "delete"],
            storage,
            &["csinodes"],
        ),
        rule(READ, "node.k8s.io", &["runtimeclasses"]),
        // Dynamic resource allocation.
        rule(&["get"], "resource.k8s.io", &["resourceclaims"]),
        rule(
            &[
                "get",
                "list",
                "watch",
                "create",
                "update",
                "patch",
                "delete",
                "deletecollection",
            ],
            "resource.k8s.io",
            &["resourceslices"],
        ),
    ]
}
