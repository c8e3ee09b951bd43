//! A static walk over a compiled rule that does two jobs the cel crate has
//! no checker for: it estimates the rule's worst-case cost from the size
//! bounds of the schema (upstream multiplies by `maxItems`, `maxLength`,
//! `maxProperties`, or by what a 3 MiB request could hold when they are
//! missing), and it reports the type errors a schema makes certain: fields
//! the schema does not declare and references to undeclared variables.
//!
//! The unit of cost follows cel-go's: one per identifier, field selection
//! and plain call, a tenth per character for string traversals, one per
//! element for list traversals, and comprehensions multiplying their loop
//! body by the number of elements iterated over.

use std::collections::HashMap;

use serde_json::Value;

use cel::common::ast::{CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, LiteralValue};

use crate::convert::escape;
use crate::schema::{Kind, Node};

/// The static type the walk tracks for an expression: a schema node, a
/// list built by the rule, or something else with a size bound.
#[derive(Debug, Clone)]
pub(crate) enum Ty<'n> {
    Node(&'n Node),
    List(Box<Ty<'n>>, u64),
    /// A value that is not a schema node; its size bound (characters or
    /// elements), zero when it has none.
    Other(u64),
}

impl<'n> Ty<'n> {
    /// The size bound: the schema's, or the observed one when `sizes`
    /// (observed sizes by node id) is given.
    fn size(&self, sizes: Option<&HashMap<usize, u64>>) -> u64 {
        match (self, sizes) {
            (Ty::Node(n), None) => n.max_elements,
            (Ty::Node(n), Some(sizes)) => sizes.get(&n.id).copied().unwrap_or(0),
            (Ty::List(_, size) | Ty::Other(size), _) => *size,
        }
    }

    /// The type of what iterating over this yields: items, or map keys.
    fn element(&self) -> Ty<'n> {
        match self {
            Ty::Node(n) => match (n.kind, n.items.as_deref()) {
                (Kind::Array, Some(items)) => Ty::Node(items),
                // Untyped values are alike at every depth.
                (Kind::Any, _) => Ty::Node(n),
                // Map keys are strings of unknown length.
                _ => Ty::Other(n.max_elements),
            },
            Ty::List(elem, _) => (**elem).clone(),
            Ty::Other(size) => Ty::Other(*size),
        }
    }

    fn is_collection(&self) -> bool {
        match self {
            Ty::Node(n) => matches!(n.kind, Kind::Array | Kind::Object),
            Ty::List(..) => true,
            Ty::Other(_) => false,
        }
    }
}

/// A type error found by the walk, at a byte offset of the rule.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct TypeIssue {
    pub expr_id: u64,
    pub message: String,
}

/// Identifiers that name types or namespaces rather than variables.
const GLOBAL_NAMES: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "duration",
    "timestamp",
    "dyn",
    "optional",
    "strings",
    "math",
    "lists",
    "base64",
    "sets",
    "cel",
    "format",
];

/// Namespaces whose functions are called as `namespace.function(..)`.
const NAMESPACES: &[&str] = &[
    "sets",
    "strings",
    "math",
    "lists",
    "base64",
    "optional",
    "format",
    "jsonpatch",
];

/// The walk's state: variables in scope and the issues found so far.
pub(crate) struct Estimator<'n, 's> {
    scope: Vec<(String, Ty<'n>)>,
    /// Observed sizes by node id, replacing the schema's bounds when set.
    sizes: Option<&'s HashMap<usize, u64>>,
    pub issues: Vec<TypeIssue>,
}

/// The result of estimating one expression.
struct Est<'n> {
    cost: u64,
    ty: Ty<'n>,
}

impl<'n> Est<'n> {
    fn new(cost: u64, ty: Ty<'n>) -> Self {
        Est { cost, ty }
    }
}

/// A tenth of `size`, rounded up: the cost of traversing a string.
fn traversal(size: u64) -> u64 {
    size.div_ceil(10)
}

impl<'n, 's> Estimator<'n, 's> {
    /// An estimator with `self` (and `oldSelf`) typed by `node`, sized by
    /// the schema's bounds, or by `sizes` observed in a value.
    pub fn new(node: &'n Node, sizes: Option<&'s HashMap<usize, u64>>) -> Self {
        Estimator {
            scope: vec![
                ("self".to_owned(), Ty::Node(node)),
                ("oldSelf".to_owned(), Ty::Node(node)),
            ],
            sizes,
            issues: Vec::new(),
        }
    }

    /// An estimator with each of `variables` typed by `node`, sized as
    /// [`Estimator::new`] sizes.
    pub fn with_variables(
        variables: &[&str],
        node: &'n Node,
        sizes: Option<&'s HashMap<usize, u64>>,
    ) -> Self {
        Estimator {
            scope: variables
                .iter()
                .map(|v| ((*v).to_owned(), Ty::Node(node)))
                .collect(),
            sizes,
            issues: Vec::new(),
        }
    }

    fn size(&self, ty: &Ty<'n>) -> u64 {
        ty.size(self.sizes)
    }

    /// The worst-case cost of evaluating `expr` once.
    pub fn estimate(&mut self, expr: &IdedExpr) -> u64 {
        self.walk(expr).cost
    }

    /// The worst-case cost of `expr` and, when its result is a value of
    /// the schema, the kind of that value.
    pub fn estimate_typed(&mut self, expr: &IdedExpr) -> (u64, Option<Kind>) {
        let est = self.walk(expr);
        let kind = match est.ty {
            Ty::Node(n) => Some(n.kind),
            _ => None,
        };
        (est.cost, kind)
    }

    fn lookup(&self, name: &str) -> Option<&Ty<'n>> {
        self.scope
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, ty)| ty)
    }

    fn walk(&mut self, expr: &IdedExpr) -> Est<'n> {
        match &expr.expr {
            Expr::Literal(lit) => Est::new(0, literal_ty(lit)),
            Expr::Ident(name) => match self.lookup(name) {
                Some(ty) => Est::new(1, ty.clone()),
                None => {
                    if !GLOBAL_NAMES.contains(&name.as_str()) && !name.starts_with('@') {
                        self.issues.push(TypeIssue {
                            expr_id: expr.id,
                            message: format!("undeclared reference to '{name}' (in container '')"),
                        });
                    }
                    Est::new(1, Ty::Other(0))
                }
            },
            Expr::Select(select) => {
                let operand = self.walk(&select.operand);
                let ty = self.field(expr.id, &operand.ty, &select.field);
                let ty = if select.test { Ty::Other(0) } else { ty };
                Est::new(operand.cost.saturating_add(1), ty)
            }
            Expr::List(list) => {
                let mut cost: u64 = 10;
                let mut elem = Ty::Other(0);
                for e in &list.elements {
                    let est = self.walk(e);
                    cost = cost.saturating_add(est.cost);
                    elem = est.ty;
                }
                Est::new(cost, Ty::List(Box::new(elem), list.elements.len() as u64))
            }
            Expr::Map(map) => {
                let cost = self.entries_cost(&map.entries, 30);
                Est::new(cost, Ty::Other(map.entries.len() as u64))
            }
            Expr::Struct(s) => {
                let cost = self.entries_cost(&s.entries, 40);
                Est::new(cost, Ty::Other(0))
            }
            Expr::Call(call) => self.call(call),
            Expr::Comprehension(comp) => self.comprehension(comp),
            Expr::Unspecified => Est::new(0, Ty::Other(0)),
        }
    }

    fn entries_cost(&mut self, entries: &[cel::common::ast::IdedEntryExpr], base: u64) -> u64 {
        let mut cost = base;
        for entry in entries {
            let c = match &entry.expr {
                EntryExpr::StructField(f) => self.walk(&f.value).cost,
                EntryExpr::MapEntry(m) => {
                    let k = self.walk(&m.key).cost;
                    k.saturating_add(self.walk(&m.value).cost)
                }
            };
            cost = cost.saturating_add(c);
        }
        cost
    }

    /// The type of `ty.field`, reporting fields the schema rules out.
    fn field(&mut self, id: u64, ty: &Ty<'n>, field: &str) -> Ty<'n> {
        let Ty::Node(node) = ty else {
            return Ty::Other(self.size(ty));
        };
        match node.kind {
            Kind::Object => {
                if let Some(values) = node.additional.as_deref() {
                    return Ty::Node(values);
                }
                let found = node
                    .properties
                    .iter()
                    .find(|(name, _)| escape(name).as_deref() == Some(field));
                match found {
                    Some((_, prop)) => Ty::Node(prop),
                    None if node.properties.is_empty() => Ty::Other(node.max_elements),
                    None => {
                        self.issues.push(TypeIssue {
                            expr_id: id,
                            message: format!("undefined field '{field}'"),
                        });
                        Ty::Other(0)
                    }
                }
            }
            Kind::Any => Ty::Node(node),
            _ => Ty::Other(node.max_elements),
        }
    }

    fn call(&mut self, call: &CallExpr) -> Est<'n> {
        // `sets.contains(a, b)` is a call of `sets.contains`, not a
        // member call on `sets`.
        let namespace = match call.target.as_deref().map(|t| &t.expr) {
            Some(Expr::Ident(ns))
                if self.lookup(ns).is_none() && NAMESPACES.contains(&ns.as_str()) =>
            {
                Some(ns.as_str())
            }
            _ => None,
        };
        let target = match namespace {
            Some(_) => None,
            None => call.target.as_deref().map(|t| self.walk(t)),
        };
        let args: Vec<Est<'n>> = call.args.iter().map(|a| self.walk(a)).collect();
        let args_cost = args
            .iter()
            .chain(target.iter())
            .fold(0u64, |acc, e| acc.saturating_add(e.cost));
        let name = call.func_name.as_str();
        if name == "_?_:_" {
            // Only one branch runs.
            let cond = args.first().map_or(0, |a| a.cost);
            let worst = args.iter().skip(1).map(|a| a.cost).max().unwrap_or(0);
            let ty = args.get(1).map_or(Ty::Other(0), |a| a.ty.clone());
            return Est::new(cond.saturating_add(worst), ty);
        }
        let (own, ty) = match namespace {
            Some(ns) => self.namespaced(ns, &args),
            None => self.operator(name, &args).unwrap_or_else(|| {
                let receiver = target.as_ref().or(args.first());
                self.function(name, receiver, call)
            }),
        };
        Est::new(args_cost.saturating_add(own), ty)
    }

    /// The own cost and type of an operator; `None` for other functions.
    fn operator(&self, name: &str, args: &[Est<'n>]) -> Option<(u64, Ty<'n>)> {
        let first = args.first().map_or(Ty::Other(0), |a| a.ty.clone());
        Some(match name {
            "_&&_" | "_||_" | "!_" | "_<_" | "_<=_" | "_>_" | "_>=_" => (0, Ty::Other(0)),
            "_==_" | "_!=_" => {
                let size = args.iter().map(|a| self.size(&a.ty)).min().unwrap_or(0);
                let collection = args.iter().any(|a| a.ty.is_collection());
                let own = if collection { size } else { traversal(size) };
                (1 + own, Ty::Other(0))
            }
            "_[_]" => {
                let elem = match &first {
                    Ty::Node(n) if n.kind == Kind::Object => {
                        n.additional.as_deref().map_or(Ty::Other(0), Ty::Node)
                    }
                    ty => ty.element(),
                };
                (1, elem)
            }
            "@in" => {
                let own = match args.get(1).map(|a| &a.ty) {
                    Some(Ty::Node(n)) if n.kind == Kind::Object => 1,
                    Some(other) => 1 + self.size(other),
                    None => 1,
                };
                (own, Ty::Other(0))
            }
            "_+_" => {
                let size = args
                    .iter()
                    .fold(0u64, |acc, a| acc.saturating_add(self.size(&a.ty)));
                let ty = if first.is_collection() {
                    Ty::List(Box::new(first.element()), size)
                } else {
                    Ty::Other(size)
                };
                (1 + traversal(size), ty)
            }
            _ => return None,
        })
    }

    /// The own cost and type of a (member) function call.
    fn function(&self, name: &str, receiver: Option<&Est<'n>>, call: &CallExpr) -> (u64, Ty<'n>) {
        let recv_ty = receiver.map_or(Ty::Other(0), |r| r.ty.clone());
        let recv_size = self.size(&recv_ty);
        match name {
            "matches" | "find" | "findAll" => {
                let pattern = call
                    .args
                    .last()
                    .and_then(|p| match &p.expr {
                        Expr::Literal(LiteralValue::String(s)) => Some(s.len() as u64),
                        _ => None,
                    })
                    .unwrap_or(recv_size);
                let own = 1 + traversal(recv_size).saturating_mul(pattern.div_ceil(4).max(1));
                let ty = if name == "findAll" {
                    Ty::List(Box::new(Ty::Other(recv_size)), recv_size)
                } else {
                    Ty::Other(recv_size)
                };
                (own, ty)
            }
            "split" => (
                1 + recv_size,
                Ty::List(Box::new(Ty::Other(recv_size)), recv_size),
            ),
            "contains" | "startsWith" | "endsWith" | "lowerAscii" | "upperAscii" | "trim"
            | "replace" | "substring" | "charAt" | "indexOf" | "lastIndexOf" | "format"
            | "reverse" | "quote" => {
                let per_element = if recv_ty.is_collection() {
                    recv_size
                } else {
                    traversal(recv_size)
                };
                (1 + per_element, Ty::Other(recv_size))
            }
            "isSorted" | "sum" | "min" | "max" | "join" => (1 + recv_size, Ty::Other(recv_size)),
            "sort" | "distinct" | "flatten" | "slice" => (
                1 + recv_size,
                Ty::List(Box::new(recv_ty.element()), recv_size),
            ),
            // The pairs two-variable comprehensions iterate over.
            "@kv_pairs" => {
                let value = match &recv_ty {
                    Ty::Node(n) if n.kind == Kind::Object => {
                        n.additional.as_deref().map_or(Ty::Other(0), Ty::Node)
                    }
                    other => other.element(),
                };
                let pair = Ty::List(Box::new(value), 2);
                (1 + recv_size, Ty::List(Box::new(pair), recv_size))
            }
            _ => (1, Ty::Other(0)),
        }
    }

    /// The own cost and type of a namespaced function (`sets.contains`).
    fn namespaced(&self, namespace: &str, args: &[Est<'n>]) -> (u64, Ty<'n>) {
        match namespace {
            "sets" => {
                let sizes: Vec<u64> = args.iter().map(|a| self.size(&a.ty)).collect();
                let product = sizes
                    .iter()
                    .fold(1u64, |acc, s| acc.saturating_mul((*s).max(1)));
                (1u64.saturating_add(product), Ty::Other(0))
            }
            _ => (1, Ty::Other(0)),
        }
    }

    fn comprehension(&mut self, comp: &ComprehensionExpr) -> Est<'n> {
        let range = self.walk(&comp.iter_range);
        let init = self.walk(&comp.accu_init);
        let size = self.size(&range.ty);
        let (first_var, second_var) = match (&comp.iter_var2, &range.ty) {
            // Two-variable forms bind index/key and value.
            (Some(_), ty) => (Ty::Other(0), ty.element()),
            (None, ty) => (ty.element(), Ty::Other(0)),
        };
        let pushed = 2 + usize::from(comp.iter_var2.is_some());
        self.scope.push((comp.accu_var.clone(), init.ty.clone()));
        self.scope.push((comp.iter_var.clone(), first_var));
        if let Some(var2) = &comp.iter_var2 {
            self.scope.push((var2.clone(), second_var));
        }
        let cond = self.walk(&comp.loop_cond).cost;
        let step = self.walk(&comp.loop_step);
        self.scope.truncate(self.scope.len() - pushed + 1);
        let result = self.walk(&comp.result);
        self.scope.pop();
        let body = cond.saturating_add(step.cost).saturating_mul(size);
        let cost = range
            .cost
            .saturating_add(init.cost)
            .saturating_add(body)
            .saturating_add(result.cost);
        // `map` and `filter` accumulate a list as long as the range.
        let ty = match &init.ty {
            Ty::List(..) => Ty::List(Box::new(list_step_element(&step.ty)), size),
            _ => result.ty,
        };
        Est::new(cost, ty)
    }
}

/// The element type a `map`/`filter` step appends.
fn list_step_element<'n>(step: &Ty<'n>) -> Ty<'n> {
    match step {
        Ty::List(elem, _) => (**elem).clone(),
        other => other.clone(),
    }
}

fn literal_ty<'n>(lit: &LiteralValue) -> Ty<'n> {
    match lit {
        LiteralValue::String(s) => Ty::Other(s.len() as u64),
        LiteralValue::Bytes(b) => Ty::Other(b.len() as u64),
        _ => Ty::Other(0),
    }
}

/// Records, by node id, the largest size (elements, entries or bytes) of
/// the values of `node` and the nodes below it found in `value`.
pub(crate) fn observe(node: &Node, value: &Value, sizes: &mut HashMap<usize, u64>) {
    let len = match value {
        Value::Array(a) => a.len(),
        Value::Object(o) => o.len(),
        Value::String(s) => s.len(),
        _ => 0,
    } as u64;
    let entry = sizes.entry(node.id).or_insert(0);
    *entry = (*entry).max(len);
    match value {
        Value::Array(items) => {
            let item_node = match node.kind {
                Kind::Any => Some(node),
                _ => node.items.as_deref(),
            };
            if let Some(item_node) = item_node {
                for item in items {
                    observe(item_node, item, sizes);
                }
            }
        }
        Value::Object(map) => {
            if node.kind == Kind::Any {
                for v in map.values() {
                    observe(node, v, sizes);
                }
            } else if let Some(values) = node.additional.as_deref() {
                for v in map.values() {
                    observe(values, v, sizes);
                }
            } else {
                for (name, prop) in &node.properties {
                    if let Some(v) = map.get(name) {
                        observe(prop, v, sizes);
                    }
                }
            }
        }
        _ => {}
    }
}
