//! The nesting of a YAML text, measured in one pass before libyaml sees it:
//! flow collections (`[`, `{` outside quoted scalars, comments and plain
//! scalars) and block collections (the stack of increasing indentation
//! columns of keys, `- ` and `? ` entries, compact `- - x` sequences
//! included), as go-yaml's scanner
//! counts its flow level and indents.

use crate::serializer::{DecodeError, UPSTREAM_MAX_DEPTH};

/// Refuses nesting past upstream's limit, with its message.
pub(super) fn check(bytes: &[u8]) -> Result<(), DecodeError> {
    let mut scan = Scanner {
        b: bytes,
        i: 0,
        line: 1,
        line_start: 0,
        at_line_start: true,
        flow: 0,
        indents: Vec::new(),
        node_start: true,
        entry: 0,
        block_scalar: None,
    };
    scan.run()
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
    line: usize,
    line_start: usize,
    /// Whether the indentation of the current line is still to be read.
    at_line_start: bool,
    flow: usize,
    indents: Vec<usize>,
    /// Whether a node (scalar, collection, anchor, tag) may begin here.
    node_start: bool,
    /// The column of the innermost block entry on this line (after its
    /// `- ` indicators): a block scalar there is indented deeper.
    entry: usize,
    block_scalar: Option<BlockScalar>,
}

/// A literal or folded block scalar: its content lines are indented past
/// the entry that holds it, all as far as the first of them.
struct BlockScalar {
    parent: usize,
    content: Option<usize>,
}

impl BlockScalar {
    fn holds(&mut self, indent: usize) -> bool {
        match self.content {
            Some(content) => indent >= content,
            None if indent > self.parent => {
                self.content = Some(indent);
                true
            }
            None => false,
        }
    }
}

impl Scanner<'_> {
    fn run(&mut self) -> Result<(), DecodeError> {
        while self.i < self.b.len() {
            if self.at_line_start && self.flow == 0 {
                self.at_line_start = false;
                self.line_begin()?;
                continue;
            }
            let c = self.b[self.i];
            match c {
                b'\n' => self.newline(),
                b' ' | b'\t' | b'\r' => self.i += 1,
                b'#' if self.after_space() => self.skip_line(),
                b'"' | b'\'' if self.node_start => self.skip_quoted(c),
                b'[' | b'{' if self.node_start || self.flow > 0 => {
                    self.flow += 1;
                    self.i += 1;
                    self.node_start = true;
                    self.measure()?;
                }
                b']' | b'}' if self.flow > 0 => {
                    self.flow -= 1;
                    self.i += 1;
                    self.node_start = false;
                }
                b',' if self.flow > 0 => {
                    self.i += 1;
                    self.node_start = true;
                }
                b':' if self.flow > 0 || self.indicator() => {
                    if self.flow == 0 {
                        self.push_indent(self.entry)?;
                    }
                    self.i += 1;
                    self.node_start = true;
                }
                b'-' | b'?' if self.node_start && self.indicator() => {
                    if self.flow == 0 {
                        self.push_indent(self.i - self.line_start)?;
                        self.entry = self.i + 2 - self.line_start;
                    }
                    self.i += 1;
                }
                b'&' | b'!' if self.node_start => self.skip_token(),
                b'*' if self.node_start => {
                    self.skip_token();
                    self.node_start = false;
                }
                b'|' | b'>' if self.node_start && self.flow == 0 => {
                    self.block_scalar = Some(BlockScalar {
                        parent: self.entry,
                        content: None,
                    });
                    self.skip_line();
                }
                _ => self.skip_plain(),
            }
        }
        Ok(())
    }

    /// At the start of a line in block context: indentation closes block
    /// levels (a `- `, `? ` or key opens one); blank, comment and block
    /// scalar lines do neither.
    fn line_begin(&mut self) -> Result<(), DecodeError> {
        let rest = &self.b[self.i..];
        let indent = rest.iter().take_while(|&&c| c == b' ').count();
        let first = rest.get(indent).copied();
        let blank = matches!(first, None | Some(b'\n' | b'\r'));
        if let Some(scalar) = &mut self.block_scalar {
            if blank || scalar.holds(indent) {
                self.skip_line();
                return Ok(());
            }
            self.block_scalar = None;
        }
        self.i += indent;
        self.entry = indent;
        if matches!(first, None | Some(b'\n' | b'\r' | b'#')) {
            self.skip_line();
            return Ok(());
        }
        if indent == 0 && (rest.starts_with(b"---") || rest.starts_with(b"...")) {
            self.indents.clear();
            self.i += 3;
            self.node_start = true;
            return Ok(());
        }
        while self.indents.last().is_some_and(|&top| top > indent) {
            self.indents.pop();
        }
        self.node_start = true;
        Ok(())
    }

    fn push_indent(&mut self, column: usize) -> Result<(), DecodeError> {
        if self.indents.last().is_none_or(|&top| column > top) {
            self.indents.push(column);
            self.measure()?;
        }
        Ok(())
    }

    /// Checks the nesting after it grew.
    fn measure(&mut self) -> Result<(), DecodeError> {
        if self.flow > UPSTREAM_MAX_DEPTH || self.indents.len() > UPSTREAM_MAX_DEPTH {
            return Err(DecodeError::YamlMaxDepth { line: self.line });
        }
        Ok(())
    }

    fn newline(&mut self) {
        self.i += 1;
        self.line += 1;
        self.line_start = self.i;
        self.at_line_start = true;
        if self.flow == 0 {
            self.node_start = true;
        }
    }

    fn after_space(&self) -> bool {
        self.i == self.line_start || matches!(self.b[self.i - 1], b' ' | b'\t')
    }

    /// Whether the character here is followed by a space or a line end.
    fn indicator(&self) -> bool {
        matches!(
            self.b.get(self.i + 1),
            None | Some(b' ' | b'\t' | b'\n' | b'\r')
        )
    }

    fn skip_line(&mut self) {
        while self.i < self.b.len() && self.b[self.i] != b'\n' {
            self.i += 1;
        }
    }

    /// A quoted scalar, over line breaks; `''` inside single quotes and
    /// backslash escapes inside double quotes do not end it.
    fn skip_quoted(&mut self, quote: u8) {
        self.i += 1;
        while self.i < self.b.len() {
            let c = self.b[self.i];
            self.i += 1;
            match c {
                b'\n' => {
                    self.line += 1;
                    self.line_start = self.i;
                }
                b'\\' if quote == b'"' => self.i += 1,
                b'\'' if quote == b'\'' && self.b.get(self.i) == Some(&b'\'') => self.i += 1,
                c if c == quote => break,
                _ => {}
            }
        }
        self.node_start = false;
    }

    /// An anchor, alias or tag token.
    fn skip_token(&mut self) {
        while self.i < self.b.len() && !self.token_end(self.b[self.i]) {
            self.i += 1;
        }
    }

    fn token_end(&self, c: u8) -> bool {
        matches!(c, b' ' | b'\t' | b'\n' | b'\r')
            || (self.flow > 0 && matches!(c, b',' | b'[' | b']' | b'{' | b'}'))
    }

    /// A plain scalar, up to a `: ` or ` #`, a line end, or in flow context
    /// a flow indicator.
    fn skip_plain(&mut self) {
        self.node_start = false;
        self.i += 1;
        while self.i < self.b.len() {
            let c = self.b[self.i];
            let ends = match c {
                b'\n' => true,
                b':' => {
                    self.indicator()
                        || (self.flow > 0
                            && matches!(
                                self.b.get(self.i + 1),
                                Some(b',' | b']' | b'}' | b'[' | b'{')
                            ))
                }
                b'#' => self.after_space(),
                b',' | b'[' | b']' | b'{' | b'}' => self.flow > 0,
                _ => false,
            };
            if ends {
                return;
            }
            self.i += 1;
        }
    }
}
