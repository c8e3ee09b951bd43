//! Kubernetes' quantity library: `quantity()`, `isQuantity()` and the
//! arithmetic and comparisons of resource quantities (`1.5Gi`, `500m`).
//! A quantity is held exactly, in billionths, the finest precision a
//! Kubernetes quantity keeps.

use std::cmp::Ordering;

use cel::common::types::{CelDouble, CelInt, Type, INT_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::{arg, boolean, opaque_val, take, text};

/// The CEL type of quantities; registrations take their own copies.
const QUANTITY_TYPE: Type = Type::new_unspecified_type("kubernetes.Quantity");
static QUANTITY_TYPE_REF: Type = QUANTITY_TYPE;

/// Billionths in one.
const NANO: i128 = 1_000_000_000;

/// Why a string is not a quantity.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum QuantityError {
    #[error("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")]
    Format,
    #[error("quantity is too large")]
    TooLarge,
}

/// A resource quantity, in billionths.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Quantity {
    nanos: i128,
}

opaque_val!(Quantity, QUANTITY_TYPE_REF);

impl Quantity {
    /// Parses a quantity as Kubernetes' `ParseQuantity` accepts it.
    pub(crate) fn parse(s: &str) -> Result<Quantity, QuantityError> {
        let (negative, rest) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(number_end);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() || fraction.contains('.') {
            return Err(QuantityError::Format);
        }
        let (base, exponent) = parse_suffix(suffix)?;
        // digits * base^exponent / 10^len(fraction), in billionths.
        let mut digits: i128 = 0;
        for c in whole.chars().chain(fraction.chars()) {
            let d = i128::from(c.to_digit(10).ok_or(QuantityError::Format)?);
            digits = digits
                .checked_mul(10)
                .and_then(|v| v.checked_add(d))
                .ok_or(QuantityError::TooLarge)?;
        }
        let scale = i32::try_from(fraction.len()).map_err(|_| QuantityError::TooLarge)?;
        let nanos = scaled(digits, base, exponent, scale)?;
        Ok(Quantity {
            nanos: if negative { -nanos } else { nanos },
        })
    }

    fn sign(self) -> i64 {
        match self.nanos.cmp(&0) {
            Ordering::Less => -1,
            Ordering::Equal => 0,
            Ordering::Greater => 1,
        }
    }

    fn as_integer(self) -> Option<i64> {
        (self.nanos % NANO == 0)
            .then(|| i64::try_from(self.nanos / NANO).ok())
            .flatten()
    }
}

/// The base and exponent a suffix multiplies by.
fn parse_suffix(suffix: &str) -> Result<(i128, i32), QuantityError> {
    let decimal = |e: i32| Ok((10, e));
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
        "Ki" => Ok((2, 10)),
        "Mi" => Ok((2, 20)),
        "Gi" => Ok((2, 30)),
        "Ti" => Ok((2, 40)),
        "Pi" => Ok((2, 50)),
        "Ei" => Ok((2, 60)),
        s if s.starts_with(['e', 'E']) => {
            let exp: i32 = s[1..].parse().map_err(|_| QuantityError::Format)?;
            decimal(exp)
        }
        _ => Err(QuantityError::Format),
    }
}

/// `digits * base^exponent / 10^scale` in billionths, rounded up as
/// Kubernetes rounds values finer than a billionth.
fn scaled(digits: i128, base: i128, exponent: i32, scale: i32) -> Result<i128, QuantityError> {
    let pow = |b: i128, e: i32| -> Result<i128, QuantityError> {
        let e = u32::try_from(e).map_err(|_| QuantityError::TooLarge)?;
        b.checked_pow(e).ok_or(QuantityError::TooLarge)
    };
    let (mut numerator, mut denominator) = (digits.checked_mul(NANO), 1i128);
    if base == 10 {
        let net = exponent - scale;
        if net >= 0 {
            numerator = numerator.and_then(|n| pow(10, net).ok().and_then(|p| n.checked_mul(p)));
        } else {
            denominator = pow(10, -net)?;
        }
    } else {
        numerator = numerator.and_then(|n| pow(base, exponent).ok().and_then(|p| n.checked_mul(p)));
        denominator = pow(10, scale)?;
    }
    let numerator = numerator.ok_or(QuantityError::TooLarge)?;
    Ok(numerator.div_euclid(denominator) + i128::from(numerator.rem_euclid(denominator) != 0))
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(QUANTITY_TYPE)?;
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        to_quantity,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    let unary: [(&str, cel::common::functions::Function); 4] = [
        ("sign", sign),
        ("isInteger", is_integer),
        ("asInteger", as_integer),
        ("asApproximateFloat", as_approximate_float),
    ];
    for (name, op) in unary {
        env.add_member_overload(name, &format!("quantity_{name}"), QUANTITY_TYPE, vec![], op)?;
    }
    let binary: [(&str, cel::common::functions::Function); 5] = [
        ("add", add),
        ("sub", sub),
        ("compareTo", compare_to),
        ("isLessThan", is_less_than),
        ("isGreaterThan", is_greater_than),
    ];
    for (name, op) in binary {
        env.add_member_overload(
            name,
            &format!("quantity_{name}_quantity"),
            QUANTITY_TYPE,
            vec![QUANTITY_TYPE],
            op,
        )?;
    }
    env.add_member_overload(
        "add",
        "quantity_add_int",
        QUANTITY_TYPE,
        vec![INT_TYPE],
        add,
    )?;
    env.add_member_overload(
        "sub",
        "quantity_sub_int",
        QUANTITY_TYPE,
        vec![INT_TYPE],
        sub,
    )?;
    Ok(())
}

fn to_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    Quantity::parse(text(s.as_ref())?)
        .map(CowVal::owned)
        .map_err(|e| ExecutionError::function_error("quantity", e))
}

fn is_quantity<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    Ok(boolean(Quantity::parse(text(s.as_ref())?).is_ok()))
}

fn receiver<'b, 'v, const N: usize>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<(Quantity, [CowVal<'b, 'v>; N]), ExecutionError> {
    let mut args = args;
    if args.is_empty() {
        return Err(ExecutionError::missing_argument_or_target());
    }
    let this = *arg::<Quantity>(args.remove(0).as_ref())?;
    Ok((this, take(args)?))
}

fn sign<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (q, []) = receiver::<0>(args)?;
    Ok(CowVal::owned(CelInt::from(q.sign())))
}

fn is_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (q, []) = receiver::<0>(args)?;
    Ok(boolean(q.as_integer().is_some()))
}

fn as_integer<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (q, []) = receiver::<0>(args)?;
    q.as_integer()
        .map(|i| CowVal::owned(CelInt::from(i)))
        .ok_or_else(|| {
            ExecutionError::function_error("asInteger", "cannot convert value to integer")
        })
}

fn as_approximate_float<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (q, []) = receiver::<0>(args)?;
    Ok(CowVal::owned(CelDouble::from(q.nanos as f64 / NANO as f64)))
}

/// The other operand of a binary quantity function: a quantity or an int.
fn operand(val: &dyn Val) -> Result<Quantity, ExecutionError> {
    if let Some(q) = val.downcast_ref::<Quantity>() {
        return Ok(*q);
    }
    let i = arg::<CelInt>(val)?;
    Ok(Quantity {
        nanos: i128::from(*i.inner()) * NANO,
    })
}

fn arithmetic<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: fn(i128, i128) -> Option<i128>,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let (q, [other]) = receiver::<1>(args)?;
    let other = operand(other.as_ref())?;
    f(q.nanos, other.nanos)
        .map(|nanos| CowVal::owned(Quantity { nanos }))
        .ok_or_else(|| ExecutionError::function_error("quantity", QuantityError::TooLarge))
}

fn add<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    arithmetic(args, i128::checked_add)
}

fn sub<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    arithmetic(args, i128::checked_sub)
}

fn ordering<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<Ordering, ExecutionError> {
    let (q, [other]) = receiver::<1>(args)?;
    Ok(q.cmp(arg::<Quantity>(other.as_ref())?))
}

fn compare_to<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let order = ordering(args)? as i64;
    Ok(CowVal::owned(CelInt::from(order)))
}

fn is_less_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(boolean(ordering(args)? == Ordering::Less))
}

fn is_greater_than<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    Ok(boolean(ordering(args)? == Ordering::Greater))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nanos(s: &str) -> i128 {
        Quantity::parse(s).map(|q| q.nanos).unwrap_or(i128::MIN)
    }

    #[test]
    fn parses_suffixes_exactly() {
        assert_eq!(nanos("1"), NANO);
        assert_eq!(nanos("500m"), NANO / 2);
        assert_eq!(nanos("1.5Gi"), 3 * (1 << 29) * NANO);
        assert_eq!(nanos("2k"), 2000 * NANO);
        assert_eq!(nanos("1e3"), 1000 * NANO);
        assert_eq!(nanos("-1.5"), -3 * NANO / 2);
        assert_eq!(nanos("1n"), 1);
        assert_eq!(nanos(".5"), NANO / 2);
    }

    #[test]
    fn rejects_malformed_quantities() {
        for bad in ["", "1.5.5", "abc", "1Qi", "1 Gi", "+", "."] {
            assert_eq!(Quantity::parse(bad), Err(QuantityError::Format), "{bad}");
        }
        assert_eq!(Quantity::parse("1e40"), Err(QuantityError::TooLarge));
    }
}
