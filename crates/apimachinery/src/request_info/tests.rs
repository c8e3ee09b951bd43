//! Tests for the `request_info` module.
use super::*;

/// method, url, verb, prefix, group, version, namespace, resource,
/// subresource, name, parts
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
);

fn resolve(method: &str, url: &str) -> Result<RequestInfo, RequestInfoError> {
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    RequestInfoResolver::default().resolve(method, path, query)
}

#[rustfmt::skip]
const RESOURCE_CASES: &[Case] = &[
    // Resource paths.
    ("GET", "/api/v1/namespaces", "list", "api", "", "v1", "", "namespaces", "", "", &["namespaces"]),
    ("GET", "/api/v1/namespaces/other", "get", "api", "", "v1", "other", "namespaces", "", "other", &["namespaces", "other"]),
    ("GET", "/api/v1/namespaces/other/pods", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
    ("HEAD", "/api/v1/namespaces/other/pods/foo", "get", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
    ("GET", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
    ("HEAD", "/api/v1/pods", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/pods/", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/nodes/n1", "get", "api", "", "v1", "", "nodes", "", "n1", &["nodes", "n1"]),
    // Special verbs in the path.
    ("GET", "/api/v1/proxy/namespaces/other/pods/foo", "proxy", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
    ("GET", "/api/v1/proxy/namespaces/other/pods/foo/subpath/not/a/subresource", "proxy", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo", "subpath", "not", "a", "subresource"]),
    ("GET", "/api/v1/watch/pods", "watch", "api", "", "v1", "", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/watch/namespaces/other/pods", "watch", "api", "", "v1", "other", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/watch/namespaces/other/pods/foo", "watch", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
    ("GET", "/apis/apps/v1/watch/deployments", "watch", "apis", "apps", "v1", "", "deployments", "", "", &["deployments"]),
    // The watch query parameter.
    ("GET", "/api/v1/pods?watch=true", "watch", "api", "", "v1", "", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/pods?watch=false", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/pods?watch=FALSE", "list", "api", "", "v1", "", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/pods?watch=", "watch", "api", "", "v1", "", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/pods?watch=yes", "watch", "api", "", "v1", "", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/namespaces/other/pods?watch=1", "watch", "api", "", "v1", "other", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/namespaces/other/pods?watch=0", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
    ("GET", "/api/v1/namespaces/other/pods?watch=0&watch=1", "list", "api", "", "v1", "other", "pods", "", "", &["pods"]),
    // A watch of one named object is still a get with a name in the path.
    ("GET", "/api/v1/namespaces/other/pods/foo?watch=true", "get", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
    // Subresources.
    ("GET", "/api/v1/namespaces/other/pods/foo/status", "get", "api", "", "v1", "other", "pods", "status", "foo", &["pods", "foo", "status"]),
    ("GET", "/api/v1/namespaces/other/pods/foo/proxy/subpath", "get", "api", "", "v1", "other", "pods", "proxy", "foo", &["pods", "foo", "proxy", "subpath"]),
    ("PUT", "/api/v1/namespaces/other/finalize", "update", "api", "", "v1", "other", "namespaces", "finalize", "other", &["namespaces", "other", "finalize"]),
    ("PUT", "/api/v1/namespaces/other/status", "update", "api", "", "v1", "other", "namespaces", "status", "other", &["namespaces", "other", "status"]),
    ("POST", "/api/v1/namespaces/other/pods/foo/eviction", "create", "api", "", "v1", "other", "pods", "eviction", "foo", &["pods", "foo", "eviction"]),
    ("PUT", "/apis/apps/v1/namespaces/ns/deployments/d/scale", "update", "apis", "apps", "v1", "ns", "deployments", "scale", "d", &["deployments", "d", "scale"]),
    // Verbs.
    ("PATCH", "/api/v1/namespaces/other/pods/foo", "patch", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
    ("DELETE", "/api/v1/namespaces/other/pods/foo", "delete", "api", "", "v1", "other", "pods", "", "foo", &["pods", "foo"]),
    ("POST", "/api/v1/namespaces/other/pods", "create", "api", "", "v1", "other", "pods", "", "", &["pods"]),
    ("OPTIONS", "/api/v1/namespaces/other/pods", "", "api", "", "v1", "other", "pods", "", "", &["pods"]),
    // Deletecollection.
    ("DELETE", "/api/v1/nodes", "deletecollection", "api", "", "v1", "", "nodes", "", "", &["nodes"]),
    ("DELETE", "/api/v1/namespaces", "deletecollection", "api", "", "v1", "", "namespaces", "", "", &["namespaces"]),
    ("DELETE", "/api/v1/namespaces/other/pods", "deletecollection", "api", "", "v1", "other", "pods", "", "", &["pods"]),
    ("DELETE", "/apis/extensions/v1/namespaces/other/pods", "deletecollection", "apis", "extensions", "v1", "other", "pods", "", "", &["pods"]),
    // Groups and versions.
    ("POST", "/apis/extensions/v1/namespaces/other/pods", "create", "apis", "extensions", "v1", "other", "pods", "", "", &["pods"]),
    ("POST", "/apis/extensions/v1beta3/namespaces/other/pods", "create", "apis", "extensions", "v1beta3", "other", "pods", "", "", &["pods"]),
    ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin", "get", "apis", "rbac.authorization.k8s.io", "v1", "", "clusterroles", "", "admin", &["clusterroles", "admin"]),
    // A resource called "namespaces" inside a namespace path.
    ("GET", "/api/v1/namespaces/a/namespaces", "list", "api", "", "v1", "a", "namespaces", "", "", &["namespaces"]),
    // Percent-encoded path segments are decoded.
    ("GET", "/api/v1/namespaces/ns/configmaps/a%3Ab", "get", "api", "", "v1", "ns", "configmaps", "", "a:b", &["configmaps", "a:b"]),
];

#[test]
fn resource_requests() {
    for &(method, url, verb, prefix, group, version, ns, resource, sub, name, parts) in
        RESOURCE_CASES
    {
        let info = resolve(method, url).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(info.is_resource_request, "{method} {url}");
        assert_eq!(info.verb, verb, "verb of {method} {url}");
        assert_eq!(info.api_prefix, prefix, "prefix of {url}");
        assert_eq!(info.api_group, group, "group of {url}");
        assert_eq!(info.api_version, version, "version of {url}");
        assert_eq!(info.namespace, ns, "namespace of {url}");
        assert_eq!(info.resource, resource, "resource of {url}");
        assert_eq!(info.subresource, sub, "subresource of {url}");
        assert_eq!(info.name, name, "name of {url}");
        assert_eq!(info.parts, parts, "parts of {url}");
    }
}

#[test]
fn non_resource_requests() {
    let cases = [
        ("GET", "/", "get", ""),
        ("GET", "/api", "get", ""),
        ("GET", "/api/v1", "get", ""),
        ("GET", "/api/version/", "get", ""),
        ("GET", "/apis", "get", ""),
        ("GET", "/apis/group/version/", "get", "apis"),
        ("GET", "/apis/apps", "get", ""),
        ("POST", "/apis/version/resource", "post", "apis"),
        ("GET", "/badprefix/version/resource", "get", ""),
        ("GET", "/healthz", "get", ""),
        ("HEAD", "/readyz/etcd", "head", ""),
        ("GET", "/openapi/v2", "get", ""),
    ];
    for (method, url, verb, prefix) in cases {
        let info = resolve(method, url).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert!(!info.is_resource_request, "{url}");
        assert_eq!(info.verb, verb, "{url}");
        assert_eq!(info.api_prefix, prefix, "{url}");
        assert_eq!(info.path, url, "{url}");
        assert!(info.resource.is_empty() && info.parts.is_empty(), "{url}");
    }
}

#[test]
fn special_verb_without_resource_is_an_error() {
    assert_eq!(
        resolve("GET", "/api/v1/watch"),
        Err(RequestInfoError::MissingKind("/api/v1/watch".to_owned()))
    );
    assert_eq!(
        resolve("GET", "/apis/apps/v1/proxy/?a=b").map_err(|e| e.to_string()),
        Err("unable to determine kind and namespace from url, /apis/apps/v1/proxy/?a=b".to_owned())
    );
}

#[test]
fn field_selector_names_the_object() {
    let cases = [
        (
            "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name%3Dfoo",
            "list",
            "foo",
        ),
        (
            "/api/v1/namespaces/ns/pods?fieldSelector=metadata.name==foo&watch=1",
            "watch",
            "foo",
        ),
        (
            "/api/v1/pods?fieldSelector=metadata.name%3Dfoo,spec.nodeName%3Dn",
            "list",
            "foo",
        ),
        // Not an exact match.
        (
            "/api/v1/pods?fieldSelector=metadata.name!%3Dfoo",
            "list",
            "",
        ),
        // Not a valid path segment name.
        ("/api/v1/pods?fieldSelector=metadata.name%3D..", "list", ""),
        // Unparseable field selector.
        (
            "/api/v1/pods?fieldSelector=metadata.name%3Da%3Db",
            "list",
            "",
        ),
        // Other list options that fail to decode drop the field selector...
        (
            "/api/v1/pods?fieldSelector=metadata.name%3Dfoo&limit=x",
            "list",
            "",
        ),
        (
            "/api/v1/pods?fieldSelector=metadata.name%3Dfoo&labelSelector=a%20b",
            "list",
            "",
        ),
        // ...but keep the watch parameter.
        (
            "/api/v1/pods?fieldSelector=metadata.name%3Dfoo&timeoutSeconds=x&watch=true",
            "watch",
            "",
        ),
    ];
    for (url, verb, name) in cases {
        let info = resolve("GET", url).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(info.verb, verb, "{url}");
        assert_eq!(info.name, name, "{url}");
        assert_eq!(info.parts, ["pods"], "{url}");
    }
    // A delete with a field selector is still a deletecollection.
    let info =
        resolve("DELETE", "/api/v1/pods?fieldSelector=metadata.name%3Dfoo").unwrap_or_default();
    assert_eq!(
        (info.verb.as_str(), info.name.as_str()),
        ("deletecollection", "")
    );
}

#[test]
fn selectors_are_recorded_for_collection_verbs() {
    let info = resolve(
        "GET",
        "/api/v1/pods?labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1",
    )
    .unwrap_or_default();
    assert_eq!(info.label_selector, "app=web");
    assert_eq!(info.field_selector, "spec.nodeName=n1");

    let info = resolve(
        "DELETE",
        "/api/v1/namespaces/ns/pods?labelSelector=a+in+(b)",
    )
    .unwrap_or_default();
    assert_eq!(info.verb, "deletecollection");
    assert_eq!(info.label_selector, "a in (b)");

    // Not on single-object verbs, nor on the legacy /watch/ paths.
    let info = resolve("GET", "/api/v1/namespaces/ns/pods/p?labelSelector=a").unwrap_or_default();
    assert_eq!(info.label_selector, "");
    let info = resolve("GET", "/api/v1/watch/pods?labelSelector=a").unwrap_or_default();
    assert_eq!(
        (info.verb.as_str(), info.label_selector.as_str()),
        ("watch", "")
    );
}

#[test]
fn percent_decoding_follows_go() {
    assert_eq!(percent_decode("%+1", true), None);
    assert_eq!(percent_decode("%4", false), None);
    assert_eq!(percent_decode("a+b%2Fc", false).as_deref(), Some("a+b/c"));
}

#[test]
fn selector_recording_matches_upstream_cases() {
    // (method, url, name, verb, field selector, label selector)
    let cases = [
        ("GET", "/apis/g/v/r", "", "list", "", ""),
        ("GET", "/apis/g/v/r?fieldSelector=metadata.name=n1", "n1", "list", "metadata.name=n1", ""),
        ("GET", "/apis/g/v/r?watch=true&fieldSelector=metadata.name=n1", "n1", "watch", "metadata.name=n1", ""),
        ("GET", "/apis/g/v/r?fieldSelector=foo=bar&labelSelector=baz=qux", "", "list", "foo=bar", "baz=qux"),
        ("GET", "/apis/g/v/r?fieldSelector=metadata.name=n1,foo", "", "list", "metadata.name=n1,foo", ""),
        ("GET", "/apis/g/v/r?fieldSelector=metadata.name=n1,foo&watch=true", "", "watch", "metadata.name=n1,foo", ""),
        ("DELETE", "/apis/g/v/r?fieldSelector=foo=bar&labelSelector=baz=qux", "", "deletecollection", "foo=bar", "baz=qux"),
        (
            "GET",
            "/apis/g/v/r?fieldSelector=metadata.name=foo&fieldSelector=metadata.name=bar&labelSelector=a=b&labelSelector=a=c",
            "foo",
            "list",
            "metadata.name=foo",
            "a=b",
        ),
        ("GET", "/apis/g/v/r/name?fieldSelector=foo=bar&labelSelector=a=b", "name", "get", "", ""),
        ("GET", "/apis/g/v/watch/r?fieldSelector=metadata.name=foo&labelSelector=a=b", "", "watch", "", ""),
        ("GET", "/apis/g/v/watch/r/name?fieldSelector=metadata.name=foo", "name", "watch", "", ""),
    ];
    for (method, url, name, verb, fields, labels) in cases {
        let info = resolve(method, url).unwrap_or_else(|e| panic!("{url}: {e}"));
        assert_eq!(info.name, name, "name of {url}");
        assert_eq!(info.verb, verb, "verb of {url}");
        assert_eq!(info.field_selector, fields, "field selector of {url}");
        assert_eq!(info.label_selector, labels, "label selector of {url}");
    }
}
