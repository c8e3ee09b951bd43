//! The CEL environment rules are compiled and evaluated in: the standard
//! library, the cel crate's strings and lists extensions, and the
//! Kubernetes libraries it lacks (lists, regex, URLs, quantities, IPs and
//! CIDRs), registered as overloads so that member calls dispatch on the
//! receiver's type.

mod comprehensions;
mod ext;
mod format;
mod ip;
mod jsonpatch;
mod lists;
mod quantity;
mod regex;
mod urls;

use std::sync::{Arc, LazyLock};

use cel::common::traits::Iterable;
use cel::common::value::{CowVal, FromVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use crate::mutation::OpenStruct;

/// The shared environment; building it only fails if two registrations
/// clash, a programming error reported as an internal error to callers.
static ENV: LazyLock<Result<Arc<Env>, DeclarationError>> = LazyLock::new(|| build().map(Arc::new));

/// The environment every rule runs in.
pub(crate) fn env() -> Result<Arc<Env>, DeclarationError> {
    ENV.clone()
}

/// The environment of mutating admission policies: the shared one plus the
/// JSON patch library and the `Object` and `JSONPatch` struct types (nested
/// `Object.<path>` literals are evaluated as `Object`, see
/// [`crate::mutation::unnest`]).
static MUTATION_ENV: LazyLock<Result<Arc<Env>, DeclarationError>> =
    LazyLock::new(|| build_mutation().map(Arc::new));

/// The environment mutating policy expressions run in.
pub(crate) fn mutation_env() -> Result<Arc<Env>, DeclarationError> {
    MUTATION_ENV.clone()
}

fn build_mutation() -> Result<Env, DeclarationError> {
    let mut env = build()?;
    jsonpatch::register(&mut env)?;
    env.add_type(OpenStruct::object())?;
    env.add_type(OpenStruct::json_patch())?;
    Ok(env)
}

fn build() -> Result<Env, DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings)?;
    env.add_extension(cel::extensions::lists)?;
    lists::register(&mut env)?;
    regex::register(&mut env)?;
    urls::register(&mut env)?;
    quantity::register(&mut env)?;
    ip::register(&mut env)?;
    format::register(&mut env)?;
    ext::register(&mut env)?;
    comprehensions::register(&mut env)?;
    Ok(env)
}

/// `args` as exactly `N` arguments.
fn take<'b, 'v, const N: usize>(
    args: Vec<CowVal<'b, 'v>>,
) -> Result<[CowVal<'b, 'v>; N], ExecutionError> {
    args.try_into()
        .map_err(|args: Vec<_>| ExecutionError::invalid_argument_count(N, args.len()))
}

/// `val` as the `T` its overload was declared for.
fn arg<'b, 'v, T: FromVal<'b, 'v> + Val>(val: &'b (dyn Val + 'v)) -> Result<&'b T, ExecutionError> {
    val.downcast_ref::<T>()
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: val.get_type().name().to_owned(),
            want: T::cel_type().name().to_owned(),
        })
}

/// The elements of a list (or the keys of a map).
fn elements<'b, 'v>(list: &'b (dyn Val + 'v)) -> Result<Vec<&'b (dyn Val + 'v)>, ExecutionError> {
    let iterable: &'b (dyn Iterable + 'v) =
        list.as_iterable()
            .ok_or_else(|| ExecutionError::UnexpectedType {
                got: list.get_type().name().to_owned(),
                want: "list".to_owned(),
            })?;
    let mut iter = iterable.iter();
    let mut out = Vec::new();
    while let Some(item) = iter.next() {
        out.push(item);
    }
    Ok(out)
}

/// A string argument's text.
fn text<'b>(val: &'b (dyn Val + '_)) -> Result<&'b str, ExecutionError> {
    <&str>::try_from(val).map_err(|v| ExecutionError::UnexpectedType {
        got: v.get_type().name().to_owned(),
        want: "string".to_owned(),
    })
}

/// Implements [`Val`] for a library's own `'static` value type, with CEL
/// type `$ty`, equality from `PartialEq` and copies from `Clone`.
macro_rules! opaque_val {
    ($t:ty, $ty:expr) => {
        impl cel::common::value::Val for $t {
            fn get_type(&self) -> &cel::common::types::Type {
                <Self as cel::common::value::Val>::cel_type()
            }
            fn cel_type() -> &'static cel::common::types::Type {
                &$ty
            }
            fn equals(&self, other: &dyn cel::common::value::Val) -> bool {
                other.downcast_ref::<$t>().is_some_and(|o| o == self)
            }
            fn clone_as_boxed<'v>(&self) -> Box<dyn cel::common::value::Val + 'v> {
                Box::new(self.clone())
            }
            fn as_any(&self) -> Option<&dyn std::any::Any> {
                Some(self)
            }
        }
        impl cel::common::value::StaticVal for $t {}
    };
}
use opaque_val;

/// A boolean result.
fn boolean<'b, 'v>(b: bool) -> CowVal<'b, 'v> {
    CowVal::owned(cel::common::types::CelBool::from(b))
}

/// A string result.
fn string<'b, 'v>(s: String) -> CowVal<'b, 'v> {
    CowVal::owned(cel::common::types::CelString::from(s))
}
