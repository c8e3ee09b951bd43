//! A JSON list written item by item, as upstream's streaming collection
//! encoder (`runtime/serializer/json/collections.go`, the
//! `StreamingCollectionEncodingToJSON` feature, GA since 1.34) writes it:
//! the list's `kind`, `apiVersion` and `metadata`, then each item. Here the
//! items are copied from their versions' shared encodings
//! ([`caching_object`]), so a LIST from the watch cache encodes only the
//! envelope and the items not listed or watched before.
//!
//! A large list's body is kept as chunks ([`Chunks`]) rather than one
//! buffer: one allocation of tens of MiB is faulted in page by page on
//! every list and given back to the kernel when dropped (a quarter of a
//! 12,000-item LIST's server CPU in a profile); chunks are reused from
//! the allocator's caches and each is freed once sent.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use serde::Serialize;
use serde_json::Value;
use storage::{ListResult, StoredObject};

use super::caching_object;
use super::negotiation::Encoding;
use super::response::{encode, list_metadata, WithoutTypeMeta};

/// Bytes per chunk: a few hundred KiB (many TLS records and HTTP/2 frames
/// each), far below jemalloc's 8 MiB threshold for huge allocations.
const CHUNK_BYTES: usize = 256 << 10;

/// A response body being written, kept as chunks of about [`CHUNK_BYTES`].
#[derive(Default)]
pub struct Chunks {
    done: Vec<Bytes>,
    current: Vec<u8>,
    len: u64,
}

impl Chunks {
    /// Appends `bytes`, starting a new chunk when the current one is full.
    pub fn write(&mut self, bytes: &[u8]) {
        if self.current.len() + bytes.len() > CHUNK_BYTES && !self.current.is_empty() {
            self.done
                .push(Bytes::from(std::mem::take(&mut self.current)));
        }
        if self.current.capacity() == 0 {
            self.current.reserve(CHUNK_BYTES.max(bytes.len()));
        }
        self.current.extend_from_slice(bytes);
        self.len += bytes.len() as u64;
    }

    /// The body, its length known (so written with a `Content-Length`).
    pub fn into_body(mut self) -> Body {
        if !self.current.is_empty() {
            self.done.push(Bytes::from(self.current));
        }
        Body::new(ChunkedBody {
            chunks: self.done.into_iter(),
            remaining: self.len,
        })
    }
}

struct ChunkedBody {
    chunks: std::vec::IntoIter<Bytes>,
    remaining: u64,
}

impl HttpBody for ChunkedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let chunk = self.chunks.next();
        if let Some(chunk) = &chunk {
            self.remaining -= chunk.len() as u64;
        }
        Poll::Ready(chunk.map(|c| Ok(Frame::data(c))))
    }

    fn is_end_stream(&self) -> bool {
        self.remaining == 0
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::with_exact(self.remaining)
    }
}

/// The bytes `encode` writes for the whole list (compact, with Go's
/// trailing newline). Typed (built-in) items are written without
/// `apiVersion` and `kind`, which only the list carries; custom resources'
/// items with them (`type_meta`).
pub fn json(list: &ListResult, kind: &str, api_version: &str, type_meta: bool) -> Chunks {
    let Ok(items) = caching_object::encoded_each(&list.items, Encoding::Json) else {
        unreachable!("JSON encoding does not fail")
    };
    let mut out = Chunks::default();
    out.write(b"{\"kind\":");
    fragment(kind, &mut out);
    out.write(b",\"apiVersion\":");
    fragment(api_version, &mut out);
    out.write(b",\"metadata\":");
    fragment(&list_metadata(list), &mut out);
    out.write(b",\"items\":[");
    for (i, (encoded, object)) in items.iter().zip(&list.items).enumerate() {
        if i > 0 {
            out.write(b",");
        }
        let body = encoded.strip_suffix(b"\n").unwrap_or(encoded);
        if type_meta {
            out.write(body);
        } else if let Some(fields) = after_type_meta(body, object) {
            out.write(b"{");
            out.write(fields);
        } else {
            object.peek(|tree| fragment(&WithoutTypeMeta(tree), &mut out));
        }
    }
    out.write(b"]}\n");
    out
}

/// Appends `value` as `encode` writes it, without the trailing newline.
fn fragment<T: Serialize + ?Sized>(value: &T, out: &mut Chunks) {
    let encoded = encode(value, Encoding::Json, false);
    out.write(encoded.strip_suffix(b"\n").unwrap_or(&encoded));
}

/// The rest of `body` (the object's JSON) after its opening
/// `{"kind":…,"apiVersion":…,` when it starts so, as a typed object's
/// encoding does (`TypeMeta` first); `None` for any other layout, which is
/// then encoded again without those fields. Read from the bytes alone when
/// both fields lead, plainly written (the object's tree is not touched: a
/// dozen cache misses per item, and an object held as JSON stays so).
fn after_type_meta<'a>(body: &'a [u8], object: &StoredObject) -> Option<&'a [u8]> {
    after_leading_type_meta(body).or_else(|| object.peek(|tree| after_type_meta_of(body, tree)))
}

/// `body` after a leading `{"kind":"…","apiVersion":"…",` whose values
/// are written as is: the object's first two fields are then these two.
fn after_leading_type_meta(body: &[u8]) -> Option<&[u8]> {
    let mut rest = body.strip_prefix(b"{")?;
    for field in [&b"\"kind\":\""[..], b"\"apiVersion\":\""] {
        rest = rest.strip_prefix(field)?;
        let end = rest.iter().position(|b| *b == b'"')?;
        if !rest[..end].iter().all(|b| written_as_is_byte(*b)) {
            return None;
        }
        rest = rest[end..].strip_prefix(b"\",")?;
    }
    Some(rest)
}

/// [`after_type_meta`] checked against the object's own fields.
fn after_type_meta_of<'a>(body: &'a [u8], object: &Value) -> Option<&'a [u8]> {
    let mut rest = body.strip_prefix(b"{")?;
    for field in ["kind", "apiVersion"] {
        let Some(value) = object.get(field) else {
            continue;
        };
        let value = value.as_str().filter(|v| written_as_is(v))?;
        rest = rest
            .strip_prefix(b"\"")?
            .strip_prefix(field.as_bytes())?
            .strip_prefix(b"\":\"")?
            .strip_prefix(value.as_bytes())?
            .strip_prefix(b"\",")?;
    }
    Some(rest)
}

/// A string JSON writes between its quotes unchanged (no escapes).
fn written_as_is(s: &str) -> bool {
    s.bytes().all(written_as_is_byte)
}

fn written_as_is_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'/' | b'-' | b'_')
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use super::*;

    /// A list of objects held as the watch cache holds them (JSON only).
    fn list(items: Vec<Value>) -> ListResult {
        let held = |tree: Value| Arc::new(StoredObject::from(tree).compact());
        ListResult {
            items: items.into_iter().map(held).collect(),
            resource_version: 12,
            continue_token: Some("next".into()),
            remaining_item_count: Some(3),
        }
    }

    #[test]
    fn item_by_item_matches_the_whole_list() {
        let items = vec![
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}, "data": {"k": "<&>"}}),
            json!({"metadata": {"name": "no-type-meta"}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "other-order"}}),
            json!({"kind": "ConfigMap", "apiVersion": "v1"}),
            json!({"kind": "Odd\"Kind", "apiVersion": "v1", "metadata": {}}),
        ];
        let list = list(items.clone());
        let without: Vec<Value> = items
            .iter()
            .map(|item| {
                let mut item = item.clone();
                if let Some(map) = item.as_object_mut() {
                    map.shift_remove("kind");
                    map.shift_remove("apiVersion");
                }
                item
            })
            .collect();
        for (type_meta, written) in [(true, &items), (false, &without)] {
            let whole = json!({"kind": "ConfigMapList", "apiVersion": "v1",
                "metadata": {"resourceVersion": "12", "continue": "next", "remainingItemCount": 3},
                "items": written});
            let expected = encode(&whole, Encoding::Json, false);
            assert_eq!(
                bytes(json(&list, "ConfigMapList", "v1", type_meta)),
                expected
            );
        }
        // Writing the list decoded no item for good.
        assert!(list.items.iter().all(|item| !item.has_tree()));
        let empty = bytes(json(&self::list(Vec::new()), "ConfigMapList", "v1", false));
        assert!(empty.ends_with(b",\"items\":[]}\n"));
    }

    fn bytes(chunks: Chunks) -> Vec<u8> {
        let len = chunks.len;
        let mut out = chunks.done.concat();
        out.extend_from_slice(&chunks.current);
        assert_eq!(out.len() as u64, len);
        out
    }

    #[tokio::test]
    async fn a_large_body_is_sent_in_chunks_of_known_length() {
        let mut chunks = Chunks::default();
        let piece = vec![b'x'; 1000];
        for _ in 0..1000 {
            chunks.write(&piece);
        }
        chunks.write(&vec![b'y'; CHUNK_BYTES + 1]);
        assert!(chunks.done.iter().all(|c| c.len() <= CHUNK_BYTES));
        let body = chunks.into_body();
        assert_eq!(
            body.size_hint().exact(),
            Some(1_000_000 + CHUNK_BYTES as u64 + 1)
        );
        let mut frames = 0;
        let mut body = std::pin::pin!(body);
        let mut all = Vec::new();
        while let Some(frame) = std::future::poll_fn(|cx| body.as_mut().poll_frame(cx)).await {
            all.extend_from_slice(&frame.expect("a frame").into_data().expect("data"));
            frames += 1;
        }
        // Three full chunks of x, the rest of them, the one larger piece.
        assert_eq!(frames, 5);
        let (x, y) = all.split_at(1_000_000);
        assert!(x.iter().all(|b| *b == b'x') && y.iter().all(|b| *b == b'y'));
        assert_eq!(y.len(), CHUNK_BYTES + 1);
    }
}
