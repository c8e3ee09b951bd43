//! Tests for the `quantity` module.
use super::*;
use serde_json::json;

fn q(s: &str) -> Quantity {
    Quantity::parse(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

#[test]
fn canonical_forms_and_kept_inputs() {
    // (serialized form, another spelling that serializes to it)
    let cases = [
        ("1Gi", "1024Mi"),
        ("300Mi", "307200Ki"),
        ("6Ki", "6Ki"),
        ("1001Gi", "1025024Mi"),
        ("1Ti", "1024Gi"),
        ("5", "5000m"),
        ("500m", "0.5"),
        ("1G", "1000M"),
        ("1G", "0.001T"),
        ("1m", "1000u"),
        ("80m", "80m"),
        ("1080m", "1.08"),
        ("1080m", "1080000000n"),
        ("300M", "300M"),
        ("1234567M", "1234567M"),
        ("3k", "3k"),
        ("1025", "1025"),
        ("0", "00"),
        ("1e9", ".001e12"),
        ("1e-3", "0.001e0"),
        ("1e-9", "1000e-12"),
        ("80e-3", "80e-3"),
        ("300e6", "300e6"),
        ("1n", "1n"),
        ("1080n", "1080n"),
        ("1080u", "1080u"),
        ("1500m", "1.5"),
        ("120k", "120000"),
        ("1500", "1.5e3"),
        ("1500", "1.5k"),
        ("8Ki", "8Ki"),
        ("1Mi", "1024Ki"),
        ("512", "0.5Ki"),
        ("1024m", ".001Ki"),
        ("1024u", ".000001Ki"),
        ("1024n", ".000000001Ki"),
        ("2n", ".000000000001Ki"),
        ("102435840m", "100.035Ki"),
        ("4n", "3.001n"),
        ("124n", "0.00000012345"),
        ("2e-9", "1.1E-9"),
        ("1n", "0.0000000001"),
        ("9223372036854775807", "9Ei"),
        ("9223372036854775807", "9223372036854775807Ki"),
        ("12E", "12E"),
        ("1", "1000000000n"),
        ("100m", "100m"),
        ("1", "1000m"),
        ("007", "007"),
        ("1.", "1."),
    ];
    for (canonical, alternate) in cases {
        assert_eq!(q(canonical).to_string(), canonical, "parse {canonical:?}");
        assert_eq!(q(alternate).to_string(), canonical, "parse {alternate:?}");
        assert_eq!(
            q(&format!("-{alternate}")).to_string(),
            if canonical == "0" {
                "0".to_owned()
            } else {
                format!("-{canonical}")
            },
            "parse -{alternate:?}"
        );
    }
}

#[test]
fn formats() {
    assert_eq!(q("1Ki").format(), Format::BinarySI);
    assert_eq!(q("1k").format(), Format::DecimalSI);
    assert_eq!(q("1e3").format(), Format::DecimalExponent);
    assert_eq!(q("0.000000000001Ki").format(), Format::DecimalSI);
    assert_eq!(q("0Ki").format(), Format::BinarySI);
    assert_eq!(q("0Ki").to_string(), "0");
}

#[test]
fn invalid_quantities() {
    let format_wrong = [
        "", "1.1.M", "1+1.0M", "0.1am", "aoeu", " 1", "1 ", "1e3.5", "1,000",
    ];
    for s in format_wrong {
        assert_eq!(
            Quantity::parse(s).err(),
            Some(QuantityError::FormatWrong),
            "{s:?}"
        );
    }
    let bad_suffix = [
        "0.1mi", ".5i", "1i", "-3.01i", "-3.01e-", "1K", "1e", "1mm", "1E+", "--1",
    ];
    for s in bad_suffix {
        assert_eq!(
            Quantity::parse(s).err(),
            Some(QuantityError::Suffix),
            "{s:?}"
        );
    }
    assert_eq!(
        QuantityError::FormatWrong.to_string(),
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
    assert_eq!(
        QuantityError::Suffix.to_string(),
        "unable to parse quantity's suffix"
    );
}

#[test]
fn comparison_ignores_format() {
    assert_eq!(q("1Gi"), q("1073741824"));
    assert_eq!(q("1k"), q("1e3"));
    assert_eq!(q("0.5"), q("500m"));
    assert!(q("1Mi") > q("1M"));
    assert!(q("-1") < q("0"));
    assert!(q("-2") < q("-1"));
    assert!(q("1n") > q("0"));
    assert!(q("1e100") > q("9Ei"));
    assert_eq!(q("-0"), q("0"));
    assert!(!q("-0").is_negative());
    assert!(q("0m").is_zero());
}

#[test]
fn scaled_values_round_away_from_zero() {
    assert_eq!(q("1.5").value(), Some(2));
    assert_eq!(q("-1.5").value(), Some(-2));
    assert_eq!(q("100m").milli_value(), Some(100));
    assert_eq!(q("0.1m").milli_value(), Some(1));
    assert_eq!(q("2Ki").value(), Some(2048));
    assert_eq!(q("1k").milli_value(), Some(1_000_000));
    assert_eq!(q("0").value(), Some(0));
    assert_eq!(q("9223372036854775807").value(), Some(i64::MAX));
    assert_eq!(q("1e19").value(), None);
    assert_eq!(q("1n").value(), Some(1));
}

#[test]
fn huge_and_tiny_values() {
    assert_eq!(q("1e100").to_string(), "10e99");
    assert_eq!(q("10e99").to_string(), "10e99");
    assert_eq!(q("1e-100").to_string(), "1e-9");
    assert_eq!(
        q("123456789012345678901234567890").to_string(),
        "123456789012345678901234567890"
    );
    assert_eq!(q("1e2147483647").to_string(), "10e2147483646");
}

#[test]
fn json_values() {
    assert_eq!(canonicalize_json(&json!("0.5")).as_deref(), Ok("500m"));
    assert_eq!(canonicalize_json(&json!(" 2Gi ")).as_deref(), Ok("2Gi"));
    assert_eq!(canonicalize_json(&json!(1.5)).as_deref(), Ok("1500m"));
    assert_eq!(canonicalize_json(&json!(4)).as_deref(), Ok("4"));
    assert_eq!(
        canonicalize_json(&json!(true)),
        Err(QuantityError::FormatWrong)
    );
}

fn sum(a: &str, b: &str) -> Quantity {
    let mut s = q(a);
    s.add(&q(b));
    s
}

#[test]
fn sums_keep_the_first_format() {
    // (a, b, a + b as written), after upstream's TestAdd and
    // TestQuantityAddZeroPreservesSuffix.
    let cases = [
        // BinarySI first.
        ("1Gi", "1Gi", "2Gi"),
        ("1Gi", "512Mi", "1536Mi"),
        ("1Gi", "1024", "1048577Ki"),
        ("1Gi", "1G", "2073741824"),
        ("1Ki", "500m", "1024500m"),
        // DecimalSI first.
        ("1G", "1Gi", "2073741824"),
        ("10", "10", "20"),
        ("1k", "1e3", "2k"),
        ("100m", "1Gi", "1073741824100m"),
        ("999m", "1m", "1"),
        // DecimalExponent first.
        ("1e3", "1k", "2e3"),
        ("1e3", "500m", "1000500e-3"),
        ("1e6", "1n", "1000000000000001e-9"),
        // A zero takes the other's format; adding zero changes nothing.
        ("0", "1Gi", "1Gi"),
        ("0", "100m", "100m"),
        ("1Gi", "0", "1Gi"),
        ("100m", "0", "100m"),
        ("0", "0", "0"),
        // The sum is written anew, not as either input.
        ("007", "1", "8"),
        // Signs.
        ("1", "-3", "-2"),
        ("-1Gi", "1Gi", "0"),
        ("1.5", "-500m", "1"),
        ("1", "-1n", "999999999n"),
        ("-1", "-1", "-2"),
        // Past int64.
        ("9Ei", "9Ei", "18446744073709551614"),
    ];
    for (a, b, want) in cases {
        assert_eq!(sum(a, b).to_string(), want, "{a} + {b}");
    }
    assert_eq!(sum("1Gi", "1").format(), Format::BinarySI);
    assert_eq!(sum("1e3", "1Gi").format(), Format::DecimalExponent);
    assert_eq!(sum("0", "1Gi").format(), Format::BinarySI);
}

#[test]
fn sums_far_apart_keep_the_larger_term() {
    assert_eq!(sum("1", "1e100000"), q("1e100000"));
    assert_eq!(sum("1", "1e100000").format(), Format::DecimalSI);
    assert_eq!(sum("1e100000", "1").to_string(), "10e99999");
}
