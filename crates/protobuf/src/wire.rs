//! Protobuf wire primitives: a bounds-checked reader over a byte slice and
//! the varint/length-delimited writers.

use crate::ProtobufError;

pub(crate) const WIRE_VARINT: u8 = 0;
pub(crate) const WIRE_FIXED64: u8 = 1;
pub(crate) const WIRE_LEN: u8 = 2;
pub(crate) const WIRE_FIXED32: u8 = 5;

/// One decoded field value, borrowing from the input.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WireValue<'a> {
    Varint(u64),
    Fixed64(u64),
    Len(&'a [u8]),
    Fixed32,
}

/// Reads `(tag, value)` pairs from a message body.
pub(crate) struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(data: &'a [u8]) -> Self {
        Self { data }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub(crate) fn varint(&mut self) -> Result<u64, ProtobufError> {
        let mut value = 0u64;
        for (i, &b) in self.data.iter().enumerate().take(10) {
            value |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                if i == 9 && b > 1 {
                    return Err(ProtobufError::Corrupt("varint overflows 64 bits"));
                }
                self.data = &self.data[i + 1..];
                return Ok(value);
            }
        }
        if self.data.len() >= 10 {
            Err(ProtobufError::Corrupt("varint longer than 10 bytes"))
        } else {
            Err(ProtobufError::Truncated)
        }
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], ProtobufError> {
        if n > self.data.len() {
            return Err(ProtobufError::Truncated);
        }
        let (head, tail) = self.data.split_at(n);
        self.data = tail;
        Ok(head)
    }

    /// The next field, or `None` at the end of the message.
    pub(crate) fn field(&mut self) -> Result<Option<(u32, WireValue<'a>)>, ProtobufError> {
        if self.data.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3)
            .map_err(|_| ProtobufError::Corrupt("field number out of range"))?;
        if tag == 0 {
            return Err(ProtobufError::Corrupt("field number 0"));
        }
        let value = match (key & 7) as u8 {
            WIRE_VARINT => WireValue::Varint(self.varint()?),
            WIRE_FIXED64 => {
                let b = self.take(8)?;
                let mut a = [0u8; 8];
                a.copy_from_slice(b);
                WireValue::Fixed64(u64::from_le_bytes(a))
            }
            WIRE_LEN => {
                let len = usize::try_from(self.varint()?).map_err(|_| ProtobufError::Truncated)?;
                WireValue::Len(self.take(len)?)
            }
            WIRE_FIXED32 => {
                self.take(4)?;
                WireValue::Fixed32
            }
            _ => return Err(ProtobufError::Corrupt("unsupported wire type")),
        };
        Ok(Some((tag, value)))
    }
}

pub(crate) fn put_varint(buf: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        buf.push((v as u8) | 0x80);
        v >>= 7;
    }
    buf.push(v as u8);
}

pub(crate) fn put_key(buf: &mut Vec<u8>, tag: u32, wire: u8) {
    put_varint(buf, (u64::from(tag) << 3) | u64::from(wire));
}

pub(crate) fn put_bytes(buf: &mut Vec<u8>, tag: u32, bytes: &[u8]) {
    put_key(buf, tag, WIRE_LEN);
    put_varint(buf, bytes.len() as u64);
    buf.extend_from_slice(bytes);
}

/// Writes a length-delimited field whose body `body` appends to the buffer,
/// without encoding the body into a separate allocation first.
pub(crate) fn put_nested<E>(
    buf: &mut Vec<u8>,
    tag: u32,
    body: impl FnOnce(&mut Vec<u8>) -> Result<(), E>,
) -> Result<(), E> {
    put_key(buf, tag, WIRE_LEN);
    let len_at = buf.len();
    buf.push(0);
    body(buf)?;
    let len = buf.len() - len_at - 1;
    if len < 0x80 {
        buf[len_at] = len as u8;
    } else {
        let mut prefix = Vec::with_capacity(10);
        put_varint(&mut prefix, len as u64);
        buf.splice(len_at..=len_at, prefix);
    }
    Ok(())
}
