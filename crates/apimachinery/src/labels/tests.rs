//! Tests for the `labels` module.
use super::*;
use serde_json::json;

fn set(pairs: &[(&'static str, &'static str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

fn parse_err(s: &str) -> String {
    match Selector::parse(s) {
        Ok(sel) => panic!("{s:?} parsed as {sel}"),
        Err(e) => e.0,
    }
}

#[test]
fn good_selectors_round_trip() {
    let good = [
        "",
        "x=a",
        "x=a,y=b,z=c",
        "x!=a",
        "x==a",
        "x=a,y!=b",
        "x in (a)",
        "x in (a,b,c)",
        "x notin (a)",
        "x notin (a,b)",
        "x,y in (a)",
        "!x",
        "x>1",
        "x>1,z<5",
        "x=",
        "x= ",
        "x=,z= ",
        "x= ,z= ",
        "x!=a,y=b",
        "a.b/c-d_e=f",
    ];
    for s in good {
        let sel = Selector::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
        let want = if s.contains(" in ") || s.contains(" notin ") {
            s.to_owned()
        } else {
            s.replace(' ', "")
        };
        assert_eq!(sel.to_string(), want, "{s:?}");
    }
}

#[test]
fn whitespace_and_sorting() {
    let sel = Selector::parse("  z = 1 ,\ta\nin ( b , a ) ").unwrap_or_default();
    assert_eq!(sel.to_string(), "a in (a,b),z=1");
    assert_eq!(
        Selector::parse("x=a,a=x").map(|s| s.to_string()),
        Selector::parse("a=x,x=a").map(|s| s.to_string())
    );
}

#[test]
fn empty_set_members() {
    let sel = Selector::parse("x in ()").unwrap_or_default();
    assert_eq!(sel.requirements()[0].values(), [""]);
    let sel = Selector::parse("x in (,a)").unwrap_or_default();
    assert_eq!(sel.requirements()[0].values(), ["", "a"]);
    let sel = Selector::parse("x in (a,,b,)").unwrap_or_default();
    assert_eq!(sel.requirements()[0].values(), ["", "a", "b"]);
    assert!(sel.matches(&set(&[("x", "")])));
}

#[test]
fn parse_error_messages() {
    let cases = [
        ("x=a y=b", "found 'y', expected: ',' or 'end of string'"),
        ("x=a||y=b", "unable to parse requirement: values[0][x]: Invalid value: \"a||y\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"),
        ("x==a==b", "found '==', expected: ',' or 'end of string'"),
        ("!x=a", "found '=', expected: ',' or 'end of string'"),
        ("x gt 1", "unable to parse requirement: found 'gt', expected: in, notin, =, ==, !=, gt, lt"),
        ("x in a", "unable to parse requirement: found 'a' expected: '('"),
        ("x in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("x in (a,", "unable to parse requirement: found '', expected: ',', or identifier"),
        ("x in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier"),
        ("x=a,", "found '', expected: identifier after ','"),
        (",x", "found ',', expected: !, identifier, or 'end of string'"),
        ("!", "unable to parse requirement: found '', expected: identifier"),
        ("x=(", "unable to parse requirement: found '(', expected: identifier"),
        (
            "x<a",
            "unable to parse requirement: values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer",
        ),
        (
            "x=-a",
            "unable to parse requirement: values[0][x]: Invalid value: \"-a\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
        ),
        (
            "a/b/c=d",
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(parse_err(input), want, "{input:?}");
    }
}

#[test]
fn in_and_notin_are_values_in_value_position() {
    let sel = Selector::parse("notin=in").unwrap_or_default();
    assert!(sel.matches(&set(&[("notin", "in")])));
    let sel = Selector::parse("in in (in,notin)").unwrap_or_default();
    assert!(sel.matches(&set(&[("in", "notin")])));
}

#[test]
fn matching() {
    let matches = [
        ("", vec![("x", "y")]),
        ("x=y", vec![("x", "y")]),
        ("x==y", vec![("x", "y")]),
        ("x=y,z=w", vec![("x", "y"), ("z", "w")]),
        ("x!=y,z!=w", vec![("x", "z"), ("z", "a")]),
        ("x!=y", vec![]),
        ("x notin (a,b)", vec![]),
        ("x notin (a,b)", vec![("x", "c")]),
        ("x in (a,b)", vec![("x", "b")]),
        ("x", vec![("x", "z")]),
        ("!x", vec![("y", "z")]),
        ("x>1", vec![("x", "2")]),
        ("x<1", vec![("x", "0")]),
        ("x<1", vec![("x", "-3")]),
        ("x=", vec![("x", "")]),
    ];
    for (sel, labels) in matches {
        let parsed = Selector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
        assert!(parsed.matches(labels.as_slice()), "{sel} vs {labels:?}");
    }
    let misses = [
        ("x=z", vec![]),
        ("x=y", vec![("x", "z")]),
        ("x=y,z=w", vec![("x", "w"), ("z", "w")]),
        ("x!=y,z!=w", vec![("x", "z"), ("z", "w")]),
        ("x in (a,b)", vec![]),
        ("x notin (a,b)", vec![("x", "a")]),
        ("x", vec![("y", "z")]),
        ("!x", vec![("x", "z")]),
        ("x>1", vec![("x", "0")]),
        ("x>1", vec![("x", "abc")]),
        ("x>1", vec![]),
        ("x<1", vec![("x", "2")]),
        ("x=", vec![("x", "a")]),
    ];
    for (sel, labels) in misses {
        let parsed = Selector::parse(sel).unwrap_or_else(|e| panic!("{sel}: {e}"));
        assert!(!parsed.matches(labels.as_slice()), "{sel} vs {labels:?}");
    }
}

#[test]
fn matches_json_labels() {
    let labels = json!({"app": "web", "tier": "front", "n": 3});
    let map = labels.as_object().cloned().unwrap_or_default();
    let sel = Selector::parse("app=web,tier in (front,back)").unwrap_or_default();
    assert!(sel.matches(&map));
    // Non-string values do not count as labels.
    let sel = Selector::parse("n").unwrap_or_default();
    assert!(!sel.matches(&map));
}

#[test]
fn everything_and_nothing() {
    let labels = set(&[("a", "b")]);
    assert!(Selector::everything().matches(&labels));
    assert!(Selector::everything().is_empty());
    assert!(!Selector::nothing().matches(&labels));
    assert!(!Selector::nothing().is_empty());
    assert!(Selector::nothing().matches_nothing());
}

#[test]
fn label_selector_objects() {
    assert!(Selector::from_label_selector(None)
        .map(|s| s.matches_nothing())
        .unwrap_or(false));
    assert!(Selector::from_label_selector(Some(&Value::Null))
        .map(|s| s.matches_nothing())
        .unwrap_or(false));
    assert!(Selector::from_label_selector(Some(&json!({})))
        .map(|s| s.is_empty())
        .unwrap_or(false));
    let sel = Selector::from_label_selector(Some(&json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "canary", "operator": "DoesNotExist"}
        ]
    })))
    .unwrap_or_default();
    assert_eq!(sel.to_string(), "app=web,!canary,tier in (a,b)");
    assert!(sel.matches(&set(&[("app", "web"), ("tier", "a")])));
    assert!(!sel.matches(&set(&[("app", "web"), ("tier", "a"), ("canary", "1")])));
}

#[test]
fn label_selector_object_errors() {
    let bad_op = json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]});
    assert_eq!(
        Selector::from_label_selector(Some(&bad_op)).map_err(|e| e.0),
        Err("\"Gt\" is not a valid label selector operator".to_owned())
    );
    let empty_in = json!({"matchExpressions": [{"key": "a", "operator": "In"}]});
    assert_eq!(
        Selector::from_label_selector(Some(&empty_in)).map_err(|e| e.0),
        Err(
            "values: Invalid value: null: for 'in', 'notin' operators, values set can't be empty"
                .to_owned()
        )
    );
    let exists_vals =
        json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]});
    assert_eq!(
        Selector::from_label_selector(Some(&exists_vals)).map_err(|e| e.0),
        Err("values: Invalid value: [\"x\"]: values set must be empty for exists and does not exist".to_owned())
    );
    let bad_key = json!({"matchLabels": {"-a": "b"}});
    let msg = Selector::from_label_selector(Some(&bad_key))
        .map_err(|e| e.0)
        .err()
        .unwrap_or_default();
    assert!(
        msg.starts_with("key: Invalid value: \"-a\": name part must consist"),
        "{msg}"
    );
}

#[test]
fn requirement_errors_aggregate() {
    let err = Requirement::new(
        "-k",
        Operator::Equals,
        vec!["a".into(), "b".into()],
        Some(&Path::new("spec").child("selector")),
    )
    .map_err(|e| e.0)
    .err()
    .unwrap_or_default();
    assert!(
        err.starts_with("[spec.selector.key: Invalid value: \"-k\": "),
        "{err}"
    );
    assert!(
        err.ends_with("spec.selector.values: Invalid value: [\"a\",\"b\"]: exact-match compatibility requires one single value]"),
        "{err}"
    );
    let err = Requirement::new("k", Operator::GreaterThan, vec!["a".into()], None)
        .map_err(|e| e.0)
        .err()
        .unwrap_or_default();
    assert_eq!(
        err,
        "values[0]: Invalid value: \"a\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
}

#[test]
fn exact_match_and_sets() {
    let sel = Selector::parse("a=1,b in (2),c in (3,4),d!=5").unwrap_or_default();
    assert_eq!(sel.requires_exact_match("a"), Some("1"));
    assert_eq!(sel.requires_exact_match("b"), Some("2"));
    assert_eq!(sel.requires_exact_match("c"), None);
    assert_eq!(sel.requires_exact_match("d"), None);
    assert_eq!(sel.requires_exact_match("e"), None);
    let from_set = Selector::from_set([("b", "2"), ("a", "1")]);
    assert_eq!(from_set.to_string(), "a=1,b=2");
    assert!(from_set.matches(&set(&[("a", "1"), ("b", "2"), ("c", "3")])));
}

#[test]
fn large_set_selectors_parse_and_match_in_linear_time() {
    // ~100 KB: `a in (v0,...,v14999),b notin (...)`.
    let values: Vec<String> = (0..15_000).map(|i| format!("v{i}")).collect();
    let input = format!("a in ({}),b notin ({})", values.join(","), values.join(","));
    assert!(input.len() > 100_000);
    let start = std::time::Instant::now();
    let selector = Selector::parse(&input).expect("valid");
    let labels: Vec<BTreeMap<String, String>> = (0..1_000)
        .map(|i| {
            BTreeMap::from([
                ("a".to_owned(), format!("v{}", i * 7)),
                ("b".to_owned(), format!("w{i}")),
            ])
        })
        .collect();
    let matched = labels.iter().filter(|l| selector.matches(*l)).count();
    let took = start.elapsed();
    assert_eq!(matched, 1_000);
    assert!(took < std::time::Duration::from_secs(2), "{took:?}");
    // A value list that never closes fails at the end, just as fast.
    let start = std::time::Instant::now();
    let open = format!("a in ({}", values.join(","));
    assert_eq!(
        Selector::parse(&open).map_err(|e| e.0),
        Err("unable to parse requirement: found '', expected: ',' or ')'".to_owned())
    );
    assert!(start.elapsed() < std::time::Duration::from_secs(1));
}
