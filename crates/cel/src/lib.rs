//! Kubernetes CEL validation rules (`x-kubernetes-validations`) for custom
//! resources, over the `cel` crate's parser and interpreter.
//!
//! [`RuleSet::compile`] walks a CRD version's `openAPIV3Schema`, compiles
//! every rule at its node, checks it against the schema and estimates its
//! cost, reporting problems as field errors at the rule's place in the CRD.
//! [`RuleSet::validate`] evaluates the rules against an object (and its
//! old version on update), reporting failures as field errors at the
//! object's fields; [`RuleSet::validate_with_budget`] also returns the
//! failures ratcheted to warnings and the cost budget left.
//!
//! [`Expression`] compiles and evaluates a standalone expression over
//! named JSON variables, for other users of CEL such as admission
//! policies; [`Expression::compile_mutation`] also lets it construct the
//! `Object{...}` and `JSONPatch{...}` values of mutating admission policies.

mod compile;
mod convert;
mod cost;
mod expression;
mod fieldpath;
mod library;
pub mod limits;
mod mutation;
mod parse_bounds;
mod schema;
mod validate;

use std::sync::Arc;

use apimachinery::field_errors::{FieldError, Path};
use cel::Env;
use serde_json::Value;

use crate::compile::{Compiler, Place};
pub use crate::convert::is_reserved;
pub use crate::expression::{CompileError, EvalError, Expression};
use crate::schema::Node;
pub use crate::validate::Outcome;
use crate::validate::Walk;

/// The compiled validation rules of one schema.
pub struct RuleSet {
    root: Node,
    env: Arc<Env>,
}

impl std::fmt::Debug for RuleSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleSet")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl RuleSet {
    /// Compiles the rules of `schema`, reporting errors under the path
    /// upstream uses for a CRD's shared schema,
    /// `spec.validation.openAPIV3Schema`.
    pub fn compile(schema: &Value) -> Result<RuleSet, Vec<FieldError>> {
        let root = Path::new("spec")
            .child("validation")
            .child("openAPIV3Schema");
        Self::compile_at(schema, &root)
    }

    /// Compiles the rules of `schema`, reporting errors under `root` (e.g.
    /// `spec.versions[1].schema.openAPIV3Schema`).
    pub fn compile_at(schema: &Value, root: &Path) -> Result<RuleSet, Vec<FieldError>> {
        let env = library::env().map_err(|e| vec![FieldError::internal(root, e)])?;
        let mut node = Node::parse(schema, true);
        let mut compiler = Compiler::new(&env);
        let place = Place {
            path: root.clone(),
            cardinality: Some(1),
            uncorrelatable: None,
        };
        compiler.node(&mut node, &place);
        compiler.check_total(root);
        if !compiler.errors.is_empty() {
            return Err(compiler.errors);
        }
        node.finish(0);
        Ok(RuleSet { root: node, env })
    }

    /// Whether the schema has any rule at all.
    pub fn is_empty(&self) -> bool {
        !self.root.rules_below
    }

    /// Validates `new` (against `old` on update) and returns the errors.
    pub fn validate(&self, new: &Value, old: Option<&Value>) -> Vec<FieldError> {
        self.validate_with_budget(new, old, limits::RUNTIME_CEL_COST_BUDGET)
            .errors
    }

    /// Validates `new` (against `old` on update) within a runtime cost
    /// `budget`, returning errors, ratcheted warnings and what is left of
    /// the budget.
    pub fn validate_with_budget(&self, new: &Value, old: Option<&Value>, budget: i64) -> Outcome {
        let mut walk = Walk {
            env: &self.env,
            outcome: Outcome {
                remaining_budget: budget,
                ..Outcome::default()
            },
        };
        let unchanged = old == Some(new);
        walk.node(&self.root, None, new, old, unchanged);
        walk.outcome
    }
}
