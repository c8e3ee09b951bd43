//! Front-proxy authentication (`--requestheader-*`, upstream's request
//! header authenticator): a client certificate issued by
//! `--requestheader-client-ca-file` (with a common name in
//! `--requestheader-allowed-names`, when given) may assert the user in
//! request headers — user name, UID, groups and `<prefix><key>` extras.
//! The TLS layer accepts certificates of either CA, so the chain is
//! checked here against the front-proxy bundle as it is at request time.

use std::collections::BTreeMap;

use super::client_cert::PeerCertificates;
use http::HeaderMap;

use super::x509::ClientCa;
use super::{AuthError, UserInfo};

/// The `--requestheader-*` settings.
#[derive(Debug, Clone)]
pub struct RequestHeader {
    /// `--requestheader-client-ca-file`, kept current and shared with the
    /// TLS layer's hints (upstream's dynamic CA content).
    pub ca: ClientCa,
    /// Common names allowed to assert users; empty allows any.
    pub allowed_names: Vec<String>,
    pub username_headers: Vec<String>,
    pub uid_headers: Vec<String>,
    pub group_headers: Vec<String>,
    /// Lower-cased prefixes of extra headers.
    pub extra_prefixes: Vec<String>,
}

/// Percent-decodes an extra key (Go's PathUnescape: `+` stays); a
/// malformed one is kept as sent.
fn unescape(key: &str) -> String {
    let bytes = key.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            match key
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
            {
                Some(b) => out.push(b),
                None => return key.to_owned(),
            }
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| key.to_owned())
}

fn first_value(headers: &HeaderMap, names: &[String]) -> Option<String> {
    names.iter().find_map(|name| {
        headers
            .get_all(name.as_str())
            .iter()
            .filter_map(|v| v.to_str().ok())
            .find(|v| !v.is_empty())
            .map(str::to_owned)
    })
}

impl RequestHeader {
    /// The user the headers assert, when the certificate may assert one;
    /// `Ok(None)` when this is not a front-proxy request.
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: Option<&PeerCertificates>,
        common_name: Option<&str>,
    ) -> Result<Option<UserInfo>, AuthError> {
        let Some(name) = first_value(headers, &self.username_headers) else {
            return Ok(None);
        };
        let Some(peer) = peer else {
            return Ok(None);
        };
        self.ca
            .verify_peer(peer)
            .map_err(|e| AuthError::ClientCert(format!("front proxy certificate: {e}")))?;
        let cn = common_name.unwrap_or("");
        if !self.allowed_names.is_empty() && !self.allowed_names.iter().any(|n| n == cn) {
            return Err(AuthError::ClientCert(format!(
                "x509: subject with cn={cn} is not in the allowed list"
            )));
        }
        let groups = self
            .group_headers
            .iter()
            .flat_map(|h| headers.get_all(h.as_str()).iter())
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect();
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (header, value) in headers {
            let lower = header.as_str();
            let Some(prefix) = self
                .extra_prefixes
                .iter()
                .find(|p| lower.starts_with(p.as_str()))
            else {
                continue;
            };
            if let Ok(value) = value.to_str() {
                // Header names arrive lower-cased; upstream unescapes after
                // lower-casing, so escaped upper-case letters stay upper.
                let key = unescape(&lower[prefix.len()..]);
                extra.entry(key).or_default().push(value.to_owned());
            }
        }
        Ok(Some(UserInfo {
            name,
            uid: first_value(headers, &self.uid_headers).unwrap_or_default(),
            groups,
            extra,
        }))
    }

    /// Removes the headers a front proxy sets, once used.
    pub fn strip(&self, headers: &mut HeaderMap) {
        for name in self
            .username_headers
            .iter()
            .chain(&self.uid_headers)
            .chain(&self.group_headers)
        {
            headers.remove(name.as_str());
        }
        let extras: Vec<_> = headers
            .keys()
            .filter(|k| {
                self.extra_prefixes
                    .iter()
                    .any(|p| k.as_str().starts_with(p.as_str()))
            })
            .cloned()
            .collect();
        for key in extras {
            headers.remove(key);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::unescape;

    #[test]
    fn extra_keys_unescape_as_gos_path_unescape() {
        assert_eq!(unescape("example.com%2fteam"), "example.com/team");
        assert_eq!(unescape("a%42c"), "aBc");
        assert_eq!(unescape("a+b"), "a+b");
        assert_eq!(unescape("bad%zz"), "bad%zz");
        assert_eq!(unescape("cut%4"), "cut%4");
    }
}
