//! kubectl's RBAC authoring commands under `--authorization-mode=Node,RBAC`,
//! answered as upstream answers them: `auth reconcile` (create, keep,
//! remove extras, dry run), escalation refusals with upstream's message,
//! `describe` and `get -o wide` of roles and bindings, and `certificate
//! approve/deny` with the signer permission check.

use crate::harness::{Backend, TestServer};
use crate::support::pki::csr_request;

const RBAC: &[&str] = &["--authorization-mode=Node,RBAC"];

const RECONCILED: &str = "\
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: rec, namespace: team}
rules:
- apiGroups: [\"\"]
  resources: [configmaps]
  verbs: [get]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: rec, namespace: team}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: rec}
subjects:
- {kind: User, name: alice, apiGroup: rbac.authorization.k8s.io}
";

/// Runs `kubectl auth reconcile`; returns what it printed on stdout (one
/// line per object) and on stderr (kubectl writes the changes there).
fn reconcile(s: &TestServer, flags: &[&str]) -> (String, String) {
    let mut args = vec!["auth", "reconcile", "-f", "-"];
    args.extend_from_slice(flags);
    let out = s.kubectl_stdin(&args, RECONCILED);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn jsonpath(s: &TestServer, kind: &str, path: &str) -> String {
    let format = format!("jsonpath={path}");
    s.ok(&["get", kind, "rec", "-n", "team", "-o", &format])
}

fn auth_reconcile_creates_keeps_and_removes(backend: Backend) {
    let s = backend.start_with(RBAC);
    s.ok(&["create", "namespace", "team"]);
    const ADDED_RULE: &str = "\treconciliation required create\n\tmissing rules added:\n\t\t{Verbs:[get] APIGroups:[] Resources:[configmaps] ResourceNames:[] NonResourceURLs:[]}\n";
    const ADDED_SUBJECT: &str = "\treconciliation required create\n\tmissing subjects added:\n\t\t{Kind:User APIGroup:rbac.authorization.k8s.io Name:alice Namespace:}";
    let (dry, changes) = reconcile(&s, &["--dry-run=client"]);
    assert_eq!(
        dry,
        "role.rbac.authorization.k8s.io/rec reconciled (dry run)\nrolebinding.rbac.authorization.k8s.io/rec reconciled (dry run)\n"
    );
    assert!(changes.starts_with(ADDED_RULE), "{changes}");
    assert!(changes.contains(ADDED_SUBJECT), "{changes}");
    assert!(s
        .fails(&["get", "role", "rec", "-n", "team"])
        .contains("NotFound"));
    let (created, changes) = reconcile(&s, &[]);
    assert_eq!(
        created,
        "role.rbac.authorization.k8s.io/rec reconciled\nrolebinding.rbac.authorization.k8s.io/rec reconciled\n"
    );
    assert!(changes.starts_with(ADDED_RULE), "{changes}");
    assert!(changes.contains(ADDED_SUBJECT), "{changes}");
    assert_eq!(jsonpath(&s, "rolebinding", "{.roleRef.name}"), "rec");
    // Nothing to change: no changes reported.
    assert_eq!(reconcile(&s, &[]).1, "");
    s.ok(&[
        "patch",
        "role",
        "rec",
        "-n",
        "team",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/rules/-","value":{"apiGroups":[""],"resources":["secrets"],"verbs":["list"]}}]"#,
    ]);
    s.ok(&[
        "patch",
        "rolebinding",
        "rec",
        "-n",
        "team",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/subjects/-","value":{"kind":"User","name":"bob","apiGroup":"rbac.authorization.k8s.io"}}]"#,
    ]);
    // Without the remove flags, extras stay.
    reconcile(&s, &[]);
    assert!(jsonpath(&s, "role", "{.rules}").contains("secrets"));
    let (_, removed) = reconcile(
        &s,
        &["--remove-extra-permissions", "--remove-extra-subjects"],
    );
    assert!(
        removed.contains("\textra rules removed:\n\t\t{Verbs:[list] APIGroups:[] Resources:[secrets] ResourceNames:[] NonResourceURLs:[]}\n"),
        "{removed}"
    );
    assert!(
        removed.contains("\textra subjects removed:\n\t\t{Kind:User APIGroup:rbac.authorization.k8s.io Name:bob Namespace:}"),
        "{removed}"
    );
    assert_eq!(
        jsonpath(&s, "role", "{.rules}"),
        r#"[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get"]}]"#
    );
    assert_eq!(
        jsonpath(&s, "rolebinding", "{.subjects}"),
        r#"[{"apiGroup":"rbac.authorization.k8s.io","kind":"User","name":"alice"}]"#
    );
}

fn escalation_is_refused_with_upstreams_message(backend: Backend) {
    let s = backend.start_with(RBAC);
    s.ok(&["create", "namespace", "team"]);
    s.ok(&[
        "create",
        "role",
        "rb-admin",
        "--verb=create,get,list",
        "--resource=roles,rolebindings",
        "-n",
        "team",
    ]);
    s.ok(&[
        "create",
        "rolebinding",
        "dave",
        "--role=rb-admin",
        "--user=dave",
        "-n",
        "team",
    ]);
    let err = s.fails(&[
        "create",
        "role",
        "big",
        "--verb=get",
        "--resource=secrets",
        "-n",
        "team",
        "--as=dave",
    ]);
    assert_eq!(
        err.trim(),
        "Error from server (Forbidden): roles.rbac.authorization.k8s.io \"big\" is forbidden: user \"dave\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
    );
    let err = s.fails(&[
        "create",
        "rolebinding",
        "wide",
        "--clusterrole=edit",
        "--user=x",
        "-n",
        "team",
        "--as=dave",
    ]);
    assert!(
        err.starts_with("error: failed to create rolebinding: rolebindings.rbac.authorization.k8s.io \"wide\" is forbidden: user \"dave\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n"),
        "{err}"
    );
    assert!(
        err.contains("\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\" \"list\" \"watch\" \"create\" \"delete\" \"deletecollection\" \"patch\" \"update\"]}\n"),
        "{err}"
    );
    // A missing role is the role registry's 404, not a refusal.
    for (flag, resource) in [
        ("--role=nope", "roles"),
        ("--clusterrole=nope", "clusterroles"),
    ] {
        let err = s.fails(&[
            "create",
            "rolebinding",
            "missing",
            flag,
            "--user=x",
            "-n",
            "team",
            "--as=dave",
        ]);
        assert_eq!(
            err.trim(),
            format!("error: failed to create rolebinding: {resource}.rbac.authorization.k8s.io \"nope\" not found")
        );
    }
    // What dave holds he may hand on.
    let out = s.ok(&[
        "create",
        "role",
        "small",
        "--verb=get",
        "--resource=roles",
        "-n",
        "team",
        "--as=dave",
    ]);
    assert_eq!(out.trim(), "role.rbac.authorization.k8s.io/small created");
}

fn rows(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .map(|l| l.split_whitespace().collect())
        .collect()
}

fn describe_and_wide_columns(backend: Backend) {
    let s = backend.start_with(RBAC);
    s.ok(&["create", "namespace", "team"]);
    s.ok(&["create", "serviceaccount", "bot", "-n", "team"]);
    s.ok(&[
        "create",
        "clusterrole",
        "nr",
        "--verb=get",
        "--non-resource-url=/logs/*",
    ]);
    s.ok(&[
        "create",
        "clusterrolebinding",
        "nr",
        "--clusterrole=nr",
        "--group=ops",
        "--user=carol",
        "--serviceaccount=team:bot",
    ]);
    s.ok(&[
        "create",
        "role",
        "pod-reader",
        "--verb=get,list",
        "--resource=pods,pods/log",
        "-n",
        "team",
    ]);
    s.ok(&[
        "create",
        "rolebinding",
        "bot-read",
        "--role=pod-reader",
        "--serviceaccount=team:bot",
        "-n",
        "team",
    ]);
    let wide = s.ok(&["get", "clusterrolebindings", "nr", "-o", "wide"]);
    let table = rows(&wide);
    assert_eq!(
        table[0],
        ["NAME", "ROLE", "AGE", "USERS", "GROUPS", "SERVICEACCOUNTS"]
    );
    assert_eq!(table[1][..2], ["nr", "ClusterRole/nr"]);
    assert_eq!(table[1][3..], ["carol", "ops", "team/bot"]);
    let wide = s.ok(&["get", "rolebindings", "-n", "team", "-o", "wide"]);
    let table = rows(&wide);
    assert_eq!(table[1][..2], ["bot-read", "Role/pod-reader"]);
    assert_eq!(table[1][3..], ["team/bot"]);
    let roles = s.ok(&["get", "clusterroles", "nr", "-o", "wide"]);
    assert_eq!(rows(&roles)[0], ["NAME", "CREATED", "AT"]);
    let described = s.ok(&["describe", "clusterrole", "nr"]);
    assert_eq!(
        rows(&described),
        [
            vec!["Name:", "nr"],
            vec!["Labels:", "<none>"],
            vec!["Annotations:", "<none>"],
            vec!["PolicyRule:"],
            vec![
                "Resources",
                "Non-Resource",
                "URLs",
                "Resource",
                "Names",
                "Verbs"
            ],
            vec!["---------", "-----------------", "--------------", "-----"],
            vec!["[/logs/*]", "[]", "[get]"],
        ]
    );
    let described = s.ok(&["describe", "role", "pod-reader", "-n", "team"]);
    let described = rows(&described);
    assert!(described.contains(&vec!["pods", "[]", "[]", "[get", "list]"]));
    assert!(described.contains(&vec!["pods/log", "[]", "[]", "[get", "list]"]));
    let described = s.ok(&["describe", "clusterrolebinding", "nr"]);
    let described = rows(&described);
    for line in [
        vec!["Kind:", "ClusterRole"],
        vec!["Name:", "nr"],
        vec!["User", "carol"],
        vec!["Group", "ops"],
        vec!["ServiceAccount", "bot", "team"],
    ] {
        assert!(described.contains(&line), "{line:?} in {described:?}");
    }
    let described = s.ok(&["describe", "rolebinding", "bot-read", "-n", "team"]);
    assert!(rows(&described).contains(&vec!["Kind:", "Role"]));
    let described = s.ok(&["describe", "serviceaccount", "bot", "-n", "team"]);
    let described = rows(&described);
    assert!(described.contains(&vec!["Namespace:", "team"]));
    assert!(described.contains(&vec!["Tokens:", "<none>"]));
}

fn csr_yaml(name: &str) -> String {
    let encoded = csr_request("erin", &["dev"]);
    format!(
        "apiVersion: certificates.k8s.io/v1\nkind: CertificateSigningRequest\nmetadata: {{name: {name}}}\nspec:\n  request: {encoded}\n  signerName: kubernetes.io/kube-apiserver-client\n  expirationSeconds: 86400\n  usages: [client auth]\n"
    )
}

fn certificate_approve_and_deny(backend: Backend) {
    let s = backend.start_with(RBAC);
    let yaml = csr_yaml("erin");
    s.apply_yaml(&yaml);
    let listed = s.ok(&["get", "csr", "erin"]);
    assert_eq!(
        rows(&listed)[1][2..],
        [
            "kubernetes.io/kube-apiserver-client",
            "kubernetes-admin",
            "24h",
            "Pending"
        ]
    );
    s.ok(&[
        "create",
        "clusterrole",
        "csr-approver",
        "--verb=get,list,update",
        "--resource=certificatesigningrequests,certificatesigningrequests/approval",
    ]);
    s.ok(&[
        "create",
        "clusterrolebinding",
        "frank",
        "--clusterrole=csr-approver",
        "--user=frank",
    ]);
    let refused = "Error from server (Forbidden): certificatesigningrequests.certificates.k8s.io \"erin\" is forbidden: user not permitted to approve requests with signerName \"kubernetes.io/kube-apiserver-client\"";
    for verb in ["approve", "deny"] {
        let err = s.fails(&["certificate", verb, "erin", "--as=frank"]);
        assert_eq!(err.trim(), refused, "{verb}");
    }
    let out = s.ok(&["certificate", "approve", "erin"]);
    assert_eq!(
        out.trim(),
        "certificatesigningrequest.certificates.k8s.io/erin approved"
    );
    let conditions = s.ok(&[
        "get",
        "csr",
        "erin",
        "-o",
        "jsonpath={range .status.conditions[*]}{.type}/{.status}/{.reason}/{.message}{end}",
    ]);
    assert_eq!(
        conditions,
        "Approved/True/KubectlApprove/This CSR was approved by kubectl certificate approve."
    );
    let err = s.fails(&["certificate", "deny", "erin"]);
    assert_eq!(
        err.trim(),
        "error: certificate signing request \"erin\" is already Approved"
    );
    // Granting approve on the signer lets frank act.
    s.apply_yaml(
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: signer}\nrules:\n- apiGroups: [certificates.k8s.io]\n  resources: [signers]\n  resourceNames: [kubernetes.io/kube-apiserver-client]\n  verbs: [approve]\n",
    );
    s.ok(&[
        "create",
        "clusterrolebinding",
        "frank-signer",
        "--clusterrole=signer",
        "--user=frank",
    ]);
    let out = s.ok(&["certificate", "approve", "erin", "--as=frank"]);
    assert_eq!(
        out.trim(),
        "certificatesigningrequest.certificates.k8s.io/erin approved"
    );
}

fn certificate_deny_is_final(backend: Backend) {
    let s = backend.start_with(RBAC);
    s.apply_yaml(&csr_yaml("gus"));
    let out = s.ok(&["certificate", "deny", "gus"]);
    assert_eq!(
        out.trim(),
        "certificatesigningrequest.certificates.k8s.io/gus denied"
    );
    let conditions = s.ok(&[
        "get",
        "csr",
        "gus",
        "-o",
        "jsonpath={range .status.conditions[*]}{.type}/{.status}/{.reason}/{.message}{end}",
    ]);
    assert_eq!(
        conditions,
        "Denied/True/KubectlDeny/This CSR was denied by kubectl certificate deny."
    );
    assert_eq!(
        rows(&s.ok(&["get", "csr", "gus"]))[1].last(),
        Some(&"Denied")
    );
    let err = s.fails(&["certificate", "approve", "gus"]);
    assert_eq!(
        err.trim(),
        "error: certificate signing request \"gus\" is already Denied"
    );
    let err = s.fails(&["certificate", "approve", "nope"]);
    assert_eq!(
        err.trim(),
        "Error from server (NotFound): certificatesigningrequests.certificates.k8s.io \"nope\" not found"
    );
}

crate::harness::on_both_backends!(backend:
    auth_reconcile_creates_keeps_and_removes,
    escalation_is_refused_with_upstreams_message,
    describe_and_wide_columns,
    certificate_approve_and_deny,
    certificate_deny_is_final,
);
