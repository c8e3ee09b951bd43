//! Smaller string and number formats that built-in resources validate
//! (ports, environment variable names, ConfigMap keys, identifiers), with
//! upstream's messages from `k8s.io/apimachinery/pkg/util/validation`.

use super::{max_len_error, regex_error, DNS1123_SUBDOMAIN_MAX_LENGTH};

/// Upstream's `InclusiveRangeError`.
pub fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

/// A value within `[min, max]`.
pub fn is_in_range(value: i64, min: i64, max: i64) -> Vec<String> {
    if (min..=max).contains(&value) {
        Vec::new()
    } else {
        vec![inclusive_range_error(min, max)]
    }
}

/// A TCP/UDP port number, 1 to 65535.
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    is_in_range(port, 1, 65535)
}

/// A user ID, 0 to 2^31-1.
pub fn is_valid_user_id(uid: i64) -> Vec<String> {
    is_in_range(uid, 0, i64::from(i32::MAX))
}

/// A group ID, 0 to 2^31-1.
pub fn is_valid_group_id(gid: i64) -> Vec<String> {
    is_in_range(gid, 0, i64::from(i32::MAX))
}

/// A named port (IANA_SVC_NAME): up to 15 lowercase alphanumerics and
/// single inner dashes, with at least one letter.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if port.len() > 15 {
        errs.push(max_len_error(15));
    }
    let charset_ok = !port.is_empty()
        && port
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !charset_ok {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_owned(),
        );
    }
    if !port.bytes().any(|b| b.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".to_owned());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_owned());
    }
    if port.starts_with('-') || port.ends_with('-') {
        errs.push("must not begin or end with a hyphen".to_owned());
    }
    errs
}

/// A C identifier: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn is_c_identifier(value: &str) -> Vec<String> {
    let b = value.as_bytes();
    let ok = b
        .first()
        .is_some_and(|c| c.is_ascii_alphabetic() || *c == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if ok {
        Vec::new()
    } else {
        vec![regex_error(
            "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'",
            "[A-Za-z_][A-Za-z0-9_]*",
            &["my_name", "MY_NAME", "MyName"],
        )]
    }
}

/// Rejects `.`, `..` and a leading `..` (names that would escape a
/// directory when used as file names).
fn has_ch_dir_prefix(value: &str) -> Option<String> {
    let msg = if value == "." {
        "must not be '.'"
    } else if value == ".." {
        "must not be '..'"
    } else if value.starts_with("..") {
        "must not start with '..'"
    } else {
        return None;
    };
    Some(msg.to_owned())
}

/// An environment variable name: `[-._a-zA-Z][-._a-zA-Z0-9]*`.
pub fn is_env_var_name(value: &str) -> Vec<String> {
    let b = value.as_bytes();
    let allowed = |c: &u8| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_');
    let ok = b.first().is_some_and(|c| !c.is_ascii_digit() && allowed(c)) && b.iter().all(allowed);
    let mut errs = Vec::new();
    if !ok {
        errs.push(regex_error(
            "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit",
            "[-._a-zA-Z][-._a-zA-Z0-9]*",
            &["my.env-name", "MY_ENV.NAME", "MyEnvName1"],
        ));
    }
    errs.extend(has_ch_dir_prefix(value));
    errs
}

/// A ConfigMap or Secret data key: `[-._a-zA-Z0-9]+`, at most 253 bytes.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let ok = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_'));
    if !ok {
        errs.push(regex_error(
            "a valid config key must consist of alphanumeric characters, '-', '_' or '.'",
            "[-._a-zA-Z0-9]+",
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(has_ch_dir_prefix(value));
    errs
}

/// A percentage such as `25%`.
pub fn is_valid_percent(percent: &str) -> Vec<String> {
    let ok = percent
        .strip_suffix('%')
        .is_some_and(|digits| !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()));
    if ok {
        Vec::new()
    } else {
        vec![regex_error(
            "a valid percent string must be a numeric string followed by an ending '%'",
            "[0-9]+%",
            &["1%", "93%"],
        )]
    }
}

/// An HTTP header name: `[-A-Za-z0-9]+`.
pub fn is_http_header_name(value: &str) -> Vec<String> {
    let ok = !value.is_empty()
        && value
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || c == b'-');
    if ok {
        Vec::new()
    } else {
        vec![regex_error(
            "a valid HTTP header must consist of alphanumeric characters or '-'",
            "[-A-Za-z0-9]+",
            &["X-Header-Name"],
        )]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_ports() {
        assert!(is_valid_port_num(1).is_empty() && is_valid_port_num(65535).is_empty());
        assert_eq!(
            is_valid_port_num(0),
            ["must be between 1 and 65535, inclusive"]
        );
        assert_eq!(
            is_valid_user_id(-1),
            ["must be between 0 and 2147483647, inclusive"]
        );
        assert!(is_valid_group_id(0).is_empty());
        assert!(is_valid_port_name("http").is_empty());
        assert!(is_valid_port_name("h2-c").is_empty());
        assert_eq!(
            is_valid_port_name("-a--b-"),
            [
                "must not contain consecutive hyphens",
                "must not begin or end with a hyphen"
            ]
        );
        assert_eq!(
            is_valid_port_name("8080"),
            ["must contain at least one letter (a-z)"]
        );
        assert_eq!(
            is_valid_port_name("Http"),
            ["must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)"]
        );
        assert_eq!(
            is_valid_port_name("abcdefghijklmnop")[0],
            "must be no more than 15 characters"
        );
    }

    #[test]
    fn identifiers_and_keys() {
        assert!(is_c_identifier("_a1").is_empty());
        assert_eq!(is_c_identifier("1a").len(), 1);
        assert!(is_c_identifier("1a")[0].contains("(e.g. 'my_name',  or 'MY_NAME',  or 'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')"));
        assert!(is_env_var_name("MY_VAR.name-1").is_empty());
        assert!(is_env_var_name(".a").is_empty());
        assert_eq!(is_env_var_name("1A").len(), 1);
        assert_eq!(is_env_var_name("..a"), ["must not start with '..'"]);
        assert_eq!(is_env_var_name(".."), ["must not be '..'"]);
        assert!(is_config_map_key("key.name").is_empty());
        assert_eq!(is_config_map_key("."), ["must not be '.'"]);
        assert_eq!(is_config_map_key("a/b").len(), 1);
        assert_eq!(is_config_map_key("").len(), 1);
        assert!(is_config_map_key(&"k".repeat(254))[0].starts_with("must be no more than 253"));
    }

    #[test]
    fn percent_and_headers() {
        assert!(is_valid_percent("25%").is_empty());
        for bad in ["%", "25", "2.5%", "-1%"] {
            assert_eq!(is_valid_percent(bad).len(), 1, "{bad}");
        }
        assert!(is_http_header_name("X-Header-1").is_empty());
        assert_eq!(is_http_header_name("X_Header").len(), 1);
    }
}
