//! FlowSchema and PriorityLevelConfiguration validation end to end
//! (upstream's pkg/apis/flowcontrol/validation): the server's own
//! bootstrap objects and a realistic schema and level are accepted, bad
//! ones are refused with upstream's messages, on create and update.

use crate::harness::TestServer;
use crate::spec_validation::refused;

#[test]
fn flow_schemas_and_priority_levels_are_validated() {
    let s = TestServer::start();
    // The bootstrap configuration went through the same rules.
    let names = s.ok(&["get", "prioritylevelconfigurations", "-o", "name"]);
    assert!(
        names.contains("prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/exempt"),
        "{names}"
    );
    s.apply_yaml(
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\n\
         metadata: {name: batch}\nspec:\n  type: Limited\n  limited:\n    nominalConcurrencyShares: 10\n    \
         limitResponse: {type: Queue, queuing: {queues: 16, handSize: 4, queueLengthLimit: 20}}\n\
         ---\napiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: batch}\n\
         spec:\n  priorityLevelConfiguration: {name: batch}\n  matchingPrecedence: 900\n  \
         distinguisherMethod: {type: ByUser}\n  rules:\n  - subjects: [{kind: ServiceAccount, \
         serviceAccount: {name: runner, namespace: ci}}]\n    resourceRules: [{verbs: ['*'], \
         apiGroups: [batch], resources: [jobs], namespaces: [ci]}]\n",
    );
    let err = refused(
        &s,
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: PriorityLevelConfiguration\n\
         metadata: {name: exempt-ish}\nspec:\n  type: Exempt\n  exempt: {lendablePercent: 150}\n",
    );
    assert!(
        err.contains("The PriorityLevelConfiguration \"exempt-ish\" is invalid: \n* spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'\n* spec.exempt.lendablePercent: Invalid value: 150: must be between 0 and 100, inclusive\n"),
        "{err}"
    );
    let err = refused(
        &s,
        "apiVersion: flowcontrol.apiserver.k8s.io/v1\nkind: FlowSchema\nmetadata: {name: bad}\n\
         spec:\n  priorityLevelConfiguration: {name: batch}\n  matchingPrecedence: 20000\n  \
         rules:\n  - subjects: [{kind: User}]\n    nonResourceRules: [{verbs: [get], nonResourceURLs: [healthz]}]\n",
    );
    assert!(
        err.contains("The FlowSchema \"bad\" is invalid: \n* spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000\n* spec.rules[0].subjects[0].user: Required value: user is required when subject kind is 'User'\n* spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"healthz\": must start with slash\n"),
        "{err}"
    );
    let out = s.kubectl(&[
        "patch",
        "prioritylevelconfiguration",
        "batch",
        "--type=merge",
        "-p",
        r#"{"spec":{"limited":{"limitResponse":{"queuing":{"handSize":32}}}}}"#,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("The PriorityLevelConfiguration \"batch\" is invalid: spec.limited.limitResponse.queuing.handSize: Invalid value: 32: should not be greater than queues (16)"),
        "{err}"
    );
}
