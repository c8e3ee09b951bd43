//! Kubernetes' JSON patch library for mutating admission policies:
//! `jsonpatch.escapeKey(k)` escapes a key for use in a JSON pointer
//! (`~` as `~0`, `/` as `~1`, RFC 6901).

use cel::common::types::STRING_TYPE;
use cel::common::value::CowVal;
use cel::{DeclarationError, Env, ExecutionError};

use super::{string, take, text};

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_overload(
        "jsonpatch.escapeKey",
        "string_jsonpatch_escapeKey_string",
        vec![STRING_TYPE],
        escape_key,
    )
}

fn escape_key<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [key] = take(args)?;
    Ok(string(
        text(key.as_ref())?.replace('~', "~0").replace('/', "~1"),
    ))
}
