use serde_json::json;

use super::*;

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

#[test]
fn compact_output_escapes_html_and_ends_with_a_newline() {
    let v = json!({"kind": "ConfigMap", "data": {"a<b>&c": "x\u{2028}y\u{2029}z\"\n\u{1}é"}});
    assert_eq!(
        text(to_vec(&v).unwrap()),
        "{\"kind\":\"ConfigMap\",\"data\":{\"a\\u003cb\\u003e\\u0026c\":\"x\\u2028y\\u2029z\\\"\\n\\u0001é\"}}\n"
    );
}

#[test]
fn pretty_output_is_marshal_indent_without_newline() {
    let v = json!({"a": [1, {}], "b": [], "c": "<"});
    assert_eq!(
        text(to_vec_pretty(&v).unwrap()),
        "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": [],\n  \"c\": \"\\u003c\"\n}"
    );
}

#[test]
fn floats_are_written_as_go_writes_them() {
    let cases = [
        (1.0, "1"),
        (0.5, "0.5"),
        (-0.0, "-0"),
        (1e20, "100000000000000000000"),
        (1e21, "1e+21"),
        (1.5e300, "1.5e+300"),
        (1e-7, "1e-7"),
        (1.25e-10, "1.25e-10"),
        (0.000001, "0.000001"),
    ];
    for (f, want) in cases {
        assert_eq!(go_float(f, false), want, "{f}");
    }
    assert_eq!(go_float(f64::from(0.1f32), true), "0.1");
    assert_eq!(text(to_vec(&json!([1.0, 2])).unwrap()), "[1,2]\n");
}
