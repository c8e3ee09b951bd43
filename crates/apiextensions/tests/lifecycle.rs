//! A CRD from creation to serving its custom resources, through the public
//! API in the order the server uses it.

use apiextensions::{
    apply_crd_defaults, prepare_for_create, published_definitions, unknown_field_messages,
    validate_crd, validate_scale_spec, validate_type_meta, CompiledSchema,
};
use serde_json::{json, Value};

fn crontab_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {"plural": "crontabs", "kind": "CronTab", "shortNames": ["ct"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "cronSpec": {"type": "string", "pattern": "^(\\d+|\\*)(/\\d+)?(\\s+(\\d+|\\*)(/\\d+)?){4}$"},
                        "image": {"type": "string"},
                        "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1}
                    }},
                    "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}
                }}},
                "subresources": {"status": {}, "scale": {
                    "specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}
            }]
        }
    })
}

fn strings(errs: Vec<apimachinery::FieldError>) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

#[test]
fn crd_then_custom_resources() {
    let mut crd = crontab_crd();
    apply_crd_defaults(&mut crd);
    prepare_for_create(&mut crd);
    assert_eq!(crd["spec"]["names"]["listKind"], json!("CronTabList"));
    assert_eq!(strings(validate_crd(&crd)), Vec::<String>::new());

    let schema = match CompiledSchema::new(&crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    {
        Ok(s) => s,
        Err(errs) => panic!("schema refused: {errs:?}"),
    };
    let mut cr = json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "my-cron", "namespace": "default"},
        "spec": {"cronSpec": "* * * * */5", "image": "my-cron-image", "color": "blue"}
    });
    let unknown = schema.prune(&mut cr);
    assert_eq!(
        unknown_field_messages(&unknown),
        vec!["unknown field \"spec.color\""]
    );
    schema.apply_defaults(&mut cr);
    assert_eq!(cr["spec"]["replicas"], json!(1));
    assert!(validate_type_meta(&cr, "stable.example.com", "v1", "CronTab").is_empty());
    assert!(schema.validate(&cr).is_empty());
    assert!(validate_scale_spec(&cr, ".spec.replicas").is_empty());

    let mut bad = cr.clone();
    bad["spec"]["cronSpec"] = json!("every minute");
    bad["spec"]["replicas"] = json!(11);
    assert_eq!(
        strings(schema.validate_update(&bad, &cr)),
        vec![
            r#"spec.cronSpec: Invalid value: "every minute": spec.cronSpec in body should match '^(\d+|\*)(/\d+)?(\s+(\d+|\*)(/\d+)?){4}$'"#,
            "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10",
        ]
    );

    let (smd, root) = schema.structured("stable.example.com", "v1", "CronTab");
    assert_eq!(root, "com.example.stable.v1.CronTab");
    assert!(smd.get(&root).is_some());

    let defs = published_definitions(&crd, "v1").map(|[kind, list]| (kind.name, list.name));
    assert_eq!(
        defs,
        Some((
            "com.example.stable.v1.CronTab".to_owned(),
            "com.example.stable.v1.CronTabList".to_owned()
        ))
    );
}
