use super::*;

#[test]
fn generated_table_parses() {
    let shapes = parse(TABLE).unwrap();
    assert!(shapes.structs.len() > 1000, "{}", shapes.structs.len());
}

fn field_names(shapes: &Shapes, at: usize) -> Vec<&str> {
    shapes.structs[at]
        .fields
        .iter()
        .map(|f| f.name.as_str())
        .collect()
}

#[test]
fn roots_start_with_kind_then_api_version_in_go_order() {
    let shapes = shapes();
    for (api_version, kind) in [
        ("apps/v1", "DaemonSet"),
        ("v1", "ReplicationController"),
        ("v1", "Pod"),
        ("batch/v1", "CronJob"),
        ("autoscaling/v1", "HorizontalPodAutoscaler"),
        ("autoscaling/v2", "HorizontalPodAutoscaler"),
        ("events.k8s.io/v1", "Event"),
        ("meta.k8s.io/v1", "Status"),
    ] {
        let at = shapes.kind(api_version, kind).unwrap();
        assert_eq!(
            field_names(shapes, at)[..2],
            ["kind", "apiVersion"],
            "{kind}"
        );
    }
    let configmap = shapes.kind("v1", "ConfigMap").unwrap();
    assert_eq!(
        field_names(shapes, configmap),
        [
            "kind",
            "apiVersion",
            "metadata",
            "immutable",
            "data",
            "binaryData"
        ]
    );
}

#[test]
fn fields_carry_go_options_and_shapes() {
    let shapes = shapes();
    let status = shapes
        .by_name("io.k8s.api.apps.v1.DaemonSetStatus")
        .unwrap();
    let fields = &shapes.structs[status].fields;
    let field = |n: &str| fields.iter().find(|f| f.name == n).unwrap();
    let scheduled = field("currentNumberScheduled");
    assert!(!scheduled.omit_empty && scheduled.shape == Shape::Int);
    let collisions = field("collisionCount");
    assert!(collisions.omit_empty);
    assert_eq!(collisions.shape, Shape::Pointer(Box::new(Shape::Int)));
    let meta = shapes
        .by_name("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")
        .unwrap();
    let created = shapes.structs[meta]
        .fields
        .iter()
        .find(|f| f.name == "creationTimestamp")
        .unwrap();
    assert!(created.omit_zero && created.shape == Shape::Time);
}

#[test]
fn malformed_lines_are_reported_with_their_number() {
    let err = parse("type a\n x - @b\n").unwrap_err();
    assert_eq!(err.line, 2);
    assert!(err.message.contains("unknown type b"), "{err}");
    assert_eq!(parse("type a\n x q s\n").unwrap_err().line, 2);
    assert_eq!(parse("kind v1 A nowhere\n").unwrap_err().line, 1);
    assert_eq!(parse(" x - s\n").unwrap_err().line, 1);
    let ok = parse("type a\n x ez *[{q\n").unwrap();
    let shape = &ok.structs[0].fields[0].shape;
    let quantities = Shape::Map(Box::new(Shape::Quantity));
    assert_eq!(
        *shape,
        Shape::Pointer(Box::new(Shape::Slice(Box::new(quantities))))
    );
}
