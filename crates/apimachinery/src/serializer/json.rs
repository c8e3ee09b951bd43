//! JSON bodies (upstream: `runtime/serializer/json` over `sigs.k8s.io/json`,
//! whose scanner is Go's `encoding/json`: more than 10000 nested arrays and
//! objects are "exceeded max depth").

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::{DecodeError, UPSTREAM_MAX_DEPTH};

/// Decodes one JSON value.
pub fn decode(bytes: &[u8]) -> Result<Value, DecodeError> {
    decode_as(bytes)
}

/// Decodes JSON into `T` after the depth check.
pub fn decode_as<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, DecodeError> {
    check_depth(bytes)?;
    serde_json::from_slice(bytes).map_err(|e| DecodeError::Syntax(e.to_string()))
}

/// Refuses nesting deeper than upstream's limit, in one pass that skips
/// strings (escapes included) and allocates nothing.
pub fn check_depth(bytes: &[u8]) -> Result<(), DecodeError> {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &b in bytes {
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > UPSTREAM_MAX_DEPTH {
                    return Err(DecodeError::JsonMaxDepth);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upstream_depth_is_refused_with_upstream_text() {
        let deep = "[".repeat(UPSTREAM_MAX_DEPTH + 1);
        assert_eq!(decode(deep.as_bytes()), Err(DecodeError::JsonMaxDepth));
        assert_eq!(DecodeError::JsonMaxDepth.to_string(), "exceeded max depth");
        let objects = r#"{"a":"#.repeat(UPSTREAM_MAX_DEPTH + 1);
        assert_eq!(decode(objects.as_bytes()), Err(DecodeError::JsonMaxDepth));
    }

    #[test]
    fn brackets_inside_strings_do_not_count() {
        let text = format!(
            r#"{{"a":"{}\"{}"}}"#,
            "[".repeat(20_000),
            "{".repeat(20_000)
        );
        let v = decode(text.as_bytes()).expect("a string of brackets decodes");
        assert_eq!(v["a"].as_str().map(str::len), Some(40_001));
    }

    #[test]
    fn depth_between_the_limits_is_the_decoder_error() {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let err = decode(deep.as_bytes()).unwrap_err();
        assert!(
            matches!(&err, DecodeError::Syntax(m) if m.contains("recursion limit")),
            "{err}"
        );
        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(decode(ok.as_bytes()).is_ok());
    }

    #[test]
    fn depth_check_is_linear() {
        let big = format!("{}{}", "[".repeat(3 << 20), "]".repeat(3 << 20));
        let started = std::time::Instant::now();
        assert_eq!(check_depth(big.as_bytes()), Err(DecodeError::JsonMaxDepth));
        let flat = format!("[{}1]", "1,".repeat(1 << 20));
        assert!(check_depth(flat.as_bytes()).is_ok());
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }
}
