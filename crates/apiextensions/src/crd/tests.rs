use serde_json::json;

use super::*;

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                      "shortNames": ["wd"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                }}},
                "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size",
                                                         "statusReplicasPath": ".status.replicas"}},
                "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]
            }],
            "conversion": {"strategy": "None"}
        },
        "status": {"storedVersions": ["v1"]}
    })
}

fn messages(errs: Vec<FieldError>) -> Vec<String> {
    errs.iter().map(|e| e.to_string()).collect()
}

#[test]
fn valid_crd_passes() {
    assert_eq!(messages(validate_crd(&crd())), Vec::<String>::new());
}

#[test]
fn name_must_be_plural_dot_group() {
    let mut c = crd();
    c["metadata"]["name"] = json!("gadgets.example.com");
    assert_eq!(
        messages(validate_crd(&c)),
        vec![
            r#"metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group"#
        ]
    );
}

#[test]
fn group_scope_and_names() {
    let mut c = crd();
    c["metadata"]["name"] = json!("Widgets.example");
    c["spec"]["group"] = json!("example");
    c["spec"]["scope"] = json!("Global");
    c["spec"]["names"] =
        json!({"plural": "Widgets", "kind": "Widget", "listKind": "Widget", "shortNames": ["w_d"]});
    let got = messages(validate_crd(&c));
    assert!(
        got.contains(
            &r#"spec.group: Invalid value: "example": should be a domain with at least one dot"#
                .to_owned()
        ),
        "{got:?}"
    );
    assert!(got.contains(&r#"spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced""#.to_owned()), "{got:?}");
    assert!(
        got.contains(&"spec.names.singular: Required value".to_owned()),
        "{got:?}"
    );
    assert!(got.contains(&r#"spec.names.listKind: Invalid value: "Widget": kind and listKind may not be the same"#.to_owned()), "{got:?}");
    assert!(
        got.iter()
            .any(|e| e
                .starts_with(r#"spec.names.plural: Invalid value: "Widgets": a DNS-1035 label"#)),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|e| e.starts_with(r#"spec.names.shortNames[0]: Invalid value: "w_d""#)),
        "{got:?}"
    );
}

#[test]
fn versions_need_one_storage_unique_names_and_schemas() {
    let mut c = crd();
    let mut second = c["spec"]["versions"][0].clone();
    second["schema"] = Value::Null;
    if let Some(v) = c["spec"]["versions"].as_array_mut() {
        v.push(second);
    }
    let got = messages(validate_crd(&c));
    assert!(
        got.contains(&"spec.versions[1].schema.openAPIV3Schema: Required value".to_owned()),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|e| e.starts_with("spec.versions: Invalid value: ")
                && e.ends_with("must contain unique version names")),
        "{got:?}"
    );
    assert!(
        got.iter()
            .any(|e| e.ends_with("must have exactly one version marked as storage version")),
        "{got:?}"
    );
}

#[test]
fn identical_schemas_report_under_spec_validation() {
    let mut c = crd();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["size"] = json!({});
    let got = messages(validate_crd(&c));
    assert_eq!(
        got,
        vec!["spec.validation.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields"]
    );
    let mut two = c.clone();
    let mut v2 = two["spec"]["versions"][0].clone();
    v2["name"] = json!("v2");
    v2["storage"] = json!(false);
    v2["schema"] = crd()["spec"]["versions"][0]["schema"].clone();
    if let Some(v) = two["spec"]["versions"].as_array_mut() {
        v.push(v2);
    }
    let got = messages(validate_crd(&two));
    assert_eq!(
        got,
        vec!["spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields"]
    );
}

#[test]
fn subresources_and_columns() {
    let mut c = crd();
    c["spec"]["versions"][0]["subresources"]["scale"] =
        json!({"specReplicasPath": "spec.size", "statusReplicasPath": ".spec.x"});
    c["spec"]["versions"][0]["additionalPrinterColumns"] =
        json!([{"name": "A", "type": "map", "jsonPath": ""}]);
    let got = messages(validate_crd(&c));
    assert_eq!(
        got,
        vec![
            r#"spec.subresources.scale.specReplicasPath: Invalid value: "spec.size": must be a simple json path starting with ."#,
            r#"spec.subresources.scale.statusReplicasPath: Invalid value: ".spec.x": should be a json path under .status"#,
            r#"spec.additionalPrinterColumns[0].type: Invalid value: "map": must be one of boolean,date,integer,number,string"#,
            "spec.additionalPrinterColumns[0].JSONPath: Required value",
        ]
    );
}

#[test]
fn conversion_webhook_rules() {
    let mut c = crd();
    c["spec"]["conversion"] =
        json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://x/y?z=1"}}});
    let got = messages(validate_crd(&c));
    assert_eq!(
        got,
        vec![
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
            r#"spec.conversion.webhookClientConfig.url: Invalid value: "z=1": query parameters are not permitted in the URL"#,
            "spec.conversion.conversionReviewVersions: Required value",
        ]
    );
    c["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v2"],
        "clientConfig": {"service": {"namespace": "ns", "name": "svc"}}}});
    assert_eq!(
        messages(validate_crd(&c)),
        vec![
            r#"spec.conversion.conversionReviewVersions: Invalid value: ["v2"]: must include at least one of v1, v1beta1"#
        ]
    );
}

#[test]
fn selectable_fields() {
    let mut c = crd();
    c["spec"]["versions"][0]["selectableFields"] =
        json!([{"jsonPath": ".spec.size"}, {"jsonPath": ".spec.nope"}, {"jsonPath": ".spec"}]);
    assert_eq!(
        messages(validate_crd(&c)),
        vec![
            r#"spec.selectableFields[1].jsonPath: Invalid value: ".spec.nope": is an invalid path: does not refer to a valid field"#,
            r#"spec.selectableFields[2].jsonPath: Invalid value: ".spec": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."#,
        ]
    );
}

#[test]
fn stored_versions_and_updates() {
    let mut c = crd();
    c["status"]["storedVersions"] = json!(["v0"]);
    let got = messages(validate_crd(&c));
    assert!(
        got.contains(
            &r#"status.storedVersions: Invalid value: ["v0"]: must have the storage version v1"#
                .to_owned()
        ),
        "{got:?}"
    );
    assert!(got.iter().any(|e| e.starts_with(r#"status.storedVersions[0]: Invalid value: "v0": missing from spec.versions; v0 was previously a storage version"#)), "{got:?}");

    let old = crd();
    let mut new = crd();
    new["metadata"]["resourceVersion"] = json!("1");
    let mut old_rv = old.clone();
    old_rv["metadata"]["resourceVersion"] = json!("1");
    new["spec"]["group"] = json!("other.com");
    let got = messages(validate_crd_update(&new, &old_rv));
    assert!(
        got.contains(&r#"spec.group: Invalid value: "other.com": field is immutable"#.to_owned()),
        "{got:?}"
    );
}

#[test]
fn protected_groups_need_approval() {
    let mut c = crd();
    c["metadata"]["name"] = json!("widgets.apps.k8s.io");
    c["spec"]["group"] = json!("apps.k8s.io");
    let got = messages(validate_crd(&c));
    assert_eq!(
        got,
        vec![
            r#"metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation "api-approved.kubernetes.io", see https://github.com/kubernetes/enhancements/pull/1111"#
        ]
    );
    c["metadata"]["annotations"] =
        json!({"api-approved.kubernetes.io": "https://github.com/kubernetes/kubernetes/pull/1"});
    assert!(validate_crd(&c).is_empty());
}

#[test]
fn updates_keep_rules_the_old_crd_already_broke() {
    let mut old = crd();
    old["metadata"]["resourceVersion"] = json!("7");
    old["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        ["set"] =
        json!({"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "object"}});
    let strict = messages(validate_crd(&old));
    assert_eq!(
        strict,
        vec!["spec.validation.openAPIV3Schema.properties[spec].properties[set].items.x-kubernetes-map-type: Invalid value: null: must be atomic as item of a list with x-kubernetes-list-type=set"]
    );
    let mut new = old.clone();
    new["spec"]["names"]["shortNames"] = json!(["w"]);
    assert_eq!(
        messages(validate_crd_update(&new, &old)),
        Vec::<String>::new()
    );
    let mut plain = crd();
    plain["metadata"]["resourceVersion"] = json!("7");
    assert_eq!(messages(validate_crd_update(&new, &plain)), strict);
}

#[test]
fn ca_bundle_checked_once_established() {
    let mut old = crd();
    old["metadata"]["resourceVersion"] = json!("7");
    old["status"]["conditions"] = json!([{"type": "Established", "status": "True"}]);
    let mut new = old.clone();
    new["spec"]["conversion"] = json!({"strategy": "Webhook", "webhook": {"conversionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://x.example/convert", "caBundle": "bm90IGEgY2VydA=="}}});
    assert_eq!(
        messages(validate_crd_update(&new, &old)),
        vec![
            r#"spec.conversion.webhookClientConfig.caBundle: Invalid value: "bm90IGEgY2VydA==": data does not contain any valid RSA or ECDSA certificates"#
        ]
    );
    let mut created = new.clone();
    created["status"] = json!({"storedVersions": ["v1"]});
    assert!(validate_crd(&created).is_empty());
}

#[test]
fn versions_are_shown_as_upstream_internal_type() {
    let mut c = crd();
    c["spec"]["versions"][0]["storage"] = json!(false);
    c["status"]["storedVersions"] = json!(["v1"]);
    let got = messages(validate_crd(&c));
    // Field errors render objects with sorted keys, so Go's struct field
    // order is not reproduced.
    assert_eq!(
        got,
        vec![
            r#"spec.versions: Invalid value: [{"AdditionalPrinterColumns":null,"Deprecated":false,"DeprecationWarning":null,"Name":"v1","Schema":null,"SelectableFields":null,"Served":true,"Storage":false,"Subresources":null}]: must have exactly one version marked as storage version"#
        ]
    );
}
