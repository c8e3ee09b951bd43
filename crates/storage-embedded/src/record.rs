//! Byte encodings of the values stored in the redb tables (see the crate
//! documentation for the layout). Integers are little-endian; each record
//! starts with fixed-width fields so decoding is a few slice reads.

use bytes::Bytes;
use storage::{KeyValue, StorageError};

/// Value of the `latest` table: the key's live generation.
/// Layout: `create_revision i64 | mod_revision i64 | value…`.
pub(crate) struct Latest<'a> {
    pub create_revision: i64,
    pub mod_revision: i64,
    pub value: &'a [u8],
}

const LATEST_HEADER: usize = 16;

impl<'a> Latest<'a> {
    pub fn encode_into(create_revision: i64, mod_revision: i64, value: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.reserve(LATEST_HEADER + value.len());
        out.extend_from_slice(&create_revision.to_le_bytes());
        out.extend_from_slice(&mod_revision.to_le_bytes());
        out.extend_from_slice(value);
    }

    pub fn decode(key: &str, data: &'a [u8]) -> Result<Self, StorageError> {
        if data.len() < LATEST_HEADER {
            return Err(corrupt(key, "latest record is truncated"));
        }
        Ok(Latest {
            create_revision: read_i64(data, 0),
            mod_revision: read_i64(data, 8),
            value: &data[LATEST_HEADER..],
        })
    }

    pub fn to_key_value(&self, key: &str) -> KeyValue {
        KeyValue {
            key: key.to_owned(),
            value: Bytes::copy_from_slice(self.value),
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
        }
    }
}

/// Value of the `revisions` table: the change made at one revision.
/// Layout: `kind u8 | create_revision i64 | prev_revision i64 | key_len u32 | key | value…`.
/// `prev_revision` is the mod revision of the generation this change
/// replaced or deleted (0 when the change created the key).
pub(crate) struct Change<'a> {
    pub deleted: bool,
    pub create_revision: i64,
    pub prev_revision: i64,
    pub key: &'a str,
    pub value: &'a [u8],
}

const CHANGE_HEADER: usize = 1 + 8 + 8 + 4;
const KIND_PUT: u8 = 0;
const KIND_DELETE: u8 = 1;

impl<'a> Change<'a> {
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.clear();
        out.reserve(CHANGE_HEADER + self.key.len() + self.value.len());
        out.push(if self.deleted { KIND_DELETE } else { KIND_PUT });
        out.extend_from_slice(&self.create_revision.to_le_bytes());
        out.extend_from_slice(&self.prev_revision.to_le_bytes());
        // Keys are bounded by the request size limit, far below u32::MAX.
        out.extend_from_slice(&(self.key.len() as u32).to_le_bytes());
        out.extend_from_slice(self.key.as_bytes());
        out.extend_from_slice(self.value);
    }

    pub fn decode(revision: i64, data: &'a [u8]) -> Result<Self, StorageError> {
        let bad = |what: &str| corrupt(&format!("revision {revision}"), what);
        if data.len() < CHANGE_HEADER {
            return Err(bad("change record is truncated"));
        }
        let deleted = match data[0] {
            KIND_PUT => false,
            KIND_DELETE => true,
            other => return Err(bad(&format!("unknown change kind {other}"))),
        };
        let key_len = u32::from_le_bytes([data[17], data[18], data[19], data[20]]) as usize;
        let key_end = CHANGE_HEADER
            .checked_add(key_len)
            .filter(|end| *end <= data.len())
            .ok_or_else(|| bad("change record key overruns the record"))?;
        let key = std::str::from_utf8(&data[CHANGE_HEADER..key_end])
            .map_err(|_| bad("change record key is not UTF-8"))?;
        Ok(Change {
            deleted,
            create_revision: read_i64(data, 1),
            prev_revision: read_i64(data, 9),
            key,
            value: &data[key_end..],
        })
    }

    /// The key-value this change left behind (for a put), as of `revision`.
    pub fn to_key_value(&self, revision: i64) -> KeyValue {
        KeyValue {
            key: self.key.to_owned(),
            value: Bytes::copy_from_slice(self.value),
            create_revision: self.create_revision,
            mod_revision: revision,
        }
    }
}

fn read_i64(data: &[u8], at: usize) -> i64 {
    let mut buf = [0u8; 8];
    buf.copy_from_slice(&data[at..at + 8]);
    i64::from_le_bytes(buf)
}

fn corrupt(key: &str, message: &str) -> StorageError {
    StorageError::Corrupt {
        key: key.to_owned(),
        message: message.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_round_trips() {
        let change = Change {
            deleted: true,
            create_revision: 7,
            prev_revision: 9,
            key: "/registry/pods/ns/ä",
            value: b"payload",
        };
        let mut buf = Vec::new();
        change.encode_into(&mut buf);
        let back = Change::decode(12, &buf).unwrap();
        assert!(back.deleted);
        assert_eq!(back.create_revision, 7);
        assert_eq!(back.prev_revision, 9);
        assert_eq!(back.key, "/registry/pods/ns/ä");
        assert_eq!(back.value, b"payload");
    }

    #[test]
    fn truncated_change_is_corrupt() {
        let change = Change {
            deleted: false,
            create_revision: 1,
            prev_revision: 0,
            key: "/a/long/key",
            value: b"",
        };
        let mut buf = Vec::new();
        change.encode_into(&mut buf);
        buf.truncate(buf.len() - 3);
        assert!(matches!(
            Change::decode(1, &buf),
            Err(StorageError::Corrupt { .. })
        ));
    }

    #[test]
    fn latest_round_trips() {
        let mut buf = Vec::new();
        Latest::encode_into(3, 5, b"v", &mut buf);
        let back = Latest::decode("k", &buf).unwrap();
        assert_eq!(
            (back.create_revision, back.mod_revision, back.value),
            (3, 5, &b"v"[..])
        );
        assert!(Latest::decode("k", &buf[..10]).is_err());
    }
}
