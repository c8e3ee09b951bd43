//! Event truncation (`--audit-<backend>-truncate-*`, upstream's
//! `plugin/pkg/audit/truncate`): an encoded event larger than the event
//! limit loses its request and response objects and is marked with the
//! `audit.k8s.io/truncated` annotation (only events at level Request or
//! above carry objects to lose); one still too large is dropped. Batches
//! are split so that none exceeds the batch limit in bytes.

use super::event::{Event, Level};

/// The annotation marking a truncated event.
pub const TRUNCATED_ANNOTATION: &str = "audit.k8s.io/truncated";

/// `--audit-<backend>-truncate-max-event-size` and `-max-batch-size`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Truncation {
    pub max_event_size: usize,
    pub max_batch_size: usize,
}

/// Why an event was not encoded.
#[derive(Debug, thiserror::Error)]
pub enum EncodeError {
    #[error("encoding the event: {0}")]
    Json(#[from] serde_json::Error),
    #[error("event is too large even after truncating ({size} bytes, limit {max})")]
    TooLarge { size: usize, max: usize },
}

impl EncodeError {
    /// The plugin the error is counted against: `backend` for a failed
    /// encoding, truncation for an oversized event.
    pub fn plugin(&self, backend: &'static str) -> &'static str {
        match self {
            EncodeError::Json(_) => backend,
            EncodeError::TooLarge { .. } => "truncate",
        }
    }
}

/// Encodes `event` as JSON, truncated as `truncation` asks (if given).
pub fn encode(event: &Event, truncation: Option<Truncation>) -> Result<Vec<u8>, EncodeError> {
    let encoded = serde_json::to_vec(event)?;
    let Some(limits) = truncation else {
        return Ok(encoded);
    };
    if encoded.len() <= limits.max_event_size {
        return Ok(encoded);
    }
    let shorter = if event.level >= Level::Request {
        serde_json::to_vec(&truncated(event))?
    } else {
        encoded
    };
    if shorter.len() > limits.max_event_size {
        return Err(EncodeError::TooLarge {
            size: shorter.len(),
            max: limits.max_event_size,
        });
    }
    Ok(shorter)
}

/// `event` without its objects, annotated as truncated.
fn truncated(event: &Event) -> Event {
    let mut annotations = event.annotations.clone();
    annotations.insert(TRUNCATED_ANNOTATION.to_owned(), "true".to_owned());
    // Field by field, so the (large) objects are never copied.
    Event {
        kind: event.kind.clone(),
        api_version: event.api_version.clone(),
        level: event.level,
        audit_id: event.audit_id.clone(),
        stage: event.stage,
        request_uri: event.request_uri.clone(),
        verb: event.verb.clone(),
        user: event.user.clone(),
        impersonated_user: event.impersonated_user.clone(),
        source_ips: event.source_ips.clone(),
        user_agent: event.user_agent.clone(),
        object_ref: event.object_ref.clone(),
        response_status: event.response_status.clone(),
        request_object: None,
        response_object: None,
        request_received_timestamp: event.request_received_timestamp,
        stage_timestamp: event.stage_timestamp,
        annotations,
    }
}

/// Splits encoded events into runs whose total size stays within the
/// batch limit (a run always holds at least one event).
pub fn split(items: &[Vec<u8>], max_batch_size: usize) -> Vec<&[Vec<u8>]> {
    let mut runs = Vec::new();
    let (mut start, mut size) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        if i > start && size + item.len() > max_batch_size {
            runs.push(&items[start..i]);
            (start, size) = (i, 0);
        }
        size += item.len();
    }
    if start < items.len() {
        runs.push(&items[start..]);
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn event(level: Level, body_len: usize) -> Event {
        let mut ev = Event::new(level, "id-1".into());
        ev.verb = "create".into();
        ev.request_object = Some(json!({"data": "x".repeat(body_len)}));
        ev.response_object = Some(json!({"data": "y".repeat(body_len)}));
        ev
    }

    fn limits(max_event_size: usize) -> Truncation {
        Truncation {
            max_event_size,
            max_batch_size: 10 * max_event_size,
        }
    }

    #[test]
    fn small_events_pass_unchanged() {
        let ev = event(Level::RequestResponse, 10);
        let plain = encode(&ev, None).unwrap();
        assert_eq!(encode(&ev, Some(limits(10_000))).unwrap(), plain);
    }

    #[test]
    fn large_events_lose_objects_and_are_annotated() {
        let ev = event(Level::RequestResponse, 5_000);
        let out: serde_json::Value =
            serde_json::from_slice(&encode(&ev, Some(limits(2_000))).unwrap()).unwrap();
        assert!(out.get("requestObject").is_none());
        assert!(out.get("responseObject").is_none());
        assert_eq!(out["annotations"][TRUNCATED_ANNOTATION], "true");
        assert_eq!(out["verb"], "create");
        assert_eq!(out["auditID"], "id-1");
    }

    #[test]
    fn events_too_large_without_objects_are_dropped() {
        let mut ev = event(Level::Request, 10);
        ev.request_uri = "/api/".to_owned() + &"z".repeat(5_000);
        let err = encode(&ev, Some(limits(2_000))).unwrap_err();
        assert!(matches!(err, EncodeError::TooLarge { max: 2_000, .. }));
    }

    #[test]
    fn metadata_events_are_not_truncated() {
        let mut ev = Event::new(Level::Metadata, "id".into());
        ev.request_uri = "z".repeat(5_000);
        assert!(matches!(
            encode(&ev, Some(limits(1_000))),
            Err(EncodeError::TooLarge { .. })
        ));
    }

    #[test]
    fn batches_split_by_size() {
        let items: Vec<Vec<u8>> = [4, 4, 4, 10, 1].iter().map(|n| vec![b'a'; *n]).collect();
        let runs: Vec<usize> = split(&items, 8).iter().map(|r| r.len()).collect();
        assert_eq!(runs, vec![2, 1, 1, 1]);
        assert!(split(&[], 8).is_empty());
    }
}
