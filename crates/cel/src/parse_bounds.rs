//! cel-go's parser limits (`parser.NewParser` defaults, which Kubernetes
//! keeps): an expression may hold at most 100 000 code points and nest at
//! most 250 deep. Both are checked here in one linear pass over the source,
//! before the `cel` crate parses it, because a long operator chain
//! (`1+1+…+1`, `a[0][0]…`) parses without recursion but yields a tree as
//! deep as the chain, which every later walk (checking, cost, evaluation,
//! drop) would recurse through. Failures use cel-go's texts, located
//! nowhere (`<input>:-1:0`) as cel-go reports them.

use cel::{Env, ParseErrors, Program};

/// cel-go's `expressionSizeCodePointLimit` default.
pub(crate) const EXPRESSION_SIZE_CODE_POINT_LIMIT: usize = 100_000;
/// cel-go's `maxRecursionDepth` default.
pub(crate) const MAX_RECURSION_DEPTH: usize = 250;

/// Why a source was refused before parsing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum BoundError {
    /// Over [`EXPRESSION_SIZE_CODE_POINT_LIMIT`].
    Size(usize),
    /// Brackets nested deeper than [`MAX_RECURSION_DEPTH`] (cel-go's parse
    /// listener).
    Nesting,
    /// The tree would be deeper than [`MAX_RECURSION_DEPTH`] (cel-go's
    /// tree visitor).
    Depth,
}

impl BoundError {
    /// cel-go's rendering of the error.
    pub(crate) fn render(&self) -> String {
        let message = match self {
            BoundError::Size(size) => format!(
                "expression code point size exceeds limit: size: {size}, limit {EXPRESSION_SIZE_CODE_POINT_LIMIT}"
            ),
            BoundError::Nesting => {
                format!("expression recursion limit exceeded: {MAX_RECURSION_DEPTH}")
            }
            BoundError::Depth => "max recursion depth exceeded".to_owned(),
        };
        format!("ERROR: <input>:-1:0: {message}")
    }
}

/// Parses `source` with `env` once it is within the bounds; the error is
/// the rendered text of what is wrong.
pub(crate) fn parse(
    env: &Env,
    source: &str,
    render: impl FnOnce(&ParseErrors, &str) -> String,
) -> Result<Program, String> {
    check(source).map_err(|e| e.render())?;
    env.compile(source).map_err(|e| render(&e, source))
}

/// Checks the size and an upper estimate of the tree depth of `source`.
pub(crate) fn check(source: &str) -> Result<(), BoundError> {
    let size = source.chars().count();
    if size > EXPRESSION_SIZE_CODE_POINT_LIMIT {
        return Err(BoundError::Size(size));
    }
    DepthScan::default().run(source.as_bytes())
}

/// One bracket level: the depth it opened at, the `&&`/`||` terms of its
/// current element (balanced into a tree of logarithmic depth, by cel-go
/// and by the `cel` crate alike) and the operators chained in the current
/// term.
#[derive(Clone, Copy)]
struct Frame {
    base: usize,
    terms: usize,
    chained: usize,
}

impl Frame {
    fn depth(&self) -> usize {
        let balanced = (usize::BITS - self.terms.leading_zeros()) as usize;
        self.base + balanced + self.chained
    }
}

/// The scan's state: open brackets and whether the last token ended an
/// operand (so `-` is binary and `[` indexes).
#[derive(Default)]
struct DepthScan {
    frames: Vec<Frame>,
    top: Frame,
    after_operand: bool,
}

impl Default for Frame {
    fn default() -> Self {
        Frame {
            base: 1,
            terms: 0,
            chained: 0,
        }
    }
}

impl DepthScan {
    fn run(mut self, s: &[u8]) -> Result<(), BoundError> {
        let mut i = 0;
        while i < s.len() {
            let b = s[i];
            i = match b {
                b' ' | b'\t' | b'\r' | b'\n' | b'\x0c' => i + 1,
                b'/' if s.get(i + 1) == Some(&b'/') => skip_line(s, i),
                b'"' | b'\'' => self.operand(skip_string(s, i, false)),
                b'0'..=b'9' => self.operand(skip_number(s, i)),
                b'.' if !self.after_operand && s.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                    self.operand(skip_number(s, i))
                }
                b'(' | b'[' | b'{' => {
                    // A call, an index or a message literal chains onto
                    // the operand before it.
                    if self.after_operand {
                        self.chain()?;
                    }
                    self.open()?;
                    i + 1
                }
                b')' | b']' | b'}' => {
                    self.top = self.frames.pop().unwrap_or_default();
                    self.operand(i + 1)
                }
                b',' => {
                    self.top.chained = 0;
                    self.top.terms = 0;
                    self.after_operand = false;
                    i + 1
                }
                b'&' | b'|' if s.get(i + 1) == Some(&b) => {
                    self.top.terms += 1;
                    self.top.chained = 0;
                    self.after_operand = false;
                    i + 2
                }
                b'&' | b'|' | b'!' => {
                    // `!` prefixes fold into one call or none.
                    self.after_operand = false;
                    i + 1
                }
                b'-' if !self.after_operand => i + 1,
                b'.' | b'+' | b'-' | b'*' | b'/' | b'%' | b'<' | b'>' | b'=' | b'?' => {
                    let next = s.get(i + 1).copied();
                    let two = matches!(
                        (b, next),
                        (b'<' | b'>' | b'=' | b'!', Some(b'=')) | (b'.', Some(b'?'))
                    );
                    self.chain()?;
                    self.after_operand = false;
                    i + 1 + usize::from(two)
                }
                b':' => {
                    self.after_operand = false;
                    i + 1
                }
                _ if is_ident_start(b) => self.word(s, i)?,
                // Anything else is the parser's to report.
                _ => i + 1,
            };
        }
        Ok(())
    }

    /// An identifier, keyword or prefixed string literal.
    fn word(&mut self, s: &[u8], start: usize) -> Result<usize, BoundError> {
        let mut end = start;
        while end < s.len() && (is_ident_start(s[end]) || s[end].is_ascii_digit()) {
            end += 1;
        }
        let word = &s[start..end];
        let quote = matches!(s.get(end), Some(b'"' | b'\''));
        let prefix = word.len() <= 2 && word.iter().all(|c| b"rRbB".contains(c));
        if quote && prefix {
            let raw = word.iter().any(|c| matches!(c, b'r' | b'R'));
            return Ok(self.operand(skip_string(s, end, raw)));
        }
        if word == b"in" {
            self.chain()?;
            self.after_operand = false;
            return Ok(end);
        }
        Ok(self.operand(end))
    }

    fn operand(&mut self, next: usize) -> usize {
        self.after_operand = true;
        next
    }

    fn chain(&mut self) -> Result<(), BoundError> {
        self.top.chained += 1;
        if self.top.depth() > MAX_RECURSION_DEPTH {
            return Err(BoundError::Depth);
        }
        Ok(())
    }

    fn open(&mut self) -> Result<(), BoundError> {
        if self.frames.len() + 1 >= MAX_RECURSION_DEPTH {
            return Err(BoundError::Nesting);
        }
        let base = self.top.depth() + 1;
        if base > MAX_RECURSION_DEPTH {
            return Err(BoundError::Depth);
        }
        self.frames.push(self.top);
        self.top = Frame {
            base,
            terms: 0,
            chained: 0,
        };
        self.after_operand = false;
        Ok(())
    }
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_'
}

fn skip_line(s: &[u8], start: usize) -> usize {
    s[start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(s.len(), |p| start + p + 1)
}

/// The end of the string literal opening at `start` (a quote): single or
/// triple quoted, with backslash escapes unless `raw`. An unterminated
/// literal is, as for cel-go's lexer, a bad character: only the quote is
/// skipped and what follows is scanned as code.
fn skip_string(s: &[u8], start: usize, raw: bool) -> usize {
    let quote = s[start];
    let triple = s.get(start..start + 3) == Some(&[quote; 3][..]);
    let mut i = start + if triple { 3 } else { 1 };
    while i < s.len() {
        match s[i] {
            b'\\' if !raw => i += 2,
            b if b == quote && !triple => return i + 1,
            b if b == quote && s.get(i..i + 3) == Some(&[quote; 3][..]) => return i + 3,
            b'\n' | b'\r' if !triple => break,
            _ => i += 1,
        }
    }
    start + 1
}

/// The end of the number literal opening at `start`: hexadecimal, or
/// decimal with a fraction and an exponent, then an unsigned suffix.
fn skip_number(s: &[u8], start: usize) -> usize {
    let digits = |mut i: usize| {
        while s.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        i
    };
    let mut i;
    if s[start] == b'0' && matches!(s.get(start + 1), Some(b'x' | b'X')) {
        i = start + 2;
        while s.get(i).is_some_and(u8::is_ascii_hexdigit) {
            i += 1;
        }
    } else {
        i = digits(start);
        if s.get(i) == Some(&b'.') && s.get(i + 1).is_some_and(u8::is_ascii_digit) {
            i = digits(i + 1);
        }
        if matches!(s.get(i), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(s.get(i + 1), Some(b'+' | b'-')));
            if s.get(i + 1 + sign).is_some_and(u8::is_ascii_digit) {
                i = digits(i + 1 + sign);
            }
        }
    }
    if matches!(s.get(i), Some(b'u' | b'U')) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests;
