//! JSON bodies (upstream: `runtime/serializer/json` over `sigs.k8s.io/json`,
//! whose scanner is Go's `encoding/json`: more than 10000 nested arrays and
//! objects are "exceeded max depth").
//!
//! serde_json stops at 128 levels unless told otherwise; here its limit is
//! off and the linear depth scan bounds the recursion instead, so every
//! depth upstream decodes is decoded. What recurses over such a tree later
//! (encoding, merging, dropping) runs on the server's threads, whose stacks
//! are [`THREAD_STACK_BYTES`](super::THREAD_STACK_BYTES).

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
    decode_stored_as(bytes).map_err(|e| DecodeError::Syntax(e.to_string()))
}

/// Decodes JSON this server wrote itself (stored objects), whatever their
/// depth: an object accepted at upstream's limit is stored a few levels
/// deeper (its managed fields mirror it), and must still read back.
pub fn decode_stored(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    decode_stored_as(bytes)
}

/// Decodes `T` (a whole object or the parts of it a reader wants) from
/// JSON this server wrote itself, at any depth, as [`decode_stored`].
pub fn decode_stored_as<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    deserializer.disable_recursion_limit();
    let value = T::deserialize(&mut deserializer)?;
    deserializer.end()?;
    Ok(value)
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

    /// Runs `f` on a thread with the stack the server's threads get.
    fn on_server_stack(f: impl FnOnce() + Send + 'static) {
        std::thread::Builder::new()
            .stack_size(crate::serializer::THREAD_STACK_BYTES)
            .spawn(f)
            .expect("thread")
            .join()
            .expect("no overflow");
    }

    fn nested(open: &str, inner: &str, close: &str, depth: usize) -> String {
        format!("{}{inner}{}", open.repeat(depth), close.repeat(depth))
    }

    #[test]
    fn every_depth_upstream_decodes_is_decoded_and_walked() {
        on_server_stack(|| {
            let deep = nested("[", "1", "]", UPSTREAM_MAX_DEPTH);
            let v = decode(deep.as_bytes()).expect("10000 levels decode");
            let copy = v.clone();
            assert!(v == copy);
            assert_eq!(serde_json::to_string(&copy).expect("encodes"), deep);
            let mut levels = 0;
            let mut inner = v;
            while let Value::Array(mut items) = inner {
                levels += 1;
                inner = items.pop().expect("one item");
            }
            assert_eq!((levels, inner), (UPSTREAM_MAX_DEPTH, Value::from(1)));
            let objects = nested(r#"{"a":"#, "{}", "}", UPSTREAM_MAX_DEPTH - 1);
            let v: Value = decode(objects.as_bytes()).expect("10000 levels decode");
            drop(v);
        });
    }

    #[test]
    fn stored_objects_read_back_past_the_limit() {
        on_server_stack(|| {
            let deep = nested("[", "", "]", UPSTREAM_MAX_DEPTH + 10);
            assert!(decode(deep.as_bytes()).is_err());
            assert!(decode_stored(deep.as_bytes()).is_ok());
        });
        assert!(decode_stored(b"[1] x").is_err(), "trailing text");
        assert!(decode_as::<Value>(b"{} {}").is_err(), "trailing value");
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
