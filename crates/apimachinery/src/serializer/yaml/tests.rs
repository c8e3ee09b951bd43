use std::time::{Duration, Instant};

use super::*;
use crate::serializer::{MAX_DEPTH, UPSTREAM_MAX_DEPTH};

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
    // Indentation alone cannot reach 10000 levels within a body's size
    // limit; past this server's depth it is refused before parsing.
    let indented: String = (0..200).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
    let dashes: String = (0..200).map(|i| format!("{}-\n", " ".repeat(i))).collect();
    for text in [indented, dashes] {
        let result = decode(text.as_bytes());
        assert!(
            matches!(result, Err(DecodeError::RecursionLimit { line: 129, .. })),
            "{result:?}"
        );
    }
    let fits: String = (0..100).map(|i| format!("{}a:\n", " ".repeat(i))).collect();
    assert!(decode(fits.as_bytes()).is_ok());
}

#[test]
fn depth_between_the_limits_is_refused_before_parsing() {
    let text = format!("{}{}", "[x, ".repeat(5_000), "]".repeat(5_000));
    let (result, took) = timed(&text);
    assert_eq!(
        result,
        Err(DecodeError::RecursionLimit {
            line: 1,
            column: MAX_DEPTH * 4 + 1
        })
    );
    assert!(took < Duration::from_millis(500), "took {took:?}");
    let fits = format!("{}1{}", "[".repeat(100), "]".repeat(100));
    assert!(decode(fits.as_bytes()).is_ok());
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
fn moderate_aliasing_decodes() {
    let v = decode(laughs(3).as_bytes()).expect("1,000 expanded nodes are allowed");
    assert_eq!(v["a2"][9][9][9], "x");
    let merge = "base: &b {x: 1}\nderived:\n  <<: *b\n  y: 2\n";
    let v = decode(merge.as_bytes()).expect("merge keys decode");
    assert_eq!(v["derived"]["<<"]["x"], 1);
}

#[test]
fn deep_json_documents_decode_as_json() {
    let depth = UPSTREAM_MAX_DEPTH - 2;
    let text = format!(
        "{{\"spec\": {{\"x\": {}1{}}}}}\n",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let deep = std::thread::Builder::new()
        .stack_size(crate::serializer::THREAD_STACK_BYTES)
        .spawn(move || {
            let (result, took) = timed(&text);
            assert!(took < Duration::from_secs(1), "took {took:?}");
            let value = result.expect("JSON at upstream's depth decodes");
            serde_json::to_string(&value).expect("encodes") == text.trim_end().replace(' ', "")
        })
        .expect("thread")
        .join()
        .expect("no overflow");
    assert!(deep, "the tree is the JSON document's");
    // Flow YAML that is not JSON still gets serde_yaml's limit.
    let flow = format!("{{a: {}1{}}}", "[".repeat(200), "]".repeat(200));
    assert!(matches!(
        decode(flow.as_bytes()),
        Err(DecodeError::RecursionLimit { .. })
    ));
}
