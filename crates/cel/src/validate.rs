//! Evaluating compiled rules against an object (and its old version on
//! update): each node's rules run with `self` bound to the value there,
//! the walk continues into properties, map values and list items (list-map
//! items correlated with their old versions by key), and the runtime cost
//! is charged against a budget as upstream does.

use std::collections::HashMap;
use std::sync::Arc;

use apimachinery::field_errors::{ErrorType, FieldError, Path};
use cel::common::types::CelOptional;
use cel::{Context, Env, ExecutionError, Program, Value as CelValue};
use serde_json::Value;

use crate::convert::to_val;
use crate::cost::{observe, Estimator};
use crate::limits::{MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES, PER_CALL_LIMIT};
use crate::schema::{CompiledRule, Kind, ListType, Node};

/// Rules whose static estimate is at most this are charged it as is;
/// dearer ones are re-estimated from the sizes actually present.
const CHEAP_RULE_COST: u64 = 100;

/// What validating one object produced.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Outcome {
    /// The rules that failed, and evaluation errors.
    pub errors: Vec<FieldError>,
    /// Failures of rules on values the update left unchanged: upstream
    /// ratchets them to warnings rather than rejecting the update.
    pub warnings: Vec<String>,
    /// The budget left; negative once it ran out.
    pub remaining_budget: i64,
}

/// The walk's state.
pub(crate) struct Walk<'e> {
    pub env: &'e Arc<Env>,
    pub outcome: Outcome,
}

/// A node being validated: its schema, field path (`None`: the root),
/// new and correlated old value, and whether failures ratchet to warnings
/// (the value is unchanged from the old one).
struct At<'a> {
    node: &'a Node,
    path: Option<&'a Path>,
    new: &'a Value,
    old: Option<&'a Value>,
    ratchet: bool,
}

/// A field path that may be the root, which upstream prints as `<nil>`.
fn render(path: Option<&Path>) -> Path {
    path.cloned().unwrap_or_else(|| Path::new("<nil>"))
}

fn child(path: Option<&Path>, name: &str) -> Path {
    path.map_or_else(|| Path::new(name), |p| p.child(name))
}

impl Walk<'_> {
    fn stopped(&self) -> bool {
        self.outcome.remaining_budget < 0
    }

    /// Validates `new` (and `old`) at `node`. `ratchet` tells whether the
    /// value is unchanged from the correlated old one, in which case
    /// failures of rules that don't use `oldSelf` become warnings.
    pub fn node(
        &mut self,
        node: &Node,
        path: Option<&Path>,
        new: &Value,
        old: Option<&Value>,
        ratchet: bool,
    ) {
        if new.is_null() || !node.rules_below || self.stopped() {
            return;
        }
        if !node.compiled.is_empty() {
            self.rules(&At {
                node,
                path,
                new,
                old,
                ratchet,
            });
        }
        if self.stopped() {
            return;
        }
        match new {
            Value::Object(map) => {
                if let Some(values) = node.additional.as_deref() {
                    for (key, value) in map {
                        let old_value = old.and_then(|o| o.get(key));
                        let unchanged = old_value == Some(value);
                        let p = path.map_or_else(|| Path::new("").key(key), |p| p.key(key));
                        self.node(values, Some(&p), value, old_value, unchanged);
                    }
                    return;
                }
                for (name, prop) in &node.properties {
                    if let Some(value) = map.get(name) {
                        // Atomic maps' fields ratchet with the whole map.
                        let (old_value, unchanged) = if node.atomic_map {
                            (None, ratchet)
                        } else {
                            let old_value = old.and_then(|o| o.get(name));
                            (old_value, old_value == Some(value))
                        };
                        self.node(prop, Some(&child(path, name)), value, old_value, unchanged);
                    }
                }
            }
            Value::Array(items) => {
                let Some(item_node) = node.items.as_deref() else {
                    return;
                };
                let old_items = old.and_then(Value::as_array);
                for (i, item) in items.iter().enumerate() {
                    let p = render(path).index(i);
                    let (old_item, unchanged) = match (&node.list_type, old_items) {
                        (ListType::Map(keys), Some(old_items)) => {
                            let found = correlate(keys, item, old_items);
                            (found, found == Some(item))
                        }
                        // Uncorrelatable items ratchet with their list.
                        _ => (None, ratchet),
                    };
                    self.node(item_node, Some(&p), item, old_item, unchanged);
                }
            }
            _ => {}
        }
    }

    fn rules(&mut self, at: &At<'_>) {
        let node = at.node;
        let mut ctx = Context::with_env(Arc::clone(self.env));
        ctx.add_variable_as_val("self", to_val(at.new, Some(node)));
        if let Some(o) = at.old {
            ctx.add_variable_as_val("oldSelf", to_val(o, Some(node)));
        }
        let mut optional_ctx: Option<Context> = None;
        let mut sizes: Option<HashMap<usize, u64>> = None;
        let here = render(at.path);
        for rule in &node.compiled {
            if rule.uses_old_self && at.old.is_none() && !rule.optional_old_self {
                continue;
            }
            let run_ctx = if rule.optional_old_self {
                optional_ctx.get_or_insert_with(|| self.optional_context(at))
            } else {
                &ctx
            };
            let cost = runtime_cost(rule.max_cost, &rule.program, at, &mut sizes);
            if cost > PER_CALL_LIMIT {
                self.fail(FieldError::invalid(
                    &here,
                    node.type_name.clone(),
                    format!(
                        "'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: {}",
                        rule_error_string(rule)
                    ),
                ));
                return;
            }
            if !self.charge(cost, &here, node) {
                return;
            }
            match rule.program.execute(run_ctx) {
                Ok(CelValue::Bool(true)) => {}
                Ok(CelValue::Bool(false)) => {
                    self.failed(rule, at, &ctx, &mut sizes);
                    if self.stopped() {
                        return;
                    }
                }
                Ok(other) => self.outcome.errors.push(FieldError::invalid(
                    &here,
                    node.type_name.clone(),
                    format!(
                        "cel expression must evaluate to a bool, got {} evaluating rule: {}",
                        other.type_of(),
                        rule_error_string(rule)
                    ),
                )),
                Err(e) => self
                    .outcome
                    .errors
                    .push(evaluation_error(&here, node, rule, &e)),
            }
        }
    }

    /// A context where `oldSelf` is an optional, for `optionalOldSelf`
    /// rules.
    fn optional_context<'a>(&self, at: &At<'a>) -> Context<'a, 'a> {
        let mut ctx = Context::with_env(Arc::clone(self.env));
        ctx.add_variable_as_val("self", to_val(at.new, Some(at.node)));
        let old = match at.old {
            Some(o) => CelOptional::of(to_val(o, Some(at.node))),
            None => CelOptional::none(),
        };
        ctx.add_variable_as_val("oldSelf", Box::new(old));
        ctx
    }

    /// Charges `cost`; on running out, reports it and stops the walk.
    fn charge(&mut self, cost: u64, here: &Path, node: &Node) -> bool {
        let cost = i64::try_from(cost).unwrap_or(i64::MAX);
        if cost > self.outcome.remaining_budget {
            self.fail(FieldError::invalid(
                here,
                node.type_name.clone(),
                "validation failed due to running out of cost budget, no further validation rules will be run",
            ));
            return false;
        }
        self.outcome.remaining_budget -= cost;
        true
    }

    /// Records an error that ends the walk.
    fn fail(&mut self, error: FieldError) {
        self.outcome.errors.push(error);
        self.outcome.remaining_budget = -1;
    }

    /// Reports a rule that evaluated to false.
    fn failed(
        &mut self,
        rule: &CompiledRule,
        place: &At<'_>,
        ctx: &Context,
        sizes: &mut Option<HashMap<usize, u64>>,
    ) {
        let node = place.node;
        let at = match &rule.field_path {
            Some(fp) => child(place.path, fp),
            None => render(place.path),
        };
        let mut detail = None;
        if let Some(message) = &rule.message_program {
            let cost = runtime_cost(rule.message_max_cost, message, place, sizes);
            if cost > PER_CALL_LIMIT {
                let src = &rule.spec.message_expression;
                self.fail(FieldError::invalid(
                    &at,
                    node.type_name.clone(),
                    format!("no further validation rules will be run due to call cost exceeds limit for messageExpression: {src:?}"),
                ));
                return;
            }
            if i64::try_from(cost).unwrap_or(i64::MAX) > self.outcome.remaining_budget {
                self.fail(FieldError::invalid(
                    &at,
                    node.type_name.clone(),
                    "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run",
                ));
                return;
            }
            self.outcome.remaining_budget -= i64::try_from(cost).unwrap_or(i64::MAX);
            detail = evaluate_message(message, ctx);
        }
        let detail = detail.unwrap_or_else(|| match rule.spec.message.trim() {
            "" => format!("failed rule: {}", rule_error_string(rule)),
            m => m.to_owned(),
        });
        let shown = match node.kind {
            Kind::Object | Kind::Array => None,
            _ => Some(place.new.clone()),
        };
        let error = match rule.reason {
            ErrorType::Forbidden => FieldError::forbidden(&at, detail),
            ErrorType::Required => FieldError::required(&at, detail),
            ErrorType::Duplicate => FieldError {
                error_type: ErrorType::Duplicate,
                field: at.to_string(),
                bad_value: shown,
                detail: String::new(),
            },
            _ => FieldError {
                error_type: ErrorType::Invalid,
                field: at.to_string(),
                bad_value: shown,
                detail,
            },
        };
        if place.ratchet && !rule.uses_old_self {
            self.outcome.warnings.push(error.to_string());
        } else {
            self.outcome.errors.push(error);
        }
    }
}

/// The old item of a list-map with the same key values as `item`.
fn correlate<'a>(keys: &[String], item: &Value, old_items: &'a [Value]) -> Option<&'a Value> {
    old_items
        .iter()
        .find(|old| keys.iter().all(|k| old.get(k) == item.get(k)))
}

/// The cost charged for one evaluation of `program` at `node`: its static
/// estimate when that is cheap, otherwise the estimate redone with the
/// sizes present in the values (computed once per node).
fn runtime_cost(
    max_cost: u64,
    program: &Program,
    at: &At<'_>,
    sizes: &mut Option<HashMap<usize, u64>>,
) -> u64 {
    if max_cost <= CHEAP_RULE_COST {
        return max_cost;
    }
    let sizes = sizes.get_or_insert_with(|| {
        let mut sizes = HashMap::new();
        observe(at.node, at.new, &mut sizes);
        if let Some(old) = at.old {
            observe(at.node, old, &mut sizes);
        }
        sizes
    });
    Estimator::new(at.node, Some(sizes)).estimate(program.expression())
}

/// Evaluates a message expression; `None` (use the static message) when
/// it fails or produces an unusable message.
fn evaluate_message(program: &Program, ctx: &Context) -> Option<String> {
    match program.execute(ctx) {
        Ok(CelValue::String(s)) => {
            let trimmed = s.trim();
            let usable = !trimmed.is_empty()
                && !trimmed.contains('\n')
                && trimmed.len() <= MAX_EVALUATED_MESSAGE_EXPRESSION_SIZE_BYTES;
            usable.then(|| trimmed.to_owned())
        }
        _ => None,
    }
}

/// How upstream names a rule in errors: its message, else its source.
fn rule_error_string(rule: &CompiledRule) -> &str {
    match rule.spec.message.trim() {
        "" => rule.spec.rule.trim(),
        m => m,
    }
}

/// The field error for a rule whose evaluation failed.
fn evaluation_error(at: &Path, node: &Node, rule: &CompiledRule, e: &ExecutionError) -> FieldError {
    let rule_text = rule_error_string(rule);
    let detail = match e {
        ExecutionError::NoSuchOverload(_)
        | ExecutionError::ValuesNotComparable(..)
        | ExecutionError::UnsupportedBinaryOperator(..)
        | ExecutionError::UnsupportedIndex(..) => format!(
            "'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {rule_text}"
        ),
        other => format!("{} evaluating rule: {rule_text}", go_error_text(other)),
    };
    FieldError::invalid(at, node.type_name.clone(), detail)
}

/// An evaluation error worded as cel-go words it.
pub(crate) fn go_error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(key) => format!("no such key: {key}"),
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(..) => "integer overflow".to_owned(),
        ExecutionError::IndexOutOfBounds(CelValue::Int(i)) => format!("index '{i}' out of range"),
        ExecutionError::IndexOutOfBounds(_) => "index out of range".to_owned(),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => other.to_string(),
    }
}
