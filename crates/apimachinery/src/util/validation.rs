//! String checks for names, label keys and values, with upstream's
//! messages (`k8s.io/apimachinery/pkg/util/validation`, and the path segment
//! checks of `pkg/api/validation/path`): each returns the list of problems
//! as messages, empty when valid, the way upstream's `IsDNS1123Label` and
//! friends do. Below everything else in the crate: labels and request info
//! use it, as does [`crate::validation`].

/// Longest DNS-1123 label (and DNS-1035 label).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Longest DNS-1123 subdomain.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Longest name part of a qualified name (label key).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// Longest label value.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// Upstream's `MaxLenError` for names (counted in characters).
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// Upstream's content `MaxLenError` for label keys and values (in bytes).
fn max_len_bytes_error(length: usize) -> String {
    format!("must be no more than {length} bytes")
}

/// Upstream's `RegexError`: the message, examples and the regex.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

/// Upstream's `EmptyError`.
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?`
fn matches_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&first), Some(&last)) => {
            is_lower_alnum(first)
                && is_lower_alnum(last)
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        }
        _ => false,
    }
}

/// One or more DNS-1123 labels joined by dots.
fn matches_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(matches_dns1123_label)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// Checks a DNS-1123 label (RFC 1123), e.g. a namespace name.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// Checks a DNS-1123 subdomain (RFC 1123), the most common name format.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(subdomain_regex_error());
    }
    errs
}

fn subdomain_regex_error() -> String {
    regex_error(
        DNS1123_SUBDOMAIN_ERR,
        DNS1123_SUBDOMAIN_FMT,
        &["example.com"],
    )
}

/// Checks a wildcard DNS-1123 subdomain (`*.` then a subdomain, RFC 1034
/// section 4.3.3), e.g. an Ingress host.
pub fn is_wildcard_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let rest = value.strip_prefix("*.");
    if !rest.is_some_and(matches_dns1123_subdomain) {
        errs.push(regex_error(
            "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character",
            &format!("\\*\\.{DNS1123_SUBDOMAIN_FMT}"),
            &["*.example.com"],
        ));
    }
    errs
}

/// Checks a DNS-1035 label (RFC 1035), e.g. a service name.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    let starts_alpha = value.as_bytes().first().is_some_and(u8::is_ascii_lowercase);
    if !(starts_alpha && matches_dns1123_label(value)) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// Checks a qualified name (`[prefix/]name`), the format of label keys,
/// annotation keys and finalizers.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let mut parts = value.split('/');
    let (prefix, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, _) => (None, name),
        (Some(prefix), Some(name), None) => (Some(prefix), name),
        _ => {
            errs.push(format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QUALIFIED_NAME_ERR, QUALIFIED_NAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
            return errs;
        }
    };
    if let Some(prefix) = prefix {
        if prefix.is_empty() {
            errs.push(format!("prefix part {}", empty_error()));
        } else {
            if prefix.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
                errs.push(format!(
                    "prefix part {}",
                    max_len_bytes_error(DNS1123_SUBDOMAIN_MAX_LENGTH)
                ));
            }
            if !matches_dns1123_subdomain(prefix) {
                errs.push(format!("prefix part {}", subdomain_regex_error()));
            }
        }
    }
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_bytes_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// Checks a label value: empty, or a qualified name part.
pub fn is_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_bytes_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// Checks a name usable as one URL path segment (the least strict name
/// rule, used e.g. by RBAC objects).
pub fn is_path_segment_name(name: &str) -> Vec<String> {
    for illegal in [".", ".."] {
        if name == illegal {
            return vec![format!("may not be '{illegal}'")];
        }
    }
    is_path_segment_prefix(name)
}

/// Checks the prefix of a path segment name (a `generateName`).
pub fn is_path_segment_prefix(name: &str) -> Vec<String> {
    ["/", "%"]
        .into_iter()
        .filter(|illegal| name.contains(illegal))
        .map(|illegal| format!("may not contain '{illegal}'"))
        .collect()
}

/// The rule an object's name must follow; `prefix` is true when checking a
/// `generateName`, whose trailing dash is allowed.
pub type NameValidator = fn(name: &str, prefix: bool) -> Vec<String>;

/// Replaces a trailing dash of a generateName with a letter so the name
/// rules can check the rest (as upstream's `maskTrailingDash`).
fn mask_trailing_dash(name: &str) -> std::borrow::Cow<'_, str> {
    if name.len() > 1 && name.ends_with('-') {
        // Upstream drops the last two bytes; a multi-byte character there
        // is invalid anyway, so fall back to the unmasked name.
        match name.get(..name.len() - 2) {
            Some(head) => std::borrow::Cow::Owned(format!("{head}a")),
            None => std::borrow::Cow::Borrowed(name),
        }
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// Names that must be DNS-1123 subdomains (most resources).
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_subdomain(&mask_trailing_dash(name))
    } else {
        is_dns1123_subdomain(name)
    }
}

/// Names that must be DNS-1123 labels (e.g. namespaces).
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_label(&mask_trailing_dash(name))
    } else {
        is_dns1123_label(name)
    }
}

/// Names that must be DNS-1035 labels (e.g. services).
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1035_label(&mask_trailing_dash(name))
    } else {
        is_dns1035_label(name)
    }
}

/// Names that only need to be valid path segments.
pub fn name_is_path_segment(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_path_segment_prefix(name)
    } else {
        is_path_segment_name(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    #[test]
    fn dns1123_label() {
        for ok in ["a", "ab", "a-b", "1", "a1", "1-2", &"a".repeat(63)] {
            assert!(is_dns1123_label(ok).is_empty(), "{ok}");
        }
        for bad in ["", "A", "-a", "a-", "a_b", "a b", "ä"] {
            assert_eq!(
                is_dns1123_label(bad),
                vec!["a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"],
                "{bad}"
            );
        }
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
    }

    #[test]
    fn dns1123_subdomain() {
        for ok in ["a", "a.b", "a-b.c-d", "0.0", &"a".repeat(253)] {
            assert!(is_dns1123_subdomain(ok).is_empty(), "{ok}");
        }
        for bad in ["", ".", "a.", ".a", "a..b", "A", "a_b", "a.-b", "a/b"] {
            assert_eq!(is_dns1123_subdomain(bad), vec![SUBDOMAIN_MSG], "{bad}");
        }
        assert_eq!(
            is_dns1123_subdomain(&"a".repeat(254)),
            vec!["must be no more than 253 characters"]
        );
    }

    #[test]
    fn dns1035_label() {
        assert!(is_dns1035_label("abc-123").is_empty());
        for bad in ["1abc", "", "-a", "a-", "Ab"] {
            assert_eq!(
                is_dns1035_label(bad),
                vec!["a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"],
                "{bad}"
            );
        }
    }

    #[test]
    fn qualified_names() {
        for ok in [
            "a",
            "A",
            "a.b_c-D",
            "example.com/Name",
            "k8s.io/app",
            &"a".repeat(63),
        ] {
            assert!(is_qualified_name(ok).is_empty(), "{ok}");
        }
        let name_msg = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        assert_eq!(
            is_qualified_name(""),
            vec![
                "name part must be non-empty".to_owned(),
                name_msg.to_owned()
            ]
        );
        assert_eq!(is_qualified_name("-a"), vec![name_msg]);
        assert_eq!(is_qualified_name("a b"), vec![name_msg]);
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 bytes"]
        );
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(
            is_qualified_name("Example.com/a"),
            vec![format!("prefix part {SUBDOMAIN_MSG}")]
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            vec!["a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
        );
    }

    #[test]
    fn label_values() {
        for ok in ["", "a", "A-b_c.d", "123", &"v".repeat(63)] {
            assert!(is_label_value(ok).is_empty(), "{ok}");
        }
        let msg = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        assert_eq!(is_label_value("-a"), vec![msg]);
        assert_eq!(is_label_value("a/b"), vec![msg]);
        assert_eq!(
            is_label_value(&"v".repeat(64)),
            vec!["must be no more than 63 bytes"]
        );
    }

    #[test]
    fn path_segments() {
        assert_eq!(is_path_segment_name("."), vec!["may not be '.'"]);
        assert_eq!(is_path_segment_name(".."), vec!["may not be '..'"]);
        assert_eq!(
            is_path_segment_name("a/b%c"),
            vec!["may not contain '/'", "may not contain '%'"]
        );
        assert!(is_path_segment_name("system:admin").is_empty());
        assert!(name_is_path_segment("..", true).is_empty());
    }

    #[test]
    fn generate_name_prefixes() {
        assert!(name_is_dns_subdomain("web-", true).is_empty());
        assert!(name_is_dns_label("web-", true).is_empty());
        assert!(name_is_dns1035_label("web-", true).is_empty());
        assert!(!name_is_dns_subdomain("web-", false).is_empty());
        assert!(!name_is_dns_subdomain("Web-", true).is_empty());
        // A lone dash is not masked.
        assert!(!name_is_dns_subdomain("-", true).is_empty());
        assert!(!name_is_dns1035_label("1a-", true).is_empty());
    }
}
