//! Decoding and validating `AuthenticationConfiguration` files: upstream's
//! field paths and messages, and what a valid file compiles to.

use super::*;

fn parse(yaml: &str) -> Result<AuthenticationConfig, String> {
    let spec = decode(yaml.as_bytes())?;
    compile(spec, &["https://kubernetes.default.svc".to_owned()]).map_err(|e| e.to_string())
}

const HEADER: &str = "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\n";

#[test]
fn a_valid_file_compiles_its_authenticators() {
    let config = parse(&format!(
        "{HEADER}jwt:
- issuer:
    url: https://idp.example
    discoveryURL: https://idp.internal/.well-known/openid-configuration
    audiences: [a, b]
    audienceMatchPolicy: MatchAny
  claimValidationRules:
  - claim: hd
    requiredValue: example.com
  - expression: claims.email_verified == true
    message: unverified
  claimMappings:
    username:
      expression: claims.email
    groups:
      claim: groups
      prefix: 'oidc:'
    extra:
    - key: example.com/team
      valueExpression: claims.team
anonymous:
  enabled: true
  conditions:
  - path: /livez
"
    ))
    .unwrap();
    assert_eq!(config.jwt.len(), 1);
    let jwt = &config.jwt[0];
    assert_eq!(jwt.issuer, "https://idp.example");
    assert_eq!(jwt.audiences, vec!["a", "b"]);
    assert_eq!(
        jwt.discovery_url.as_deref(),
        Some("https://idp.internal/.well-known/openid-configuration")
    );
    assert_eq!(jwt.mapper.claim_rules.len(), 2);
    assert_eq!(
        config.anonymous,
        Some(AnonymousConfig {
            enabled: true,
            paths: vec!["/livez".into()]
        })
    );
}

#[test]
fn invalid_files_report_upstreams_field_errors() {
    let err = parse(&format!(
        "{HEADER}jwt:
- issuer:
    url: http://idp.example?x=1
    audiences: []
  claimMappings:
    username:
      claim: sub
"
    ))
    .err()
    .unwrap();
    assert_eq!(
        err,
        "invalid authentication configuration: [jwt[0].issuer.url: Invalid value: \"http://idp.example?x=1\": URL scheme must be https, \
         jwt[0].issuer.url: Invalid value: \"http://idp.example?x=1\": URL must not contain a query, \
         jwt[0].issuer.audiences: Required value: at least one jwt[0].issuer.audiences is required, \
         jwt[0].claimMappings.username.prefix: Required value: prefix is required when claim is set. It can be set to an empty string to disable prefixing]"
    );
    let err = parse(&format!(
        "{HEADER}jwt:
- issuer:
    url: https://kubernetes.default.svc
    audiences: [a]
  claimMappings:
    username:
      expression: 'claims.sub +'
"
    ))
    .err()
    .unwrap();
    assert!(
        err.contains("jwt[0].issuer.url: Invalid value: \"https://kubernetes.default.svc\": URL must not overlap with disallowed issuers: [https://kubernetes.default.svc]"),
        "{err}"
    );
    assert!(
        err.contains("jwt[0].claimMappings.username.expression: Invalid value: \"claims.sub +\": compilation failed: "),
        "{err}"
    );
}

#[test]
fn email_usernames_need_email_verified_and_extra_keys_are_checked() {
    let err = parse(&format!(
        "{HEADER}jwt:
- issuer:
    url: https://idp.example
    audiences: [a]
  claimMappings:
    username:
      expression: claims.email
    extra:
    - key: kubernetes.io/team
      valueExpression: claims.team
    - key: Example.com/x
      valueExpression: claims.x
"
    ))
    .err()
    .unwrap();
    for part in [
        "jwt[0].claimMappings.extra[0].key: Invalid value: \"kubernetes.io/team\": k8s.io, kubernetes.io and their subdomains are reserved for Kubernetes use",
        "jwt[0].claimMappings.extra[1].key: Invalid value: \"Example.com/x\": must be lowercase",
        "jwt[0].claimMappings.username.expression: Invalid value: \"claims.email\": claims.email_verified must be used",
    ] {
        assert!(err.contains(part), "{part} not in {err}");
    }
    assert!(selects_claim("claims.?email.orValue('')", "email"));
    assert!(!selects_claim("claims.email_verified", "email"));
    assert!(!selects_claim("myclaims.email", "email"));
}

#[test]
fn anonymous_conditions_need_enabled_and_documents_are_strict() {
    let err = parse(&format!(
        "{HEADER}anonymous:\n  enabled: false\n  conditions:\n  - path: /livez\n"
    ))
    .err()
    .unwrap();
    assert_eq!(
        err,
        "invalid authentication configuration: anonymous.conditions: Invalid value: [{\"path\":\"/livez\"}]: enabled should be set to true when conditions are defined"
    );
    assert!(parse(&format!(
        "{HEADER}jwt:\n- issuer:\n    url: https://x\n    bogus: 1\n"
    ))
    .err()
    .unwrap()
    .contains("unknown field `bogus`"));
    assert_eq!(
        parse("apiVersion: v1\nkind: AuthenticationConfiguration\n")
            .err()
            .unwrap(),
        "no kind \"AuthenticationConfiguration\" is registered for version \"v1\""
    );
    assert_eq!(decode(b"").err().unwrap(), "empty config data");
}
