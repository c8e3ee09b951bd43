use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::serializer::{THREAD_STACK_BYTES, UPSTREAM_MAX_DEPTH};

fn timed(text: &str) -> (Result<Value, DecodeError>, Duration) {
    let started = Instant::now();
    let result = decode(text.as_bytes());
    (result, started.elapsed())
}

fn upstream_depth(line: usize) -> DecodeError {
    DecodeError::YamlMaxDepth { line }
}

#[test]
fn deep_flow_collections_get_upstream_error_at_once() {
    for opener in ["[", "{", "{a: ", "[\n"] {
        let (result, took) = timed(&opener.repeat(100_000));
        let err = result.unwrap_err();
        assert!(
            matches!(err, DecodeError::YamlMaxDepth { .. }),
            "{opener:?}: {err}"
        );
        assert!(took < Duration::from_secs(1), "{opener:?} took {took:?}");
    }
    assert_eq!(
        decode("[".repeat(UPSTREAM_MAX_DEPTH + 1).as_bytes()),
        Err(upstream_depth(1))
    );
    assert_eq!(
        upstream_depth(1).to_string(),
        "yaml: exceeded max depth of 10000"
    );
    assert_eq!(
        upstream_depth(3).to_string(),
        "yaml: line 3: exceeded max depth of 10000"
    );
}

#[test]
fn deep_block_collections_get_upstream_error_at_once() {
    let compact = "- ".repeat(1_000_000) + "x";
    let keys = "- a: ".repeat(300_000) + "x";
    for text in [compact, keys] {
        let (result, took) = timed(&text);
        assert_eq!(result, Err(upstream_depth(1)));
        assert!(took < Duration::from_secs(1), "took {took:?}");
    }
    // Indentation nested past serde_yaml's old 128 levels decodes.
    let indented: String = (0..200).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
    let v = decode(indented.as_bytes()).expect("200 levels of indentation");
    assert_eq!(v.pointer(&"/a".repeat(199)), Some(&json!({"a": null})));
}

/// Runs `f` on a thread with the server's stack (dropping and comparing
/// deep trees recurses).
fn on_server_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(THREAD_STACK_BYTES)
        .spawn(f)
        .expect("thread")
        .join()
        .expect("no overflow")
}

#[test]
fn every_depth_upstream_decodes_decodes_in_linear_time() {
    on_server_stack(|| {
        let depth = UPSTREAM_MAX_DEPTH - 1;
        let flow = format!("a: {}x{}\n", "[".repeat(depth), "]".repeat(depth));
        // Compact block sequences (indentation alone would need 50 MB).
        let block = "- ".repeat(depth) + "x\n";
        let keys = "{a: ".repeat(depth) + "x" + &"}".repeat(depth);
        for (text, levels_wanted) in [(flow, depth + 1), (keys, depth), (block, depth)] {
            let (result, took) = timed(&text);
            let v = result.expect("decodes");
            assert!(took < Duration::from_secs(2), "took {took:?}");
            let mut node = &v;
            let mut levels = 0;
            while let Some(inner) = node
                .as_array()
                .and_then(|a| a.first())
                .or_else(|| node.get("a"))
            {
                node = inner;
                levels += 1;
            }
            assert_eq!((levels, node), (levels_wanted, &json!("x")));
        }
        // Deep keys with many tokens inside: linear (go-yaml's simple key
        // bookkeeping; libyaml as published took minutes).
        let wide = format!(
            "{}[{}1]{}",
            "{a: ".repeat(depth),
            "1, ".repeat(300_000),
            "}".repeat(depth)
        );
        let (result, took) = timed(&wide);
        assert!(result.is_ok());
        assert!(took < Duration::from_secs(3), "took {took:?}");
    });
}

#[test]
fn brackets_in_scalars_and_comments_do_not_count() {
    let deep = "[".repeat(20_000);
    let text = format!(
        "a: \"{deep}\"\nb: '{deep}'\nc: x{deep}\n# {deep}\nd: |\n  {deep}\n  more\ne: [\"{deep}\", '{deep}']\n"
    );
    let v = decode(text.as_bytes()).expect("brackets inside scalars decode");
    assert_eq!(v["a"].as_str().map(str::len), Some(20_000));
    assert_eq!(v["c"].as_str().map(str::len), Some(20_001));
    assert_eq!(v["e"][1].as_str().map(str::len), Some(20_000));
}

#[test]
fn a_block_scalar_ends_where_its_indentation_does() {
    // The sibling after the scalar is parsed by libyaml, so it is measured.
    let text = format!("- k: |\n    text\n  other: {}\n", "[".repeat(20_000));
    assert_eq!(decode(text.as_bytes()), Err(upstream_depth(3)));
    let text = format!("- k: |\n  other: {}\n", "[".repeat(20_000));
    assert_eq!(decode(text.as_bytes()), Err(upstream_depth(2)));
}

#[test]
fn ordinary_documents_decode() {
    let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a # comment\n  labels: {x: 'it''s', y: \"q\\\"\"}\ndata:\n  - - - x\n  - key: |\n      body\n    other: [1, {b: c}]\n";
    let v = decode(text.as_bytes()).expect("decodes");
    assert_eq!(v["metadata"]["labels"]["x"], "it's");
    assert_eq!(v["data"][0][0][0], "x");
    assert_eq!(v["data"][1]["other"][1]["b"], "c");
}

fn laughs(levels: usize) -> String {
    let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
    for i in 1..levels {
        let refs = vec![format!("*a{}", i - 1); 10].join(", ");
        text += &format!("a{i}: &a{i} [{refs}]\n");
    }
    text
}

#[test]
fn billion_laughs_is_excessive_aliasing_at_once() {
    for text in [
        laughs(10),
        laughs(10) + &format!("pad: [{}1]\n", "1, ".repeat(100_000)),
    ] {
        let (result, took) = timed(&text);
        assert_eq!(result, Err(DecodeError::ExcessiveAliasing));
        assert!(took < Duration::from_secs(1), "took {took:?}");
    }
    assert_eq!(
        DecodeError::ExcessiveAliasing.to_string(),
        "yaml: document contains excessive aliasing"
    );
}

#[test]
fn moderate_aliasing_decodes_and_merge_keys_merge() {
    let v = decode(laughs(3).as_bytes()).expect("1,000 expanded nodes are allowed");
    assert_eq!(v["a2"][9][9][9], "x");
    let merge = "base: &b {x: 1, k: 1}\nother: &o {z: 3, x: 4}\nderived:\n  k: 0\n  <<: *b\n  w: 2\nlist:\n  <<: [*b, *o]\n";
    let v = decode(merge.as_bytes()).expect("merge keys decode");
    assert_eq!(v["derived"], json!({"k": 1, "x": 1, "w": 2}));
    assert_eq!(v["list"], json!({"x": 1, "k": 1, "z": 3}));
    let nested = "a: &a {p: 1}\nb: &b {<<: *a, q: 2}\nc: {<<: *b, r: 3}\n";
    let v = decode(nested.as_bytes()).expect("merges within merges");
    assert_eq!(v["c"], json!({"p": 1, "q": 2, "r": 3}));
    assert_eq!(
        decode(b"a: {<<: 1}").unwrap_err().to_string(),
        "yaml: map merge requires map or sequence of maps as the value"
    );
    assert_eq!(decode(b"a: {'<<': 1}").unwrap(), json!({"a": {"<<": 1}}));
}

#[test]
fn alias_errors_are_go_yaml_s() {
    assert_eq!(
        decode(b"a: *x").unwrap_err().to_string(),
        "yaml: unknown anchor 'x' referenced"
    );
    assert_eq!(
        decode(b"a: &x [1, *x]").unwrap_err().to_string(),
        "yaml: anchor 'x' value contains itself"
    );
    let v = decode(b"a: &x 1\nb: *x\nc: &x 2\nd: *x\n").unwrap();
    assert_eq!(v, json!({"a": 1, "b": 1, "c": 2, "d": 2}));
}

#[test]
fn scalars_resolve_as_yaml_1_1_in_go_yaml_v2() {
    let text = "\
a: yes\nb: Off\nc: ~\nd:\ne: 0x1F\nf: 017\ng: 0o17\nh: 0b101\ni: 1_000\nj: 1.0\n\
k: 1.5\nl: 1e3\nm: 18446744073709551615\nts: 2001-12-14\no: '12'\np: !!str 12\n\
q: !!float 3\nr: .5\ns: -.inf_x\nt: 08\nu: 1e400\nv: +12\nw: !custom 5\nx: 1e21\n";
    let v = decode(text.as_bytes()).expect("decodes");
    let want = json!({
        "a": true, "b": false, "c": null, "d": null, "e": 31, "f": 15, "g": 15,
        "h": 5, "i": 1000, "j": 1, "k": 1.5, "l": 1000,
        "m": 18446744073709551615u64, "ts": "2001-12-14", "o": "12", "p": "12",
        "q": 3, "r": 0.5, "s": "-.inf_x", "t": 8, "u": "1e400", "v": 12, "w": "5",
        "x": 1e21,
    });
    assert_eq!(v, want);
    assert_eq!(
        decode(b"a: !!int abc").unwrap_err().to_string(),
        "yaml: cannot decode !!str `abc` as a !!int"
    );
    assert_eq!(
        decode(b"a: .nan").unwrap_err().to_string(),
        "json: unsupported value: NaN"
    );
}

#[test]
fn keys_become_strings_as_sigs_yaml_makes_them() {
    let v = decode(b"1: a\n1.5: b\ny: c\n0.1: d\n1e7: e\n").expect("decodes");
    assert_eq!(
        v,
        json!({"1": "a", "1.5": "b", "true": "c", "0.1": "d", "1e+07": "e"})
    );
    assert_eq!(
        decode(b"~: 1").unwrap_err().to_string(),
        "unsupported map key of type: %!s(<nil>), key: <nil>, value: 1"
    );
    assert_eq!(
        decode(b"? [a, 1]\n: x\n").unwrap_err().to_string(),
        "yaml: invalid map key: []interface {}{\"a\", 1}"
    );
}

#[test]
fn syntax_errors_are_go_yaml_s() {
    assert_eq!(
        decode(b"a: b\nc\nd: e\n").unwrap_err().to_string(),
        "yaml: line 3: could not find expected ':'"
    );
    assert_eq!(
        decode(b"a: b: c\n").unwrap_err().to_string(),
        "yaml: mapping values are not allowed in this context"
    );
    assert_eq!(decode(b"").unwrap(), Value::Null);
    assert_eq!(decode(b"a: 1\n---\nb: [").unwrap(), json!({"a": 1}));
}

#[test]
fn json_documents_decode_to_the_json_tree() {
    on_server_stack(|| {
        let depth = UPSTREAM_MAX_DEPTH - 2;
        let text = format!(
            "{{\"spec\": {{\"x\": {}1.5{}, \"n\": -0.0, \"s\": \"a\\u00e9\\n\"}}}}\n",
            "[".repeat(depth),
            "]".repeat(depth)
        );
        let (result, took) = timed(&text);
        assert!(took < Duration::from_secs(2), "took {took:?}");
        let yaml = result.expect("JSON at upstream's depth decodes");
        let json: Value = crate::serializer::json::decode(text.as_bytes()).expect("json");
        assert_eq!(yaml, json);
    });
}
