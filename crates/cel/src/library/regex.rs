//! Kubernetes' regex library: `find` and `findAll` on strings.

use cel::common::types::{CelInt, CelList, CelString, INT_TYPE, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::{arg, take, text};

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_member_overload(
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all_limit,
    )?;
    Ok(())
}

fn compile(function: &str, pattern: &str) -> Result<regex::Regex, ExecutionError> {
    regex::Regex::new(pattern).map_err(|e| ExecutionError::function_error(function, e))
}

fn find<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s, pattern] = take(args)?;
    let re = compile("find", text(pattern.as_ref())?)?;
    let found = re
        .find(text(s.as_ref())?)
        .map(|m| m.as_str().to_owned())
        .unwrap_or_default();
    Ok(CowVal::owned(CelString::from(found)))
}

fn all_matches<'b, 'v>(
    s: &CowVal<'b, 'v>,
    pattern: &CowVal<'b, 'v>,
    limit: i64,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let re = compile("findAll", text(pattern.as_ref())?)?;
    let take_n = usize::try_from(limit).unwrap_or(usize::MAX);
    let found: Vec<Box<dyn Val + 'v>> = re
        .find_iter(text(s.as_ref())?)
        .take(take_n)
        .map(|m| Box::new(CelString::from(m.as_str().to_owned())) as Box<dyn Val + 'v>)
        .collect();
    Ok(CowVal::owned(CelList::from(found)))
}

fn find_all<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s, pattern] = take(args)?;
    all_matches(&s, &pattern, -1)
}

fn find_all_limit<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s, pattern, limit] = take(args)?;
    let limit = *arg::<CelInt>(limit.as_ref())?.inner();
    all_matches(&s, &pattern, limit)
}
