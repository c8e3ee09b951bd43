//! The objects the benchmark writes: ConfigMaps named `<prefix>-<seq>` with
//! one data value of a chosen size, encoded from a prepared head and tail so
//! that a request body costs one copy.

use std::sync::Arc;

use bytes::Bytes;

/// ConfigMap bodies for one name prefix.
#[derive(Clone)]
pub struct ConfigMaps {
    prefix: Arc<str>,
    /// Everything before the sequence number of the name.
    head: Arc<[u8]>,
    /// Everything after it.
    tail: Arc<[u8]>,
}

impl ConfigMaps {
    /// Bodies of ConfigMaps named `<prefix>-<seq>` whose `data.value` is
    /// `value_bytes` long.
    pub fn new(prefix: &str, value_bytes: usize) -> ConfigMaps {
        let head =
            format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{prefix}-"#);
        let tail = format!(r#""}},"data":{{"value":"{}"}}}}"#, "x".repeat(value_bytes));
        ConfigMaps {
            prefix: prefix.into(),
            head: head.into_bytes().into(),
            tail: tail.into_bytes().into(),
        }
    }

    /// The name of object `seq`.
    pub fn name(&self, seq: u64) -> String {
        format!("{}-{seq}", self.prefix)
    }

    /// The sequence number in a name made by [`Self::name`].
    pub fn seq_of(name: &str) -> Option<u64> {
        name.rsplit_once('-')?.1.parse().ok()
    }

    /// The JSON body creating object `seq`.
    pub fn body(&self, seq: u64) -> Bytes {
        let seq = seq.to_string();
        let mut body = Vec::with_capacity(self.head.len() + seq.len() + self.tail.len());
        body.extend_from_slice(&self.head);
        body.extend_from_slice(seq.as_bytes());
        body.extend_from_slice(&self.tail);
        Bytes::from(body)
    }
}

/// A Namespace's JSON body.
pub fn namespace(name: &str) -> Bytes {
    Bytes::from(format!(
        r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"{name}"}}}}"#
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies_are_configmaps() -> Result<(), serde_json::Error> {
        let objects = ConfigMaps::new("c", 5);
        let body: serde_json::Value = serde_json::from_slice(&objects.body(7))?;
        assert_eq!(body["kind"], "ConfigMap");
        assert_eq!(body["metadata"]["name"], objects.name(7));
        assert_eq!(body["data"]["value"], "xxxxx");
        Ok(())
    }

    #[test]
    fn names_give_back_their_sequence_number() {
        let objects = ConfigMaps::new("bench-w", 0);
        assert_eq!(ConfigMaps::seq_of(&objects.name(123)), Some(123));
        assert_eq!(ConfigMaps::seq_of("bench"), None);
        assert_eq!(ConfigMaps::seq_of("bench-x"), None);
    }

    #[test]
    fn namespaces_are_json() -> Result<(), serde_json::Error> {
        let body: serde_json::Value = serde_json::from_slice(&namespace("bench"))?;
        assert_eq!(body["metadata"]["name"], "bench");
        Ok(())
    }
}
