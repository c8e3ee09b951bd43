//! kubectl's auth and RBAC commands under `--authorization-mode=Node,RBAC`,
//! answered as upstream answers them: `auth can-i` in its forms, `auth
//! whoami` (several kubectl versions), `create token` and its errors, a
//! service-account token kubeconfig refused with upstream's 403 text, `create
//! role/clusterrole/…binding`, `auth reconcile`, escalation refusals,
//! `describe` and `-o wide` output, and `certificate approve/deny`.

use std::path::PathBuf;

use crate::harness::{Backend, TestServer};
use crate::support::kubectl::{stderr, stdout};

const RBAC: &[&str] = &["--authorization-mode=Node,RBAC"];
const BOT: &str = "--as=system:serviceaccount:team:bot";

/// `kubectl.1.<minor>` beside the kubectl on PATH, when installed.
fn versioned_kubectl(minor: u32) -> Option<String> {
    let paths = std::env::var_os("PATH")?;
    let default = std::env::split_paths(&paths)
        .map(|dir| dir.join("kubectl"))
        .find(|p| p.is_file())?;
    let real = std::fs::canonicalize(&default).unwrap_or(default);
    let candidate: PathBuf = real.parent()?.join(format!("kubectl.1.{minor}"));
    candidate
        .is_file()
        .then(|| candidate.to_string_lossy().into_owned())
}

/// `kubectl auth can-i …`: its printed answer and exit code.
fn can_i(s: &TestServer, args: &[&str]) -> (String, Option<i32>) {
    let mut all = vec!["auth", "can-i"];
    all.extend_from_slice(args);
    let out = s.kubectl(&all);
    (stdout(&out).trim().to_owned(), out.status.code())
}

/// Namespace `team` with service account `bot` allowed to read pods and
/// their logs there.
fn team_with_pod_reader(s: &TestServer) {
    s.ok(&["create", "namespace", "team"]);
    s.ok(&["create", "serviceaccount", "bot", "-n", "team"]);
    let out = s.ok(&[
        "create",
        "role",
        "pod-reader",
        "--verb=get,list",
        "--resource=pods,pods/log",
        "-n",
        "team",
    ]);
    assert_eq!(
        out.trim(),
        "role.rbac.authorization.k8s.io/pod-reader created"
    );
    let out = s.ok(&[
        "create",
        "rolebinding",
        "bot-read",
        "--role=pod-reader",
        "--serviceaccount=team:bot",
        "-n",
        "team",
    ]);
    assert_eq!(
        out.trim(),
        "rolebinding.rbac.authorization.k8s.io/bot-read created"
    );
}

fn can_i_answers_every_form(backend: Backend) {
    let s = backend.start_with(RBAC);
    team_with_pod_reader(&s);
    let yes = (String::from("yes"), Some(0));
    let no = (String::from("no"), Some(1));
    assert_eq!(can_i(&s, &["list", "pods", "-n", "team", BOT]), yes);
    assert_eq!(can_i(&s, &["get", "pods/web", "-n", "team", BOT]), yes);
    assert_eq!(can_i(&s, &["get", "pods/log", "-n", "team", BOT]), yes);
    assert_eq!(
        can_i(&s, &["get", "pods", "--subresource=log", "-n", "team", BOT]),
        yes
    );
    assert_eq!(
        can_i(
            &s,
            &["get", "pods", "--subresource=exec", "-n", "team", BOT]
        ),
        no
    );
    assert_eq!(can_i(&s, &["list", "secrets", "-n", "team", BOT]), no);
    assert_eq!(can_i(&s, &["list", "pods", "-n", "default", BOT]), no);
    assert_eq!(can_i(&s, &["list", "pods", "-A", BOT]), no);
    assert_eq!(can_i(&s, &["list", "pods", "-A"]), yes);
    // --quiet prints nothing; the exit code carries the answer.
    assert_eq!(
        can_i(&s, &["list", "secrets", "-n", "team", BOT, "--quiet"]),
        (String::new(), Some(1))
    );
    assert_eq!(
        can_i(&s, &["list", "pods", "-n", "team", BOT, "--quiet"]),
        (String::new(), Some(0))
    );
    // Non-resource URLs: the public discovery roles, then a granted one.
    assert_eq!(can_i(&s, &["get", "/healthz", BOT]), yes);
    assert_eq!(can_i(&s, &["get", "/logs/kubelet.log", BOT]), no);
    s.ok(&[
        "create",
        "clusterrole",
        "log-reader",
        "--verb=get",
        "--non-resource-url=/logs/*",
    ]);
    s.ok(&[
        "create",
        "clusterrolebinding",
        "log-readers",
        "--clusterrole=log-reader",
        "--group=ops",
        "--user=carol",
    ]);
    assert_eq!(can_i(&s, &["get", "/logs/kubelet.log", "--as=carol"]), yes);
    assert_eq!(
        can_i(&s, &["get", "/logs/x", "--as=dan", "--as-group=ops"]),
        yes
    );
    assert_eq!(can_i(&s, &["get", "/logs/x", "--as=dan"]), no);
    // A resource name narrows the grant.
    s.ok(&[
        "create",
        "role",
        "web-only",
        "--verb=get",
        "--resource=deployments.apps",
        "--resource-name=web",
        "-n",
        "team",
    ]);
    s.ok(&[
        "create",
        "rolebinding",
        "web-only",
        "--role=web-only",
        "--user=erin",
        "-n",
        "team",
    ]);
    let erin = "--as=erin";
    assert_eq!(
        can_i(&s, &["get", "deployments.apps/web", "-n", "team", erin]),
        yes
    );
    assert_eq!(
        can_i(&s, &["get", "deployments.apps/api", "-n", "team", erin]),
        no
    );
    assert_eq!(can_i(&s, &["get", "deployments", "-n", "team", erin]), no);
}

fn can_i_follows_aggregated_cluster_roles(backend: Backend) {
    let s = backend.start_with(RBAC);
    s.ok(&["create", "namespace", "team"]);
    s.ok(&[
        "create",
        "clusterrole",
        "aggregate",
        "--aggregation-rule=team=x",
    ]);
    s.ok(&[
        "create",
        "rolebinding",
        "agg",
        "--clusterrole=aggregate",
        "--user=fay",
        "-n",
        "team",
    ]);
    let ask = ["list", "configmaps", "-n", "team", "--as=fay"];
    assert_eq!(can_i(&s, &ask), (String::from("no"), Some(1)));
    s.ok(&[
        "create",
        "clusterrole",
        "piece",
        "--verb=list",
        "--resource=configmaps",
    ]);
    s.ok(&["label", "clusterrole", "piece", "team=x"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while can_i(&s, &ask).1 != Some(0) {
        assert!(
            std::time::Instant::now() < deadline,
            "aggregated rule never reached the role"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let rules = s.ok(&["get", "clusterrole", "aggregate", "-o", "jsonpath={.rules}"]);
    assert_eq!(
        rules,
        r#"[{"apiGroups":[""],"resources":["configmaps"],"verbs":["list"]}]"#
    );
    // Only in the bound namespace.
    assert_eq!(
        can_i(&s, &["list", "configmaps", "-n", "default", "--as=fay"]).1,
        Some(1)
    );
}

fn can_i_list_shows_the_rules(backend: Backend) {
    let s = backend.start_with(RBAC);
    team_with_pod_reader(&s);
    let listed = s.ok(&["auth", "can-i", "--list", "-n", "team", BOT]);
    let mut lines = listed.lines();
    let header: Vec<&str> = lines
        .next()
        .map(|l| l.split_whitespace().collect())
        .unwrap_or_default();
    assert_eq!(
        header,
        [
            "Resources",
            "Non-Resource",
            "URLs",
            "Resource",
            "Names",
            "Verbs"
        ]
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split_whitespace().collect()).collect();
    for expected in [
        vec!["pods", "[]", "[]", "[get", "list]"],
        vec!["pods/log", "[]", "[]", "[get", "list]"],
        vec![
            "selfsubjectaccessreviews.authorization.k8s.io",
            "[]",
            "[]",
            "[create]",
        ],
        vec![
            "selfsubjectreviews.authentication.k8s.io",
            "[]",
            "[]",
            "[create]",
        ],
        vec!["[/healthz]", "[]", "[get]"],
        vec!["[/openid/v1/jwks]", "[]", "[get]"],
    ] {
        assert!(rows.contains(&expected), "{expected:?} in {listed}");
    }
    assert!(!listed.contains("secrets"), "{listed}");
    let bare = s.ok(&["auth", "can-i", "--list", "-n", "team", BOT, "--no-headers"]);
    assert!(!bare.contains("Resources"), "{bare}");
    assert_eq!(bare.lines().count(), rows.len());
}

/// A copy of the admin kubeconfig whose current user is `bot` holding
/// `token`, written with `kubectl config set-credentials`.
fn token_kubeconfig(s: &TestServer, token: &str) -> String {
    let path = s.dir.path().join("bot.kubeconfig");
    std::fs::copy(&s.kubeconfig, &path).expect("copy kubeconfig");
    let path = path.to_string_lossy().into_owned();
    let kc = format!("--kubeconfig={path}");
    let with_token = format!("--token={token}");
    s.ok(&["config", &kc, "set-credentials", "bot", &with_token]);
    s.ok(&["config", &kc, "set-context", "--current", "--user=bot"]);
    kc
}

fn service_account_token_kubeconfig(backend: Backend) {
    let s = backend.start_with(RBAC);
    team_with_pod_reader(&s);
    s.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "--from-literal=a=b",
        "-n",
        "team",
    ]);
    let token = s.ok(&["create", "token", "bot", "-n", "team"]);
    let kc = token_kubeconfig(&s, token.trim());
    let who = s.ok(&[&kc, "auth", "whoami", "-o", "jsonpath={.status.userInfo}"]);
    let info: serde_json::Value = serde_json::from_str(&who).expect("userInfo JSON");
    assert_eq!(info["username"], "system:serviceaccount:team:bot");
    assert_eq!(
        info["groups"],
        serde_json::json!([
            "system:serviceaccounts",
            "system:serviceaccounts:team",
            "system:authenticated"
        ])
    );
    let uid = s.ok(&[
        "get",
        "sa",
        "bot",
        "-n",
        "team",
        "-o",
        "jsonpath={.metadata.uid}",
    ]);
    assert_eq!(info["uid"], uid.as_str());
    assert!(s.ok(&[&kc, "get", "pods", "-n", "team"]).is_empty());
    let refused = [
        (
            vec!["get", "secrets", "-n", "team"],
            r#"Error from server (Forbidden): secrets is forbidden: User "system:serviceaccount:team:bot" cannot list resource "secrets" in API group "" in the namespace "team""#,
        ),
        (
            vec!["get", "secret", "creds", "-n", "team"],
            r#"Error from server (Forbidden): secrets "creds" is forbidden: User "system:serviceaccount:team:bot" cannot get resource "secrets" in API group "" in the namespace "team""#,
        ),
        (
            vec!["get", "pods", "-A"],
            r#"Error from server (Forbidden): pods is forbidden: User "system:serviceaccount:team:bot" cannot list resource "pods" in API group "" at the cluster scope"#,
        ),
        (
            vec!["get", "deployments", "-n", "team"],
            r#"Error from server (Forbidden): deployments.apps is forbidden: User "system:serviceaccount:team:bot" cannot list resource "deployments" in API group "apps" in the namespace "team""#,
        ),
    ];
    for (args, message) in refused {
        let mut all = vec![kc.as_str()];
        all.extend(args);
        let err = s.fails(&all);
        assert_eq!(err.trim(), message, "{all:?}");
    }
    let err = s.fails(&[&kc, "create", "configmap", "x", "-n", "team"]);
    assert_eq!(
        err.trim(),
        r#"error: failed to create configmap: configmaps is forbidden: User "system:serviceaccount:team:bot" cannot create resource "configmaps" in API group "" in the namespace "team""#
    );
}

fn whoami_across_kubectl_versions(backend: Backend) {
    let s = backend.start_with(RBAC);
    let table = s.ok(&["auth", "whoami"]);
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.first(), Some(&vec!["ATTRIBUTE", "VALUE"]));
    assert_eq!(rows.get(1), Some(&vec!["Username", "kubernetes-admin"]));
    assert_eq!(
        rows.get(2),
        Some(&vec!["Groups", "[system:masters", "system:authenticated]"])
    );
    let json = s.ok(&[
        "auth",
        "whoami",
        "-o",
        "json",
        "--as=jane",
        "--as-group=dev",
    ]);
    let review: serde_json::Value = serde_json::from_str(&json).expect("review JSON");
    assert_eq!(review["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(review["kind"], "SelfSubjectReview");
    assert_eq!(
        review["status"]["userInfo"],
        serde_json::json!({"username": "jane", "groups": ["dev", "system:authenticated"]})
    );
    let yaml = s.ok(&["auth", "whoami", "-o", "yaml", "--as=jane"]);
    assert!(yaml.contains("    username: jane\n"), "{yaml}");
    for minor in [28, 30, 33] {
        let Some(bin) = versioned_kubectl(minor) else {
            continue;
        };
        let out = s.kubectl_with(&bin, &["auth", "whoami", "-o", "json", "--as=jane"], None);
        assert!(out.status.success(), "1.{minor}: {}", stderr(&out));
        let review: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("review JSON");
        assert_eq!(review["status"]["userInfo"]["username"], "jane");
    }
    // kubectl 1.27 asks only v1alpha1/v1beta1, which 1.37 no longer serves.
    if let Some(bin) = versioned_kubectl(27) {
        let out = s.kubectl_with(&bin, &["auth", "whoami"], None);
        assert!(!out.status.success());
        assert!(
            stderr(&out)
                .starts_with("error: the selfsubjectreviews API is not enabled in the cluster"),
            "{}",
            stderr(&out)
        );
    }
    for minor in [27, 30, 33] {
        let Some(bin) = versioned_kubectl(minor) else {
            continue;
        };
        let out = s.kubectl_with(
            &bin,
            &["auth", "can-i", "list", "secrets", "--as=jane"],
            None,
        );
        assert_eq!((stdout(&out).trim(), out.status.code()), ("no", Some(1)));
    }
}

fn create_token_options_and_errors(backend: Backend) {
    let s = backend.start_with(RBAC);
    s.ok(&["create", "namespace", "team"]);
    s.ok(&["create", "serviceaccount", "bot", "-n", "team"]);
    s.ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "--from-literal=a=b",
        "-n",
        "team",
    ]);
    let token = s.ok(&[
        "create",
        "token",
        "bot",
        "-n",
        "team",
        "--duration=2h",
        "--audience=https://one.example",
        "--audience=https://two.example",
        "--bound-object-kind=Secret",
        "--bound-object-name=creds",
    ]);
    let claims = jwt_claims(token.trim());
    assert_eq!(
        claims["aud"],
        serde_json::json!(["https://one.example", "https://two.example"])
    );
    let lifetime = claims["exp"].as_i64().unwrap_or(0) - claims["iat"].as_i64().unwrap_or(0);
    assert_eq!(lifetime, 7200);
    assert_eq!(
        claims["kubernetes.io"]["secret"]["name"],
        serde_json::json!("creds")
    );
    let failures = [
        (
            vec!["--duration=5m"],
            "error: failed to create token: TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes",
        ),
        (
            vec!["--bound-object-kind=Pod", "--bound-object-name=nope"],
            "error: failed to create token: pods \"nope\" not found",
        ),
        (
            vec!["--bound-object-kind=Secret", "--bound-object-name=nope"],
            "error: failed to create token: secrets \"nope\" not found",
        ),
        (
            vec!["--bound-object-kind=Node", "--bound-object-name=nope"],
            "error: failed to create token: nodes \"nope\" not found",
        ),
        (
            vec![
                "--bound-object-kind=Secret",
                "--bound-object-name=creds",
                "--bound-object-uid=123",
            ],
            "error: failed to create token: Operation cannot be fulfilled on Secret \"creds\": the UID in the bound object reference (123) does not match the UID in record. The object might have been deleted and then recreated",
        ),
    ];
    for (flags, message) in failures {
        let mut all = vec!["create", "token", "bot", "-n", "team"];
        all.extend(flags);
        assert_eq!(s.fails(&all).trim(), message, "{all:?}");
    }
    assert_eq!(
        s.fails(&["create", "token", "nobody", "-n", "team"]).trim(),
        "error: failed to create token: serviceaccounts \"nobody\" not found"
    );
}

/// Access, rules and self reviews answered in upstream's shape: validation
/// errors at upstream's paths, a rules review needs a namespace and answers
/// only its status, a self review is stamped with its creation time.
fn reviews_answer_in_upstreams_shape(backend: Backend) {
    let s = backend.start_with(RBAC);
    let create = |body: &str| s.kubectl_stdin(&["create", "-f", "-", "-o", "json"], body);
    let out = create(
        r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{}}"#,
    );
    assert_eq!(
        stderr(&out),
        "The SubjectAccessReview \"\" is invalid: \n\
         * spec: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified\n\
         * spec.user: Invalid value: \"\": at least one of user or group must be specified\n"
    );
    let rules = r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","#;
    let out = create(&format!(r#"{rules}"spec":{{}}}}"#));
    assert_eq!(
        stderr(&out).trim(),
        r#"Error from server (BadRequest): error when creating "STDIN": no namespace on request"#
    );
    let out = create(&format!(
        r#"{rules}"metadata":{{"name":"x"}},"spec":{{"namespace":"default"}}}}"#
    ));
    let review: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("review JSON");
    assert_eq!(review["metadata"], serde_json::json!({}));
    assert_eq!(review["spec"], serde_json::json!({}));
    assert_eq!(
        review["status"]["resourceRules"][0]["verbs"],
        serde_json::json!(["*"])
    );
    let json = s.ok(&["auth", "whoami", "-o", "json", "--as=jane"]);
    let review: serde_json::Value = serde_json::from_str(&json).expect("review JSON");
    let stamp = review["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap_or("");
    assert!(
        chrono::DateTime::parse_from_rfc3339(stamp).is_ok(),
        "{review}"
    );
}

/// The claims of a JWT (its middle part, base64url without padding).
fn jwt_claims(token: &str) -> serde_json::Value {
    use base64::Engine as _;
    let payload = token.split('.').nth(1).expect("a JWT");
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .expect("base64url claims");
    serde_json::from_slice(&bytes).expect("JSON claims")
}

crate::harness::on_both_backends!(backend:
    can_i_answers_every_form,
    can_i_follows_aggregated_cluster_roles,
    can_i_list_shows_the_rules,
    service_account_token_kubeconfig,
    whoami_across_kubectl_versions,
    create_token_options_and_errors,
    reviews_answer_in_upstreams_shape,
);
