//! Strict decoding: what upstream's CBOR decoder refuses is refused here,
//! with an error rather than a panic or an unbounded allocation.

use kube_cbor::{decode, CborError, MAX_ARRAY_ELEMENTS, MAX_DEPTH, MAX_MAP_PAIRS};
use serde_json::json;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
        .collect()
}

fn fails(input: &str) -> CborError {
    decode(&hex(input)).expect_err(input)
}

#[test]
fn duplicate_map_keys() {
    assert!(
        matches!(fails("a2416101416102"), CborError::DuplicateKey { ref key, index: 1 } if key == "a")
    );
    // A byte string key and a text string key with the same content.
    assert!(matches!(
        fails("a2416101616102"),
        CborError::DuplicateKey { .. }
    ));
    // The same key split into chunks differently.
    assert!(matches!(
        fails("a25f41614162ff015f426162ff02"),
        CborError::DuplicateKey { .. }
    ));
}

#[test]
fn non_string_map_keys() {
    assert_eq!(fails("a10101"), CborError::NonStringKey("positive integer"));
    assert_eq!(
        fails("a1200101"),
        CborError::NonStringKey("negative integer")
    );
    assert_eq!(
        fails("a1fb40091eb851eb851f6370696501"),
        CborError::NonStringKey("primitives")
    );
    assert_eq!(fails("a1800101"), CborError::NonStringKey("array"));
}

#[test]
fn simple_values_other_than_false_true_null() {
    assert_eq!(
        fails("f7"),
        CborError::Unacceptable("simple value 23".into())
    );
    assert_eq!(
        fails("e0"),
        CborError::Unacceptable("simple value 0".into())
    );
    assert_eq!(
        fails("f8ff"),
        CborError::Unacceptable("simple value 255".into())
    );
    // Two-byte forms of values below 32 are not well-formed.
    assert_eq!(fails("f814"), CborError::Malformed { offset: 0 });
    assert_eq!(fails("f81f"), CborError::Malformed { offset: 0 });
}

#[test]
fn nan_infinity_and_out_of_range_integers() {
    assert_eq!(
        fails("f97e00"),
        CborError::Unacceptable("floating-point NaN".into())
    );
    assert_eq!(
        fails("f97c00"),
        CborError::Unacceptable("floating-point infinity".into())
    );
    assert_eq!(
        fails("fbfff0000000000000"),
        CborError::Unacceptable("floating-point infinity".into())
    );
    assert_eq!(
        fails("1bffffffffffffffff"),
        CborError::IntegerOverflow("18446744073709551615".into())
    );
    assert_eq!(
        fails("3bffffffffffffffff"),
        CborError::IntegerOverflow("-18446744073709551616".into())
    );
    assert_eq!(decode(&hex("1b7fffffffffffffff")), Ok(json!(i64::MAX)));
    assert_eq!(decode(&hex("3b7fffffffffffffff")), Ok(json!(i64::MIN)));
}

#[test]
fn forbidden_tags_and_bad_tag_content() {
    assert_eq!(
        fails("c249010000000000000000"),
        CborError::Unacceptable("bignum".into())
    );
    assert_eq!(
        fails("c349010000000000000000"),
        CborError::Unacceptable("bignum".into())
    );
    assert_eq!(
        fails("c054323030362d30312d30325431353a30343a30355a"),
        CborError::TagContent {
            tag: 0,
            expected: "text string",
            got: "byte string"
        }
    );
    assert!(matches!(
        fails("c06474657874"),
        CborError::InvalidTime { tag: 0, .. }
    ));
    // 1(253402300801) is in the year 10000.
    assert!(matches!(
        fails("c11b0000003afff44181"),
        CborError::InvalidTime { tag: 1, .. }
    ));
    assert_eq!(
        fails("c1f97c00"),
        CborError::Unacceptable("floating-point infinity".into())
    );
}

#[test]
fn invalid_utf8_text() {
    assert_eq!(fails("62c328"), CborError::InvalidUtf8);
    assert_eq!(fails("7f61c3ff"), CborError::InvalidUtf8);
}

#[test]
fn malformed_truncated_and_trailing_input() {
    assert_eq!(fails(""), CborError::UnexpectedEof);
    assert_eq!(fails("a2416101"), CborError::UnexpectedEof);
    assert_eq!(fails("6461"), CborError::UnexpectedEof);
    // A claimed length far beyond the input is refused before allocating.
    assert_eq!(fails("5bffffffffffffffff00"), CborError::UnexpectedEof);
    // An array head past the element limit is refused by its count first.
    assert_eq!(fails("9bffffffffffffffff"), CborError::TooManyElements);
    assert_eq!(fails("ff"), CborError::UnexpectedBreak);
    // Additional information 28 is reserved.
    assert_eq!(fails("1c"), CborError::Malformed { offset: 0 });
    // Chunks of an indefinite string must be definite strings of its type.
    assert_eq!(fails("5f5f4161ffff"), CborError::Malformed { offset: 1 });
    assert_eq!(fails("5f6161ff"), CborError::Malformed { offset: 1 });
    assert_eq!(
        fails("0102"),
        CborError::ExtraneousData { count: 1, index: 1 }
    );
    // An unterminated indefinite array.
    assert_eq!(fails("9f01"), CborError::UnexpectedEof);
}

#[test]
fn nesting_is_bounded() {
    let nested = |depth: usize| {
        let mut bytes = vec![0x81; depth];
        bytes.push(0x01);
        bytes
    };
    assert!(decode(&nested(MAX_DEPTH)).is_ok());
    assert_eq!(decode(&nested(MAX_DEPTH + 1)), Err(CborError::TooDeep));
    // Tags count as a level, as upstream counts them.
    let mut tagged = vec![0xc4; MAX_DEPTH + 1];
    tagged.push(0x01);
    assert_eq!(decode(&tagged), Err(CborError::TooDeep));
    assert_eq!(
        CborError::TooDeep.to_string(),
        "cbor: exceeded max nested level 64"
    );
}

#[test]
fn arrays_and_maps_are_bounded_before_reading() {
    // Heads claiming more than the limit, with nothing after them.
    assert_eq!(fails("9a00010000"), CborError::TooManyElements);
    assert_eq!(fails("ba00010000"), CborError::TooManyPairs);
    let items = |n: usize, indefinite: bool| {
        let mut bytes = if indefinite {
            vec![0x9f]
        } else {
            vec![0x99, (n >> 8) as u8, n as u8]
        };
        bytes.extend(std::iter::repeat_n(0x01, n));
        if indefinite {
            bytes.push(0xff);
        }
        bytes
    };
    assert!(decode(&items(MAX_ARRAY_ELEMENTS, false)).is_ok());
    assert!(decode(&items(MAX_ARRAY_ELEMENTS, true)).is_ok());
    let over = MAX_ARRAY_ELEMENTS + 1;
    assert_eq!(decode(&items(over, true)), Err(CborError::TooManyElements));
    let mut map = vec![0xbf];
    for i in 0..=MAX_MAP_PAIRS {
        let key = format!("k{i}");
        map.push(0x60 + key.len() as u8);
        map.extend(key.bytes());
        map.push(0x01);
    }
    map.push(0xff);
    assert_eq!(decode(&map), Err(CborError::TooManyPairs));
    assert_eq!(
        CborError::TooManyElements.to_string(),
        "cbor: exceeded max number of elements 1024 for CBOR array"
    );
}
