//! cel-go's two-variable comprehensions, which Kubernetes enables:
//! `all(i, v, p)`, `exists(i, v, p)`, `existsOne(i, v, p)`,
//! `transformList(i, v, [f,] e)` and `transformMap(k, v, [f,] e)` over a
//! list (index, element) or a map (key, value).
//!
//! The cel crate's interpreter binds one variable per iteration, so each
//! form is expanded over `@kv_pairs(target)`, the `[key, value]` pairs of
//! the target, with the two variables bound from each pair.

use std::collections::HashMap;

use cel::common::ast::{
    operators, CallExpr, ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue,
};
use cel::common::types::{CelInt, CelList, CelMap, CelMapKey, LIST_TYPE, MAP_TYPE};
use cel::common::value::{CowVal, Val};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{DeclarationError, Env, ExecutionError};

use super::{elements, take};

/// The function listing a target's `[key, value]` pairs.
pub(crate) const KV_PAIRS: &str = "@kv_pairs";
/// The function building a map from `[key, value]` pairs.
const TO_MAP: &str = "@to_map";
/// The accumulator of the expansions.
const RESULT: &str = "@result";
/// The iteration variable holding the current pair.
const PAIR: &str = "@kv";

/// The forms, by function and argument count.
#[derive(Debug, Clone, Copy)]
enum Form {
    All,
    Exists,
    ExistsOne,
    TransformList,
    TransformMap,
}

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let forms = [
        ("all", 3, Form::All),
        ("exists", 3, Form::Exists),
        ("existsOne", 3, Form::ExistsOne),
        ("exists_one", 3, Form::ExistsOne),
        ("transformList", 3, Form::TransformList),
        ("transformList", 4, Form::TransformList),
        ("transformMap", 3, Form::TransformMap),
        ("transformMap", 4, Form::TransformMap),
    ];
    for (name, argc, form) in forms {
        env.add_macro(Macro::receiver(name, argc, move |helper, target, args| {
            expand(helper, target, args, form)
        }))?;
    }
    env.add_overload(KV_PAIRS, "list_kv_pairs", vec![LIST_TYPE], kv_pairs)?;
    env.add_overload(KV_PAIRS, "map_kv_pairs", vec![MAP_TYPE], kv_pairs)?;
    env.add_overload(TO_MAP, "list_to_map", vec![LIST_TYPE], to_map)?;
    Ok(())
}

/// Builds expressions with fresh ids.
struct Builder<'h, 'a> {
    helper: &'h mut MacroExprHelper<'a>,
}

impl Builder<'_, '_> {
    fn expr(&mut self, expr: Expr) -> IdedExpr {
        self.helper.next_expr(expr)
    }

    fn ident(&mut self, name: &str) -> IdedExpr {
        self.expr(Expr::Ident(name.to_owned()))
    }

    fn call(&mut self, function: &str, args: Vec<IdedExpr>) -> IdedExpr {
        self.expr(Expr::Call(CallExpr {
            func_name: function.to_owned(),
            target: None,
            args,
        }))
    }

    fn literal(&mut self, value: LiteralValue) -> IdedExpr {
        self.expr(Expr::Literal(value))
    }

    fn list(&mut self, elements: Vec<IdedExpr>) -> IdedExpr {
        self.expr(Expr::List(ListExpr::new(elements)))
    }

    /// `body` with `name` bound to `value` (what `cel.bind` expands to).
    fn bind(&mut self, name: &str, value: IdedExpr, body: IdedExpr) -> IdedExpr {
        let range = self.list(Vec::new());
        let never = self.literal(LiteralValue::Boolean(false.into()));
        let step = self.ident(name);
        self.expr(Expr::Comprehension(Box::new(ComprehensionExpr {
            iter_range: range,
            iter_var: "#unused".to_owned(),
            iter_var2: None,
            accu_var: name.to_owned(),
            accu_init: value,
            loop_cond: never,
            loop_step: step,
            result: body,
        })))
    }

    /// `body` with the two variables bound from the current pair.
    fn with_pair(&mut self, first: &str, second: &str, body: IdedExpr) -> IdedExpr {
        let element = |b: &mut Self, index: i64| {
            let pair = b.ident(PAIR);
            let at = b.literal(LiteralValue::Int(index.into()));
            b.call(operators::INDEX, vec![pair, at])
        };
        let value = element(self, 1);
        let inner = self.bind(second, value, body);
        let key = element(self, 0);
        self.bind(first, key, inner)
    }
}

fn expand(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
    form: Form,
) -> Result<Option<IdedExpr>, ParseError> {
    let Some(target) = target.take() else {
        return Ok(None);
    };
    let mut args = std::mem::take(args).into_iter();
    let (Some(first), Some(second)) = (args.next(), args.next()) else {
        return Ok(None);
    };
    let names = match (&first.expr, &second.expr) {
        (Expr::Ident(a), Expr::Ident(b)) => (a.clone(), b.clone()),
        _ => return Err(helper.new_error(first.id, "argument must be a simple name")),
    };
    let rest: Vec<IdedExpr> = args.collect();
    let mut b = Builder { helper };
    let range = b.call(KV_PAIRS, vec![target]);
    let (init, cond, step, result) = parts(&mut b, form, &names, rest);
    Ok(Some(b.expr(Expr::Comprehension(Box::new(
        ComprehensionExpr {
            iter_range: range,
            iter_var: PAIR.to_owned(),
            iter_var2: None,
            accu_var: RESULT.to_owned(),
            accu_init: init,
            loop_cond: cond,
            loop_step: step,
            result,
        },
    )))))
}

/// The accumulator's start, the loop condition, the step and the result
/// of `form`, whose last argument is the predicate or transform and whose
/// other (with four arguments) the filter.
fn parts(
    b: &mut Builder<'_, '_>,
    form: Form,
    (first, second): &(String, String),
    mut rest: Vec<IdedExpr>,
) -> (IdedExpr, IdedExpr, IdedExpr, IdedExpr) {
    let last = rest.pop().unwrap_or_default();
    let body = b.with_pair(first, second, last);
    let filter = rest.pop().map(|f| b.with_pair(first, second, f));
    let accu = b.ident(RESULT);
    let always = b.literal(LiteralValue::Boolean(true.into()));
    match form {
        Form::All | Form::Exists => {
            let all = matches!(form, Form::All);
            let init = b.literal(LiteralValue::Boolean(all.into()));
            let cond_arg = if all {
                b.ident(RESULT)
            } else {
                let r = b.ident(RESULT);
                b.call(operators::LOGICAL_NOT, vec![r])
            };
            let cond = b.call(operators::NOT_STRICTLY_FALSE, vec![cond_arg]);
            let op = if all {
                operators::LOGICAL_AND
            } else {
                operators::LOGICAL_OR
            };
            let step = b.call(op, vec![accu, body]);
            let result = b.ident(RESULT);
            (init, cond, step, result)
        }
        Form::ExistsOne => {
            let init = b.literal(LiteralValue::Int(0.into()));
            let one = b.literal(LiteralValue::Int(1.into()));
            let counted = b.call(operators::ADD, vec![accu, one]);
            let unchanged = b.ident(RESULT);
            let step = b.call(operators::CONDITIONAL, vec![body, counted, unchanged]);
            let total = b.ident(RESULT);
            let one = b.literal(LiteralValue::Int(1.into()));
            let result = b.call(operators::EQUALS, vec![total, one]);
            (init, always, step, result)
        }
        Form::TransformList | Form::TransformMap => {
            let init = b.list(Vec::new());
            let element = if matches!(form, Form::TransformMap) {
                let key = b.ident(first);
                let key = b.with_pair(first, second, key);
                b.list(vec![key, body])
            } else {
                body
            };
            let appended = b.list(vec![element]);
            let added = b.call(operators::ADD, vec![accu, appended]);
            let step = match filter {
                Some(filter) => {
                    let unchanged = b.ident(RESULT);
                    b.call(operators::CONDITIONAL, vec![filter, added, unchanged])
                }
                None => added,
            };
            let all = b.ident(RESULT);
            let result = if matches!(form, Form::TransformMap) {
                b.call(TO_MAP, vec![all])
            } else {
                all
            };
            (init, always, step, result)
        }
    }
}

/// The `[key, value]` pairs of a list (index, element) or map.
fn kv_pairs<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [target] = take(args)?;
    let pair = |k: Box<dyn Val + 'v>, v: Box<dyn Val + 'v>| -> Box<dyn Val + 'v> {
        Box::new(CelList::from(vec![k, v]))
    };
    let pairs: Vec<Box<dyn Val + 'v>> = match target.downcast_ref::<CelMap>() {
        Some(map) => map
            .inner()
            .iter()
            .map(|(k, v)| pair(k.inner().clone_as_boxed(), v.clone_as_boxed()))
            .collect(),
        None => elements(target.as_ref())?
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                let index = i64::try_from(i).unwrap_or(i64::MAX);
                pair(Box::new(CelInt::from(index)), v.clone_as_boxed())
            })
            .collect(),
    };
    Ok(CowVal::owned(CelList::from(pairs)))
}

/// A map from a list of `[key, value]` pairs.
fn to_map<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [pairs] = take(args)?;
    let mut map: HashMap<CelMapKey<'v>, Box<dyn Val + 'v>> = HashMap::new();
    for pair in elements(pairs.as_ref())? {
        let [key, value] = <[&(dyn Val + 'v); 2]>::try_from(elements(pair)?)
            .map_err(|_| ExecutionError::function_error("transformMap", "malformed entry"))?;
        map.insert(
            CelMapKey::try_from(key.clone_as_boxed())?,
            value.clone_as_boxed(),
        );
    }
    Ok(CowVal::owned(CelMap::from(map)))
}
