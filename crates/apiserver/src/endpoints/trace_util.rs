//! The span each REST verb's handler opens (upstream's
//! `endpoints/handlers/trace_util.go` and the `tracing.Start` calls of
//! `create.go`, `get.go`, `update.go`, `patch.go`, `delete.go`): named
//! after the handler (`Create`, `Get`, `List`, `Update`, `Patch`,
//! `Delete`), with upstream's request fields. Watches have their own
//! spans (`WatchList`, `WatchServer.HandleHTTP`, see `endpoints::watch`).

use std::sync::Arc;

use apimachinery::request_info::RequestInfo;
use component_base::tracing::Attribute;
use http::request::Parts;
use http::Version;

use crate::audit::request::{source_ips_of, truncated_user_agent};

/// The handler span of a verb: collections' deletes are upstream's
/// `DeleteCollection`, whose span is `Delete`; a watch has none here
/// (upstream's `handleWatch` opens `WatchList` for streaming lists only).
pub fn span_name(verb: &str) -> Option<&'static str> {
    Some(match verb {
        "create" => "Create",
        "get" => "Get",
        "list" => "List",
        "update" => "Update",
        "patch" => "Patch",
        "delete" | "deletecollection" => "Delete",
        _ => return None,
    })
}

/// Upstream's `traceFields`: `accept`, `audit-id`, `client`, `api-group`,
/// `api-version`, `name`, `subresource`, `namespace`, `protocol`,
/// `resource`, `scope`, `url`, `user-agent` and `verb`.
pub fn trace_fields(parts: &Parts) -> Vec<Attribute> {
    let header = |name: http::header::HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
    };
    let info = parts.extensions.get::<Arc<RequestInfo>>();
    let client = source_ips_of(&parts.headers, &parts.extensions)
        .into_iter()
        .next()
        .unwrap_or_default();
    let of_info =
        |field: fn(&RequestInfo) -> &String| info.map_or_else(String::new, |i| field(i).clone());
    vec![
        Attribute::new("accept", header(http::header::ACCEPT).to_owned()),
        Attribute::new("audit-id", component_base::tracing::audit_id()),
        Attribute::new("client", client),
        Attribute::new("api-group", of_info(|i| &i.api_group)),
        Attribute::new("api-version", of_info(|i| &i.api_version)),
        Attribute::new("name", of_info(|i| &i.name)),
        Attribute::new("subresource", of_info(|i| &i.subresource)),
        Attribute::new("namespace", of_info(|i| &i.namespace)),
        Attribute::new("protocol", protocol(parts.version)),
        Attribute::new("resource", of_info(|i| &i.resource)),
        Attribute::new("scope", info.map_or("unknown", |i| clean_scope(i))),
        Attribute::new("url", parts.uri.path().to_owned()),
        Attribute::new(
            "user-agent",
            truncated_user_agent(header(http::header::USER_AGENT)),
        ),
        Attribute::new("verb", of_info(|i| &i.verb)),
    ]
}

/// Upstream's `metrics.CleanScope`.
pub fn clean_scope(info: &RequestInfo) -> &'static str {
    if !info.name.is_empty() || info.verb == "create" {
        "resource"
    } else if !info.namespace.is_empty() {
        "namespace"
    } else if info.is_resource_request {
        "cluster"
    } else {
        ""
    }
}

/// Go's `Request.Proto`.
pub fn protocol(version: Version) -> &'static str {
    match version {
        Version::HTTP_10 => "HTTP/1.0",
        Version::HTTP_2 => "HTTP/2.0",
        _ => "HTTP/1.1",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_name_upstreams_handler_spans() {
        assert_eq!(span_name("create"), Some("Create"));
        assert_eq!(span_name("list"), Some("List"));
        assert_eq!(span_name("watch"), None);
        assert_eq!(span_name("deletecollection"), Some("Delete"));
        assert_eq!(span_name("proxy"), None);
    }

    #[test]
    fn fields_describe_the_request() {
        let (mut parts, ()) = http::Request::post("/api/v1/namespaces/default/configmaps")
            .header("accept", "application/json")
            .header("user-agent", "kubectl/v1.37.0")
            .header("x-forwarded-for", "10.1.2.3")
            .body(())
            .unwrap()
            .into_parts();
        parts.extensions.insert(Arc::new(RequestInfo {
            is_resource_request: true,
            verb: "create".into(),
            namespace: "default".into(),
            api_version: "v1".into(),
            resource: "configmaps".into(),
            ..RequestInfo::default()
        }));
        let fields: Vec<(String, String)> = trace_fields(&parts)
            .into_iter()
            .map(|kv| (kv.key.to_string(), kv.value.to_string()))
            .collect();
        let get = |k: &str| fields.iter().find(|(key, _)| key == k).unwrap().1.clone();
        assert_eq!(get("accept"), "application/json");
        assert_eq!(get("client"), "10.1.2.3");
        assert_eq!(get("protocol"), "HTTP/1.1");
        assert_eq!(get("resource"), "configmaps");
        assert_eq!(get("namespace"), "default");
        assert_eq!(get("api-version"), "v1");
        assert_eq!(get("api-group"), "");
        assert_eq!(get("scope"), "resource");
        assert_eq!(get("url"), "/api/v1/namespaces/default/configmaps");
        assert_eq!(get("user-agent"), "kubectl/v1.37.0");
        assert_eq!(get("verb"), "create");
    }
}
