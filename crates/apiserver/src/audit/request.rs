//! Filling an event from a request and its response (upstream's
//! `pkg/audit/request.go`): metadata, the object reference completed from
//! the request object, and managed fields dropped when the policy asks.

use std::net::{IpAddr, SocketAddr};

use apimachinery::request_info::RequestInfo;
use axum::extract::ConnectInfo;
use http::{HeaderMap, Request};
use serde_json::Value;

use super::event::{Event, EventUser, ObjectReference};
use crate::authentication::user::UserInfo;

/// Longer user agents are cut (upstream's limit and marker).
const MAX_USER_AGENT: usize = 1024;
const TRUNCATED: &str = "...TRUNCATED";

/// The request's client addresses as upstream's `utilnet.SourceIPs`: the
/// valid X-Forwarded-For entries, X-Real-Ip unless already among them,
/// then the peer unless it is the last address so far; each written in
/// canonical form (an IPv4-mapped address as plain IPv4).
pub fn source_ips<B>(req: &Request<B>) -> Vec<String> {
    source_ips_of(req.headers(), req.extensions())
}

/// [`source_ips`] of a request's headers and extensions.
pub fn source_ips_of(headers: &HeaderMap, extensions: &http::Extensions) -> Vec<String> {
    let parse = |ip: &str| ip.trim().parse::<IpAddr>().ok().map(|ip| ip.to_canonical());
    let mut ips: Vec<IpAddr> = header(headers, "x-forwarded-for")
        .map(|v| v.split(',').filter_map(parse).collect())
        .unwrap_or_default();
    if let Some(real) = header(headers, "x-real-ip").and_then(parse) {
        if !ips.contains(&real) {
            ips.push(real);
        }
    }
    let peer = extensions
        .get::<ConnectInfo<SocketAddr>>()
        .map(|c| c.0.ip().to_canonical());
    if let Some(peer) = peer.filter(|p| ips.last() != Some(p)) {
        ips.push(peer);
    }
    ips.iter().map(IpAddr::to_string).collect()
}

/// The user agent cut to upstream's 1024 bytes and marked when cut.
pub fn truncated_user_agent(agent: &str) -> String {
    if agent.len() <= MAX_USER_AGENT {
        return agent.to_owned();
    }
    let mut cut = MAX_USER_AGENT;
    while !agent.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}{TRUNCATED}", &agent[..cut])
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The request's metadata: URI, verb, user, addresses, agent and the object
/// a resource request is about.
pub fn log_request_metadata<B>(
    ev: &mut Event,
    req: &Request<B>,
    info: &RequestInfo,
    user: &UserInfo,
) {
    ev.request_uri = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_owned(), |pq| pq.as_str().to_owned());
    ev.verb.clone_from(&info.verb);
    ev.user = EventUser {
        username: user.name.clone(),
        uid: user.uid.clone(),
        groups: user.groups.clone(),
        extra: user.extra.clone(),
    };
    ev.source_ips = source_ips(req);
    let agent = header(req.headers(), "user-agent").unwrap_or_default();
    ev.user_agent = truncated_user_agent(agent);
    if info.is_resource_request {
        ev.object_ref = Some(ObjectReference {
            resource: info.resource.clone(),
            namespace: info.namespace.clone(),
            name: info.name.clone(),
            api_group: info.api_group.clone(),
            api_version: info.api_version.clone(),
            subresource: info.subresource.clone(),
            ..ObjectReference::default()
        });
    }
}

/// Fills the object reference's blanks from the request object, as
/// upstream does for every level from Metadata up.
pub fn complete_object_ref(ev: &mut Event, obj: &Value) {
    let Some(meta) = obj.get("metadata") else {
        return;
    };
    let Some(r) = ev.object_ref.as_mut() else {
        return;
    };
    let text = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or_default();
    for (field, key) in [
        (&mut r.namespace, "namespace"),
        (&mut r.name, "name"),
        (&mut r.uid, "uid"),
        (&mut r.resource_version, "resourceVersion"),
    ] {
        if field.is_empty() {
            *field = text(key).to_owned();
        }
    }
}

/// Drops `metadata.managedFields` from an object, a list's items or a
/// table's row objects.
pub fn omit_managed_fields(obj: &mut Value) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("managedFields");
    }
    if let Some(items) = obj.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(omit_managed_fields);
    }
    if let Some(rows) = obj.get_mut("rows").and_then(Value::as_array_mut) {
        for row in rows {
            if let Some(o) = row.get_mut("object") {
                omit_managed_fields(o);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn source_ips_put_forwarded_addresses_first_without_repeats() {
        let mut req = Request::builder()
            .header("x-forwarded-for", "10.0.0.1, 10.0.0.2, junk")
            .header("x-real-ip", "10.0.0.2")
            .body(())
            .unwrap_or_default();
        let peer: SocketAddr = ([127, 0, 0, 1], 5000).into();
        req.extensions_mut().insert(ConnectInfo(peer));
        assert_eq!(source_ips(&req), ["10.0.0.1", "10.0.0.2", "127.0.0.1"]);
    }

    #[test]
    fn source_ips_repeat_the_peer_unless_it_ends_the_chain() {
        let peer: SocketAddr = ([127, 0, 0, 1], 5000).into();
        let with = |forwarded: &str| {
            let mut req = Request::builder()
                .header("x-forwarded-for", forwarded)
                .body(())
                .unwrap_or_default();
            req.extensions_mut().insert(ConnectInfo(peer));
            source_ips(&req)
        };
        assert_eq!(
            with("127.0.0.1, ::ffff:10.0.0.2"),
            ["127.0.0.1", "10.0.0.2", "127.0.0.1"]
        );
        assert_eq!(with("10.0.0.2, 127.0.0.1"), ["10.0.0.2", "127.0.0.1"]);
        let mapped: SocketAddr = "[::ffff:127.0.0.1]:5000".parse().unwrap_or(peer);
        let mut req = Request::builder().body(()).unwrap_or_default();
        req.extensions_mut().insert(ConnectInfo(mapped));
        assert_eq!(source_ips(&req), ["127.0.0.1"]);
    }

    #[test]
    fn managed_fields_are_dropped_everywhere() {
        let mf = json!([{"manager": "kubectl"}]);
        let mut list = json!({
            "metadata": {"managedFields": mf},
            "items": [{"metadata": {"name": "a", "managedFields": mf}}],
            "rows": [{"object": {"metadata": {"managedFields": mf}}}]
        });
        omit_managed_fields(&mut list);
        assert!(!list.to_string().contains("managedFields"));
    }
}
