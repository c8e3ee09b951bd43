//! Defaults and validation of MutatingAdmissionPolicies and their bindings
//! (upstream's `pkg/apis/admissionregistration` v1 defaults and
//! `ValidateMutatingAdmissionPolicy[Binding]`): failure and reinvocation
//! policies, match constraints and resources, parameters, match
//! conditions, variables and mutations, whose CEL expressions must compile
//! as the admission plugin compiles them.

use std::collections::HashSet;

use apimachinery::field_errors::{FieldError, Path};
use apimachinery::validation::selectors::{validate_label_selector, LabelSelectorOptions};
use apimachinery::validation::{
    is_dns1035_label, is_dns1123_subdomain, is_path_segment_name, is_qualified_name,
    name_is_dns_subdomain,
};
use kube_cel::Expression;
use serde_json::{json, Value};

use super::ResourceStrategy;

/// The variables every policy expression may use (`params` only when the
/// policy has a paramKind), as the admission plugin binds them.
const VARIABLES: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "variables",
];
const WITH_PARAMS: &[&str] = &[
    "object",
    "oldObject",
    "request",
    "namespaceObject",
    "variables",
    "params",
];
const FAILURE_POLICIES: &[&str] = &["Fail", "Ignore"];
const MATCH_POLICIES: &[&str] = &["Equivalent", "Exact"];
const OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"];
/// A mutating policy cannot match DELETE.
const MUTATING_OPERATIONS: &[&str] = &["*", "CONNECT", "CREATE", "UPDATE"];
const REINVOCATION_POLICIES: &[&str] = &["IfNeeded", "Never"];
const PATCH_TYPES: &[&str] = &["ApplyConfiguration", "JSONPatch"];
const SCOPES: &[&str] = &["*", "Cluster", "Namespaced"];
const MAX_MATCH_CONDITIONS: usize = 64;

/// The strategy of `mutatingadmissionpolicies`.
pub fn mutating_policies() -> ResourceStrategy {
    ResourceStrategy {
        defaults: default_policy,
        validate: validate_policy,
        ..ResourceStrategy::default()
    }
}

/// The strategy of `mutatingadmissionpolicybindings`.
pub fn mutating_policy_bindings() -> ResourceStrategy {
    ResourceStrategy {
        defaults: default_binding,
        validate: validate_binding,
        ..ResourceStrategy::default()
    }
}

pub(super) fn default_policy(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    spec.entry("failurePolicy").or_insert_with(|| json!("Fail"));
    if let Some(constraints) = spec.get_mut("matchConstraints") {
        default_match_resources(constraints);
    }
}

pub(super) fn default_binding(obj: &mut Value) {
    if let Some(resources) = obj.pointer_mut("/spec/matchResources") {
        default_match_resources(resources);
    }
}

fn default_match_resources(resources: &mut Value) {
    let Some(map) = resources.as_object_mut() else {
        return;
    };
    map.entry("matchPolicy")
        .or_insert_with(|| json!("Equivalent"));
    map.entry("namespaceSelector").or_insert_with(|| json!({}));
    map.entry("objectSelector").or_insert_with(|| json!({}));
    for rules in ["resourceRules", "excludeResourceRules"] {
        let rules = map.get_mut(rules).and_then(Value::as_array_mut);
        for rule in rules.into_iter().flatten().filter_map(Value::as_object_mut) {
            rule.entry("scope").or_insert_with(|| json!("*"));
        }
    }
}

pub(super) fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or_default()
}

pub(super) fn items<'a>(v: &'a Value, field: &str) -> &'a [Value] {
    v.get(field)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

pub(super) fn strings<'a>(v: &'a Value, field: &str) -> Vec<&'a str> {
    items(v, field).iter().filter_map(Value::as_str).collect()
}

fn present(v: &Value, field: &str) -> bool {
    v.get(field).is_some_and(|f| !f.is_null())
}

/// An enumerated field: Required when absent, NotSupported when unknown.
fn one_of(v: &Value, field: &str, supported: &[&str], path: &Path, errs: &mut Vec<FieldError>) {
    match text(v, field) {
        "" => errs.push(FieldError::required(&path.child(field), "")),
        value if !supported.contains(&value) => errs.push(FieldError::not_supported(
            &path.child(field),
            value,
            supported,
        )),
        _ => {}
    }
}

/// Compiles a CEL expression as the plugin does, reporting why not.
pub(super) fn compile(
    source: &str,
    mutation: bool,
    params: bool,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let variables = if params { WITH_PARAMS } else { VARIABLES };
    let compiled = if mutation {
        Expression::compile_mutation(source, variables)
    } else {
        Expression::compile(source, variables)
    };
    if let Err(e) = compiled {
        errs.push(FieldError::invalid(path, source, e.to_string()));
    }
}

/// Checks of one kind of policy beside the shared ones (a mutating
/// policy's operations).
pub(super) type ExtraChecks = fn(&Value, &Path, &mut Vec<FieldError>);

/// What every admission policy's spec is checked for, in upstream's order:
/// failure policy, parameter kind, match constraints (with `extra`), match
/// conditions and variables. Returns whether the policy has parameters.
pub(super) fn validate_policy_basics(
    spec: &Value,
    path: &Path,
    extra: ExtraChecks,
    errs: &mut Vec<FieldError>,
) -> bool {
    one_of(spec, "failurePolicy", FAILURE_POLICIES, path, errs);
    let params = present(spec, "paramKind");
    if let Some(kind) = spec.get("paramKind").filter(|k| !k.is_null()) {
        param_kind(kind, &path.child("paramKind"), errs);
    }
    if let Some(constraints) = match_constraints(spec, path, errs) {
        extra(constraints, &path.child("matchConstraints"), errs);
    }
    match_conditions(spec, params, &path.child("matchConditions"), errs);
    for (i, var) in items(spec, "variables").iter().enumerate() {
        variable(var, params, &path.child("variables").index(i), errs);
    }
    params
}

/// What every policy binding's spec is checked for: the policy's name,
/// the parameter reference and the match resources (with `extra`).
pub(super) fn validate_binding_basics(
    spec: &Value,
    path: &Path,
    extra: ExtraChecks,
    errs: &mut Vec<FieldError>,
) {
    match text(spec, "policyName") {
        "" => errs.push(FieldError::required(&path.child("policyName"), "")),
        name => {
            for msg in name_is_dns_subdomain(name, false) {
                errs.push(FieldError::invalid(&path.child("policyName"), name, msg));
            }
        }
    }
    if let Some(reference) = spec.get("paramRef").filter(|r| !r.is_null()) {
        param_ref(reference, &path.child("paramRef"), errs);
    }
    if let Some(resources) = spec.get("matchResources").filter(|r| !r.is_null()) {
        let resources_path = path.child("matchResources");
        match_resources(resources, &resources_path, errs);
        extra(resources, &resources_path, errs);
    }
}

fn validate_policy(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let path = Path::new("spec");
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    let params = validate_policy_basics(spec, &path, mutating_operations, &mut errs);
    let mutations = items(spec, "mutations");
    if mutations.is_empty() {
        errs.push(FieldError::required(
            &path.child("mutations"),
            "mutations must contain at least one item",
        ));
    }
    for (i, m) in mutations.iter().enumerate() {
        mutation(m, params, &path.child("mutations").index(i), &mut errs);
    }
    one_of(
        spec,
        "reinvocationPolicy",
        REINVOCATION_POLICIES,
        &path,
        &mut errs,
    );
    errs
}

fn validate_binding(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let null = Value::Null;
    let spec = obj.get("spec").unwrap_or(&null);
    validate_binding_basics(spec, &Path::new("spec"), mutating_operations, &mut errs);
    errs
}

/// A policy's `matchConstraints`: required, with at least one resource
/// rule (which gives the expressions their types).
fn match_constraints<'a>(
    spec: &'a Value,
    path: &Path,
    errs: &mut Vec<FieldError>,
) -> Option<&'a Value> {
    let constraints_path = path.child("matchConstraints");
    let Some(constraints) = spec.get("matchConstraints").filter(|c| !c.is_null()) else {
        errs.push(FieldError::required(&constraints_path, ""));
        return None;
    };
    match_resources(constraints, &constraints_path, errs);
    if items(constraints, "resourceRules").is_empty() {
        errs.push(FieldError::required(
            &constraints_path.child("resourceRules"),
            "",
        ));
    }
    Some(constraints)
}

fn param_kind(kind: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let api_version = text(kind, "apiVersion");
    let version_path = path.child("apiVersion");
    if api_version.is_empty() {
        errs.push(FieldError::required(&version_path, ""));
    } else if api_version.matches('/').count() > 1 {
        errs.push(FieldError::invalid(
            &version_path,
            api_version,
            format!("unexpected GroupVersion string: {api_version}"),
        ));
    } else {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let group_errors = is_dns1123_subdomain(group);
        if !group.is_empty() && !group_errors.is_empty() {
            errs.push(FieldError::invalid(
                &version_path,
                group,
                group_errors.join(","),
            ));
        }
        let version_errors = is_dns1035_label(version);
        if version.is_empty() {
            errs.push(FieldError::invalid(
                &version_path,
                api_version,
                "version must be specified",
            ));
        } else if !version_errors.is_empty() {
            errs.push(FieldError::invalid(
                &version_path,
                version,
                version_errors.join(","),
            ));
        }
    }
    match text(kind, "kind") {
        "" => errs.push(FieldError::required(&path.child("kind"), "")),
        k => {
            let msgs = is_dns1035_label(&k.to_ascii_lowercase());
            if !msgs.is_empty() {
                errs.push(FieldError::invalid(
                    &path.child("kind"),
                    k,
                    format!(
                        "may have mixed case, but should otherwise match: {}",
                        msgs.join(",")
                    ),
                ));
            }
        }
    }
}

fn param_ref(param_ref: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let name = text(param_ref, "name");
    let selector = param_ref.get("selector").filter(|s| !s.is_null());
    for msg in is_path_segment_name(name)
        .into_iter()
        .filter(|_| !name.is_empty())
    {
        errs.push(FieldError::invalid(&path.child("name"), name, msg));
    }
    if let Some(selector) = selector {
        errs.extend(validate_label_selector(
            Some(selector),
            LabelSelectorOptions::default(),
            &path.child("selector"),
        ));
    }
    if !name.is_empty() && selector.is_some() {
        for field in ["name", "selector"] {
            errs.push(FieldError::forbidden(
                &path.child(field),
                "name and selector are mutually exclusive",
            ));
        }
    }
    if name.is_empty() && selector.is_none() {
        errs.push(FieldError::required(
            path,
            "one of name or selector must be specified",
        ));
    }
    one_of(
        param_ref,
        "parameterNotFoundAction",
        &["Deny", "Allow"],
        path,
        errs,
    );
}

fn selector(resources: &Value, field: &str, path: &Path, errs: &mut Vec<FieldError>) {
    match resources.get(field).filter(|s| !s.is_null()) {
        None => errs.push(FieldError::required(&path.child(field), "")),
        Some(s) => errs.extend(validate_label_selector(
            Some(s),
            LabelSelectorOptions::default(),
            &path.child(field),
        )),
    }
}

fn match_resources(resources: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    one_of(resources, "matchPolicy", MATCH_POLICIES, path, errs);
    selector(resources, "namespaceSelector", path, errs);
    selector(resources, "objectSelector", path, errs);
    for field in ["resourceRules", "excludeResourceRules"] {
        for (i, rule) in items(resources, field).iter().enumerate() {
            named_rule(rule, &path.child(field).index(i), errs);
        }
    }
}

/// Operations a mutating policy or binding may match.
fn mutating_operations(resources: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let path = path.child("resourceRules").child("operations");
    for rule in items(resources, "resourceRules") {
        for op in strings(rule, "operations") {
            if !MUTATING_OPERATIONS.contains(&op) {
                errs.push(FieldError::not_supported(&path, op, MUTATING_OPERATIONS));
            }
        }
    }
}

fn wildcard_among_others(values: &[&str]) -> bool {
    values.len() > 1 && values.contains(&"*")
}

pub(super) fn named_rule(rule: &Value, path: &Path, errs: &mut Vec<FieldError>) {
    let mut seen = HashSet::new();
    for (i, name) in strings(rule, "resourceNames").into_iter().enumerate() {
        let name_path = path.child("resourceNames").index(i);
        for msg in is_path_segment_name(name) {
            errs.push(FieldError::invalid(&name_path, name, msg));
        }
        if !seen.insert(name) {
            errs.push(FieldError::duplicate(&name_path, name));
        }
    }
    let operations = strings(rule, "operations");
    if operations.is_empty() {
        errs.push(FieldError::required(&path.child("operations"), ""));
    }
    if wildcard_among_others(&operations) {
        errs.push(FieldError::invalid(
            &path.child("operations"),
            json!(operations),
            "if '*' is present, must not specify other operations",
        ));
    }
    for (i, op) in operations.iter().enumerate() {
        if !OPERATIONS.contains(op) {
            errs.push(FieldError::not_supported(
                &path.child("operations").index(i),
                *op,
                OPERATIONS,
            ));
        }
    }
    for (field, what) in [("apiGroups", "API groups"), ("apiVersions", "API versions")] {
        let values = strings(rule, field);
        if values.is_empty() {
            errs.push(FieldError::required(&path.child(field), ""));
        }
        if wildcard_among_others(&values) {
            errs.push(FieldError::invalid(
                &path.child(field),
                json!(values),
                format!("if '*' is present, must not specify other {what}"),
            ));
        }
    }
    for (i, version) in strings(rule, "apiVersions").into_iter().enumerate() {
        if version.is_empty() {
            errs.push(FieldError::required(
                &path.child("apiVersions").index(i),
                "",
            ));
        }
    }
    resources(&strings(rule, "resources"), &path.child("resources"), errs);
    if let Some(scope) = rule.get("scope").and_then(Value::as_str) {
        if !SCOPES.contains(&scope) {
            errs.push(FieldError::not_supported(
                &path.child("scope"),
                scope,
                SCOPES,
            ));
        }
    }
}

/// `resources` of a rule: subresource wildcards must not overlap.
fn resources(list: &[&str], path: &Path, errs: &mut Vec<FieldError>) {
    if list.is_empty() {
        errs.push(FieldError::required(path, ""));
    }
    let (mut any_sub, mut any_res) = (HashSet::new(), HashSet::new());
    let (mut single, mut bare) = (false, false);
    for (i, item) in list.iter().enumerate() {
        if item.is_empty() {
            errs.push(FieldError::required(&path.index(i), ""));
            continue;
        }
        single |= *item == "*";
        let Some((res, sub)) = item.split_once('/') else {
            bare = *item != "*";
            continue;
        };
        if any_sub.contains(res) {
            let msg = format!("if '{res}/*' is present, must not specify {item}");
            errs.push(FieldError::invalid(&path.index(i), *item, msg));
        }
        if any_res.contains(sub) {
            let msg = format!("if '*/{sub}' is present, must not specify {item}");
            errs.push(FieldError::invalid(&path.index(i), *item, msg));
        }
        if sub == "*" {
            any_sub.insert(res);
        }
        if res == "*" {
            any_res.insert(sub);
        }
    }
    if list.len() > 1 && list.contains(&"*/*") {
        let msg = "if '*/*' is present, must not specify other resources";
        errs.push(FieldError::invalid(path, json!(list), msg));
    }
    if single && bare {
        let msg = "if '*' is present, must not specify other resources without subresources";
        errs.push(FieldError::invalid(path, json!(list), msg));
    }
}

pub(super) fn match_conditions(
    spec: &Value,
    params: bool,
    path: &Path,
    errs: &mut Vec<FieldError>,
) {
    let conditions = items(spec, "matchConditions");
    if conditions.len() > MAX_MATCH_CONDITIONS {
        errs.push(FieldError::too_many(
            path,
            Some(conditions.len()),
            Some(MAX_MATCH_CONDITIONS),
        ));
    }
    let mut names = HashSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let at = path.index(i);
        match text(condition, "expression").trim() {
            "" => errs.push(FieldError::required(&at.child("expression"), "")),
            source => compile(source, false, params, &at.child("expression"), errs),
        }
        match text(condition, "name") {
            "" => errs.push(FieldError::required(&at.child("name"), "")),
            name => {
                for msg in is_qualified_name(name) {
                    errs.push(FieldError::invalid(&at.child("name"), name, msg));
                }
                if !names.insert(name) {
                    errs.push(FieldError::duplicate(&at.child("name"), name));
                }
            }
        }
    }
}

fn is_cel_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        && !kube_cel::is_reserved(name)
}

fn variable(variable: &Value, params: bool, path: &Path, errs: &mut Vec<FieldError>) {
    match text(variable, "name") {
        name if name.trim().is_empty() => errs.push(FieldError::required(
            &path.child("name"),
            "name is not specified",
        )),
        name if !is_cel_identifier(name) => errs.push(FieldError::invalid(
            &path.child("name"),
            name,
            "name is not a valid CEL identifier",
        )),
        _ => {}
    }
    match text(variable, "expression") {
        source if source.trim().is_empty() => errs.push(FieldError::required(
            &path.child("expression"),
            "expression is not specified",
        )),
        source => compile(source, false, params, &path.child("expression"), errs),
    }
}

fn mutation(m: &Value, params: bool, path: &Path, errs: &mut Vec<FieldError>) {
    let patch_type = text(m, "patchType");
    if patch_type.is_empty() {
        errs.push(FieldError::required(&path.child("patchType"), ""));
        return;
    }
    let (used, other) = match patch_type {
        "JSONPatch" => ("jsonPatch", "applyConfiguration"),
        "ApplyConfiguration" => ("applyConfiguration", "jsonPatch"),
        _ => {
            errs.push(FieldError::not_supported(
                &path.child("patchType"),
                patch_type,
                PATCH_TYPES,
            ));
            return;
        }
    };
    match m.get(used).filter(|v| !v.is_null()) {
        None => errs.push(FieldError::required(
            &path.child(used),
            format!("must be specified when patchType is {patch_type}"),
        )),
        Some(patch) => match text(patch, "expression").trim() {
            "" => errs.push(FieldError::required(
                &path.child(used).child("expression"),
                "",
            )),
            source => compile(
                source,
                true,
                params,
                &path.child(used).child("expression"),
                errs,
            ),
        },
    }
    if present(m, other) {
        errs.push(FieldError::invalid(
            &path.child(other),
            format!("{{{other}}}"),
            format!("must not be specified when patchType is {patch_type}"),
        ));
    }
}

#[cfg(test)]
#[path = "admission_policies_tests.rs"]
mod tests;
