//! The objects the benchmark writes, named `<prefix>-<seq>`: ConfigMaps with
//! one data value of a chosen size, and for the scale run pods and
//! services; each encoded from a prepared head and tail so that a request
//! body costs one copy.

use std::sync::Arc;

use bytes::Bytes;

/// Object bodies for one kind and name prefix.
#[derive(Clone)]
pub struct Bodies {
    prefix: Arc<str>,
    /// Everything before the sequence number of the name.
    head: Arc<[u8]>,
    /// Everything after it.
    tail: Arc<[u8]>,
}

impl Bodies {
    /// Bodies of ConfigMaps named `<prefix>-<seq>` whose `data.value` is
    /// `value_bytes` long.
    pub fn config_maps(prefix: &str, value_bytes: usize) -> Bodies {
        let tail = format!(r#""}},"data":{{"value":"{}"}}}}"#, "x".repeat(value_bytes));
        Bodies::of_kind("ConfigMap", prefix, &tail)
    }

    /// Bodies of pods of one pause container, labelled `app: scale`.
    pub fn pods(prefix: &str) -> Bodies {
        let tail = r#"","labels":{"app":"scale"}},"spec":{"containers":[{"name":"c","image":"registry.k8s.io/pause:3.10"}]}}"#;
        Bodies::of_kind("Pod", prefix, tail)
    }

    /// Bodies of ClusterIP services selecting `app: scale`, port 80.
    pub fn services(prefix: &str) -> Bodies {
        let tail = r#""},"spec":{"selector":{"app":"scale"},"ports":[{"port":80}]}}"#;
        Bodies::of_kind("Service", prefix, tail)
    }

    /// Bodies of core `kind` whose JSON goes on with `tail` after the name.
    fn of_kind(kind: &str, prefix: &str, tail: &str) -> Bodies {
        let head = format!(r#"{{"apiVersion":"v1","kind":"{kind}","metadata":{{"name":"{prefix}-"#);
        Bodies {
            prefix: prefix.into(),
            head: head.into_bytes().into(),
            tail: tail.as_bytes().into(),
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
        let objects = Bodies::config_maps("c", 5);
        let body: serde_json::Value = serde_json::from_slice(&objects.body(7))?;
        assert_eq!(body["kind"], "ConfigMap");
        assert_eq!(body["metadata"]["name"], objects.name(7));
        assert_eq!(body["data"]["value"], "xxxxx");
        Ok(())
    }

    #[test]
    fn names_give_back_their_sequence_number() {
        let objects = Bodies::config_maps("bench-w", 0);
        assert_eq!(Bodies::seq_of(&objects.name(123)), Some(123));
        assert_eq!(Bodies::seq_of("bench"), None);
        assert_eq!(Bodies::seq_of("bench-x"), None);
    }

    #[test]
    fn pods_and_services_are_json() -> Result<(), serde_json::Error> {
        let pod: serde_json::Value = serde_json::from_slice(&Bodies::pods("p").body(3))?;
        assert_eq!(pod["kind"], "Pod");
        assert_eq!(pod["metadata"]["name"], "p-3");
        assert_eq!(pod["spec"]["containers"][0]["name"], "c");
        let service: serde_json::Value = serde_json::from_slice(&Bodies::services("s").body(4))?;
        assert_eq!(service["kind"], "Service");
        assert_eq!(service["metadata"]["name"], "s-4");
        assert_eq!(service["spec"]["ports"][0]["port"], 80);
        Ok(())
    }

    #[test]
    fn namespaces_are_json() -> Result<(), serde_json::Error> {
        let body: serde_json::Value = serde_json::from_slice(&namespace("bench"))?;
        assert_eq!(body["metadata"]["name"], "bench");
        Ok(())
    }
}
