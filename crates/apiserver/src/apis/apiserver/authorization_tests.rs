//! Reading and validating AuthorizationConfiguration files.

use super::*;

const HEAD: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n";

fn err(body: &str) -> String {
    match parse(&format!("{HEAD}{body}")) {
        Ok(_) => panic!("accepted: {body}"),
        Err(e) => e.to_string(),
    }
}

fn kubeconfig() -> tempfile::NamedTempFile {
    tempfile::NamedTempFile::new().unwrap()
}

#[test]
fn a_valid_chain_is_defaulted() {
    let file = kubeconfig();
    let body = format!(
        "authorizers:\n- type: Node\n  name: node\n- type: Webhook\n  name: hook\n  webhook:\n    timeout: 3s\n    subjectAccessReviewVersion: v1\n    matchConditionSubjectAccessReviewVersion: v1\n    failurePolicy: Deny\n    cacheUnauthorizedRequests: false\n    connectionInfo:\n      type: KubeConfigFile\n      kubeConfigFile: {}\n    matchConditions:\n    - expression: has(request.resourceAttributes)\n- type: RBAC\n  name: rbac\n",
        file.path().display()
    );
    let entries = parse(&format!("{HEAD}{body}")).unwrap();
    let kinds: Vec<&str> = entries.iter().map(|e| e.kind.as_str()).collect();
    assert_eq!(kinds, ["Node", "Webhook", "RBAC"]);
    let hook = entries[1].webhook.as_ref().unwrap();
    assert_eq!(hook.timeout, Duration::from_secs(3));
    assert_eq!(hook.authorized_ttl, Some(Duration::from_secs(300)));
    assert_eq!(hook.unauthorized_ttl, None);
    assert_eq!(hook.failure_policy, FailurePolicy::Deny);
    assert_eq!(hook.match_conditions.len(), 1);
    assert_eq!(
        hook.connection,
        Connection::KubeConfigFile(file.path().to_owned())
    );
}

#[test]
fn authorizer_entries_are_checked_with_field_paths() {
    assert_eq!(
        err("authorizers: []\n"),
        "authorizers: Required value: at least one authorization mode must be defined"
    );
    assert_eq!(
        err("authorizers:\n- type: Magic\n  name: magic\n"),
        "authorizers[0].type: Unsupported value: \"Magic\": supported values: \"ABAC\", \"AlwaysAllow\", \"AlwaysDeny\", \"Node\", \"RBAC\", \"Webhook\""
    );
    assert_eq!(
        err("authorizers:\n- type: RBAC\n  name: rbac\n- type: RBAC\n  name: rbac2\n"),
        "authorizers[1].type: Duplicate value: \"RBAC\""
    );
    assert_eq!(
        err("authorizers:\n- type: Webhook\n  name: w\n"),
        "authorizers[0].webhook: Required value: required when type=Webhook"
    );
    assert_eq!(
        err("authorizers:\n- type: RBAC\n  name: policy\n"),
        "expected name rbac for authorizer RBAC instead of policy"
    );
    assert!(err("authorizers:\n- type: RBAC\n  nme: rbac\n")
        .starts_with("failed to load AuthorizationConfiguration from file: "));
    let wrong_kind =
        parse("apiVersion: apiserver.config.k8s.io/v1\nkind: Other\nauthorizers: []\n");
    assert_eq!(
        wrong_kind.unwrap_err().to_string(),
        "failed to load AuthorizationConfiguration from file: no kind \"Other\" is registered for version \"apiserver.config.k8s.io/v1\""
    );
}

#[test]
fn webhook_settings_are_checked_with_field_paths() {
    let message = err("authorizers:\n- type: Webhook\n  name: w\n  webhook:\n    timeout: 45s\n    subjectAccessReviewVersion: v2\n    failurePolicy: Maybe\n    connectionInfo:\n      type: KubeConfigFile\n      kubeConfigFile: relative.yaml\n    matchConditions:\n    - expression: 'request.user =='\n");
    for part in [
        "authorizers[0].webhook.timeout: Invalid value: \"45s\": must be > 0s and <= 30s",
        "authorizers[0].webhook.subjectAccessReviewVersion: Unsupported value: \"v2\": supported values: \"v1\", \"v1beta1\"",
        "authorizers[0].webhook.matchConditionSubjectAccessReviewVersion: Required value: required if match conditions are specified",
        "authorizers[0].webhook.failurePolicy: Unsupported value: \"Maybe\": supported values: \"NoOpinion\", \"Deny\"",
        "authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: \"relative.yaml\": must be an absolute path",
        "authorizers[0].webhook.matchConditions[0].expression: Invalid value: \"request.user ==\": compilation failed",
    ] {
        assert!(message.contains(part), "{part} not in {message}");
    }
    let missing = err("authorizers:\n- type: Webhook\n  name: w\n  webhook:\n    subjectAccessReviewVersion: v1\n    failurePolicy: Deny\n    connectionInfo:\n      type: KubeConfigFile\n      kubeConfigFile: /nonexistent/kubeconfig\n");
    assert_eq!(
        missing,
        "[authorizers[0].webhook.timeout: Required value, authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: \"/nonexistent/kubeconfig\": error loading file: stat /nonexistent/kubeconfig: no such file or directory]"
    );
}
