//! The static rules of nodes (upstream's `bootstrappolicy.NodeRules`): what
//! every kubelet may do regardless of which pods it runs. The Node
//! authorizer applies them to requests it does not subdivide; they are also
//! the rules of the `system:node` ClusterRole.

use serde_json::Value;

use super::{rule, READ};

const CORE: &[&str] = &[""];
const STORAGE: &[&str] = &["storage.k8s.io"];
/// What a kubelet does with the objects it owns outright.
const OWN: &[&str] = &["create", "delete", "get", "patch", "update"];
const PATCH_UPDATE: &[&str] = &["patch", "update"];

/// The node rules, in upstream's order.
pub fn node_rules() -> Vec<Value> {
    vec![
        // Access checks; these creates change nothing.
        rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
        rule(
            &["create"],
            &["authorization.k8s.io"],
            &["subjectaccessreviews", "localsubjectaccessreviews"],
        ),
        // Service environment variables.
        rule(READ, CORE, &["services"]),
        // Registering and reporting on the Node object.
        rule(&["create", "get", "list", "watch"], CORE, &["nodes"]),
        rule(PATCH_UPDATE, CORE, &["nodes/status"]),
        rule(PATCH_UPDATE, CORE, &["nodes"]),
        rule(&["create", "patch", "update"], CORE, &["events"]),
        rule(READ, CORE, &["pods"]),
        // Mirror pods, pod status, evictions.
        rule(&["create", "delete"], CORE, &["pods"]),
        rule(PATCH_UPDATE, CORE, &["pods/status"]),
        rule(&["create"], CORE, &["pods/eviction"]),
        // Volumes, image pull secrets and environment variables.
        rule(READ, CORE, &["secrets", "configmaps"]),
        rule(
            &["get"],
            CORE,
            &["persistentvolumeclaims", "persistentvolumes"],
        ),
        rule(&["get"], CORE, &["endpoints"]),
        // Rotating the kubelet's client certificate.
        rule(
            &["create", "get", "list", "watch"],
            &["certificates.k8s.io"],
            &["certificatesigningrequests"],
        ),
        rule(OWN, &["coordination.k8s.io"], &["leases"]),
        rule(&["get"], STORAGE, &["volumeattachments"]),
        rule(&["create"], CORE, &["serviceaccounts/token"]),
        rule(
            &["get", "patch", "update"],
            CORE,
            &["persistentvolumeclaims/status"],
        ),
        rule(READ, STORAGE, &["csidrivers"]),
        rule(OWN, STORAGE, &["csinodes"]),
        rule(READ, &["node.k8s.io"], &["runtimeclasses"]),
        // DynamicResourceAllocation (GA): the Node authorizer decides the
        // rest of a kubelet's ResourceSlice access itself.
        rule(&["get"], &["resource.k8s.io"], &["resourceclaims"]),
        rule(
            &["deletecollection"],
            &["resource.k8s.io"],
            &["resourceslices"],
        ),
        // KubeletServiceAccountTokenForCredentialProviders (on by default).
        rule(&["get"], CORE, &["serviceaccounts"]),
    ]
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn lists_are_sorted_as_upstream_builds_them() {
        let rules = node_rules();
        assert_eq!(
            rules[15],
            json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
                "verbs": ["create", "delete", "get", "patch", "update"]})
        );
        assert_eq!(
            rules[1]["resources"],
            json!(["localsubjectaccessreviews", "subjectaccessreviews"])
        );
    }

    #[test]
    fn token_requests_come_before_claim_status() {
        let rules = node_rules();
        assert_eq!(rules[16]["resources"], json!(["volumeattachments"]));
        assert_eq!(
            rules[17],
            json!({"apiGroups": [""], "resources": ["serviceaccounts/token"],
                "verbs": ["create"]})
        );
        assert_eq!(
            rules[18]["resources"],
            json!(["persistentvolumeclaims/status"])
        );
    }

    #[test]
    fn resource_slices_are_only_cleaned_up_by_collection() {
        let rules = node_rules();
        assert_eq!(
            rules[22..],
            [
                json!({"apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"],
                    "verbs": ["get"]}),
                json!({"apiGroups": ["resource.k8s.io"], "resources": ["resourceslices"],
                    "verbs": ["deletecollection"]}),
                json!({"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["get"]}),
            ]
        );
    }
}
