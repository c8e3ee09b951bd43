//! Whether an encoding decodes back to exactly the JSON it was written
//! from ([`crate::encode_checked`]). The encoder asks these rules as it
//! walks the value, so the answer costs no second walk and no decode; the
//! rules mirror what [`crate::decode`] does to each field and are
//! conservative: whatever they are unsure of counts as not exact.
//!
//! What decoding does not give back: members the schema does not know
//! (dropped), `null` members (left out), empty lists and maps and empty
//! optional strings (not on the wire), zeros of `omit_zero` fields
//! (dropped), absent fields decoding fills in (required ones, and
//! always-written zeros decoding keeps), whole doubles (read back as
//! integers), times not in their canonical form (read back formatted), an
//! empty Quantity (read back as `"0"`), empty schema-union arrays, and the
//! items of lists and the objects of watch events (given type fields).
//! Field order is not compared: decoding writes fields in schema order.

use serde_json::Value;

use crate::decode::{double, is_zero};
use crate::generated::MESSAGES;
use crate::schema::{FieldDesc, Shape, Special, Ty};
use crate::time::format_time;

/// The verdict so far. Once not exact (or when nobody asked: see
/// [`Exact::unchecked`]) the encoder skips the checks.
pub(crate) struct Exact(bool);

impl Exact {
    /// Checks every value from here on.
    pub(crate) fn checked() -> Self {
        Exact(true)
    }

    /// Checks nothing (the encoding of a response, whose decoding nobody
    /// predicts).
    pub(crate) fn unchecked() -> Self {
        Exact(false)
    }

    /// Whether the encoding so far decodes to what it was written from
    /// (always `false` when unchecked).
    pub(crate) fn holds(&self) -> bool {
        self.0
    }

    /// Notes that decoding does not give back what was written unless
    /// `given_back`.
    pub(crate) fn require(&mut self, given_back: bool) {
        self.0 &= given_back;
    }

    /// An object of which `used` members were encoded: members left out
    /// (unknown or `null`) are not given back.
    pub(crate) fn all_used(&mut self, used: usize, members: usize) {
        self.require(used == members);
    }

    /// Field `f`, absent from the JSON: decoding leaves it out too.
    pub(crate) fn absent(&mut self, f: &FieldDesc) {
        if self.0 {
            self.require(absent_stays_absent(f));
        }
    }

    /// Field `f` present as `v` (not `null`): whether decoding keeps the
    /// field at all (the value itself is checked as it is encoded).
    pub(crate) fn present(&mut self, f: &FieldDesc, v: &Value) {
        if !self.0 {
            return;
        }
        let filled_in = f.required && !f.omit_zero;
        let kept = match (f.shape, v) {
            (Shape::Repeated, Value::Array(items)) => !items.is_empty() || filled_in,
            (Shape::Map, Value::Object(entries)) => {
                (!entries.is_empty() || filled_in) && entries.values().all(|v| !v.is_null())
            }
            (Shape::Single, Value::String(s)) if matches!(f.ty, Ty::String | Ty::Bytes) => {
                !s.is_empty() || f.required || f.keep_empty
            }
            (Shape::Single, v) => !(f.omit_zero && is_zero(v)),
            _ => true,
        };
        self.require(kept);
    }

    /// A double `v`: integral values decode as integers.
    pub(crate) fn double(&mut self, v: &Value, n: f64) {
        if self.0 {
            self.require(double(n).is_ok_and(|back| back == *v));
        }
    }

    /// A time string `s` written as `seconds` and `nanos`: decoding
    /// formats it (whole seconds for a Time, microseconds for a MicroTime).
    pub(crate) fn time(&mut self, s: &str, (seconds, nanos): (i64, u32), micros: bool) {
        if self.0 {
            let back = i32::try_from(nanos)
                .ok()
                .and_then(|n| format_time(seconds, n, micros));
            self.require(back.as_deref() == Some(s));
        }
    }
}

/// Whether decoding leaves out field `f` when the JSON does: nothing is
/// written and the field is not required, or its zero is written (Go's
/// marshaller writes non-pointer fields) and decoding drops that zero.
fn absent_stays_absent(f: &FieldDesc) -> bool {
    if f.always {
        return f.shape == Shape::Single
            && match f.ty {
                Ty::String | Ty::Bytes => !f.required && !f.keep_empty,
                Ty::Int32 | Ty::Int64 | Ty::Bool | Ty::Double => f.omit_zero,
                Ty::Message(idx) => decodes_empty_as_absent(MESSAGES[idx].special),
            };
    }
    let filled_in = f.required && !f.omit_zero;
    match (f.shape, f.ty) {
        (Shape::Single, Ty::Message(idx)) => !filled_in || MESSAGES[idx].special != Special::None,
        _ => !filled_in,
    }
}

/// Whether an empty message of this form decodes to nothing.
fn decodes_empty_as_absent(special: Special) -> bool {
    matches!(
        special,
        Special::Time
            | Special::MicroTime
            | Special::RawJson
            | Special::SchemaOrArray
            | Special::SchemaOrStringArray
    )
}
