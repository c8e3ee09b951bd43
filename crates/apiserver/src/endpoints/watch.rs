//! Watch responses: a chunked stream of `{"type":…,"object":…}` events
//! (upstream's watch server), ended by the request's timeout. A watch with
//! `sendInitialEvents=true` is a streaming list (upstream's WatchList): the
//! objects of a snapshot as ADDED events, a BOOKMARK annotated
//! `k8s.io/initial-events-end` at the snapshot's revision, then the changes
//! after it.

use std::sync::Arc;
use std::time::Duration;

use apimachinery::status::ApiError;
use axum::body::Body;
use bytes::Bytes;
use component_base::tracing::{audit_id, start, Attribute, Started};
use futures::StreamExt;
use http::request::Parts;
use http::{header, HeaderValue, Response, StatusCode};
use opentelemetry::context::FutureExt as _;
use opentelemetry::Context;
use rand::Rng;
use serde_json::{json, Value};
use storage::{ListOptions, Object, WatchEvent, WatchOptions};

use super::caching_object;
use super::handlers::{list_options, HandlerConfig};
use super::negotiation::{Encoding, Negotiated};
use super::query::ListParams;
use super::response::encode;
use super::trace_util;
use crate::registry::errors::interpret;
use crate::registry::store::Store;

/// Serves a watch: upstream's `WatchList` span (a streaming list with
/// bookmarks; it ends once the initial events are out) around opening it,
/// then `WatchServer.HandleHTTP` for as long as events are sent.
pub async fn serve(
    store: &Arc<Store>,
    (ns, name): (Option<&str>, Option<&str>),
    params: ListParams,
    neg: &Negotiated,
    config: &HandlerConfig,
    parts: &Parts,
) -> Result<Response<Body>, ApiError> {
    let streaming_list = params.send_initial_events == Some(true) && params.allow_bookmarks;
    let mut watch_list =
        streaming_list.then(|| start("WatchList", || trace_util::trace_fields(parts)));
    let cx = watch_list
        .as_ref()
        .map_or_else(Context::current, Started::context);
    let timeout = watch_timeout(params.timeout_seconds, config.min_request_timeout);
    let events = open(store, ns, name, params)
        .with_context(cx.clone())
        .await?;
    let content_type = match neg.encoding {
        Encoding::Protobuf => protobuf_codec::STREAM_CONTENT_TYPE,
        // Upstream answers `application/cbor` watches as a CBOR sequence.
        Encoding::Cbor => kube_cbor::SEQUENCE_CONTENT_TYPE,
        other => other.content_type(),
    };
    let handling = {
        let _in = cx.attach();
        start("WatchServer.HandleHTTP", || {
            handle_http_fields(parts, content_type)
        })
    };
    let encoding = neg.encoding;
    let store = store.clone();
    let counter = config.metrics.watch_events_counter(
        &store.info.group,
        &store.info.version,
        &store.info.kind,
    );
    let frames = events
        .take_until(tokio::time::sleep(timeout))
        .map(move |event| {
            let _ = &handling;
            counter.inc();
            let initial_events_end = matches!(event, Sent::InitialEventsEnd(_));
            let frame = frame(&store, event, encoding);
            if initial_events_end {
                watch_list.take();
            }
            Ok::<Bytes, std::io::Error>(frame)
        });
    let mut resp = Response::new(Body::from_stream(frames));
    *resp.status_mut() = StatusCode::OK;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    Ok(resp)
}

/// The attributes of upstream's `WatchServer.HandleHTTP` span (its
/// `encoder`, a Go codec identifier, has no counterpart here).
fn handle_http_fields(parts: &Parts, media_type: &str) -> Vec<Attribute> {
    vec![
        Attribute::new("audit-id", audit_id()),
        Attribute::new("method", parts.method.as_str().to_owned()),
        Attribute::new("url", parts.uri.path().to_owned()),
        Attribute::new("protocol", trace_util::protocol(parts.version)),
        Attribute::new("mediaType", media_type.to_owned()),
    ]
}

/// The events of a watch: a streaming list's initial events, then what
/// storage sends.
async fn open(
    store: &Arc<Store>,
    ns: Option<&str>,
    name: Option<&str>,
    params: ListParams,
) -> Result<impl futures::Stream<Item = Sent> + Send + 'static, ApiError> {
    let mut params = params;
    if let Some(name) = name {
        // A watch on one object is a watch on the collection narrowed to it.
        let by_name = format!("metadata.name={name}");
        params.field_selector = if params.field_selector.is_empty() {
            by_name
        } else {
            format!("{},{by_name}", params.field_selector)
        };
    }
    let options = list_options(store, &params)?;
    let predicate = options.predicate.clone();
    let (initial, watch_from) = match params.send_initial_events {
        None => (Vec::new(), params.watch_from),
        Some(true) => {
            let snapshot = store
                .list(
                    ns,
                    ListOptions {
                        limit: None,
                        ..options
                    },
                )
                .await?;
            let mut events: Vec<Sent> = snapshot
                .items
                .into_iter()
                .map(|o| Sent::Event(WatchEvent::Added(o)))
                .collect();
            if params.allow_bookmarks {
                events.push(Sent::InitialEventsEnd(snapshot.resource_version));
            }
            (events, snapshot.resource_version)
        }
        // Only what follows the revision; unset or "0" is "from now".
        Some(false) if params.watch_from > 0 => (Vec::new(), params.watch_from),
        Some(false) => (Vec::new(), current_revision(store, ns).await?),
    };
    let events = store
        .watch(
            ns,
            WatchOptions {
                resource_version: watch_from,
                predicate,
                recursive: true,
                allow_bookmarks: params.allow_bookmarks,
            },
        )
        .await?;
    Ok(futures::stream::iter(initial).chain(events.map(Sent::Event)))
}

/// The answer to `sendInitialEvents` when the WatchList gate is off.
pub fn watch_list_disabled() -> ApiError {
    let error = apimachinery::field_errors::FieldError::forbidden(
        &apimachinery::field_errors::Path::new("sendInitialEvents"),
        "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
    );
    ApiError::invalid("meta.k8s.io", "ListOptions", "", &[error])
}

/// The revision a watch "from now" starts after.
async fn current_revision(store: &Store, ns: Option<&str>) -> Result<i64, ApiError> {
    let probe = ListOptions {
        limit: Some(1),
        recursive: true,
        ..ListOptions::default()
    };
    Ok(store.list(ns, probe).await?.resource_version)
}

/// `timeoutSeconds` when given, else a random time between
/// `--min-request-timeout` and twice that, so watches do not all end at once.
fn watch_timeout(timeout_seconds: Option<i64>, min: Duration) -> Duration {
    match timeout_seconds {
        Some(secs) if secs > 0 => Duration::from_secs(secs.unsigned_abs()),
        _ => {
            let factor: f64 = rand::rng().random_range(1.0..2.0);
            min.mul_f64(factor)
        }
    }
}

/// Upstream's annotation on the bookmark that ends a streaming list.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

#[derive(serde::Serialize)]
struct Frame<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    object: &'a Value,
}

/// What the stream sends: storage's events, and the bookmark that ends a
/// streaming list's initial events.
enum Sent {
    Event(WatchEvent),
    InitialEventsEnd(i64),
}

fn frame(store: &Store, event: Sent, encoding: Encoding) -> Bytes {
    let owned = match event {
        Sent::Event(WatchEvent::Added(o)) => return shared_frame("ADDED", &o, encoding),
        Sent::Event(WatchEvent::Modified(o)) => return shared_frame("MODIFIED", &o, encoding),
        Sent::Event(WatchEvent::Deleted(o)) => return shared_frame("DELETED", &o, encoding),
        Sent::InitialEventsEnd(rv) => json!({
            "kind": store.info.kind,
            "apiVersion": store.info.api_version(),
            "metadata": {
                "resourceVersion": rv.to_string(),
                "annotations": {INITIAL_EVENTS_END: "true"},
            },
        }),
        Sent::Event(WatchEvent::Bookmark(rv)) => json!({
            "kind": store.info.kind,
            "apiVersion": store.info.api_version(),
            "metadata": {"resourceVersion": rv.to_string()},
        }),
        Sent::Event(WatchEvent::Error(e)) => {
            let status = interpret(e, &store.info, "").to_status_json();
            return encoded_frame("ERROR", &status, encoding);
        }
    };
    let mut owned = owned;
    go_json::normalize(&mut owned);
    encoded_frame("BOOKMARK", &owned, encoding)
}

/// The frame of an event of a stored object: the object encoded once for
/// all watchers ([`caching_object`]), the frame around it per watcher
/// (YAML, which indents the object inside the frame, encodes it whole).
fn shared_frame(kind: &str, object: &Object, encoding: Encoding) -> Bytes {
    let framed = match encoding {
        Encoding::Json => caching_object::encoded(object, encoding).map(|encoded| {
            // Go's `json.Encoder` writes `{"type":…,"object":…}` and a newline.
            let body = encoded.strip_suffix(b"\n").unwrap_or(&encoded);
            let mut bytes = Vec::with_capacity(body.len() + kind.len() + 24);
            bytes.extend_from_slice(b"{\"type\":\"");
            bytes.extend_from_slice(kind.as_bytes());
            bytes.extend_from_slice(b"\",\"object\":");
            bytes.extend_from_slice(body);
            bytes.extend_from_slice(b"}\n");
            bytes
        }),
        Encoding::Protobuf => caching_object::encoded(object, encoding)
            .and_then(|raw| protobuf_codec::encode_watch_event_with(kind, Some(&raw))),
        Encoding::Cbor => caching_object::encoded(object, encoding)
            .map(|encoded| kube_cbor::encode_watch_event_with(kind, &encoded)),
        Encoding::Yaml => return object.peek(|tree| encoded_frame(kind, tree, encoding)),
    };
    framed.map_or_else(
        |e| {
            tracing::warn!(error = %e, "watch event has no protobuf encoding");
            Bytes::new()
        },
        Bytes::from,
    )
}

/// A frame encoded whole.
fn encoded_frame(kind: &str, object: &Value, encoding: Encoding) -> Bytes {
    if encoding == Encoding::Protobuf {
        return match protobuf_codec::encode_watch_event(kind, object) {
            Ok(frame) => Bytes::from(frame),
            Err(e) => {
                tracing::warn!(error = %e, "watch event has no protobuf encoding");
                Bytes::new()
            }
        };
    }
    if encoding == Encoding::Cbor {
        return Bytes::from(kube_cbor::encode_watch_event(kind, object));
    }
    let encoded = encode(&Frame { kind, object }, encoding, false);
    let mut bytes = Vec::with_capacity(encoded.len() + 4);
    if encoding == Encoding::Yaml {
        // YAML watch events are separated as documents.
        bytes.extend_from_slice(b"---\n");
    }
    // JSON frames end with the newline of Go's `json.Encoder`.
    bytes.extend_from_slice(&encoded);
    Bytes::from(bytes)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    /// Frames around a shared encoding are the frames encoded whole.
    #[test]
    fn shared_frames_match_whole_ones() {
        let object: Object = Arc::new(
            json!({
                "kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"name": "a<b>", "namespace": "ns", "resourceVersion": "5"},
                "data": {"k": "v & \u{2028}"},
            })
            .into(),
        );
        for encoding in [
            Encoding::Json,
            Encoding::Protobuf,
            Encoding::Cbor,
            Encoding::Yaml,
        ] {
            for kind in ["ADDED", "MODIFIED", "DELETED"] {
                let whole = encoded_frame(kind, &object, encoding);
                assert!(!whole.is_empty());
                assert_eq!(shared_frame(kind, &object, encoding), whole, "{encoding:?}");
                assert_eq!(shared_frame(kind, &object, encoding), whole, "cached");
            }
        }
    }
}
