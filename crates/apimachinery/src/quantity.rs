//! Resource quantities (`100m`, `1.5Gi`, `1e3`), the equivalent of
//! upstream's `k8s.io/apimachinery/pkg/api/resource.Quantity`: parsing
//! with upstream's errors, exact comparison, and the serialized form
//! upstream writes back (its canonical form, or the input itself where
//! upstream keeps it), so objects round-trip as they do through
//! kube-apiserver (`0.5` comes back as `500m`, `1024Mi` as `1Gi`).
//!
//! Values are exact decimals of any size: an unsigned digit string times a
//! power of ten, like upstream's `inf.Dec`.

use std::cmp::Ordering;
use std::fmt;

/// Upstream's grammar for quantities, quoted in its format error.
const SPLIT_RE: &str = "^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$";
/// Precision quantities keep: values are rounded up to nano units.
const NANO_EXP: i32 = -9;
/// Digits an int64 can always hold (upstream's `maxInt64Factors`).
const MAX_INT64_FACTORS: usize = 18;
/// Widest exact sum `add` writes out, in decimal digits.
const MAX_SUM_DIGITS: i64 = 1 << 16;

/// A string that is not a quantity, with upstream's messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuantityError {
    #[error("quantities must match the regular expression '{SPLIT_RE}'")]
    FormatWrong,
    #[error("unable to parse quantity's suffix")]
    Suffix,
}

/// How a quantity is written when it is serialized.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// `12e6`
    DecimalExponent,
    /// `12Mi` (powers of 1024)
    BinarySI,
    /// `12M` (powers of 1000)
    DecimalSI,
}

/// An exact quantity with its serialization format.
#[derive(Debug, Clone)]
pub struct Quantity {
    negative: bool,
    /// Magnitude digits, most significant first, no leading or trailing
    /// zeros; empty for zero.
    digits: Vec<u8>,
    /// The value is `digits × 10^exp`.
    exp: i32,
    format: Format,
    /// The input, when upstream serializes it unchanged.
    original: Option<String>,
}

/// The pieces of a quantity string, as upstream's `parseQuantityString`.
struct Split<'a> {
    negative: bool,
    /// Integer digits without leading zeros ("0" when none).
    num: &'a str,
    /// Fraction digits.
    denom: &'a str,
    suffix: &'a str,
}

fn split(s: &str) -> Result<Split<'_>, QuantityError> {
    let b = s.as_bytes();
    let mut pos = 0;
    let negative = b.first() == Some(&b'-');
    if matches!(b.first(), Some(b'-' | b'+')) {
        pos = 1;
    }
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    let digits_end = |from: usize| {
        (from..b.len())
            .find(|&i| !b[i].is_ascii_digit())
            .unwrap_or(b.len())
    };
    let num_end = digits_end(pos);
    let num = if num_end == pos {
        "0"
    } else {
        &s[pos..num_end]
    };
    pos = num_end;
    let mut denom = "";
    if b.get(pos) == Some(&b'.') {
        let end = digits_end(pos + 1);
        denom = &s[pos + 1..end];
        pos = end;
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if matches!(b.get(pos), Some(b'-' | b'+')) {
        pos += 1;
    }
    if digits_end(pos) != b.len() {
        return Err(QuantityError::FormatWrong);
    }
    Ok(Split {
        negative,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

/// Base, exponent and format a suffix stands for.
fn interpret_suffix(suffix: &str) -> Option<(u32, i32, Format)> {
    let decimal = |e| Some((10, e, Format::DecimalSI));
    let binary = |e| Some((2, e, Format::BinarySI));
    match suffix {
        "" => decimal(0),
        "n" => decimal(-9),
        "u" => decimal(-6),
        "m" => decimal(-3),
        "k" => decimal(3),
        "M" => decimal(6),
        "G" => decimal(9),
        "T" => decimal(12),
        "P" => decimal(15),
        "E" => decimal(18),
        "Ki" => binary(10),
        "Mi" => binary(20),
        "Gi" => binary(30),
        "Ti" => binary(40),
        "Pi" => binary(50),
        "Ei" => binary(60),
        _ => {
            let rest = suffix.strip_prefix(['e', 'E']).filter(|r| !r.is_empty())?;
            let e: i64 = rest.parse().ok()?;
            Some((10, i32::try_from(e).ok()?, Format::DecimalExponent))
        }
    }
}

/// Whether upstream keeps the input string for serialization: only small
/// values already in a canonical-looking form (its int64 fast path).
fn keeps_original(parts: &Split<'_>, exponent: i32, format: Format) -> bool {
    if format == Format::BinarySI {
        if exponent < 0 || !parts.denom.is_empty() {
            return false;
        }
        // Upstream's precision estimate (its float32 math is exact here).
        let precision = 15 - parts.num.len() as i64 - i64::from(exponent) * 3 / 10 - 1;
        let Ok(value) = parts.num.parse::<i64>() else {
            return false;
        };
        let fits = 1i64
            .checked_shl(exponent.unsigned_abs())
            .and_then(|m| value.checked_mul(m))
            .is_some();
        return precision >= 0 && fits && exponent % 10 == 0 && value & 7 != 0;
    }
    let Ok(denom_len) = i32::try_from(parts.denom.len()) else {
        return false;
    };
    let scale = exponent.saturating_sub(denom_len);
    let shifted = format!("{}{}", parts.num, parts.denom);
    shifted.len() <= MAX_INT64_FACTORS
        && scale >= NANO_EXP
        && scale % 3 == 0
        && !shifted.ends_with("000")
        && !shifted.starts_with('0')
}

impl Quantity {
    /// Parses a quantity as upstream's `ParseQuantity`.
    pub fn parse(s: &str) -> Result<Self, QuantityError> {
        if s.is_empty() {
            return Err(QuantityError::FormatWrong);
        }
        if s == "0" {
            return Ok(Quantity::zero(Format::DecimalSI, Some(s.to_owned())));
        }
        let parts = split(s)?;
        let (base, exponent, mut format) =
            interpret_suffix(parts.suffix).ok_or(QuantityError::Suffix)?;
        let keep = keeps_original(&parts, exponent, format);
        let mut digits: Vec<u8> = parts
            .num
            .bytes()
            .chain(parts.denom.bytes())
            .map(|b| b - b'0')
            .collect();
        let denom_len = i32::try_from(parts.denom.len()).map_err(|_| QuantityError::FormatWrong)?;
        let mut exp = -denom_len;
        if base == 10 {
            exp = exp.saturating_add(exponent);
        } else {
            for _ in 0..exponent {
                mul_small(&mut digits, 2);
            }
        }
        let mut q = Quantity {
            negative: parts.negative,
            digits,
            exp,
            format,
            original: None,
        };
        q.normalize();
        if !keep {
            q.round_up_to_nano();
            if format == Format::BinarySI {
                q.clamp_binary();
                if q.cmp_magnitude_int(1) == Ordering::Less && !q.digits.is_empty() {
                    format = Format::DecimalSI;
                }
            }
            q.format = format;
        }
        if q.digits.is_empty() {
            q.negative = false;
        }
        if keep {
            q.original = Some(s.to_owned());
        }
        Ok(q)
    }

    fn zero(format: Format, original: Option<String>) -> Self {
        Quantity {
            negative: false,
            digits: Vec::new(),
            exp: 0,
            format,
            original,
        }
    }

    /// The format the quantity serializes in.
    pub fn format(&self) -> Format {
        self.format
    }

    pub fn is_zero(&self) -> bool {
        self.digits.is_empty()
    }

    pub fn is_negative(&self) -> bool {
        self.negative && !self.is_zero()
    }

    /// Moves trailing zero digits into the exponent; drops leading zeros.
    fn normalize(&mut self) {
        let lead = self.digits.iter().take_while(|d| **d == 0).count();
        self.digits.drain(..lead);
        while self.digits.last() == Some(&0) {
            self.digits.pop();
            self.exp = self.exp.saturating_add(1);
        }
        if self.digits.is_empty() {
            self.exp = 0;
        }
    }

    /// Rounds the magnitude up (away from zero) to nano precision.
    fn round_up_to_nano(&mut self) {
        if self.exp >= NANO_EXP || self.digits.is_empty() {
            return;
        }
        let drop = usize::try_from(i64::from(NANO_EXP) - i64::from(self.exp)).unwrap_or(usize::MAX);
        let keep = self.digits.len().saturating_sub(drop);
        self.digits.truncate(keep);
        // Something non-zero was dropped (digits end in a non-zero digit).
        add_one(&mut self.digits);
        self.exp = NANO_EXP;
        self.normalize();
    }

    /// Binary quantities are capped at 2^63-1, as upstream does.
    fn clamp_binary(&mut self) {
        const MAX: i128 = i64::MAX as i128;
        if self.cmp_magnitude_int(MAX) == Ordering::Greater {
            self.digits = MAX.to_string().bytes().map(|b| b - b'0').collect();
            self.exp = 0;
            self.normalize();
        }
    }

    /// Position of the most significant digit (value magnitude ~ 10^this).
    fn magnitude_order(&self) -> i64 {
        self.digits.len() as i64 + i64::from(self.exp)
    }

    /// Compares |self| with the non-negative integer `n`.
    fn cmp_magnitude_int(&self, n: i128) -> Ordering {
        let mut other = Quantity::zero(Format::DecimalSI, None);
        other.digits = n.to_string().bytes().map(|b| b - b'0').collect();
        other.normalize();
        self.cmp_magnitude(&other)
    }

    fn cmp_magnitude(&self, other: &Quantity) -> Ordering {
        match (self.digits.is_empty(), other.digits.is_empty()) {
            (true, true) => return Ordering::Equal,
            (true, false) => return Ordering::Less,
            (false, true) => return Ordering::Greater,
            _ => {}
        }
        self.magnitude_order()
            .cmp(&other.magnitude_order())
            .then_with(|| {
                let len = self.digits.len().max(other.digits.len());
                let digit = |d: &[u8], i: usize| d.get(i).copied().unwrap_or(0);
                (0..len)
                    .map(|i| digit(&self.digits, i).cmp(&digit(&other.digits, i)))
                    .find(|o| o.is_ne())
                    .unwrap_or(Ordering::Equal)
            })
    }

    /// The value in units of 10^`exp`, rounded away from zero, as
    /// upstream's `ScaledValue`; `None` when it does not fit an i64.
    pub fn scaled_value(&self, exp: i32) -> Option<i64> {
        if self.digits.is_empty() {
            return Some(0);
        }
        let shift = i64::from(self.exp) - i64::from(exp);
        let keep = i64::try_from(self.digits.len()).ok()? + shift;
        if keep > 19 {
            return None;
        }
        let kept = usize::try_from(keep.max(0)).ok()?;
        let mut magnitude: i128 = 0;
        for i in 0..kept {
            magnitude = magnitude * 10 + i128::from(self.digits.get(i).copied().unwrap_or(0));
        }
        // Dropped digits are never all zero (there are no trailing zeros),
        // so dropping any rounds the magnitude up, as upstream's int64
        // path does for either sign.
        if kept < self.digits.len() {
            magnitude += 1;
        }
        i64::try_from(if self.negative { -magnitude } else { magnitude }).ok()
    }

    /// The value in whole units, rounded away from zero (upstream's `Value`).
    pub fn value(&self) -> Option<i64> {
        self.scaled_value(0)
    }

    /// The value in thousandths, rounded away from zero (upstream's
    /// `MilliValue`).
    pub fn milli_value(&self) -> Option<i64> {
        self.scaled_value(-3)
    }

    /// Adds `other` in place, as upstream's `Quantity.Add`: the sum keeps
    /// this quantity's format (or takes `other`'s when this one is zero) and
    /// is written in canonical form, so `1Gi` + `1Gi` reads `2Gi`.
    pub fn add(&mut self, other: &Quantity) {
        self.original = None;
        if self.is_zero() {
            self.format = other.format;
            self.negative = other.negative;
            self.digits.clone_from(&other.digits);
            self.exp = other.exp;
            return;
        }
        if other.is_zero() {
            return;
        }
        let exp = self.exp.min(other.exp);
        let width = |q: &Quantity| i64::from(q.exp) - i64::from(exp) + q.digits.len() as i64;
        if width(self).max(width(other)) > MAX_SUM_DIGITS {
            // Terms this far apart only arise from absurd exponents; the
            // smaller one is kept out rather than spelled out digit by digit.
            if self.cmp_magnitude(other) == Ordering::Less {
                self.negative = other.negative;
                self.digits.clone_from(&other.digits);
                self.exp = other.exp;
            }
            return;
        }
        let aligned = |q: &Quantity| {
            let mut d = q.digits.clone();
            d.resize(d.len() + (q.exp - exp).unsigned_abs() as usize, 0);
            d
        };
        let (a, b) = (aligned(self), aligned(other));
        if self.negative == other.negative {
            self.digits = add_digits(&a, &b);
        } else if self.cmp_magnitude(other) == Ordering::Less {
            self.digits = sub_digits(&b, &a);
            self.negative = other.negative;
        } else {
            self.digits = sub_digits(&a, &b);
        }
        self.exp = exp;
        self.normalize();
        if self.digits.is_empty() {
            self.negative = false;
        }
    }

    /// The canonical serialized form, ignoring any kept input.
    pub fn canonical(&self) -> String {
        if self.digits.is_empty() {
            return "0".to_owned();
        }
        let mut format = self.format;
        if format == Format::BinarySI
            && (self.cmp_magnitude_int(1024) == Ordering::Less || self.exp < 0)
        {
            // Small or fractional binary values are shown in decimal.
            format = Format::DecimalSI;
        }
        let sign = if self.negative { "-" } else { "" };
        if format == Format::BinarySI {
            let mut digits = self.digits.clone();
            digits.extend(std::iter::repeat_n(
                0,
                usize::try_from(self.exp).unwrap_or(0),
            ));
            let mut power = 0;
            while power < 6 && div_small_exact(&mut digits, 1024) {
                power += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][power];
            return format!("{sign}{}{suffix}", digits_to_string(&digits));
        }
        // Lower the exponent to a multiple of three.
        let mut digits = self.digits.clone();
        let mut exp = self.exp;
        while exp % 3 != 0 {
            digits.push(0);
            exp -= 1;
        }
        let suffix = match format {
            Format::DecimalExponent if exp == 0 => String::new(),
            Format::DecimalExponent => format!("e{exp}"),
            _ => decimal_si_suffix(exp).to_owned(),
        };
        format!("{sign}{}{suffix}", digits_to_string(&digits))
    }
}

/// The SI suffix of a power of ten; upstream writes none for powers it
/// has no suffix for.
fn decimal_si_suffix(exp: i32) -> &'static str {
    match exp {
        -9 => "n",
        -6 => "u",
        -3 => "m",
        3 => "k",
        6 => "M",
        9 => "G",
        12 => "T",
        15 => "P",
        18 => "E",
        _ => "",
    }
}

fn digits_to_string(digits: &[u8]) -> String {
    let s: String = digits
        .iter()
        .skip_while(|d| **d == 0)
        .map(|d| char::from(b'0' + d))
        .collect();
    if s.is_empty() {
        "0".to_owned()
    } else {
        s
    }
}

/// a + b, both aligned to the same exponent.
fn add_digits(a: &[u8], b: &[u8]) -> Vec<u8> {
    let len = a.len().max(b.len());
    let at = |d: &[u8], i: usize| d.len().checked_sub(i + 1).map_or(0, |j| d[j]);
    let mut out = Vec::with_capacity(len + 1);
    let mut carry = 0;
    for i in 0..len {
        let v = at(a, i) + at(b, i) + carry;
        out.push(v % 10);
        carry = v / 10;
    }
    if carry > 0 {
        out.push(carry);
    }
    out.reverse();
    out
}

/// a − b for a ≥ b, both aligned to the same exponent.
fn sub_digits(a: &[u8], b: &[u8]) -> Vec<u8> {
    let at = |d: &[u8], i: usize| d.len().checked_sub(i + 1).map_or(0, |j| d[j]);
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = 0;
    for i in 0..a.len() {
        let (x, y) = (at(a, i), at(b, i) + borrow);
        borrow = u8::from(x < y);
        out.push(x + borrow * 10 - y);
    }
    out.reverse();
    out
}

/// digits × m, in place.
fn mul_small(digits: &mut Vec<u8>, m: u32) {
    let mut carry = 0u32;
    for d in digits.iter_mut().rev() {
        let v = u32::from(*d) * m + carry;
        *d = (v % 10) as u8;
        carry = v / 10;
    }
    while carry > 0 {
        digits.insert(0, (carry % 10) as u8);
        carry /= 10;
    }
}

/// digits + 1, in place.
fn add_one(digits: &mut Vec<u8>) {
    for d in digits.iter_mut().rev() {
        if *d < 9 {
            *d += 1;
            return;
        }
        *d = 0;
    }
    digits.insert(0, 1);
}

/// Divides by `m` in place when it divides exactly; leaves the digits
/// unchanged and returns false otherwise.
fn div_small_exact(digits: &mut Vec<u8>, m: u32) -> bool {
    let mut quotient = Vec::with_capacity(digits.len());
    let mut rem = 0u32;
    for d in digits.iter() {
        let v = rem * 10 + u32::from(*d);
        quotient.push((v / m) as u8);
        rem = v % m;
    }
    if rem != 0 {
        return false;
    }
    let lead = quotient.iter().take_while(|d| **d == 0).count();
    quotient.drain(..lead);
    *digits = quotient;
    true
}

impl fmt::Display for Quantity {
    /// The serialized form: the kept input or the canonical form.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.original {
            Some(s) => f.write_str(s),
            None => f.write_str(&self.canonical()),
        }
    }
}

impl std::str::FromStr for Quantity {
    type Err = QuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Quantity::parse(s)
    }
}

impl PartialEq for Quantity {
    /// Equal values, whatever their format.
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Quantity {}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        match (self.is_negative(), other.is_negative()) {
            (false, true) => Ordering::Greater,
            (true, false) => Ordering::Less,
            (false, false) => self.cmp_magnitude(other),
            (true, true) => other.cmp_magnitude(self),
        }
    }
}

/// Re-serializes a quantity found in JSON (a string or a number) the way
/// upstream would after decoding it.
pub fn canonicalize_json(value: &serde_json::Value) -> Result<String, QuantityError> {
    let text = match value {
        serde_json::Value::String(s) => s.trim().to_owned(),
        serde_json::Value::Number(n) => n.to_string(),
        _ => return Err(QuantityError::FormatWrong),
    };
    Ok(Quantity::parse(&text)?.to_string())
}

#[cfg(test)]
mod tests;
