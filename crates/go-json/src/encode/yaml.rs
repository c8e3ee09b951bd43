//! YAML as `sigs.k8s.io/yaml.JSONToYAML` writes it: the JSON re-read into
//! Go maps, then `go.yaml.in/yaml/v2` `Marshal` (v2.4, the YAML library
//! of Kubernetes 1.37). The encoder (`encode.go`) sorts every mapping's
//! keys (`keyList.Less`, [`yaml_key_order`]) and asks for a plain scalar
//! unless the string would read back as another type ([`resolve`]) or
//! spans lines (literal style); the emitter (`emitterc.go`, a port of
//! libyaml) then checks the scalar's characters and falls back to single
//! or double quotes, folds long flow scalars past column 80 at a space,
//! indents by two, writes sequences in mappings without indentation and
//! empty collections as `{}` and `[]`.

mod resolve;

use std::cmp::Ordering;

use serde_json::{Map, Value};

/// go-yaml's `best_width` and `best_indent`.
const BEST_WIDTH: usize = 80;
const BEST_INDENT: isize = 2;
/// Longest key written as a simple `key: value` (`check_simple_key`).
const MAX_SIMPLE_KEY: usize = 128;

/// One document, as `yaml.Marshal` of the decoded JSON writes it.
pub fn to_string(value: &Value) -> String {
    let mut e = Emitter {
        out: String::with_capacity(256),
        column: 0,
        indent: -1,
        whitespace: true,
        indention: true,
        open_ended: false,
    };
    e.node(value, Context::ROOT);
    e.indent = -1;
    e.write_indent();
    if e.open_ended {
        e.indicator("...", true, false, false);
        e.write_indent();
    }
    e.out
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Style {
    Plain,
    SingleQuoted,
    DoubleQuoted,
    Literal,
}

/// Where a node is written (libyaml's `*_context` flags).
#[derive(Clone, Copy)]
struct Context {
    root: bool,
    mapping: bool,
    simple_key: bool,
}

impl Context {
    const ROOT: Context = Context::new(true, false, false);
    const ITEM: Context = Context::new(false, false, false);
    const VALUE: Context = Context::new(false, true, false);
    const KEY: Context = Context::new(false, true, true);

    const fn new(root: bool, mapping: bool, simple_key: bool) -> Context {
        Context {
            root,
            mapping,
            simple_key,
        }
    }
}

/// The emitter's state: output, column (in characters), indentation and
/// whether the last thing written was whitespace or indentation.
struct Emitter {
    out: String,
    column: usize,
    indent: isize,
    whitespace: bool,
    indention: bool,
    open_ended: bool,
}

impl Emitter {
    fn node(&mut self, value: &Value, ctx: Context) {
        match value {
            Value::Object(map) if map.is_empty() => self.flow_empty("{", "}"),
            Value::Array(items) if items.is_empty() => self.flow_empty("[", "]"),
            Value::Object(map) => self.mapping(map),
            Value::Array(items) => self.sequence(items, ctx),
            Value::String(s) => self.string(s, ctx),
            Value::Null => self.scalar("null", Style::Plain, ctx),
            Value::Bool(b) => self.scalar(if *b { "true" } else { "false" }, Style::Plain, ctx),
            Value::Number(n) => {
                let text = match n.as_f64() {
                    Some(f) if !n.is_i64() && !n.is_u64() => resolve::format_float(f),
                    _ => n.to_string(),
                };
                self.scalar(&text, Style::Plain, ctx)
            }
        }
    }

    /// An empty mapping or sequence, in flow style.
    fn flow_empty(&mut self, open: &str, close: &str) {
        self.indicator(open, true, true, false);
        self.indicator(close, false, false, false);
    }

    fn mapping(&mut self, map: &Map<String, Value>) {
        let saved = self.indent;
        self.increase_indent(false, false);
        let mut entries: Vec<(&String, &Value)> = map.iter().collect();
        entries.sort_by(|(a, _), (b, _)| yaml_key_order(a, b));
        for (key, value) in entries {
            self.write_indent();
            let simple = key.len() <= MAX_SIMPLE_KEY && !analyze(key).multiline;
            if simple {
                self.string(key, Context::KEY);
                self.indicator(":", false, false, false);
            } else {
                self.indicator("?", true, false, true);
                self.string(key, Context::VALUE);
                self.write_indent();
                self.indicator(":", true, false, true);
            }
            self.node(value, Context::VALUE);
        }
        self.indent = saved;
    }

    fn sequence(&mut self, items: &[Value], ctx: Context) {
        let saved = self.indent;
        self.increase_indent(false, ctx.mapping && !self.indention);
        for item in items {
            self.write_indent();
            self.indicator("-", true, false, true);
            self.node(item, Context::ITEM);
        }
        self.indent = saved;
    }

    /// go-yaml's `stringv`: literal when the string spans lines, plain
    /// when it reads back as the same string, double-quoted otherwise.
    fn string(&mut self, s: &str, ctx: Context) {
        let style = if s.contains('\n') {
            Style::Literal
        } else if resolve::plain_is_string(s) {
            Style::Plain
        } else {
            Style::DoubleQuoted
        };
        self.scalar(s, style, ctx)
    }

    fn scalar(&mut self, value: &str, requested: Style, ctx: Context) {
        let style = select_style(&analyze(value), value, requested, ctx);
        let saved = self.indent;
        self.increase_indent(true, false);
        let allow_breaks = !ctx.simple_key;
        match style {
            Style::Plain => self.plain(value, allow_breaks, ctx.root),
            Style::SingleQuoted => self.single_quoted(value, allow_breaks),
            Style::DoubleQuoted => self.double_quoted(value, allow_breaks),
            Style::Literal => self.literal(value),
        }
        self.indent = saved;
    }

    fn increase_indent(&mut self, flow: bool, indentless: bool) {
        if self.indent < 0 {
            self.indent = if flow { BEST_INDENT } else { 0 };
        } else if !indentless {
            self.indent += BEST_INDENT;
        }
    }

    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// A line break in a value: `\n` as the emitter's break, others copied.
    fn write_break(&mut self, c: char) {
        if c == '\n' {
            self.put_break();
        } else {
            self.out.push(c);
            self.column = 0;
        }
    }

    fn write_indent(&mut self) {
        let indent = self.indent.max(0) as usize;
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    fn indicator(
        &mut self,
        text: &str,
        need_whitespace: bool,
        is_whitespace: bool,
        is_indention: bool,
    ) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        text.chars().for_each(|c| self.put(c));
        self.whitespace = is_whitespace;
        self.indention = self.indention && is_indention;
        self.open_ended = false;
    }

    fn plain(&mut self, value: &str, allow_breaks: bool, root: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        let chars: Vec<char> = value.chars().collect();
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let fold = allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && chars.get(i + 1) != Some(&' ');
                if fold {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                self.indention = false;
                spaces = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
        if root {
            self.open_ended = true;
        }
    }

    fn single_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.indicator("'", true, false, false);
        let (mut spaces, mut breaks) = (false, false);
        let last = value.len().saturating_sub(1);
        let mut chars = value.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            if c == ' ' {
                let next_space = chars.peek().is_some_and(|(_, n)| *n == ' ');
                let fold = allow_breaks
                    && !spaces
                    && self.column > BEST_WIDTH
                    && i > 0
                    && i < last
                    && !next_space;
                if fold {
                    self.write_indent();
                } else {
                    self.put(c);
                }
                spaces = true;
            } else if is_break(c) {
                if !breaks && c == '\n' {
                    self.put_break();
                }
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                if c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                self.indention = false;
                spaces = false;
                breaks = false;
            }
        }
        self.indicator("'", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    fn double_quoted(&mut self, value: &str, allow_breaks: bool) {
        self.indicator("\"", true, false, false);
        let starts_with_bom = value.starts_with('\u{feff}');
        let last = value.len().saturating_sub(1);
        let mut spaces = false;
        let mut chars = value.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let escape =
                !is_printable(c) || starts_with_bom || is_break(c) || c == '"' || c == '\\';
            if escape {
                self.escape(c);
                spaces = false;
            } else if c == ' ' {
                if allow_breaks && !spaces && self.column > BEST_WIDTH && i > 0 && i < last {
                    self.write_indent();
                    if chars.peek().is_some_and(|(_, n)| *n == ' ') {
                        self.put('\\');
                    }
                } else {
                    self.put(c);
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.indicator("\"", false, false, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// libyaml's escapes: the named ones, else `\x`, `\u` or `\U` with
    /// upper-case hex digits.
    fn escape(&mut self, c: char) {
        self.put('\\');
        let named = match c {
            '\0' => Some('0'),
            '\u{7}' => Some('a'),
            '\u{8}' => Some('b'),
            '\t' => Some('t'),
            '\n' => Some('n'),
            '\u{b}' => Some('v'),
            '\u{c}' => Some('f'),
            '\r' => Some('r'),
            '\u{1b}' => Some('e'),
            '"' => Some('"'),
            '\\' => Some('\\'),
            '\u{85}' => Some('N'),
            '\u{a0}' => Some('_'),
            '\u{2028}' => Some('L'),
            '\u{2029}' => Some('P'),
            _ => None,
        };
        if let Some(n) = named {
            return self.put(n);
        }
        let v = u32::from(c);
        let text = match v {
            0..=0xFF => format!("x{v:02X}"),
            0x100..=0xFFFF => format!("u{v:04X}"),
            _ => format!("U{v:08X}"),
        };
        text.chars().for_each(|c| self.put(c));
    }

    fn literal(&mut self, value: &str) {
        self.indicator("|", true, false, false);
        self.block_hints(value);
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in value.chars() {
            if is_break(c) {
                self.write_break(c);
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent();
                }
                self.put(c);
                self.indention = false;
                breaks = false;
            }
        }
    }

    /// The indentation hint when the text starts with a space or break,
    /// and the chomping hint: `-` without a final break, `+` with more
    /// than one.
    fn block_hints(&mut self, value: &str) {
        let first = value.chars().next();
        if first.is_some_and(|c| c == ' ' || is_break(c)) {
            self.indicator("2", false, false, false);
        }
        self.open_ended = false;
        let mut rev = value.chars().rev();
        let chomp = match (rev.next(), rev.next()) {
            (None, _) => Some("-"),
            (Some(last), _) if !is_break(last) => Some("-"),
            (Some(_), None) => Some("+"),
            (Some(_), Some(before)) if is_break(before) => Some("+"),
            _ => None,
        };
        if let Some(hint) = chomp {
            self.indicator(hint, false, false, false);
            if hint == "+" {
                self.open_ended = true;
            }
        }
    }
}

/// What `analyze_scalar` finds in a scalar's text (the block-context
/// part: go-yaml writes no flow scalars for JSON values).
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

/// libyaml's `yaml_emitter_analyze_scalar`.
fn analyze(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let mut block_indicators = value.starts_with("---") || value.starts_with("...");
    let (mut line_breaks, mut special) = (false, false);
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut previous_space, mut previous_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let chars: Vec<char> = value.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|n| *n == ' ' || *n == '\t');
        let last = i + 1 == chars.len();
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' => block_indicators |= followed_by_whitespace,
                _ => {}
            }
        } else {
            match c {
                ':' => block_indicators |= followed_by_whitespace,
                '#' => block_indicators |= preceded_by_whitespace,
                _ => {}
            }
        }
        special |= !is_printable(c);
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= last;
            break_space |= previous_break;
            (previous_space, previous_break) = (true, false);
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= last;
            space_break |= previous_space;
            (previous_space, previous_break) = (false, true);
        } else {
            (previous_space, previous_break) = (false, false);
        }
        preceded_by_whitespace = c == ' ' || c == '\t' || is_break(c);
    }
    let edges = leading_space || leading_break || trailing_space || trailing_break;
    let no_plain = edges || break_space || space_break || special || line_breaks;
    Analysis {
        multiline: line_breaks,
        block_plain_allowed: !no_plain && !block_indicators,
        single_quoted_allowed: !(break_space || space_break || special),
        block_allowed: !(trailing_space || space_break || special),
    }
}

/// libyaml's `yaml_emitter_select_scalar_style` for block context and
/// implicit tags (all go-yaml writes for JSON values).
fn select_style(analysis: &Analysis, value: &str, requested: Style, ctx: Context) -> Style {
    let mut style = requested;
    if ctx.simple_key && analysis.multiline {
        style = Style::DoubleQuoted;
    }
    if style == Style::Plain
        && (!analysis.block_plain_allowed || (value.is_empty() && ctx.simple_key))
    {
        style = Style::SingleQuoted;
    }
    if style == Style::SingleQuoted && !analysis.single_quoted_allowed {
        style = Style::DoubleQuoted;
    }
    if style == Style::Literal && (!analysis.block_allowed || ctx.simple_key) {
        style = Style::DoubleQuoted;
    }
    style
}

/// go-yaml's order of string keys (its `keyList.Less`): letters compare
/// by code point and sort before other characters; runs of digits compare
/// by their numeric value.
pub fn yaml_key_order(a: &str, b: &str) -> Ordering {
    if yaml_key_less(a, b) {
        Ordering::Less
    } else if yaml_key_less(b, a) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

fn yaml_key_less(a: &str, b: &str) -> bool {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i] < br[i];
        }
        if al || bl {
            return bl;
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let nonzero_before = ar[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_digit())
                .any(|c| *c != '0');
            if nonzero_before {
                (an, bn) = (1, 1);
            }
        }
        let (an, ai) = digits_value(&ar, i, an);
        let (bn, bi) = digits_value(&br, i, bn);
        if an != bn {
            return an < bn;
        }
        if ai != bi {
            return ai < bi;
        }
        return ar[i] < br[i];
    }
    ar.len() < br.len()
}

/// The value of the digits starting at `from` (continuing `start`) and
/// where they end.
fn digits_value(s: &[char], from: usize, start: i64) -> (i64, usize) {
    let mut n = start;
    let mut at = from;
    while let Some(d) = s.get(at).and_then(|c| c.to_digit(10)) {
        n = n.wrapping_mul(10).wrapping_add(i64::from(d));
        at += 1;
    }
    (n, at)
}

/// libyaml's `is_printable` (tab, DEL, C1 controls, surrogates, the BOM,
/// U+FFFE/U+FFFF and everything beyond the BMP are not).
fn is_printable(c: char) -> bool {
    matches!(u32::from(c), 0x0A | 0x20..=0x7E | 0xA0..=0xD7FF | 0xE000..=0xFFFD) && c != '\u{feff}'
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests;
