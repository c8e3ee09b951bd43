//! The cel-go extensions Kubernetes enables that the cel crate lacks:
//! `cel.bind` (a local binding) and the `sets` functions.

use cel::common::ast::{ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::common::types::LIST_TYPE;
use cel::common::value::{CowVal, Val};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{DeclarationError, Env, ExecutionError};

use super::{boolean, elements, take};

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_macro(Macro::receiver("bind", 3, bind))?;
    let two_lists = || vec![LIST_TYPE, LIST_TYPE];
    env.add_overload(
        "sets.contains",
        "list_sets_contains_list",
        two_lists(),
        contains,
    )?;
    env.add_overload(
        "sets.equivalent",
        "list_sets_equivalent_list",
        two_lists(),
        equivalent,
    )?;
    env.add_overload(
        "sets.intersects",
        "list_sets_intersects_list",
        two_lists(),
        intersects,
    )?;
    Ok(())
}

/// Expands `cel.bind(name, init, body)` into a comprehension over nothing
/// whose accumulator `name` holds `init` while `body` is evaluated, as
/// cel-go does; declines `bind` on any other target.
fn bind(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    let is_cel = matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel");
    if !is_cel || args.len() != 3 {
        return Ok(None);
    }
    let body = args.remove(2);
    let init = args.remove(1);
    let var = args.remove(0);
    let Expr::Ident(name) = var.expr else {
        return Err(helper.new_error(
            var.id,
            "cel.bind() variable names must be simple identifiers",
        ));
    };
    let empty = helper.next_expr(Expr::List(ListExpr::new(Vec::new())));
    let never = helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into())));
    let step = helper.next_expr(Expr::Ident(name.clone()));
    let bound = ComprehensionExpr {
        iter_range: empty,
        iter_var: "#unused".to_owned(),
        iter_var2: None,
        accu_var: name,
        accu_init: init,
        loop_cond: never,
        loop_step: step,
        result: body,
    };
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(bound)))))
}

/// Whether `list` has an element equal to `wanted`.
fn has(list: &[&(dyn Val + '_)], wanted: &dyn Val) -> bool {
    list.iter().any(|item| item.equals(wanted))
}

fn contains<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [a, b] = take(args)?;
    let (a, b) = (elements(a.as_ref())?, elements(b.as_ref())?);
    Ok(boolean(b.iter().all(|item| has(&a, *item))))
}

fn equivalent<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [a, b] = take(args)?;
    let (a, b) = (elements(a.as_ref())?, elements(b.as_ref())?);
    Ok(boolean(
        b.iter().all(|item| has(&a, *item)) && a.iter().all(|item| has(&b, *item)),
    ))
}

fn intersects<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [a, b] = take(args)?;
    let (a, b) = (elements(a.as_ref())?, elements(b.as_ref())?);
    Ok(boolean(b.iter().any(|item| has(&a, *item))))
}
