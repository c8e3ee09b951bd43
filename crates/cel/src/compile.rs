//! Compiling the `x-kubernetes-validations` rules of a schema: each rule
//! and message expression is parsed, checked against the schema, and its
//! cost estimated, with every problem reported as a field error at the
//! rule's place in the CRD, as upstream's CRD validation reports them.

use cel::{Env, ParseErrors, Program};

use apimachinery::field_errors::{ErrorType, FieldError, Path};

use crate::cost::{Estimator, TypeIssue};
use crate::fieldpath;
use crate::limits::{
    MAX_REQUEST_SIZE_BYTES, STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT,
};
use crate::parse_bounds;
use crate::schema::{CompiledRule, Kind, ListType, Node, RuleSpec};

/// The supported `reason`s of a rule.
const SUPPORTED_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];

/// The state of compiling one schema.
pub(crate) struct Compiler<'e> {
    env: &'e Env,
    pub errors: Vec<FieldError>,
    /// Each expression's cost times how often it may run, with its path.
    costs: Vec<(Path, u64)>,
}

/// Where a node sits: its path in the CRD, how many times its rules can
/// run per object (`None`: unbounded), and the outermost list whose items
/// cannot be correlated with their old values.
#[derive(Clone)]
pub(crate) struct Place {
    pub path: Path,
    pub cardinality: Option<u64>,
    pub uncorrelatable: Option<Path>,
}

impl<'e> Compiler<'e> {
    pub fn new(env: &'e Env) -> Self {
        Compiler {
            env,
            errors: Vec::new(),
            costs: Vec::new(),
        }
    }

    /// Compiles the rules of `node` and of every node below it.
    pub fn node(&mut self, node: &mut Node, place: &Place) {
        let compiled: Vec<CompiledRule> = (0..node.rules.len())
            .filter_map(|i| self.rule(node, i, place))
            .collect();
        node.compiled = compiled;
        let atomic_map = node.atomic_map;
        for (name, prop) in &mut node.properties {
            let child = Place {
                path: place.path.child("properties").key(name),
                cardinality: place.cardinality,
                uncorrelatable: match (&place.uncorrelatable, atomic_map) {
                    (None, true) => Some(place.path.clone()),
                    (other, _) => other.clone(),
                },
            };
            self.node(prop, &child);
        }
        let is_map_list = matches!(node.list_type, ListType::Map(_));
        let max_elements = node.max_elements;
        let bounded = node.bounded;
        if let Some(items) = node.items.as_deref_mut() {
            let child = Place {
                path: place.path.child("items"),
                cardinality: place
                    .cardinality
                    .filter(|_| bounded)
                    .map(|c| c.saturating_mul(max_elements)),
                uncorrelatable: match (&place.uncorrelatable, is_map_list) {
                    (Some(p), _) => Some(p.clone()),
                    (None, true) => None,
                    (None, false) => Some(place.path.clone()),
                },
            };
            self.node(items, &child);
        }
        if let Some(values) = node.additional.as_deref_mut() {
            let child = Place {
                path: place.path.child("additionalProperties"),
                cardinality: place
                    .cardinality
                    .filter(|_| bounded)
                    .map(|c| c.saturating_mul(max_elements)),
                uncorrelatable: place.uncorrelatable.clone(),
            };
            self.node(values, &child);
        }
    }

    /// Reports the schema-wide cost budget being exceeded.
    pub fn check_total(&mut self, root: &Path) {
        let total = self
            .costs
            .iter()
            .fold(0u64, |acc, (_, c)| acc.saturating_add(*c));
        if total <= STATIC_ESTIMATED_CRD_COST_LIMIT {
            return;
        }
        let mut costs = std::mem::take(&mut self.costs);
        // Only rules worth at least 1% of the limit are named.
        costs.retain(|(_, c)| *c >= STATIC_ESTIMATED_CRD_COST_LIMIT / 100);
        costs.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
        for (path, _) in costs.iter().take(4) {
            self.errors.push(FieldError::forbidden(
                path,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        self.errors.push(FieldError::forbidden(
            root,
            cost_error_message(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total,
                STATIC_ESTIMATED_CRD_COST_LIMIT,
            ),
        ));
    }

    fn rule(&mut self, node: &Node, index: usize, place: &Place) -> Option<CompiledRule> {
        let spec = &node.rules[index];
        let base = place.path.child("x-kubernetes-validations").index(index);
        if !self.check_spec(node, spec, &base) {
            return None;
        }
        let rule_path = base.child("rule");
        let program = match self.compile_expr(node, &spec.rule) {
            Ok((program, cost, kind)) => {
                if let Some(detail) = must_be(&program, kind, Output::Bool) {
                    self.errors
                        .push(invalid_rule(&rule_path, spec, detail.to_owned()));
                    return None;
                }
                self.observe_cost(&rule_path, "estimated rule cost", cost, node, place);
                (program, cost)
            }
            Err(detail) => {
                let detail = format!("compilation failed: {detail}");
                self.errors.push(invalid_rule(&rule_path, spec, detail));
                return None;
            }
        };
        let (program, max_cost) = program;
        let uses_old_self = program.references().has_variable("oldSelf");
        let optional_old_self = spec.optional_old_self.unwrap_or(false);
        if uses_old_self {
            if let Some(list_path) = &place.uncorrelatable {
                self.errors.push(FieldError::invalid(
                    &rule_path,
                    spec.rule.clone(),
                    format!(
                        "oldSelf cannot be used on the uncorrelatable portion of the schema within {list_path}"
                    ),
                ));
            }
        } else if spec.optional_old_self.is_some() {
            self.errors.push(FieldError::invalid(
                &base.child("optionalOldSelf"),
                optional_old_self,
                "may not be set if oldSelf is not used in rule",
            ));
        }
        let (message_program, message_max_cost) = self.message(node, spec, &base, place)?;
        let field_path = (!spec.field_path.is_empty())
            .then(|| fieldpath::normalize(&spec.field_path, node).ok())
            .flatten();
        Some(CompiledRule {
            spec: spec.clone(),
            program,
            uses_old_self,
            optional_old_self,
            message_program,
            field_path,
            reason: reason_type(spec.reason.as_deref()),
            max_cost,
            message_max_cost,
        })
    }

    /// Compiles the message expression; `None` when it fails.
    fn message(
        &mut self,
        node: &Node,
        spec: &RuleSpec,
        base: &Path,
        place: &Place,
    ) -> Option<(Option<Program>, u64)> {
        if spec.message_expression.is_empty() {
            return Some((None, 0));
        }
        let path = base.child("messageExpression");
        match self.compile_expr(node, &spec.message_expression) {
            Ok((program, cost, kind)) => {
                if let Some(detail) = must_be(&program, kind, Output::String) {
                    self.errors
                        .push(invalid_rule(&path, spec, detail.to_owned()));
                    return None;
                }
                self.observe_cost(&path, "estimated messageExpression cost", cost, node, place);
                Some((Some(program), cost))
            }
            Err(detail) => {
                let detail = format!("messageExpression compilation failed: {detail}");
                self.errors.push(invalid_rule(&path, spec, detail));
                None
            }
        }
    }

    /// The declarative checks of a rule; `false` when it cannot compile.
    fn check_spec(&mut self, node: &Node, spec: &RuleSpec, base: &Path) -> bool {
        let before = self.errors.len();
        let trimmed_rule = spec.rule.trim();
        let trimmed_msg = spec.message.trim();
        if trimmed_rule.is_empty() {
            self.errors.push(FieldError::required(
                &base.child("rule"),
                "rule is not specified",
            ));
        } else if !spec.message.is_empty() && trimmed_msg.is_empty() {
            self.errors.push(FieldError::invalid(
                &base.child("message"),
                spec.message.clone(),
                "must be non-empty if specified",
            ));
        } else if trimmed_msg.contains('\n') {
            self.errors.push(FieldError::invalid(
                &base.child("message"),
                spec.message.clone(),
                "must not contain line breaks",
            ));
        } else if trimmed_rule.contains('\n') && trimmed_msg.is_empty() {
            self.errors.push(FieldError::required(
                &base.child("message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !spec.message_expression.is_empty() && spec.message_expression.trim().is_empty() {
            self.errors.push(FieldError::required(
                &base.child("messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(reason) = &spec.reason {
            if !SUPPORTED_REASONS.contains(&reason.as_str()) {
                self.errors.push(FieldError::not_supported(
                    &base.child("reason"),
                    reason.clone(),
                    &SUPPORTED_REASONS,
                ));
            }
        }
        if !spec.field_path.is_empty() {
            let fp = &spec.field_path;
            let path = base.child("fieldPath");
            if fp.trim().is_empty() {
                self.errors.push(FieldError::invalid(
                    &path,
                    fp.clone(),
                    "must be non-empty if specified",
                ));
            } else if fp.contains('\n') {
                self.errors.push(FieldError::invalid(
                    &path,
                    fp.clone(),
                    "must not contain line breaks",
                ));
            } else if fieldpath::normalize(fp, node).is_err() {
                self.errors.push(FieldError::invalid(
                    &path,
                    fp.clone(),
                    "must be a valid path",
                ));
            }
        }
        self.errors.len() == before
    }

    /// Parses and checks `source` against `node`; returns the program, its
    /// static cost and the schema kind of its result when known, or the
    /// rendered compile errors.
    fn compile_expr(
        &self,
        node: &Node,
        source: &str,
    ) -> Result<(Program, u64, Option<Kind>), String> {
        let program = parse_bounds::parse(self.env, source, render_parse_errors)?;
        let mut estimator = Estimator::new(node, None);
        let (cost, kind) = estimator.estimate_typed(program.expression());
        if !estimator.issues.is_empty() {
            return Err(render_issues(&program, &estimator.issues, source));
        }
        Ok((program, cost, kind))
    }

    fn observe_cost(&mut self, path: &Path, name: &str, cost: u64, node: &Node, place: &Place) {
        let cardinality = place
            .cardinality
            .unwrap_or(MAX_REQUEST_SIZE_BYTES / (node.min_size + 1));
        let total = if cost == 0 {
            0
        } else {
            cost.saturating_mul(cardinality)
        };
        if total > STATIC_ESTIMATED_COST_LIMIT {
            self.errors.push(FieldError::forbidden(
                path,
                cost_error_message(name, total, STATIC_ESTIMATED_COST_LIMIT),
            ));
        }
        self.costs.push((path.clone(), total));
    }
}

/// The field error type a rule's `reason` maps to.
fn reason_type(reason: Option<&str>) -> ErrorType {
    match reason {
        Some("FieldValueForbidden") => ErrorType::Forbidden,
        Some("FieldValueRequired") => ErrorType::Required,
        Some("FieldValueDuplicate") => ErrorType::Duplicate,
        _ => ErrorType::Invalid,
    }
}

/// An invalid rule, shown with the whole rule as upstream shows it (the
/// struct's rendering goes into the detail, as no JSON value keeps Go's
/// field order).
fn invalid_rule(path: &Path, spec: &RuleSpec, detail: String) -> FieldError {
    FieldError {
        error_type: ErrorType::Invalid,
        field: path.to_string(),
        bad_value: None,
        detail: format!("{}: {detail}", spec.go_json()),
    }
}

/// The type an expression must produce.
#[derive(Clone, Copy)]
enum Output {
    Bool,
    String,
}

/// The error for an expression whose result is plainly of the wrong type
/// (a literal, list or map, or a schema value of another type: `kind`), as
/// far as can be told without a full type checker.
fn must_be(program: &Program, kind: Option<Kind>, output: Output) -> Option<&'static str> {
    use cel::common::ast::{Expr, LiteralValue};
    let wrong_kind = match (kind, output) {
        (None | Some(Kind::Any | Kind::IntOrString), _) => false,
        (Some(Kind::Boolean), Output::Bool) | (Some(Kind::String), Output::String) => false,
        (Some(_), _) => true,
    };
    let wrong = wrong_kind
        || match (&program.expression().expr, output) {
            (Expr::Literal(LiteralValue::Boolean(_)), Output::Bool) => false,
            (Expr::Literal(LiteralValue::String(_)), Output::String) => false,
            (Expr::Literal(_) | Expr::List(_) | Expr::Map(_), _) => true,
            (Expr::Call(call), Output::Bool) => {
                matches!(
                    call.func_name.as_str(),
                    "_+_" | "_-_" | "_*_" | "_/_" | "_%_" | "-_"
                )
            }
            _ => false,
        };
    wrong.then_some(match output {
        Output::Bool => "cel expression must evaluate to a bool",
        Output::String => "messageExpression must evaluate to a string",
    })
}

/// Formats one error as cel-go does: location, message, the source line
/// and a caret under the column.
fn render_error(out: &mut String, source: &str, line: usize, column: usize, message: &str) {
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&format!("ERROR: <input>:{line}:{column}: {message}"));
    if let Some(text) = source.lines().nth(line.saturating_sub(1)) {
        out.push_str("\n | ");
        out.push_str(text);
        out.push_str("\n | ");
        out.push_str(&".".repeat(column.saturating_sub(1)));
        out.push('^');
    }
}

pub(crate) fn render_parse_errors(errors: &ParseErrors, source: &str) -> String {
    let mut out = String::new();
    for e in &errors.errors {
        let line = usize::try_from(e.pos.0).unwrap_or(1).max(1);
        let column = usize::try_from(e.pos.1).unwrap_or(1).max(1);
        render_error(&mut out, source, line, column, &e.msg);
    }
    out
}

pub(crate) fn render_issues(program: &Program, issues: &[TypeIssue], source: &str) -> String {
    let mut out = String::new();
    for issue in issues {
        let offset = program
            .source_info()
            .offset_for(issue.expr_id)
            .map_or(0, |(start, _)| start as usize);
        let (line, column) = line_and_column(source, offset);
        render_error(&mut out, source, line, column, &issue.message);
    }
    out
}

/// The 1-based line and column (in characters) of a byte offset.
fn line_and_column(source: &str, offset: usize) -> (usize, usize) {
    let before = source.get(..offset.min(source.len())).unwrap_or(source);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let column = before[line_start..].chars().count() + 1;
    (line, column)
}

/// Upstream's message for an expression over its cost budget.
pub(crate) fn cost_error_message(name: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_owned()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{name} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}
