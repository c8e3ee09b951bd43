use std::time::{Duration, Instant};

use super::*;
use crate::{CompileError, Expression};

fn chain(head: &str, link: &str, n: usize) -> String {
    format!("{head}{}", link.repeat(n))
}

#[test]
fn size_is_counted_in_code_points() {
    let at_limit = format!("'{}'", "é".repeat(EXPRESSION_SIZE_CODE_POINT_LIMIT - 2));
    assert_eq!(check(&at_limit), Ok(()));
    let over = format!("'{}'", "é".repeat(EXPRESSION_SIZE_CODE_POINT_LIMIT - 1));
    assert_eq!(check(&over), Err(BoundError::Size(100_001)));
    assert_eq!(
        BoundError::Size(100_001).render(),
        "ERROR: <input>:-1:0: expression code point size exceeds limit: size: 100001, limit 100000"
    );
}

#[test]
fn chains_count_towards_the_depth() {
    let links = [
        "+1", "-1", "*1", "/1", "%1", "==1", "!=1", "<1", "<=1", ">=1", " in x",
    ];
    for link in links {
        assert_eq!(check(&chain("1", link, 200)), Ok(()), "{link}");
        assert_eq!(
            check(&chain("1", link, 300)),
            Err(BoundError::Depth),
            "{link}"
        );
    }
    for link in [".a", "[0]", ".f()", ".?a", "{}"] {
        assert_eq!(
            check(&chain("x", link, 300)),
            Err(BoundError::Depth),
            "{link}"
        );
    }
    assert_eq!(check(&chain("1", " ? 1 : 1", 300)), Err(BoundError::Depth));
    // Brackets add to the depth of the chain around them.
    let nested = format!("{}1{}", "(1+".repeat(130), ")".repeat(130));
    assert_eq!(check(&nested), Err(BoundError::Depth));
    assert_eq!(
        BoundError::Depth.render(),
        "ERROR: <input>:-1:0: max recursion depth exceeded"
    );
}

#[test]
fn balanced_and_folded_operators_do_not() {
    for (head, link) in [
        ("true", " && true"),
        ("true", " || true"),
        ("", "!"),
        ("", "-"),
    ] {
        assert_eq!(check(&chain(head, link, 5000)), Ok(()), "{link}");
    }
    // Each term of a long conjunction starts again (the tree is balanced).
    let terms: Vec<String> = (0..3000).map(|i| format!("a.b{i} == {i} + 1")).collect();
    assert_eq!(check(&terms.join(" && ")), Ok(()));
    // Elements of lists, maps and calls each start again.
    let list = format!("[{}]", ["1+1+1"; 5000].join(","));
    assert_eq!(check(&list), Ok(()));
}

#[test]
fn nesting_is_limited() {
    let deep = format!("{}1{}", "[".repeat(300), "]".repeat(300));
    assert_eq!(check(&deep), Err(BoundError::Nesting));
    assert_eq!(
        BoundError::Nesting.render(),
        "ERROR: <input>:-1:0: expression recursion limit exceeded: 250"
    );
}

#[test]
fn literals_and_comments_hide_nothing_they_should_not() {
    // Operators inside literals and comments are not operators...
    for source in [
        format!("'{}'", "+1".repeat(5000)),
        format!("r\"{}\"", "+1".repeat(5000)),
        format!("b'''{}'''", "+1\n".repeat(5000)),
        format!("1 // {}\n", "+1".repeat(5000)),
        chain("1", "+1.5e-3", 200),
    ] {
        assert_eq!(check(&source), Ok(()), "{}", &source[..20]);
    }
    // ...but literals that are not closed, and hexadecimal digits that look
    // like exponents, do not hide a chain.
    for source in [
        format!("'{}", "+1".repeat(5000)),
        format!("'{}'\n'", "\n+1".repeat(5000)),
        chain("0xe", "+0xe", 5000),
        chain("1u", "+1u", 5000),
    ] {
        assert_eq!(check(&source), Err(BoundError::Depth), "{}", &source[..20]);
    }
}

/// Compiles on a thread with a tokio worker's stack, as the server does.
fn compile_on_small_stack(source: String) -> (Result<(), CompileError>, Duration) {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let start = Instant::now();
            let result = Expression::compile(&source, &["object"]).map(drop);
            (result, start.elapsed())
        })
        .expect("thread")
        .join()
        .expect("no stack overflow")
}

#[test]
fn hostile_expressions_fail_fast_without_overflowing() {
    let cases = [
        (chain("1", "+1", 40_000), "max recursion depth exceeded"),
        (
            chain("object", "[0]", 30_000),
            "max recursion depth exceeded",
        ),
        (
            format!("{}1{}", "(".repeat(20_000), ")".repeat(20_000)),
            "expression recursion limit exceeded: 250",
        ),
        (
            "1".repeat(100_001),
            "expression code point size exceeds limit",
        ),
    ];
    for (source, want) in cases {
        let (result, took) = compile_on_small_stack(source);
        match result {
            Err(CompileError::Invalid(msg)) => assert!(msg.contains(want), "{msg}"),
            other => panic!("{other:?}"),
        }
        assert!(took < Duration::from_secs(1), "{took:?}");
    }
}

#[test]
fn the_deepest_accepted_chains_compile_and_run() {
    for source in [
        chain("1", "+1", 240),
        chain("1", " == 1 ? 1 : 1", 10),
        chain("true", " && true", 10_000),
        (0..2_000)
            .map(|i| format!("object.b{i} == {i} + 1"))
            .collect::<Vec<_>>()
            .join(" || "),
        chain("", "!", 20_000) + "true",
    ] {
        let (result, _) = compile_on_small_stack(source.clone());
        assert_eq!(result, Ok(()), "{}", &source[..20]);
    }
    let evaluated = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(|| {
            let expr =
                Expression::compile(&chain("1", "+1", 240), &[]).map_err(|e| e.to_string())?;
            expr.evaluate(&[]).map_err(|e| e.to_string())
        })
        .expect("thread")
        .join()
        .expect("no stack overflow");
    assert_eq!(evaluated, Ok(serde_json::json!(241)));
}

#[test]
fn syntax_errors_at_the_size_limit_fail_fast() {
    for source in [
        ")".repeat(99_000),
        "1 ".repeat(49_000),
        ",".repeat(99_000),
        "a.(".repeat(33_000),
        "?:".repeat(49_000),
        "'".repeat(99_000),
        "}{".repeat(49_000),
    ] {
        let head: String = source.chars().take(6).collect();
        let (result, took) = compile_on_small_stack(source);
        assert!(result.is_err(), "{head}");
        assert!(took < Duration::from_secs(2), "{head}: {took:?}");
    }
}
