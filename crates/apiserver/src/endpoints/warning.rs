//! `Warning` response headers (RFC 7234 code 299, as upstream's warning
//! recorder writes them), deduplicated per request.

use http::{HeaderMap, HeaderValue};

#[derive(Debug, Default)]
pub struct Warnings {
    messages: Vec<String>,
}

impl Warnings {
    pub fn add(&mut self, message: impl Into<String>) {
        let message = message.into();
        if !self.messages.contains(&message) {
            self.messages.push(message);
        }
    }

    pub fn apply(&self, headers: &mut HeaderMap) {
        for message in &self.messages {
            let escaped = message.replace('\\', "\\\\").replace('"', "\\\"");
            if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
                headers.append(http::header::WARNING, v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warnings_are_quoted_and_deduplicated() {
        let mut w = Warnings::default();
        w.add("unknown field \"spec.x\"");
        w.add("unknown field \"spec.x\"");
        let mut h = HeaderMap::new();
        w.apply(&mut h);
        let all: Vec<_> = h.get_all(http::header::WARNING).iter().collect();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0], "299 - \"unknown field \\\"spec.x\\\"\"");
    }
}
