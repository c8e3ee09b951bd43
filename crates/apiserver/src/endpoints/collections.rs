//! A JSON list written item by item, as upstream's streaming collection
//! encoder (`runtime/serializer/json/collections.go`, the
//! `StreamingCollectionEncodingToJSON` feature, GA since 1.34) writes it:
//! the list's `kind`, `apiVersion` and `metadata`, then each item. Here the
//! items are taken from their versions' shared encodings
//! ([`caching_object`]), so a LIST from the watch cache encodes only the
//! envelope and the items not listed or watched before.
//!
//! A list's body is kept as pieces ([`Chunks`]): what was written for the
//! list itself (its envelope, separators, protobuf keys) in one buffer,
//! and each item as a range of its version's encoding, held through the
//! list's own reference to the object or to its kept encodings (no
//! reference count touched per item). The pieces are copied into chunks
//! of [`CHUNK_BYTES`] only as HTTP asks for the body, so each chunk is
//! still in the processor's cache when TLS encrypts it, and a list being
//! sent holds no copy of its items. (Before,
//! the whole body was copied up front: a 12,000-item list's 17 MB copy
//! and the cache misses of reading it back under TLS were over a quarter
//! of its server CPU in a profile.)

use std::convert::Infallible;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use bytes::{Bytes, BytesMut};
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use serde::Serialize;
use serde_json::Value;
use storage::{ListResult, Object, StoredObject};

use super::caching_object::{self, ListItem};
use super::negotiation::Encoding;
use super::response::{encode, list_metadata, WithoutTypeMeta};

/// Bytes per chunk handed to HTTP: a few TLS records and HTTP/2 frames,
/// small enough to stay in a core's cache between the copy and the
/// encryption.
const CHUNK_BYTES: usize = 64 << 10;

/// Shared pieces shorter than this are copied at once: a piece costs more
/// to keep than a short copy.
const SHARE_MIN: usize = 128;

/// A response body being written (see the module comment).
#[derive(Default)]
pub struct Chunks {
    pieces: Vec<Piece>,
    written: Vec<u8>,
    len: u64,
}

enum Piece {
    /// A range of [`Chunks::written`].
    Written(Range<usize>),
    /// A range of the object's JSON: the list's own reference to it, so
    /// sending touches no reference count but the object's.
    Json(Object, Range<usize>),
    /// A protobuf list's item.
    Item(ListItem),
}

impl Chunks {
    /// Appends a copy of `bytes`.
    pub fn write(&mut self, bytes: &[u8]) {
        let start = self.written.len();
        self.written.extend_from_slice(bytes);
        self.len += bytes.len() as u64;
        match self.pieces.last_mut() {
            Some(Piece::Written(range)) if range.end == start => range.end = self.written.len(),
            _ => self.pieces.push(Piece::Written(start..self.written.len())),
        }
    }

    /// Appends the `range` of `object`'s JSON without copying it.
    pub fn share_json(&mut self, object: Object, range: Range<usize>) {
        if range.len() < SHARE_MIN {
            return self.write(&object.json_bytes()[range]);
        }
        self.len += range.len() as u64;
        self.pieces.push(Piece::Json(object, range));
    }

    /// Appends a protobuf list's item without copying it.
    pub fn share_item(&mut self, item: ListItem) {
        let len = item.bytes().len();
        if len < SHARE_MIN {
            return self.write(item.bytes());
        }
        self.len += len as u64;
        self.pieces.push(Piece::Item(item));
    }

    /// The body, its length known (so written with a `Content-Length`).
    pub fn into_body(self) -> Body {
        Body::new(self.into_chunked())
    }

    fn into_chunked(self) -> ChunkedBody {
        ChunkedBody {
            pieces: self.pieces.into_iter(),
            written: Bytes::from(self.written),
            next: None,
            spent: Vec::new(),
            remaining: self.len,
        }
    }
}

/// Hands out the pieces in chunks of [`CHUNK_BYTES`], copied when asked
/// for; an item of a chunk's size or more goes out as it is.
struct ChunkedBody {
    pieces: std::vec::IntoIter<Piece>,
    written: Bytes,
    /// What is left of the piece a chunk ended in.
    next: Option<Piece>,
    /// The pieces the chunk being made has copied.
    spent: Vec<Piece>,
    remaining: u64,
}

impl Piece {
    fn len(&self) -> usize {
        match self {
            Piece::Written(range) | Piece::Json(_, range) => range.len(),
            Piece::Item(item) => item.bytes().len(),
        }
    }

    /// The piece's bytes (`written` is the body's own buffer).
    fn bytes<'a>(&'a self, written: &'a [u8]) -> &'a [u8] {
        match self {
            Piece::Written(range) => &written[range.clone()],
            Piece::Json(object, range) => &object.json_bytes()[range.clone()],
            Piece::Item(item) => item.bytes(),
        }
    }

    /// The piece without its first `n` bytes.
    fn advanced(self, n: usize) -> Piece {
        match self {
            Piece::Written(range) => Piece::Written(range.start + n..range.end),
            Piece::Json(object, range) => Piece::Json(object, range.start + n..range.end),
            Piece::Item(mut item) => {
                item.advance(n);
                Piece::Item(item)
            }
        }
    }
}

impl ChunkedBody {
    /// Reads a byte of every cache line of the items this chunk copies,
    /// before copying them: the items are far apart in memory and long out
    /// of the cache, and loads that do not wait on each other are fetched
    /// together, where the copy would wait for each item in turn. (Its
    /// own share of the gain was within the host's noise; the profile
    /// after it shows the cold reads in this function and the copy only.)
    fn touch_ahead(&self, first: usize) {
        let mut ahead = first;
        for piece in self.pieces.as_slice() {
            if ahead >= CHUNK_BYTES {
                break;
            }
            ahead += piece.len();
            if let Piece::Written(_) = piece {
                continue;
            }
            let lines = piece
                .bytes(&self.written)
                .iter()
                .step_by(64)
                .fold(0u8, |sum, b| sum.wrapping_add(*b));
            std::hint::black_box(lines);
        }
    }

    fn next_chunk(&mut self) -> Option<Bytes> {
        let mut piece = self.next.take().or_else(|| self.pieces.next())?;
        let whole = piece.len() as u64 == self.remaining;
        match piece {
            Piece::Written(range) if whole => return Some(self.written.slice(range)),
            Piece::Json(object, range) if whole => return Some(object.json().slice(range)),
            Piece::Item(item) if whole || item.bytes().len() >= CHUNK_BYTES => {
                return Some(item.to_bytes())
            }
            _ => {}
        }
        let size = usize::try_from(self.remaining).map_or(CHUNK_BYTES, |n| n.min(CHUNK_BYTES));
        let mut chunk = BytesMut::with_capacity(size);
        self.touch_ahead(piece.len());
        loop {
            let bytes = piece.bytes(&self.written);
            let room = CHUNK_BYTES - chunk.len();
            if bytes.len() > room {
                chunk.extend_from_slice(&bytes[..room]);
                self.next = Some(piece.advanced(room));
                break;
            }
            chunk.extend_from_slice(bytes);
            let Some(more) = self.pieces.next() else {
                self.spent.push(piece);
                break;
            };
            self.spent.push(std::mem::replace(&mut piece, more));
        }
        // The copied pieces are let go together, after the copies, not
        // one between each two.
        self.spent.clear();
        Some(chunk.freeze())
    }
}

impl HttpBody for ChunkedBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        let chunk = self.next_chunk();
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
pub fn json(list: ListResult, kind: &str, api_version: &str, type_meta: bool) -> Chunks {
    let mut out = Chunks::default();
    out.write(b"{\"kind\":");
    fragment(kind, &mut out);
    out.write(b",\"apiVersion\":");
    fragment(api_version, &mut out);
    out.write(b",\"metadata\":");
    fragment(&list_metadata(&list), &mut out);
    out.write(b",\"items\":[");
    // A typed item is written from where its fields start after its type
    // fields, found once per version and kept with it: a later list does
    // not read the items until it sends them.
    let part = |object: &Object| {
        if type_meta {
            let json = object.json_bytes();
            Some(0..json.len() - usize::from(json.ends_with(b"\n")))
        } else {
            object.json_part(|json| typed_item(json, object))
        }
    };
    let parts = caching_object::map_each(&list.items, part);
    for (i, (object, part)) in list.items.into_iter().zip(parts).enumerate() {
        if i > 0 {
            out.write(b",");
        }
        match part {
            Some(range) => {
                if !type_meta {
                    out.write(b"{");
                }
                out.share_json(object, range);
            }
            None => object.peek(|tree| fragment(&WithoutTypeMeta(tree), &mut out)),
        }
    }
    out.write(b"]}\n");
    out
}

/// Where in an object's JSON (`json`) the part a typed list writes after
/// its own `{` lies: from the field after the leading type fields to the
/// closing brace (the trailing newline left out).
fn typed_item(json: &[u8], object: &StoredObject) -> Option<Range<usize>> {
    let body = json.strip_suffix(b"\n").unwrap_or(json);
    Some(caching_object::part_of(
        json,
        after_type_meta(body, object)?,
    ))
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
            // Long enough to be sent from the object's own JSON.
            json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"k": "x".repeat(SHARE_MIN)}}),
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
        // The second typed list finds where each item's fields start kept.
        for (type_meta, written) in [(true, &items), (false, &without), (false, &without)] {
            let whole = json!({"kind": "ConfigMapList", "apiVersion": "v1",
                "metadata": {"resourceVersion": "12", "continue": "next", "remainingItemCount": 3},
                "items": written});
            let expected = encode(&whole, Encoding::Json, false);
            assert_eq!(
                bytes(json(list.clone(), "ConfigMapList", "v1", type_meta)),
                expected
            );
        }
        // Writing the list decoded no item for good.
        assert!(list.items.iter().all(|item| !item.has_tree()));
        let empty = bytes(json(self::list(Vec::new()), "ConfigMapList", "v1", false));
        assert!(empty.ends_with(b",\"items\":[]}\n"));
    }

    fn bytes(chunks: Chunks) -> Vec<u8> {
        let len = chunks.len;
        let mut body = chunks.into_chunked();
        let mut out = Vec::new();
        while let Some(chunk) = body.next_chunk() {
            out.extend_from_slice(&chunk);
        }
        assert_eq!(out.len() as u64, len);
        out
    }

    #[test]
    fn pieces_are_copied_into_chunks_as_they_are_asked_for() {
        let mut chunks = Chunks::default();
        chunks.write(&[b'x'; 600]);
        chunks.write(&[b'x'; 400]);
        let big = Bytes::from(vec![b'y'; 2 * CHUNK_BYTES]);
        chunks.share_item(ListItem::Made(big.clone()));
        for _ in 0..100 {
            chunks.share_item(ListItem::Made(Bytes::from(vec![b'w'; 1000])));
        }
        chunks.share_item(ListItem::Made(Bytes::from_static(b"short, so copied")));
        chunks.write(b"z");
        // The two writes are one piece, as are the short piece and the z.
        assert_eq!(chunks.pieces.len(), 103);
        let mut body = chunks.into_chunked();
        let mut sent = Vec::new();
        while let Some(chunk) = body.next_chunk() {
            sent.push(chunk);
        }
        let sizes: Vec<usize> = sent.iter().map(Bytes::len).collect();
        let w_left = 100_000 - CHUNK_BYTES;
        assert_eq!(
            sizes,
            [CHUNK_BYTES, CHUNK_BYTES + 1000, CHUNK_BYTES, w_left + 17]
        );
        // The x's and the start of the big piece, copied; the rest of the
        // big piece, a chunk's worth or more, sent as it is.
        assert!(sent[0][..1000].iter().all(|b| *b == b'x'));
        assert!(sent[0][1000..].iter().all(|b| *b == b'y'));
        assert_eq!(sent[1].as_ptr(), big[CHUNK_BYTES - 1000..].as_ptr());
        assert!(sent[2].iter().all(|b| *b == b'w'));
        assert!(sent[3].ends_with(b"wshort, so copiedz"));
    }

    #[tokio::test]
    async fn a_body_has_its_length_known() {
        let mut chunks = Chunks::default();
        chunks.write(b"{");
        chunks.share_item(ListItem::Made(Bytes::from(vec![b'a'; 3 * CHUNK_BYTES])));
        chunks.write(b"}");
        let body = chunks.into_body();
        assert_eq!(body.size_hint().exact(), Some(3 * CHUNK_BYTES as u64 + 2));
        let all = http_body_util::BodyExt::collect(body)
            .await
            .expect("a body")
            .to_bytes();
        assert_eq!(all.len(), 3 * CHUNK_BYTES + 2);
        assert!(all.starts_with(b"{a") && all.ends_with(b"a}"));
    }
}
