//! Kubernetes' CBOR encoding (`application/cbor`, RFC 8949) for API
//! objects held as JSON trees, with upstream's rules (apimachinery's
//! `runtime/serializer/cbor`, enabled by the `CBORServingAndStorage` gate):
//!
//! - every encoded object starts with the self-described CBOR tag 55799
//!   (`0xd9 0xd9 0xf7`), which is also how stored CBOR is recognised;
//! - strings and map keys are written as byte strings, map keys sorted as
//!   RFC 8949's core deterministic encoding wants (shorter first, then
//!   bytewise), integers in their shortest form, floats in the shortest
//!   IEEE 754 width that keeps their value — so integers and floats stay
//!   distinct as they are in the JSON tree;
//! - decoding is strict: duplicate map keys, non-string map keys, simple
//!   values other than false/true/null, NaN and infinities, integers beyond
//!   int64, bignum tags, invalid UTF-8 text, malformed or truncated items
//!   and trailing bytes are errors. Indefinite lengths and other tags are
//!   accepted (time tags become RFC 3339 strings, "expected later encoding"
//!   tags over byte strings become base64/base64url/hex strings, any other
//!   tag stands for its content).
//!
//! The wire format (item heads, float widths) is `ciborium-ll`'s; the data
//! model mapping and the strictness checks above are written here because
//! that crate only reads and writes heads and leaves validity to its users.
//!
//! Nesting is limited to [`MAX_DEPTH`] levels, arrays to
//! [`MAX_ARRAY_ELEMENTS`] elements and maps to [`MAX_MAP_PAIRS`] pairs, as
//! upstream's decode mode sets `MaxNestedLevels`, `MaxArrayElements` and
//! `MaxMapPairs` (cbor/internal/modes/decode.go), with fxamacker/cbor's
//! messages; a claimed length is checked before anything is read.

mod decode;
mod encode;
mod time;

pub use decode::{decode, decode_first};
pub use encode::{encode, encode_list, encode_watch_event, encode_watch_event_with, to_vec};

/// The media type of one CBOR-encoded object.
pub const CONTENT_TYPE: &str = "application/cbor";

/// The media type of a watch stream: a CBOR sequence (RFC 8742) of events.
pub const SEQUENCE_CONTENT_TYPE: &str = "application/cbor-seq";

/// The head of tag 55799 ("self-described CBOR") that encloses every
/// encoded object: a magic number telling CBOR from other encodings.
pub const SELF_DESCRIBED: [u8; 3] = [0xd9, 0xd9, 0xf7];

/// How deeply arrays, maps and tags may nest in decoded input.
pub const MAX_DEPTH: usize = 64;

/// The most elements one array may hold.
pub const MAX_ARRAY_ELEMENTS: usize = 1024;

/// The most key-value pairs one map may hold.
pub const MAX_MAP_PAIRS: usize = 1024;

/// Whether stored or received bytes are CBOR (start with the
/// self-described tag), as upstream's recognizing decoder tells.
pub fn is_cbor(data: &[u8]) -> bool {
    data.starts_with(&SELF_DESCRIBED)
}

/// Why CBOR input was refused or a value could not be encoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CborError {
    #[error("cbor: unexpected EOF")]
    UnexpectedEof,
    #[error("cbor: malformed data item at offset {offset}")]
    Malformed { offset: usize },
    #[error("cbor: {count} bytes of extraneous data starting at index {index}")]
    ExtraneousData { count: usize, index: usize },
    #[error("cbor: exceeded max nested level {MAX_DEPTH}")]
    TooDeep,
    #[error("cbor: exceeded max number of elements {MAX_ARRAY_ELEMENTS} for CBOR array")]
    TooManyElements,
    #[error("cbor: exceeded max number of key-value pairs {MAX_MAP_PAIRS} for CBOR map")]
    TooManyPairs,
    #[error("cbor: invalid UTF-8 string")]
    InvalidUtf8,
    #[error("cbor: found duplicate map key \"{key}\" at map element index {index}")]
    DuplicateKey { key: String, index: usize },
    #[error("cbor: map key of type {0} is not a string")]
    NonStringKey(&'static str),
    #[error("cbor: integer {0} does not fit in int64")]
    IntegerOverflow(String),
    #[error("cbor: {0} is not accepted")]
    Unacceptable(String),
    #[error("cbor: unexpected \"break\" code")]
    UnexpectedBreak,
    #[error("cbor: tag number {tag} must be followed by {expected}, got {got}")]
    TagContent {
        tag: u64,
        expected: &'static str,
        got: &'static str,
    },
    #[error("cbor: invalid time in tag {tag}: {message}")]
    InvalidTime { tag: u64, message: String },
    #[error("cbor: {0}")]
    Serialize(String),
}
