//! The cases of the semantics suite, one public async fn per case, each
//! taking a fresh [`Harness`](super::Harness). The macro
//! [`semantics_suite!`](crate::semantics_suite) turns them into tests.

mod crud;
mod list;
mod update;
mod watch;

pub use crud::*;
pub use list::*;
pub use update::*;
pub use watch::*;

use futures::future::BoxFuture;
use serde_json::Value;

use crate::error::Result;
use crate::interface::Object;

/// A deletion validator that allows everything.
pub(crate) fn allow_delete(_: Object) -> BoxFuture<'static, Result<()>> {
    Box::pin(async { Ok(()) })
}

/// An update function that sets `data.value` on the current object.
pub(crate) fn set_value(
    value: &str,
) -> impl Fn(Option<Object>) -> BoxFuture<'static, Result<Value>> {
    let value = value.to_string();
    move |current| {
        let value = value.clone();
        Box::pin(async move {
            let mut obj = current.map_or_else(|| super::object("new", ""), |c| (*c).clone());
            obj["data"]["value"] = Value::String(value);
            Ok(obj)
        })
    }
}
