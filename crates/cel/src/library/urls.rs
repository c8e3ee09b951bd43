//! Kubernetes' URL library: `url()`, `isURL()` and the accessors of a
//! parsed URL, which follows Go's `url.ParseRequestURI` (an absolute URI
//! or an absolute path; nothing after `#` is a fragment).

use std::collections::HashMap;

use cel::common::types::{CelList, CelMap, CelMapKey, CelString, Type, STRING_TYPE};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError};

use super::{arg, boolean, opaque_val, string, take, text};

/// The CEL type of URLs; registrations take their own copies.
const URL_TYPE: Type = Type::new_unspecified_type("kubernetes.URL");
static URL_TYPE_REF: Type = URL_TYPE;

/// A parsed URL.
#[derive(Debug, Clone)]
pub(crate) struct Url {
    raw: String,
    scheme: String,
    /// `host[:port]`, without userinfo.
    host: String,
    path: String,
    query: String,
}

/// URLs are equal when they were written the same.
impl PartialEq for Url {
    fn eq(&self, other: &Self) -> bool {
        self.raw == other.raw
    }
}

opaque_val!(Url, URL_TYPE_REF);

pub(super) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    env.add_type(URL_TYPE)?;
    env.add_overload("url", "string_to_url", vec![STRING_TYPE], to_url)?;
    env.add_overload("isURL", "is_url_string", vec![STRING_TYPE], is_url)?;
    let getters: [(&str, cel::common::functions::Function); 5] = [
        ("getScheme", get_scheme),
        ("getHost", get_host),
        ("getHostname", get_hostname),
        ("getPort", get_port),
        ("getEscapedPath", get_escaped_path),
    ];
    for (name, op) in getters {
        env.add_member_overload(name, &format!("url_{name}"), URL_TYPE, vec![], op)?;
    }
    env.add_member_overload("getQuery", "url_get_query", URL_TYPE, vec![], get_query)?;
    Ok(())
}

/// Parses `raw` as Go's `url.ParseRequestURI` does, in outline.
pub(crate) fn parse(raw: &str) -> Result<Url, String> {
    let invalid = || format!("parse {raw:?}: invalid URI for request");
    if raw.is_empty() || raw.chars().any(|c| c.is_ascii_control()) {
        return Err(invalid());
    }
    let (scheme, rest) = match split_scheme(raw) {
        Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest),
        None if raw.starts_with('/') => (String::new(), raw),
        None => return Err(invalid()),
    };
    let (rest, query) = rest.split_once('?').unwrap_or((rest, ""));
    let (host, path) = match rest.strip_prefix("//") {
        Some(authority) => {
            let end = authority.find('/').unwrap_or(authority.len());
            let auth = &authority[..end];
            let host = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
            (host.to_owned(), authority[end..].to_owned())
        }
        None => (String::new(), rest.to_owned()),
    };
    Ok(Url {
        raw: raw.to_owned(),
        scheme,
        host,
        path,
        query: query.to_owned(),
    })
}

fn split_scheme(raw: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = raw.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_alphabetic()
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some((scheme, rest))
}

fn hostname(host: &str) -> &str {
    if let Some(inner) = host.strip_prefix('[') {
        return inner.split_once(']').map_or(inner, |(h, _)| h);
    }
    host.rsplit_once(':').map_or(host, |(h, _)| h)
}

fn port(host: &str) -> &str {
    let after_bracket = host.rsplit_once(']').map_or(host, |(_, rest)| rest);
    after_bracket.rsplit_once(':').map_or("", |(_, p)| p)
}

/// Decodes `%XX` escapes and `+` as a space, as query values are.
fn unescape_query(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                match std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok())
                {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn to_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    parse(text(s.as_ref())?).map(CowVal::owned).map_err(|e| {
        ExecutionError::function_error(
            "url",
            format!("URL parse error during conversion from string: {e}"),
        )
    })
}

fn is_url<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [s] = take(args)?;
    Ok(boolean(parse(text(s.as_ref())?).is_ok()))
}

fn with_url<'b, 'v>(
    args: Vec<CowVal<'b, 'v>>,
    f: impl Fn(&Url) -> String,
) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [u] = take(args)?;
    Ok(string(f(arg::<Url>(u.as_ref())?)))
}

fn get_scheme<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_url(args, |u| u.scheme.clone())
}

fn get_host<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_url(args, |u| u.host.clone())
}

fn get_hostname<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_url(args, |u| hostname(&u.host).to_owned())
}

fn get_port<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_url(args, |u| port(&u.host).to_owned())
}

fn get_escaped_path<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    with_url(args, |u| u.path.clone())
}

fn get_query<'b, 'v>(args: Vec<CowVal<'b, 'v>>) -> Result<CowVal<'b, 'v>, ExecutionError> {
    let [u] = take(args)?;
    let url = arg::<Url>(u.as_ref())?;
    let mut grouped: Vec<(String, Vec<String>)> = Vec::new();
    for pair in url.query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let (k, v) = (unescape_query(k), unescape_query(v));
        match grouped.iter_mut().find(|(key, _)| *key == k) {
            Some((_, values)) => values.push(v),
            None => grouped.push((k, vec![v])),
        }
    }
    let map: HashMap<CelMapKey<'v>, Box<dyn Val + 'v>> = grouped
        .into_iter()
        .map(|(k, values)| {
            let list: Vec<Box<dyn Val + 'v>> = values
                .into_iter()
                .map(|v| Box::new(CelString::from(v)) as Box<dyn Val + 'v>)
                .collect();
            (
                CelMapKey::from(k),
                Box::new(CelList::from(list)) as Box<dyn Val + 'v>,
            )
        })
        .collect();
    Ok(CowVal::owned(CelMap::from(map)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_request_uris() {
        let u = parse("https://user@example.com:8443/a/b?x=1&x=2").unwrap();
        assert_eq!(u.scheme, "https");
        assert_eq!(u.host, "example.com:8443");
        assert_eq!(hostname(&u.host), "example.com");
        assert_eq!(port(&u.host), "8443");
        assert_eq!(u.path, "/a/b");
        assert_eq!(u.query, "x=1&x=2");
        let v6 = parse("http://[::1]:80/").unwrap();
        assert_eq!(hostname(&v6.host), "::1");
        assert_eq!(port(&v6.host), "80");
        assert!(parse("/absolute/path").is_ok());
        assert!(parse("relative/path").is_err());
        assert!(parse("").is_err());
    }

    #[test]
    fn unescapes_query_values() {
        assert_eq!(unescape_query("a%20b+c"), "a b c");
        assert_eq!(unescape_query("100%"), "100%");
    }
}
