//! The cases of the semantics suite, one public async fn per case, each
//! taking a fresh [`Harness`](super::Harness). The macro
//! [`semantics_suite!`](crate::semantics_suite) turns them into tests.

mod crud;
mod list;
mod reuse;
mod update;
mod watch;

pub use crud::*;
pub use list::*;
pub use reuse::*;
pub use update::*;
pub use watch::*;

use super::{allow_delete, set_value};
