//! go-yaml's alias budget (decode.go, `allowedAliasRatio`): once more than
//! 100 of more than 1000 decoded nodes come from alias expansion, their
//! share may not pass 99% (up to 400,000 nodes), falling to 10% at
//! 4,000,000. The events are counted without expanding anything: each
//! anchor's expanded size is kept, and an alias adds it at once.

use std::collections::HashMap;
use std::ffi::CStr;
use std::mem::MaybeUninit;

use unsafe_libyaml as unsafe_sys;

use crate::serializer::DecodeError;

const RATIO_RANGE_LOW: u64 = 400_000;
const RATIO_RANGE_HIGH: u64 = 4_000_000;

/// Refuses excessive aliasing. Syntax errors stop the count silently: the
/// decoder reports them.
pub(super) fn check(bytes: &[u8]) -> Result<(), DecodeError> {
    let Some(mut events) = Events::new(bytes) else {
        return Ok(());
    };
    let mut budget = Budget::default();
    while let Some(event) = events.next() {
        budget.event(event)?;
    }
    Ok(())
}

enum Event {
    Scalar(Option<Vec<u8>>),
    Start(Option<Vec<u8>>),
    End,
    Alias(Vec<u8>),
    Other,
}

#[derive(Default)]
struct Budget {
    decoded: u64,
    aliased: u64,
    /// Open collections: their anchor and expanded size so far.
    open: Vec<(Option<Vec<u8>>, u64)>,
    anchors: HashMap<Vec<u8>, u64>,
}

impl Budget {
    fn event(&mut self, event: Event) -> Result<(), DecodeError> {
        match event {
            Event::Scalar(anchor) => {
                self.decoded += 1;
                self.close(anchor, 1);
            }
            Event::Start(anchor) => {
                self.decoded += 1;
                self.open.push((anchor, 1));
            }
            Event::End => {
                if let Some((anchor, size)) = self.open.pop() {
                    self.close(anchor, size);
                }
            }
            Event::Alias(name) => {
                let size = self.anchors.get(&name).copied().unwrap_or(0);
                self.decoded = self.decoded.saturating_add(size.saturating_add(1));
                self.aliased = self.aliased.saturating_add(size);
                self.grow_parent(size.saturating_add(1));
            }
            Event::Other => {}
        }
        self.within()
    }

    fn close(&mut self, anchor: Option<Vec<u8>>, size: u64) {
        if let Some(name) = anchor {
            self.anchors.insert(name, size);
        }
        self.grow_parent(size);
    }

    fn grow_parent(&mut self, size: u64) {
        if let Some((_, total)) = self.open.last_mut() {
            *total = total.saturating_add(size);
        }
    }

    fn within(&self) -> Result<(), DecodeError> {
        let (aliased, decoded) = (self.aliased, self.decoded);
        if aliased > 100
            && decoded > 1000
            && aliased as f64 / decoded as f64 > allowed_ratio(decoded)
        {
            return Err(DecodeError::ExcessiveAliasing);
        }
        Ok(())
    }
}

fn allowed_ratio(decoded: u64) -> f64 {
    if decoded <= RATIO_RANGE_LOW {
        0.99
    } else if decoded >= RATIO_RANGE_HIGH {
        0.10
    } else {
        let range = (RATIO_RANGE_HIGH - RATIO_RANGE_LOW) as f64;
        0.99 - 0.89 * ((decoded - RATIO_RANGE_LOW) as f64 / range)
    }
}

/// libyaml's event stream over borrowed input.
struct Events<'a> {
    parser: Box<MaybeUninit<unsafe_sys::yaml_parser_t>>,
    _input: std::marker::PhantomData<&'a [u8]>,
    done: bool,
}

impl<'a> Events<'a> {
    fn new(input: &'a [u8]) -> Option<Events<'a>> {
        let mut parser = Box::new(MaybeUninit::<unsafe_sys::yaml_parser_t>::uninit());
        // SAFETY: the parser is initialized before use, lives on the heap
        // (libyaml keeps pointers into it) and reads `input`, which the
        // returned value borrows, until it is deleted in `drop`.
        unsafe {
            if unsafe_sys::yaml_parser_initialize(parser.as_mut_ptr()).fail {
                return None;
            }
            unsafe_sys::yaml_parser_set_encoding(
                parser.as_mut_ptr(),
                unsafe_sys::YAML_UTF8_ENCODING,
            );
            unsafe_sys::yaml_parser_set_input_string(
                parser.as_mut_ptr(),
                input.as_ptr(),
                input.len() as u64,
            );
        }
        Some(Events {
            parser,
            _input: std::marker::PhantomData,
            done: false,
        })
    }

    fn next(&mut self) -> Option<Event> {
        if self.done {
            return None;
        }
        let mut raw = MaybeUninit::<unsafe_sys::yaml_event_t>::uninit();
        // SAFETY: the parser was initialized in `new`; a parsed event is
        // read (its anchor copied out) and then deleted exactly once.
        unsafe {
            if unsafe_sys::yaml_parser_parse(self.parser.as_mut_ptr(), raw.as_mut_ptr()).fail {
                self.done = true;
                return None;
            }
            let e = raw.as_mut_ptr();
            let event = match (*e).type_ {
                unsafe_sys::YAML_SCALAR_EVENT => Event::Scalar(anchor((*e).data.scalar.anchor)),
                unsafe_sys::YAML_SEQUENCE_START_EVENT => {
                    Event::Start(anchor((*e).data.sequence_start.anchor))
                }
                unsafe_sys::YAML_MAPPING_START_EVENT => {
                    Event::Start(anchor((*e).data.mapping_start.anchor))
                }
                unsafe_sys::YAML_SEQUENCE_END_EVENT | unsafe_sys::YAML_MAPPING_END_EVENT => {
                    Event::End
                }
                unsafe_sys::YAML_ALIAS_EVENT => {
                    Event::Alias(anchor((*e).data.alias.anchor).unwrap_or_default())
                }
                unsafe_sys::YAML_STREAM_END_EVENT => {
                    self.done = true;
                    Event::Other
                }
                _ => Event::Other,
            };
            unsafe_sys::yaml_event_delete(e);
            Some(event)
        }
    }
}

/// Copies a NUL-terminated anchor name out of an event.
///
/// # Safety
/// `ptr` is null or points to a NUL-terminated string owned by a live event.
unsafe fn anchor(ptr: *mut u8) -> Option<Vec<u8>> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: as the caller promises.
    Some(unsafe { CStr::from_ptr(ptr.cast()) }.to_bytes().to_vec())
}

impl Drop for Events<'_> {
    fn drop(&mut self) {
        // SAFETY: initialized in `new` (a failed initialization returns
        // before an `Events` exists) and deleted only here.
        unsafe { unsafe_sys::yaml_parser_delete(self.parser.as_mut_ptr()) }
    }
}
