//! libyaml's event stream (go-yaml's `parserc.go` is a port of the same
//! parser, a state machine with an explicit stack: no recursion however
//! deep the document), and its errors as go-yaml's `parser.fail` words
//! them.

use std::borrow::Cow;
use std::ffi::CStr;
use std::mem::MaybeUninit;

use unsafe_libyaml as unsafe_sys;

/// One event, its strings copied out of libyaml.
pub(super) enum Event {
    DocumentStart,
    DocumentEnd,
    StreamEnd,
    Scalar {
        anchor: Option<String>,
        tag: Option<String>,
        value: String,
        /// Plain and untagged: its type is resolved from its text.
        implicit: bool,
    },
    SequenceStart {
        anchor: Option<String>,
    },
    MappingStart {
        anchor: Option<String>,
    },
    End,
    Alias(String),
    Other,
}

/// libyaml's parser over borrowed input.
pub(super) struct Events<'a> {
    parser: Box<MaybeUninit<unsafe_sys::yaml_parser_t>>,
    _input: std::marker::PhantomData<&'a [u8]>,
}

impl<'a> Events<'a> {
    pub(super) fn new(input: &'a [u8]) -> Result<Events<'a>, String> {
        let mut parser = Box::new(MaybeUninit::<unsafe_sys::yaml_parser_t>::uninit());
        // SAFETY: the parser is initialized before use, lives on the heap
        // (libyaml keeps pointers into it) and reads `input`, which the
        // returned value borrows, until it is deleted in `drop`.
        unsafe {
            if unsafe_sys::yaml_parser_initialize(parser.as_mut_ptr()).fail {
                return Err("yaml: out of memory".into());
            }
            unsafe_sys::yaml_parser_set_input_string(
                parser.as_mut_ptr(),
                input.as_ptr(),
                input.len() as u64,
            );
        }
        Ok(Events {
            parser,
            _input: std::marker::PhantomData,
        })
    }

    /// The next event, or go-yaml's message for the parser's error.
    pub(super) fn next(&mut self) -> Result<Event, String> {
        let mut raw = MaybeUninit::<unsafe_sys::yaml_event_t>::uninit();
        // SAFETY: the parser was initialized in `new`; a parsed event is
        // read (its strings copied out) and then deleted exactly once.
        unsafe {
            if unsafe_sys::yaml_parser_parse(self.parser.as_mut_ptr(), raw.as_mut_ptr()).fail {
                return Err(self.error());
            }
            let e = raw.as_mut_ptr();
            let event = read(&*e);
            unsafe_sys::yaml_event_delete(e);
            Ok(event)
        }
    }

    /// go-yaml's `parser.fail`: `yaml: line N: problem`, the line that of
    /// the problem (one-based for scanner errors only, as go-yaml counts)
    /// or else of the context, left out when zero.
    fn error(&self) -> String {
        // SAFETY: the parser is initialized and has just failed, which sets
        // these fields (problem is null or a static string).
        let p = unsafe { &*self.parser.as_ptr() };
        let line = if p.problem_mark.line != 0 {
            p.problem_mark.line + u64::from(p.error == unsafe_sys::YAML_SCANNER_ERROR)
        } else {
            p.context_mark.line
        };
        let problem = if p.problem.is_null() {
            Cow::Borrowed("unknown problem parsing YAML content")
        } else {
            // SAFETY: a NUL-terminated static string.
            unsafe { CStr::from_ptr(p.problem) }.to_string_lossy()
        };
        if line != 0 {
            format!("yaml: line {line}: {problem}")
        } else {
            format!("yaml: {problem}")
        }
    }
}

/// Copies an event's data.
///
/// # Safety
/// `e` is an event libyaml has just parsed.
unsafe fn read(e: &unsafe_sys::yaml_event_t) -> Event {
    // SAFETY: the union member read is the one the event's type selects.
    unsafe {
        match e.type_ {
            unsafe_sys::YAML_DOCUMENT_START_EVENT => Event::DocumentStart,
            unsafe_sys::YAML_DOCUMENT_END_EVENT => Event::DocumentEnd,
            unsafe_sys::YAML_STREAM_END_EVENT => Event::StreamEnd,
            unsafe_sys::YAML_SCALAR_EVENT => {
                let s = &e.data.scalar;
                let bytes = std::slice::from_raw_parts(s.value, s.length as usize);
                Event::Scalar {
                    anchor: string(s.anchor),
                    tag: string(s.tag),
                    value: String::from_utf8_lossy(bytes).into_owned(),
                    implicit: s.plain_implicit,
                }
            }
            unsafe_sys::YAML_SEQUENCE_START_EVENT => Event::SequenceStart {
                anchor: string(e.data.sequence_start.anchor),
            },
            unsafe_sys::YAML_MAPPING_START_EVENT => Event::MappingStart {
                anchor: string(e.data.mapping_start.anchor),
            },
            unsafe_sys::YAML_SEQUENCE_END_EVENT | unsafe_sys::YAML_MAPPING_END_EVENT => Event::End,
            unsafe_sys::YAML_ALIAS_EVENT => {
                Event::Alias(string(e.data.alias.anchor).unwrap_or_default())
            }
            _ => Event::Other,
        }
    }
}

/// Copies a NUL-terminated string out of an event.
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string owned by a live event.
unsafe fn string(ptr: *mut u8) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: as the caller promises.
    Some(
        unsafe { CStr::from_ptr(ptr.cast()) }
            .to_string_lossy()
            .into_owned(),
    )
}

impl Drop for Events<'_> {
    fn drop(&mut self) {
        // SAFETY: initialized in `new` (a failed initialization returns
        // before an `Events` exists) and deleted only here.
        unsafe { unsafe_sys::yaml_parser_delete(self.parser.as_mut_ptr()) }
    }
}
