//! The audit.k8s.io/v1 types written by the backends: `Event` (one per
//! request stage), `EventList` (a webhook batch) and their parts, in the
//! JSON form upstream writes (field order and omitted empty fields as Go's
//! `omitempty`).

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, SecondsFormat, Utc};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

/// How much of a request is recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// The stages of a request an event is written at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::RequestReceived,
        Stage::ResponseStarted,
        Stage::ResponseComplete,
        Stage::Panic,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Stage {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Stage::ALL.into_iter().find(|st| st.as_str() == s).ok_or(())
    }
}

fn is_empty(s: &str) -> bool {
    s.is_empty()
}

/// authentication.k8s.io/v1 UserInfo as audit events carry it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventUser {
    #[serde(default, skip_serializing_if = "is_empty")]
    pub username: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

/// The object a resource request is about.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    #[serde(default, skip_serializing_if = "is_empty")]
    pub resource: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub namespace: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub name: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub uid: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub api_group: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub api_version: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub resource_version: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub subresource: String,
}

/// The bounded part of a response's `Status` (upstream copies only these).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResponseStatus {
    /// Always `{}` (a Status's ListMeta is not omitted).
    #[serde(default)]
    pub metadata: serde_json::Map<String, Value>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub status: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub message: String,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<Value>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub code: u16,
}

fn is_zero(n: &u16) -> bool {
    *n == 0
}

impl ResponseStatus {
    pub fn code(code: u16) -> Self {
        ResponseStatus {
            code,
            ..ResponseStatus::default()
        }
    }

    /// The bounded fields of a `Status` object; None when `v` is not one.
    pub fn from_status(v: &Value) -> Option<Self> {
        if v.get("kind").and_then(Value::as_str) != Some("Status") {
            return None;
        }
        let text = |k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Some(ResponseStatus {
            metadata: serde_json::Map::new(),
            status: text("status"),
            message: text("message"),
            reason: text("reason"),
            details: v.get("details").cloned(),
            code: v
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or_default(),
        })
    }
}

/// A timestamp written as upstream's MicroTime (RFC 3339, microseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub struct MicroTime(pub DateTime<Utc>);

impl MicroTime {
    pub fn now() -> Self {
        MicroTime(Utc::now())
    }
}

impl Serialize for MicroTime {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0.to_rfc3339_opts(SecondsFormat::Micros, true))
    }
}

/// One audit event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    pub kind: String,
    pub api_version: String,
    pub level: Level,
    #[serde(rename = "auditID")]
    pub audit_id: String,
    pub stage: Stage,
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    pub verb: String,
    pub user: EventUser,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<EventUser>,
    #[serde(default, rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    #[serde(default, skip_serializing_if = "is_empty")]
    pub user_agent: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_object: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response_object: Option<Value>,
    pub request_received_timestamp: MicroTime,
    pub stage_timestamp: MicroTime,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

pub const API_VERSION: &str = "audit.k8s.io/v1";

impl Event {
    /// An event at `level` received now, before any stage is reached.
    pub fn new(level: Level, audit_id: String) -> Self {
        let now = MicroTime::now();
        Event {
            kind: "Event".into(),
            api_version: API_VERSION.into(),
            level,
            audit_id,
            stage: Stage::RequestReceived,
            request_uri: String::new(),
            verb: String::new(),
            user: EventUser::default(),
            impersonated_user: None,
            source_ips: Vec::new(),
            user_agent: String::new(),
            object_ref: None,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received_timestamp: now,
            stage_timestamp: now,
            annotations: BTreeMap::new(),
        }
    }
}

/// A batch of events, as the webhook backend posts them.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EventList<'a> {
    pub kind: &'static str,
    pub api_version: &'static str,
    pub metadata: serde_json::Map<String, Value>,
    pub items: &'a [Event],
}

impl<'a> EventList<'a> {
    pub fn new(items: &'a [Event]) -> Self {
        EventList {
            kind: "EventList",
            api_version: API_VERSION,
            metadata: serde_json::Map::new(),
            items,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_as_upstream() {
        let mut ev = Event::new(Level::Metadata, "abc".into());
        ev.request_received_timestamp = MicroTime(
            DateTime::parse_from_rfc3339("2025-01-02T03:04:05.123456789Z")
                .map(|t| t.with_timezone(&Utc))
                .unwrap_or_default(),
        );
        ev.stage_timestamp = ev.request_received_timestamp;
        ev.stage = Stage::ResponseComplete;
        ev.verb = "get".into();
        ev.request_uri = "/api".into();
        ev.user.username = "u".into();
        ev.response_status = Some(ResponseStatus::code(200));
        let json = serde_json::to_string(&ev).unwrap_or_default();
        assert_eq!(
            json,
            "{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":\"Metadata\",\
             \"auditID\":\"abc\",\"stage\":\"ResponseComplete\",\"requestURI\":\"/api\",\
             \"verb\":\"get\",\"user\":{\"username\":\"u\"},\
             \"responseStatus\":{\"metadata\":{},\"code\":200},\
             \"requestReceivedTimestamp\":\"2025-01-02T03:04:05.123456Z\",\
             \"stageTimestamp\":\"2025-01-02T03:04:05.123456Z\"}"
        );
    }

    #[test]
    fn status_fields_are_bounded() {
        let v = serde_json::json!({"kind":"Status","apiVersion":"v1","metadata":{},
            "status":"Failure","message":"m","reason":"NotFound",
            "details":{"name":"x"},"code":404});
        let s = ResponseStatus::from_status(&v).unwrap_or_default();
        assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
        assert!(ResponseStatus::from_status(&serde_json::json!({"kind":"Pod"})).is_none());
    }
}
