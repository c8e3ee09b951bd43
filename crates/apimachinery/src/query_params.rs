//! Query parameters as upstream reads them: Go's `url.ParseQuery` (the
//! values of every key, in order) and the string conversions of
//! `k8s.io/apimachinery/pkg/runtime/conversion.go` that the parameter
//! codec applies to them (`Convert_Slice_string_To_bool`,
//! `…_To_Pointer_bool`, `…_To_int64`, `…_To_Pointer_int64`): a parameter
//! given twice counts by its first value, a boolean is false only when it
//! is `0` or `false` in any case, integers parse as `strconv.ParseInt`
//! does, and unknown parameters are ignored.

use crate::request_info::percent_decode;
use crate::util::gofmt::push_go_quoted;

/// A decoded query string (Go's `url.Values`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryParams {
    pairs: Vec<(String, String)>,
}

impl QueryParams {
    /// Parses as Go's `url.ParseQuery`: `&`-separated pairs, `+` as
    /// space; a pair with a `;` or a malformed escape is skipped.
    pub fn parse(raw: &str) -> Self {
        let pairs = raw
            .split('&')
            .filter(|chunk| !chunk.is_empty() && !chunk.contains(';'))
            .filter_map(|chunk| {
                let (k, v) = chunk.split_once('=').unwrap_or((chunk, ""));
                Some((percent_decode(k, true)?, percent_decode(v, true)?))
            })
            .collect();
        QueryParams { pairs }
    }

    /// The first value of `key` (`url.Values.Get`, and what every
    /// `Convert_Slice_string_To_*` reads).
    pub fn first(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `key`, in order (list options such as `dryRun`).
    pub fn all(&self, key: &str) -> Vec<&str> {
        self.pairs
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// A boolean option (`Convert_Slice_string_To_bool`): absent is false.
    pub fn bool(&self, key: &str) -> bool {
        self.opt_bool(key).unwrap_or(false)
    }

    /// An optional boolean (`Convert_Slice_string_To_Pointer_bool`).
    pub fn opt_bool(&self, key: &str) -> Option<bool> {
        self.first(key).map(go_bool)
    }

    /// An optional integer (`Convert_Slice_string_To_Pointer_int64`; an
    /// empty value is an error, as `strconv.ParseInt("")` is). The error is
    /// `strconv.ParseInt`'s message, which upstream answers as a 400.
    pub fn int64(&self, key: &str) -> Result<Option<i64>, String> {
        self.first(key).map(parse_int64).transpose()
    }
}

/// A parameter value as a boolean: only `0` and `false` (any case) are
/// false; every other value, the empty one too, is true.
pub fn go_bool(value: &str) -> bool {
    !(value == "0" || value.eq_ignore_ascii_case("false"))
}

/// `strconv.ParseInt(value, 10, 64)`, with Go's error message.
pub fn parse_int64(value: &str) -> Result<i64, String> {
    // Go takes an optional sign, then decimal digits only.
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    let problem = if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        "invalid syntax"
    } else {
        match value.parse::<i64>() {
            Ok(n) => return Ok(n),
            Err(_) => "value out of range",
        }
    };
    let mut message = String::from("strconv.ParseInt: parsing ");
    push_go_quoted(&mut message, value);
    message.push_str(": ");
    message.push_str(problem);
    Err(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn booleans_are_false_only_for_zero_and_false() {
        for yes in ["true", "True", "TRUE", "1", "yes", "y", "", "anything"] {
            assert!(go_bool(yes), "{yes:?}");
        }
        for no in ["false", "False", "FALSE", "fAlSe", "0"] {
            assert!(!go_bool(no), "{no:?}");
        }
        let q = QueryParams::parse("watch=True&a=0&b=&c=no");
        assert!(q.bool("watch"));
        assert!(!q.bool("a"));
        assert!(q.bool("b"));
        assert!(q.bool("c"));
        assert!(!q.bool("missing"));
        assert_eq!(q.opt_bool("missing"), None);
        assert_eq!(q.opt_bool("a"), Some(false));
    }

    #[test]
    fn repeated_parameters_count_by_their_first_value() {
        let q = QueryParams::parse("limit=5&limit=x&watch=0&watch=1&dryRun=All&dryRun=Bogus");
        assert_eq!(q.int64("limit"), Ok(Some(5)));
        assert!(!q.bool("watch"));
        assert_eq!(q.all("dryRun"), ["All", "Bogus"]);
        assert_eq!(q.first("dryRun"), Some("All"));
    }

    #[test]
    fn integers_parse_as_strconv_parse_int() {
        assert_eq!(parse_int64("42"), Ok(42));
        assert_eq!(parse_int64("+7"), Ok(7));
        assert_eq!(parse_int64("-3"), Ok(-3));
        assert_eq!(parse_int64("9223372036854775807"), Ok(i64::MAX));
        assert_eq!(
            parse_int64("abc"),
            Err("strconv.ParseInt: parsing \"abc\": invalid syntax".into())
        );
        assert_eq!(
            parse_int64(""),
            Err("strconv.ParseInt: parsing \"\": invalid syntax".into())
        );
        assert_eq!(
            parse_int64("9223372036854775808"),
            Err("strconv.ParseInt: parsing \"9223372036854775808\": value out of range".into())
        );
        assert_eq!(
            parse_int64("-99999999999999999999"),
            Err("strconv.ParseInt: parsing \"-99999999999999999999\": value out of range".into())
        );
        assert!(parse_int64("1_000").is_err());
        assert!(parse_int64(" 1").is_err());
        assert!(parse_int64("--1").is_err());
    }

    #[test]
    fn parsing_follows_url_parse_query() {
        let q = QueryParams::parse("a=1&b=x+y&c=%41&bad=%zz&semi=1;2&d&a=2&=e&&e=%2F");
        assert_eq!(q.first("a"), Some("1"));
        assert_eq!(q.all("a"), ["1", "2"]);
        assert_eq!(q.first("b"), Some("x y"));
        assert_eq!(q.first("c"), Some("A"));
        assert_eq!(q.first("bad"), None);
        assert_eq!(q.first("semi"), None);
        assert_eq!(q.first("d"), Some(""));
        assert_eq!(q.first(""), Some("e"));
        assert_eq!(q.first("e"), Some("/"));
    }
}
