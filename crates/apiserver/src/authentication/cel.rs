//! From a JWT's verified claims to a user (upstream's
//! `k8s.io/apiserver/pkg/authentication/cel` and the `jwtAuthenticator`
//! claim handling of the OIDC plugin): username, groups, UID and extra by
//! claim (with prefix) or CEL expression over `claims`, then the claim
//! validation rules (required claim values or CEL conditions over
//! `claims`) and the user validation rules (CEL conditions over `user`).

use std::collections::BTreeMap;

use super::user::{UserInfo, CREDENTIAL_ID_KEY};
use super::AuthError;
use kube_cel::Expression;
use serde_json::{json, Value};

/// How one user attribute is found.
pub enum Mapping {
    /// Not mapped.
    None,
    /// A claim's value, with a prefix ("" for none).
    Claim { claim: String, prefix: String },
    /// A CEL expression over `claims`.
    Expression(Expression),
}

/// A condition every token must meet.
pub enum ClaimRule {
    /// The claim must be present and be this string.
    Required { claim: String, value: String },
    /// A CEL condition over `claims`, with the message reported when false.
    Expression(Box<Condition>),
}

/// A compiled CEL condition with its source and failure message.
pub struct Condition {
    pub expression: Expression,
    pub source: String,
    pub message: String,
}

/// The claim mappings and validation rules of one JWT authenticator.
pub struct ClaimMapper {
    pub username: Mapping,
    pub groups: Mapping,
    pub uid: Mapping,
    /// Extra keys and their value expressions.
    pub extra: Vec<(String, Expression)>,
    pub claim_rules: Vec<ClaimRule>,
    /// Conditions over `user`.
    pub user_rules: Vec<Condition>,
}

fn err(msg: impl Into<String>) -> AuthError {
    AuthError::Token(msg.into())
}

/// A CEL result as strings: a string or a list of strings, with empty
/// strings (and `null`) counting as absent.
fn string_list(value: &Value) -> Result<Vec<String>, String> {
    const NOT_STRINGS: &str = "expression must return a string or a list of strings";
    match value {
        Value::Null => Ok(Vec::new()),
        Value::String(s) if s.is_empty() => Ok(Vec::new()),
        Value::String(s) => Ok(vec![s.clone()]),
        Value::Array(items) => items
            .iter()
            .filter(|v| v.as_str() != Some(""))
            .map(|v| v.as_str().map(str::to_owned).ok_or(NOT_STRINGS.to_owned()))
            .collect(),
        _ => Err(NOT_STRINGS.to_owned()),
    }
}

fn eval(expression: &Expression, name: &str, value: &Value) -> Result<Value, String> {
    expression
        .evaluate(&[(name, value)])
        .map_err(|e| e.to_string())
}

/// A claim as a string, or why it is not one.
fn string_claim<'a>(claims: &'a Value, claim: &str) -> Result<&'a str, String> {
    match claims.get(claim) {
        None => Err("claim not present".to_owned()),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(format!(
            "json: cannot unmarshal {} into Go value of type string",
            json_kind(other)
        )),
    }
}

/// Go's name for a JSON value's kind in unmarshalling errors.
fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Each condition must evaluate to true; the first false one is reported.
fn check(conditions: &[&Condition], name: &str, value: &Value) -> Result<(), String> {
    for condition in conditions {
        match eval(&condition.expression, name, value)? {
            Value::Bool(true) => {}
            Value::Bool(false) => {
                return Err(format!(
                    "validation expression '{}' failed: {}",
                    condition.source, condition.message
                ))
            }
            _ => return Err("validation expression must return a boolean".to_owned()),
        }
    }
    Ok(())
}

impl ClaimMapper {
    /// The user of verified `claims`, once every rule holds.
    pub fn user(&self, claims: &Value) -> Result<UserInfo, AuthError> {
        let mut user = UserInfo {
            name: self.username(claims)?,
            groups: self.groups(claims)?,
            uid: self.uid(claims)?,
            extra: self.extra(claims)?,
        };
        user.extra.retain(|_, values| !values.is_empty());
        self.check_claims(claims)?;
        if !self.user_rules.is_empty() {
            let value = json!({"username": user.name, "uid": user.uid,
                "groups": user.groups, "extra": user.extra});
            let rules: Vec<&Condition> = self.user_rules.iter().collect();
            check(&rules, "user", &value).map_err(|e| {
                err(format!(
                    "oidc: error evaluating user info validation rule: {e}"
                ))
            })?;
        }
        Ok(user)
    }

    fn username(&self, claims: &Value) -> Result<String, AuthError> {
        match &self.username {
            Mapping::Expression(expression) => {
                let fail = |e: String| {
                    err(format!(
                        "oidc: error evaluating username claim expression: {e}"
                    ))
                };
                match eval(expression, "claims", claims).map_err(fail)? {
                    Value::String(name) if name.is_empty() => Err(err(
                        "oidc: empty username via CEL expression is not allowed",
                    )),
                    Value::String(name) => Ok(name),
                    _ => Err(fail(
                        "username claim expression must return a string".into(),
                    )),
                }
            }
            Mapping::Claim { claim, prefix } => {
                let name = string_claim(claims, claim)
                    .map_err(|e| err(format!("oidc: parse username claims {claim:?}: {e}")))?;
                if claim == "email" {
                    match claims.get("email_verified") {
                        None | Some(Value::Bool(true)) => {}
                        Some(Value::Bool(false)) => return Err(err("oidc: email not verified")),
                        Some(other) => {
                            return Err(err(format!(
                                "oidc: parse 'email_verified' claim: json: cannot unmarshal {} into Go value of type bool",
                                json_kind(other)
                            )))
                        }
                    }
                }
                Ok(format!("{prefix}{name}"))
            }
            Mapping::None => Err(err("oidc: no username mapping")),
        }
    }

    fn groups(&self, claims: &Value) -> Result<Vec<String>, AuthError> {
        match &self.groups {
            Mapping::None => Ok(Vec::new()),
            Mapping::Claim { claim, prefix } => match claims.get(claim) {
                None => Ok(Vec::new()),
                Some(Value::String(g)) => Ok(vec![format!("{prefix}{g}")]),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|g| {
                        g.as_str().map(|g| format!("{prefix}{g}")).ok_or_else(|| {
                            err(format!(
                                "oidc: parse groups claim {claim:?}: json: cannot unmarshal {} into Go value of type string",
                                json_kind(g)
                            ))
                        })
                    })
                    .collect(),
                Some(other) => Err(err(format!(
                    "oidc: parse groups claim {claim:?}: json: cannot unmarshal {} into Go value of type string",
                    json_kind(other)
                ))),
            },
            Mapping::Expression(expression) => eval(expression, "claims", claims)
                .and_then(|v| string_list(&v))
                .map_err(|e| err(format!("oidc: error evaluating group claim expression: {e}"))),
        }
    }

    fn uid(&self, claims: &Value) -> Result<String, AuthError> {
        match &self.uid {
            Mapping::None => Ok(String::new()),
            Mapping::Claim { claim, .. } => string_claim(claims, claim)
                .map(str::to_owned)
                .map_err(|e| err(format!("oidc: parse uid claim {claim:?}: {e}"))),
            Mapping::Expression(expression) => {
                let fail =
                    |e: String| err(format!("oidc: error evaluating uid claim expression: {e}"));
                match eval(expression, "claims", claims).map_err(fail)? {
                    Value::String(uid) => Ok(uid),
                    _ => Err(fail("uid claim expression must return a string".into())),
                }
            }
        }
    }

    fn extra(&self, claims: &Value) -> Result<BTreeMap<String, Vec<String>>, AuthError> {
        let mut extra = BTreeMap::new();
        if let Some(jti) = claims.get("jti").and_then(Value::as_str) {
            extra.insert(CREDENTIAL_ID_KEY.to_owned(), vec![format!("JTI={jti}")]);
        }
        for (key, expression) in &self.extra {
            let values = eval(expression, "claims", claims)
                .and_then(|v| string_list(&v))
                .map_err(|e| {
                    err(format!(
                        "oidc: error evaluating extra claim expression: {e}"
                    ))
                })?;
            extra.insert(key.clone(), values);
        }
        Ok(extra)
    }

    fn check_claims(&self, claims: &Value) -> Result<(), AuthError> {
        let mut conditions = Vec::new();
        for rule in &self.claim_rules {
            match rule {
                ClaimRule::Required { claim, value } => {
                    let got = match claims.get(claim) {
                        None => {
                            return Err(err(format!(
                                "oidc: required claim {claim} not present in ID token"
                            )))
                        }
                        Some(_) => string_claim(claims, claim)
                            .map_err(|e| err(format!("oidc: parse claim {claim}: {e}")))?,
                    };
                    if got != value {
                        return Err(err(format!(
                            "oidc: required claim {claim} value does not match. Got = {got}, want = {value}"
                        )));
                    }
                }
                ClaimRule::Expression(condition) => conditions.push(condition.as_ref()),
            }
        }
        check(&conditions, "claims", claims).map_err(|e| {
            err(format!(
                "oidc: error evaluating claim validation expression: {e}"
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cel(source: &str, variable: &str) -> Expression {
        Expression::compile(source, &[variable]).unwrap()
    }

    fn mapper() -> ClaimMapper {
        ClaimMapper {
            username: Mapping::Expression(cel("'acme:' + claims.sub", "claims")),
            groups: Mapping::Claim {
                claim: "groups".into(),
                prefix: "oidc:".into(),
            },
            uid: Mapping::Expression(cel("claims.sub", "claims")),
            extra: vec![(
                "example.com/team".into(),
                cel("claims.?team.orValue('')", "claims"),
            )],
            claim_rules: vec![
                ClaimRule::Required {
                    claim: "hd".into(),
                    value: "example.com".into(),
                },
                ClaimRule::Expression(Box::new(Condition {
                    expression: cel("claims.sub != 'mallory'", "claims"),
                    source: "claims.sub != 'mallory'".into(),
                    message: "mallory is banned".into(),
                })),
            ],
            user_rules: vec![Condition {
                expression: cel("!user.username.startsWith('acme:system:')", "user"),
                source: "!user.username.startsWith('acme:system:')".into(),
                message: "no system users".into(),
            }],
        }
    }

    #[test]
    fn claims_map_through_cel_and_rules() {
        let m = mapper();
        let user = m
            .user(
                &json!({"sub": "alice", "hd": "example.com", "groups": ["dev"],
                "team": "blue", "jti": "j1"}),
            )
            .unwrap();
        assert_eq!(user.name, "acme:alice");
        assert_eq!(user.uid, "alice");
        assert_eq!(user.groups, vec!["oidc:dev"]);
        assert_eq!(user.extra["example.com/team"], vec!["blue"]);
        assert_eq!(user.extra[CREDENTIAL_ID_KEY], vec!["JTI=j1"]);
        // An empty extra value is left out.
        let user = m.user(&json!({"sub": "bob", "hd": "example.com"})).unwrap();
        assert!(!user.extra.contains_key("example.com/team"));
    }

    #[test]
    fn failing_rules_refuse_with_upstreams_messages() {
        let m = mapper();
        let msg = |claims: Value| m.user(&claims).unwrap_err().to_string();
        assert_eq!(
            msg(json!({"sub": "mallory", "hd": "example.com"})),
            "oidc: error evaluating claim validation expression: validation expression 'claims.sub != 'mallory'' failed: mallory is banned"
        );
        assert_eq!(
            msg(json!({"sub": "alice", "hd": "other.com"})),
            "oidc: required claim hd value does not match. Got = other.com, want = example.com"
        );
        assert_eq!(
            msg(json!({"sub": "alice"})),
            "oidc: required claim hd not present in ID token"
        );
        assert_eq!(
            msg(json!({"sub": "system:x", "hd": "example.com"})),
            "oidc: error evaluating user info validation rule: validation expression '!user.username.startsWith('acme:system:')' failed: no system users"
        );
        assert!(msg(json!({"hd": "example.com"}))
            .starts_with("oidc: error evaluating username claim expression: "));
    }

    #[test]
    fn email_usernames_need_a_verified_email() {
        let m = ClaimMapper {
            username: Mapping::Claim {
                claim: "email".into(),
                prefix: String::new(),
            },
            groups: Mapping::None,
            uid: Mapping::None,
            extra: Vec::new(),
            claim_rules: Vec::new(),
            user_rules: Vec::new(),
        };
        assert_eq!(m.user(&json!({"email": "a@b"})).unwrap().name, "a@b");
        assert_eq!(
            m.user(&json!({"email": "a@b", "email_verified": false}))
                .unwrap_err()
                .to_string(),
            "oidc: email not verified"
        );
        assert_eq!(
            string_list(&json!(["a", "", "b"])).unwrap(),
            vec!["a".to_owned(), "b".to_owned()]
        );
        assert!(string_list(&json!(5)).is_err());
    }
}
