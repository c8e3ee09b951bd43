//! Standalone CEL expressions over named, untyped variables, for callers
//! other than CRD schemas (e.g. admission policies binding `object`,
//! `oldObject`, `request` and `params`). Variables are bound to JSON
//! values; results come back as JSON.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock};

use base64::Engine as _;
use cel::common::ast::Expr;
use cel::objects::Key;
use cel::{Context, Env, IdedExpr, Program, Value as CelValue};
use serde_json::Value;

use crate::compile::{render_issues, render_parse_errors};
use crate::convert::to_val;
use crate::cost::{observe, Estimator, TypeIssue};
use crate::library;
use crate::limits::PER_CALL_LIMIT;
use crate::mutation;
use crate::parse_bounds;
use crate::schema::Node;
use crate::validate::go_error_text;

/// The schema of an untyped variable: any JSON value of any size.
static UNTYPED: LazyLock<Node> = LazyLock::new(|| Node::parse(&Value::Null, false));

/// Why an expression could not be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    /// The expression is malformed or refers to undeclared variables; the
    /// text is cel-go's rendering of the problems.
    #[error("compilation failed: {0}")]
    Invalid(String),
    /// The CEL environment could not be built.
    #[error("internal error: {0}")]
    Environment(String),
}

/// Why an evaluation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EvalError {
    /// The expression raised an error (missing key, no such overload, ...).
    #[error("{0}")]
    Execution(String),
    /// Evaluating would cost more than one call may.
    #[error("operation cancelled: actual cost limit exceeded")]
    CostLimit,
    /// The result has no JSON form (e.g. a CEL type value).
    #[error("result of type {0} cannot be represented as JSON")]
    Unrepresentable(String),
    /// A nested `Object.<path>{...}` literal is not named by the field path
    /// it is set at (mutation expressions).
    #[error("type mismatch: {0}")]
    TypeMismatch(String),
}

/// A compiled expression.
pub struct Expression {
    program: Program,
    env: Arc<Env>,
    estimated_cost: u64,
    variables: Vec<String>,
    /// Object literals named unlike their field path, reported after a
    /// successful evaluation as upstream checks the value it built.
    type_mismatch: Option<String>,
    /// The program with nested object literals renamed to `Object`, run
    /// instead of the program when there are any.
    unnested: Option<IdedExpr>,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Expression")
            .field("estimated_cost", &self.estimated_cost)
            .finish_non_exhaustive()
    }
}

impl Expression {
    /// Compiles `source`, which may refer to `variables` only.
    pub fn compile(source: &str, variables: &[&str]) -> Result<Expression, CompileError> {
        let env = library::env().map_err(|e| CompileError::Environment(e.to_string()))?;
        let program = parse_bounds::parse(&env, source, render_parse_errors)
            .map_err(CompileError::Invalid)?;
        Self::finish(program, env, source, variables)
    }

    /// Compiles an expression of a mutating admission policy, which may
    /// also construct `Object{...}` (and its nested `Object.<path>{...}`)
    /// and `JSONPatch{...}` values, evaluated as maps of the fields set,
    /// and call `jsonpatch.escapeKey`.
    pub fn compile_mutation(source: &str, variables: &[&str]) -> Result<Expression, CompileError> {
        let env = library::mutation_env().map_err(|e| CompileError::Environment(e.to_string()))?;
        let program = parse_bounds::parse(&env, source, render_parse_errors)
            .map_err(CompileError::Invalid)?;
        let issues = unknown_types(program.expression());
        if !issues.is_empty() {
            return Err(CompileError::Invalid(render_issues(
                &program, &issues, source,
            )));
        }
        let mismatches = mutation::type_mismatches(program.expression());
        let unnested = mutation::unnest(program.expression());
        let mut expression = Self::finish(program, env, source, variables)?;
        expression.type_mismatch = (!mismatches.is_empty()).then(|| mismatches.join("\n"));
        expression.unnested = unnested;
        Ok(expression)
    }

    /// Checks a parsed program's references and estimates its cost.
    fn finish(
        program: Program,
        env: Arc<Env>,
        source: &str,
        variables: &[&str],
    ) -> Result<Expression, CompileError> {
        let mut estimator = Estimator::with_variables(variables, &UNTYPED, None);
        let estimated_cost = estimator.estimate(program.expression());
        if !estimator.issues.is_empty() {
            return Err(CompileError::Invalid(render_issues(
                &program,
                &estimator.issues,
                source,
            )));
        }
        Ok(Expression {
            program,
            env,
            estimated_cost,
            variables: variables.iter().map(|v| (*v).to_owned()).collect(),
            type_mismatch: None,
            unnested: None,
        })
    }

    /// The worst-case cost of one evaluation, assuming each variable may be
    /// as large as a request.
    pub fn estimated_cost(&self) -> u64 {
        self.estimated_cost
    }

    /// Whether the expression refers to `variable`.
    pub fn references(&self, variable: &str) -> bool {
        self.program.references().has_variable(variable)
    }

    /// Evaluates with each variable bound to a JSON value (`null` for an
    /// absent one). An expression that could cost more than one call may
    /// is first re-estimated from the sizes of the bound values, and
    /// refused when that is still over [`PER_CALL_LIMIT`].
    pub fn evaluate(&self, bindings: &[(&str, &Value)]) -> Result<Value, EvalError> {
        if self.estimated_cost > PER_CALL_LIMIT && self.runtime_cost(bindings) > PER_CALL_LIMIT {
            return Err(EvalError::CostLimit);
        }
        let mut ctx = Context::with_env(Arc::clone(&self.env));
        for (name, value) in bindings {
            ctx.add_variable_as_val(*name, to_val(value, None));
        }
        let result = match &self.unnested {
            Some(expr) => CelValue::resolve(expr, &ctx),
            None => self.program.execute(&ctx),
        }
        .map_err(|e| EvalError::Execution(go_error_text(&e)))?;
        if let Some(mismatch) = &self.type_mismatch {
            return Err(EvalError::TypeMismatch(mismatch.clone()));
        }
        to_json(&result)
    }

    /// The cost estimate with every variable sized by the largest value
    /// bound (untyped values share one size bound at every depth).
    fn runtime_cost(&self, bindings: &[(&str, &Value)]) -> u64 {
        let mut sizes = HashMap::new();
        for (_, value) in bindings {
            observe(&UNTYPED, value, &mut sizes);
        }
        let variables: Vec<&str> = self.variables.iter().map(String::as_str).collect();
        Estimator::with_variables(&variables, &UNTYPED, Some(&sizes))
            .estimate(self.program.expression())
    }
}

/// A CEL result as JSON: durations as Go duration strings, timestamps as
/// RFC 3339, bytes as base64.
fn to_json(value: &CelValue) -> Result<Value, EvalError> {
    Ok(match value {
        CelValue::Null => Value::Null,
        CelValue::Bool(b) => Value::Bool(*b),
        CelValue::Int(i) => Value::from(*i),
        CelValue::UInt(u) => Value::from(*u),
        CelValue::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| EvalError::Unrepresentable("double".to_owned()))?,
        CelValue::String(s) => Value::String(s.as_str().to_owned()),
        CelValue::Bytes(b) => {
            Value::String(base64::engine::general_purpose::STANDARD.encode(b.as_slice()))
        }
        CelValue::List(items) => Value::Array(items.iter().map(to_json).collect::<Result<_, _>>()?),
        CelValue::Map(map) => {
            let mut out = serde_json::Map::with_capacity(map.map.len());
            for (k, v) in map.map.iter() {
                let key = match k {
                    Key::String(s) => s.as_str().to_owned(),
                    Key::Int(i) => i.to_string(),
                    Key::Uint(u) => u.to_string(),
                    Key::Bool(b) => b.to_string(),
                };
                out.insert(key, to_json(v)?);
            }
            Value::Object(out)
        }
        CelValue::Duration(d) => Value::String(go_duration(*d)),
        CelValue::Timestamp(t) => Value::String(t.to_rfc3339()),
        other => return Err(EvalError::Unrepresentable(other.type_of().to_string())),
    })
}

/// A duration as Go's `time.Duration.String` writes it (`1h2m3.5s`).
fn go_duration(d: chrono::Duration) -> String {
    let nanos = d.num_nanoseconds().unwrap_or(i64::MAX);
    if nanos == 0 {
        return "0s".to_owned();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        let (value, unit) = match n {
            n if n < 1_000 => (n as f64, "ns"),
            n if n < 1_000_000 => (n as f64 / 1e3, "µs"),
            n => (n as f64 / 1e6, "ms"),
        };
        return format!("{sign}{value}{unit}");
    }
    let hours = n / 3_600_000_000_000;
    let minutes = (n / 60_000_000_000) % 60;
    let seconds = (n % 60_000_000_000) as f64 / 1e9;
    let mut out = String::from(sign);
    if hours > 0 {
        out.push_str(&format!("{hours}h"));
    }
    if hours > 0 || minutes > 0 {
        out.push_str(&format!("{minutes}m"));
    }
    out.push_str(&format!("{seconds}s"));
    out
}

/// An issue for every struct literal of a type not known.
fn unknown_types(expr: &IdedExpr) -> Vec<TypeIssue> {
    let mut issues = Vec::new();
    mutation::walk(expr, &mut |e| {
        if let Expr::Struct(s) = &e.expr {
            if !mutation::known(&s.type_name) {
                issues.push(TypeIssue {
                    expr_id: e.id,
                    message: format!(
                        "undeclared reference to '{}' (in container '')",
                        s.type_name
                    ),
                });
            }
        }
    });
    issues
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn evaluates_over_bound_variables() {
        let expr = Expression::compile(
            "object.spec.replicas <= params.max && request.operation == 'CREATE'",
            &["object", "params", "request"],
        );
        let Ok(expr) = expr else {
            panic!("{expr:?}");
        };
        let object = json!({"spec": {"replicas": 3}});
        let params = json!({"max": 5});
        let request = json!({"operation": "CREATE"});
        assert_eq!(
            expr.evaluate(&[
                ("object", &object),
                ("params", &params),
                ("request", &request)
            ]),
            Ok(json!(true))
        );
        assert!(expr.references("params") && !expr.references("oldObject"));
    }

    #[test]
    fn enforces_the_per_call_cost_limit() {
        let Ok(expr) = Expression::compile(
            "object.items.all(a, object.items.all(b, a == b))",
            &["object"],
        ) else {
            panic!("compile");
        };
        let small = json!({"items": [1, 1, 1]});
        assert_eq!(expr.evaluate(&[("object", &small)]), Ok(json!(true)));
        let large = json!({"items": vec![1; 2000]});
        assert_eq!(
            expr.evaluate(&[("object", &large)]),
            Err(EvalError::CostLimit)
        );
    }

    #[test]
    fn rejects_undeclared_variables() {
        let err = Expression::compile("oldObject == null", &["object"]).err();
        assert_eq!(
            err,
            Some(CompileError::Invalid(
                "ERROR: <input>:1:1: undeclared reference to 'oldObject' (in container '')\n | oldObject == null\n | ^"
                    .to_owned()
            ))
        );
    }

    #[test]
    fn results_come_back_as_json() {
        let Ok(expr) = Expression::compile("{'n': [1, 2.5, 'x'], 'd': duration('90m')}", &[])
        else {
            panic!("compile");
        };
        assert_eq!(
            expr.evaluate(&[]),
            Ok(json!({"n": [1, 2.5, "x"], "d": "1h30m0s"}))
        );
        let Ok(failing) = Expression::compile("object.missing", &["object"]) else {
            panic!("compile");
        };
        // Worded as cel-go words it, as upstream's messages quote it.
        assert_eq!(
            failing.evaluate(&[("object", &json!({}))]),
            Err(EvalError::Execution("no such key: missing".to_owned()))
        );
    }

    fn mutation(source: &str) -> Expression {
        match Expression::compile_mutation(source, &["object"]) {
            Ok(expr) => expr,
            Err(e) => panic!("{source}: {e}"),
        }
    }

    #[test]
    fn mutations_construct_objects_and_patches() {
        let object = json!({"metadata": {"name": "web"}});
        let apply = mutation(
            "Object{metadata: Object.metadata{labels: {'app': object.metadata.name}}, \
             spec: Object.spec{containers: [Object.spec.containers{name: 'c', image: 'x'}]}}",
        );
        assert_eq!(
            apply.evaluate(&[("object", &object)]),
            Ok(json!({"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "x"}]}}))
        );
        let patch = mutation(
            "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('a/b~c'), value: 'v'}]",
        );
        assert_eq!(
            patch.evaluate(&[("object", &object)]),
            Ok(json!([{"op": "add", "path": "/metadata/labels/a~1b~0c", "value": "v"}]))
        );
    }

    #[test]
    fn mutations_refuse_unknown_types_and_fields() {
        let err = Expression::compile_mutation("Pod{spec: 1}", &[]).err();
        assert_eq!(
            err,
            Some(CompileError::Invalid(
                "ERROR: <input>:1:4: undeclared reference to 'Pod' (in container '')\n | Pod{spec: 1}\n | ...^"
                    .to_owned()
            ))
        );
        let bad_field = mutation("JSONPatch{op: 'add', pathh: '/x'}");
        assert!(matches!(
            bad_field.evaluate(&[("object", &json!({}))]),
            Err(EvalError::Execution(_))
        ));
        let mismatched = mutation("Object{spec: Object.spec{selector: Object.spec.wrong{}}}");
        assert_eq!(
            mismatched.evaluate(&[("object", &json!({}))]),
            Err(EvalError::TypeMismatch(
                "unexpected type name \"Object.spec.wrong\", expected \"Object.spec.selector\", \
                 which matches field name path from root Object type"
                    .to_owned()
            ))
        );
        // Plain expressions know no such types.
        assert!(Expression::compile("jsonpatch.escapeKey('a')", &[])
            .map(|e| e.evaluate(&[]).is_err())
            .unwrap_or(true));
    }
}
