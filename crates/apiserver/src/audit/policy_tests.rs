//! Policy loading, validation and rule matching.

use super::*;
use crate::authentication::user::UserInfo;

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    users: ["system:kube-proxy"]
  - level: RequestResponse
    resources:
      - group: ""
        resources: ["pods/log", "*/scale"]
  - level: Request
    resources:
      - group: ""
        resources: ["configmaps"]
        resourceNames: ["controller-leader"]
    namespaces: ["kube-system"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets"]
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: Request
    userGroups: ["system:authenticated"]
    verbs: ["create"]
    omitStages: ["ResponseStarted"]
    omitManagedFields: true
  - level: Metadata
"#;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..UserInfo::default()
    }
}

struct Req {
    verb: &'static str,
    ns: &'static str,
    group: &'static str,
    resource: &'static str,
    sub: &'static str,
    name: &'static str,
    path: &'static str,
}

const GET_POD: Req = Req {
    verb: "get",
    ns: "default",
    group: "",
    resource: "pods",
    sub: "",
    name: "p",
    path: "/api/v1/namespaces/default/pods/p",
};

fn level(p: &Policy, u: &UserInfo, r: &Req) -> Level {
    let attrs = Attributes {
        user: u,
        verb: r.verb,
        is_resource_request: !r.resource.is_empty(),
        namespace: r.ns,
        api_group: r.group,
        resource: r.resource,
        subresource: r.sub,
        name: r.name,
        path: r.path,
        api_version: "",
        field_selector: "",
        label_selector: "",
    };
    p.evaluate(&attrs).level
}

fn policy() -> Policy {
    Policy::from_bytes(POLICY.as_bytes(), "p.yaml").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn rules_match_in_order() {
    let p = policy();
    let bob = user("bob", &["system:authenticated"]);
    let proxy = user("system:kube-proxy", &["system:authenticated"]);
    assert_eq!(level(&p, &proxy, &GET_POD), Level::None);
    assert_eq!(level(&p, &bob, &GET_POD), Level::Metadata);
    let log = Req {
        sub: "log",
        ..GET_POD
    };
    assert_eq!(level(&p, &bob, &log), Level::RequestResponse);
    let scale = Req {
        group: "apps",
        resource: "deployments",
        sub: "scale",
        ..GET_POD
    };
    // `*/scale` is in the core group's entry only.
    assert_eq!(level(&p, &bob, &scale), Level::Metadata);
    let rc_scale = Req {
        resource: "replicationcontrollers",
        sub: "scale",
        ..GET_POD
    };
    assert_eq!(level(&p, &bob, &rc_scale), Level::RequestResponse);
    let leader = Req {
        ns: "kube-system",
        resource: "configmaps",
        name: "controller-leader",
        ..GET_POD
    };
    assert_eq!(level(&p, &bob, &leader), Level::Request);
    let other_cm = Req {
        name: "other",
        ..leader
    };
    assert_eq!(level(&p, &bob, &other_cm), Level::Metadata);
    let create = Req {
        verb: "create",
        resource: "configmaps",
        ..GET_POD
    };
    assert_eq!(level(&p, &bob, &create), Level::Request);
    let anon = user("system:anonymous", &["system:unauthenticated"]);
    assert_eq!(level(&p, &anon, &create), Level::Metadata);
}

#[test]
fn non_resource_urls_match_exactly_or_by_prefix() {
    let p = policy();
    let bob = user("bob", &[]);
    let path = |path: &'static str| Req {
        verb: "get",
        ns: "",
        group: "",
        resource: "",
        sub: "",
        name: "",
        path,
    };
    assert_eq!(level(&p, &bob, &path("/healthz/etcd")), Level::None);
    assert_eq!(level(&p, &bob, &path("/version")), Level::None);
    assert_eq!(level(&p, &bob, &path("/version/x")), Level::Metadata);
}

#[test]
fn stages_and_managed_fields_merge_with_the_defaults() {
    let p = policy();
    let bob = user("bob", &["system:authenticated"]);
    let attrs = Attributes {
        user: &bob,
        verb: "create",
        is_resource_request: true,
        namespace: "default",
        api_group: "",
        resource: "configmaps",
        subresource: "",
        name: "",
        path: "/api/v1/namespaces/default/configmaps",
        api_version: "",
        field_selector: "",
        label_selector: "",
    };
    let c = p.evaluate(&attrs);
    assert!(c.omits(Stage::RequestReceived) && c.omits(Stage::ResponseStarted));
    assert!(!c.omits(Stage::ResponseComplete));
    assert!(c.omit_managed_fields);
}

#[test]
fn invalid_policies_are_refused_with_upstream_messages() {
    let bad = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["Nope"]
rules:
  - level: Loud
  - nonResourceURLs: ["/a*b", "c"]
    resources: [{group: "BAD_group", resourceNames: ["x"]}]
    level: Metadata
"#;
    let err = Policy::from_bytes(bad.as_bytes(), "p.yaml")
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    for part in [
        "omitStages[0]: Invalid value: \"Nope\": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic",
        "rules[0].level: Unsupported value: \"Loud\"",
        "rules[1].nonResourceURLs[0]: Invalid value: \"/a*b\": non-resource URL wildcards '*' must be the final character of the rule",
        "rules[1].nonResourceURLs[1]: Invalid value: \"c\": non-resource URL rules must begin with a '/' character",
        "rules[1].resources.resourceNames: Invalid value: [\"x\"]: using resourceNames requires at least one resource",
        "rules cannot apply to both regular resources and non-resource URLs",
        ": from file p.yaml",
    ] {
        assert!(err.contains(part), "{part:?} missing from {err}");
    }
    let v1beta1 = "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: [{level: None}]\n";
    let err = Policy::from_bytes(v1beta1.as_bytes(), "p.yaml").err();
    assert!(
        matches!(err, Some(PolicyError::GroupVersion(..))),
        "{err:?}"
    );
    let empty = "apiVersion: audit.k8s.io/v1\nkind: Policy\n";
    let err = Policy::from_bytes(empty.as_bytes(), "p.yaml").err();
    assert!(matches!(err, Some(PolicyError::NoRules(_))), "{err:?}");
}
