//! Go's `encoding/pem.Decode` as of Go 1.25 (the toolchain of upstream
//! 1.37): the first END line, then the last BEGIN line before it, so junk,
//! malformed blocks and BEGIN lines without an END are skipped in one pass
//! (linear in the input), with Go's header, trailer and base64 rules.

use base64::alphabet::STANDARD;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;

const PEM_START: &[u8] = b"\n-----BEGIN ";
const PEM_END: &[u8] = b"\n-----END ";
const PEM_END_OF_LINE: &[u8] = b"-----";

/// Go's `base64.StdEncoding`: padded, trailing bits not checked.
const GO_STD: GeneralPurpose = GeneralPurpose::new(
    &STANDARD,
    GeneralPurposeConfig::new()
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::RequireCanonical),
);

/// A decoded PEM block.
pub(super) struct Block {
    pub kind: String,
    pub has_headers: bool,
    pub bytes: Vec<u8>,
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn rfind(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).rposition(|w| w == needle)
}

/// Go's `getLine`: the line without its end and trailing blanks, the rest,
/// and how many bytes were consumed.
fn get_line(data: &[u8]) -> (&[u8], &[u8], isize) {
    let (mut end, next) = match data.iter().position(|b| *b == b'\n') {
        None => (data.len(), data.len()),
        Some(i) => (i, i + 1),
    };
    if next > end && end > 0 && data[end - 1] == b'\r' {
        end -= 1;
    }
    let mut line = &data[..end];
    while let [head @ .., b' ' | b'\t'] = line {
        line = head;
    }
    (line, &data[next..], next as isize)
}

/// The next PEM block of `data` and what follows it, as Go's `pem.Decode`.
pub(super) fn decode(data: &[u8]) -> Option<(Block, &[u8])> {
    let mut rest = data;
    let mut end_trailer_index: isize = 0;
    loop {
        rest = rest.get(usize::try_from(end_trailer_index).ok()?..)?;
        let end = find(rest, PEM_END)?;
        let mut end_index = end as isize;
        end_trailer_index = end_index + PEM_END.len() as isize;
        let begin = match rfind(&rest[..end], &PEM_START[1..]) {
            Some(b) if b == 0 || rest[b - 1] == b'\n' => b,
            _ => continue,
        };
        let skip = (begin + PEM_START.len() - 1) as isize;
        rest = &rest[begin + PEM_START.len() - 1..];
        end_index -= skip;
        end_trailer_index -= skip;
        let (type_line, next, consumed) = get_line(rest);
        rest = next;
        end_index -= consumed;
        end_trailer_index -= consumed;
        let Some(kind) = type_line.strip_suffix(PEM_END_OF_LINE) else {
            continue;
        };
        let mut has_headers = false;
        loop {
            if rest.is_empty() {
                return None;
            }
            let (line, next, consumed) = get_line(rest);
            if !line.contains(&b':') {
                break;
            }
            has_headers = true;
            rest = next;
            end_index -= consumed;
            end_trailer_index -= consumed;
        }
        if has_headers && end_index < 0 {
            continue;
        }
        let Some(bytes) = block_bytes(rest, kind, end_index, end_trailer_index) else {
            continue;
        };
        let after = usize::try_from(end_index + PEM_END.len() as isize - 1).ok()?;
        let (_, next, _) = get_line(rest.get(after..)?);
        let kind = String::from_utf8_lossy(kind).into_owned();
        return Some((
            Block {
                kind,
                has_headers,
                bytes,
            },
            next,
        ));
    }
}

/// The END line's type and dashes, then the base64 body; `None` where Go
/// would look for another block.
fn block_bytes(rest: &[u8], kind: &[u8], end_index: isize, trailer: isize) -> Option<Vec<u8>> {
    let end_trailer = rest.get(usize::try_from(trailer).ok()?..)?;
    let trailer_len = kind.len() + PEM_END_OF_LINE.len();
    if end_trailer.len() < trailer_len {
        return None;
    }
    let (trailer, rest_of_end_line) = end_trailer.split_at(trailer_len);
    if !trailer.starts_with(kind) || !trailer.ends_with(PEM_END_OF_LINE) {
        return None;
    }
    if !get_line(rest_of_end_line).0.is_empty() {
        return None;
    }
    if end_index <= 0 {
        return Some(Vec::new());
    }
    let body: Vec<u8> = rest[..end_index as usize]
        .iter()
        .filter(|b| !matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
        .copied()
        .collect();
    GO_STD.decode(body).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(mut data: &[u8]) -> Vec<(String, bool, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some((block, rest)) = decode(data) {
            out.push((block.kind, block.has_headers, block.bytes));
            data = rest;
        }
        out
    }

    #[test]
    fn blocks_are_found_as_go_finds_them() {
        let data = b"junk\n-----BEGIN A-----\naGk=\n-----END A-----\n\
            -----BEGIN B-----\nProc-Type: 4,ENCRYPTED\n\naGk=\n-----END B-----\n\
            -----BEGIN C-----\n-----END D-----\n-----BEGIN E-----\n-----END E-----";
        assert_eq!(
            kinds(data),
            [
                ("A".to_owned(), false, b"hi".to_vec()),
                ("B".to_owned(), true, b"hi".to_vec()),
                ("E".to_owned(), false, Vec::new()),
            ]
        );
        // A BEGIN without an END and bad base64 are skipped.
        assert!(kinds(b"-----BEGIN A-----\naGk=\n").is_empty());
        assert!(kinds(b"-----BEGIN A-----\n!!!!\n-----END A-----\n").is_empty());
    }

    #[test]
    fn many_begin_lines_are_read_in_one_pass() {
        let mut data = b"-----BEGIN A-----\n".repeat(50_000);
        data.extend_from_slice(b"aGk=\n-----END A-----\n");
        assert_eq!(kinds(&data), [("A".to_owned(), false, b"hi".to_vec())]);
    }
}
