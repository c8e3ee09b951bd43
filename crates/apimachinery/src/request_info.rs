//! Request classification, the equivalent of upstream's
//! `RequestInfoFactory` (`k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`):
//! from an HTTP method, path and query, work out whether the request is for
//! an API resource and which verb, group, version, namespace, resource,
//! subresource and name it addresses. Authorization, audit, priority and
//! fairness, and the REST handler all key off this.

use crate::fields::FieldSelector;
use crate::labels::Selector;
use crate::query_params::{parse_int64, QueryParams};
use crate::util::validation::is_path_segment_name;

/// What a request addresses (upstream's `RequestInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestInfo {
    /// Whether the request is for an API resource (or subresource).
    pub is_resource_request: bool,
    /// The decoded URL path.
    pub path: String,
    /// The Kubernetes verb for resource requests (`get`, `list`, `watch`,
    /// `create`, `update`, `patch`, `delete`, `deletecollection`, `proxy`);
    /// the lowercase HTTP method for other requests.
    pub verb: String,
    /// `api` or `apis`.
    pub api_prefix: String,
    pub api_group: String,
    pub api_version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// The path parts from the resource on: `resource/name/subresource/...`.
    pub parts: Vec<String>,
    /// The raw `fieldSelector` of list, watch and deletecollection requests.
    pub field_selector: String,
    /// The raw `labelSelector` of list, watch and deletecollection requests.
    pub label_selector: String,
}

/// A request path that cannot be classified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RequestInfoError {
    /// A `/watch/` or `/proxy/` path with nothing after the verb.
    #[error("unable to determine kind and namespace from url, {0}")]
    MissingKind(String),
}

/// Path segments that are verbs rather than resources.
const SPECIAL_VERBS: [&str; 2] = ["proxy", "watch"];
/// Namespace subresources, told apart from namespaced resources.
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];
/// Verbs whose requests carry label and field selectors.
const VERBS_WITH_SELECTORS: [&str; 3] = ["list", "watch", "deletecollection"];

/// Classifies requests given the API path prefixes the server serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestInfoResolver {
    /// Prefixes of API paths, without slashes (`api`, `apis`).
    pub api_prefixes: Vec<String>,
    /// Prefixes whose paths carry no group (`api`).
    pub groupless_api_prefixes: Vec<String>,
}

impl Default for RequestInfoResolver {
    /// kube-apiserver's prefixes: `/api` (legacy, no group) and `/apis`.
    fn default() -> Self {
        RequestInfoResolver {
            api_prefixes: vec!["api".to_owned(), "apis".to_owned()],
            groupless_api_prefixes: vec!["api".to_owned()],
        }
    }
}

impl RequestInfoResolver {
    /// Classifies a request. `path` and `query` are as they appear on the
    /// request line (percent-encoded); `query` has no leading `?`.
    pub fn resolve(
        &self,
        method: &str,
        path: &str,
        query: &str,
    ) -> Result<RequestInfo, RequestInfoError> {
        let decoded = percent_decode(path, false).unwrap_or_else(|| path.to_owned());
        let mut info = RequestInfo {
            verb: method.to_ascii_lowercase(),
            ..RequestInfo::default()
        };
        let segments: Vec<&str> = split_path(&decoded);
        let mut parts: &[&str] = &segments;
        if parts.len() < 3 || !self.api_prefixes.iter().any(|p| p == parts[0]) {
            info.path = decoded;
            return Ok(info);
        }
        info.api_prefix = parts[0].to_owned();
        parts = &parts[1..];
        if !self.groupless_api_prefixes.contains(&info.api_prefix) {
            if parts.len() < 3 {
                info.path = decoded;
                return Ok(info);
            }
            info.api_group = parts[0].to_owned();
            parts = &parts[1..];
        }
        info.is_resource_request = true;
        info.api_version = parts[0].to_owned();
        parts = &parts[1..];

        let raw_query = query;
        let query = QueryParams::parse(raw_query);
        let verb_via_path = SPECIAL_VERBS.contains(&parts[0]);
        if verb_via_path {
            if parts.len() < 2 {
                let url = if raw_query.is_empty() {
                    path.to_owned()
                } else {
                    format!("{path}?{raw_query}")
                };
                return Err(RequestInfoError::MissingKind(url));
            }
            info.verb = parts[0].to_owned();
            parts = &parts[1..];
        } else {
            info.verb = match method {
                "POST" => "create",
                "GET" | "HEAD" => "get",
                "PUT" => "update",
                "PATCH" => "patch",
                "DELETE" => "delete",
                _ => "",
            }
            .to_owned();
        }

        fill_resource_parts(&mut info, parts);

        if info.name.is_empty() && info.verb == "get" {
            resolve_collection_get(&mut info, &query);
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_owned();
        }
        // Selectors are not honoured on the deprecated `/watch/` paths.
        if !verb_via_path && VERBS_WITH_SELECTORS.contains(&info.verb.as_str()) {
            info.field_selector = query.first("fieldSelector").unwrap_or("").to_owned();
            info.label_selector = query.first("labelSelector").unwrap_or("").to_owned();
        }
        info.path = decoded;
        Ok(info)
    }
}

/// Fills resource, name, subresource and parts from the path parts after
/// the version (and any `/watch/` or `/proxy/` verb).
fn fill_resource_parts(info: &mut RequestInfo, mut parts: &[&str]) {
    // `/namespaces/{ns}/{resource}/...` addresses a namespaced resource;
    // `/namespaces/{ns}[/status|/finalize]` the namespace itself.
    if let ["namespaces", namespace, rest @ ..] = parts {
        info.namespace = (*namespace).to_owned();
        if rest
            .first()
            .is_some_and(|next| !NAMESPACE_SUBRESOURCES.contains(next))
        {
            parts = rest;
        }
    }
    info.parts = parts.iter().map(|s| (*s).to_owned()).collect();
    if let [resource, rest @ ..] = parts {
        info.resource = (*resource).to_owned();
        if let [name, rest @ ..] = rest {
            info.name = (*name).to_owned();
            // Proxy paths carry no subresource: the rest is the proxied path.
            if let (Some(sub), false) = (rest.first(), info.verb == "proxy") {
                info.subresource = (*sub).to_owned();
            }
        }
    }
}

/// A GET without a name is a list or a watch; a `metadata.name=`
/// field selector names the single object it is about.
fn resolve_collection_get(info: &mut RequestInfo, query: &QueryParams) {
    info.verb = if query.bool("watch") { "watch" } else { "list" }.to_owned();
    // Upstream only honours the field selector when all list options
    // decode; these are the ones that can fail to.
    let options_decode = query
        .first("labelSelector")
        .is_none_or(|s| Selector::parse(s).is_ok())
        && query
            .first("timeoutSeconds")
            .is_none_or(|s| parse_int64(s).is_ok())
        && query.first("limit").is_none_or(|s| parse_int64(s).is_ok());
    if !options_decode {
        return;
    }
    let Some(Ok(selector)) = query.first("fieldSelector").map(FieldSelector::parse) else {
        return;
    };
    if let Some(name) = selector.requires_exact_match("metadata.name") {
        if is_path_segment_name(name).is_empty() {
            info.name = name.to_owned();
        }
    }
}

/// Splits a path into its non-empty-ended segments, as upstream's
/// `splitPath` (which trims slashes at both ends only).
fn split_path(path: &str) -> Vec<&str> {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() {
        Vec::new()
    } else {
        trimmed.split('/').collect()
    }
}

/// Decodes `%XX` escapes (and `+` as space when `plus_is_space`); `None`
/// on a malformed escape.
pub(crate) fn percent_decode(s: &str, plus_is_space: bool) -> Option<String> {
    if !(s.contains('%') || plus_is_space && s.contains('+')) {
        return Some(s.to_owned());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                if !hex.iter().all(u8::is_ascii_hexdigit) {
                    return None;
                }
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests;
