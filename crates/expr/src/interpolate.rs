//! Interpolation in `"..."`, `qq{...}` and patterns: `$name`, `${name}`,
//! `$name[i]`, `@name` (joined with a space), `$1`, the escapes of Perl's
//! double-quoted strings, and the case/quote modifiers `\U \L \u \l \Q \E`.
//!
//! The result is a [`Node`]: a constant when nothing is interpolated, else a
//! concatenation of literal pieces and variable reads. In pattern mode the
//! escapes are left for the regex translator and only variables (and the
//! modifiers) are processed, as perl does before it compiles a pattern.
//! A colon after a variable is literal text (`qq{$basename:$line}`); only
//! `::` would make a package name in Perl, and here it is literal too.

use std::borrow::Cow;

use crate::ast::{Func, Node};
use crate::error::CompileError;
use crate::lexer::Span;
use crate::parser::{Expr, Parser, NOT_SUPPORTED};
use crate::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A double-quoted string.
    String,
    /// A pattern body: escapes are kept for the regex translator.
    Regex,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Case {
    Upper,
    Lower,
}

/// Collects literal text and interpolated nodes.
struct Builder {
    parts: Vec<Node>,
    depth: usize,
    lit: String,
    case: Option<Case>,
    one: Option<Case>,
    quote: bool,
}

impl Builder {
    fn flush(&mut self) {
        if !self.lit.is_empty() {
            let s = std::mem::take(&mut self.lit);
            self.parts.push(Node::Const(Value::Str(Cow::Owned(s))));
        }
    }

    /// A literal character, after `\u \l`, `\U \L` and `\Q`.
    fn push_char(&mut self, c: char) {
        let mut buf = String::new();
        match self.one.take() {
            Some(Case::Upper) => buf.extend(c.to_uppercase()),
            Some(Case::Lower) => buf.extend(c.to_lowercase()),
            None => buf.push(c),
        }
        let buf = match self.case {
            Some(Case::Upper) => buf.to_uppercase(),
            Some(Case::Lower) => buf.to_lowercase(),
            None => buf,
        };
        for ch in buf.chars() {
            if self.quote && ch.is_ascii() && !(ch.is_ascii_alphanumeric() || ch == '_') {
                self.lit.push('\\');
            }
            self.lit.push(ch);
        }
    }

    /// Text passed through untouched (a pattern escape).
    fn push_raw(&mut self, s: &str) {
        self.lit.push_str(s);
    }

    fn push_node(&mut self, node: Node, depth: usize) {
        self.flush();
        let mut node = node;
        let mut depth = depth;
        let mut wrap = |f: Func, node: Node| {
            depth += 1;
            Node::Call(f, vec![node])
        };
        if let Some(c) = self.case {
            node = wrap(if c == Case::Upper { Func::Uc } else { Func::Lc }, node);
        }
        if let Some(c) = self.one.take() {
            node = wrap(
                if c == Case::Upper {
                    Func::Ucfirst
                } else {
                    Func::Lcfirst
                },
                node,
            );
        }
        if self.quote {
            node = wrap(Func::Quotemeta, node);
        }
        self.depth = self.depth.max(depth);
        self.parts.push(node);
    }
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn ident_len(s: &str) -> usize {
    s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len())
}

/// Index of the bracket closing the one at `start`, honouring nesting.
fn find_matching(text: &str, start: usize, open: char, close: char) -> Option<usize> {
    let mut depth = 0usize;
    for (k, c) in text.get(start..)?.char_indices() {
        if c == open {
            depth += 1;
        } else if c == close {
            depth = depth.checked_sub(1)?;
            if depth == 0 {
                return Some(start + k);
            }
        }
    }
    None
}

/// Where the subscript of `$name[...]` or `@name[...]` in a string closes,
/// when `text[open]` is `[`: only when the brackets close and their content
/// starts like an index (a digit, `-` or `$`); otherwise (`"$x[abc]"`) they
/// stay literal text. (It only finds the `]`: the caller parses the index,
/// so that this frame is not on the parser's recursive path.)
fn subscript_close(text: &str, open: usize) -> Option<usize> {
    let close = find_matching(text, open, '[', ']')?;
    let inner = text[open + 1..close].trim_start();
    inner
        .starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '$')
        .then_some(close)
}

fn code_char(code: u32) -> char {
    char::from_u32(code).unwrap_or('\u{FFFD}')
}

/// Decodes the escape after a backslash in a double-quoted string; returns
/// the character and the number of bytes consumed after the backslash.
fn decode_escape(rest: &str) -> Result<(char, usize), String> {
    let mut chars = rest.chars();
    let Some(n) = chars.next() else {
        return Ok(('\\', 0));
    };
    let simple = match n {
        'n' => Some('\n'),
        't' => Some('\t'),
        'r' => Some('\r'),
        'f' => Some('\x0c'),
        'b' => Some('\x08'),
        'a' => Some('\x07'),
        'e' => Some('\x1b'),
        _ => None,
    };
    if let Some(c) = simple {
        return Ok((c, 1));
    }
    let braced = |radix: u32, what: &str| -> Result<(char, usize), String> {
        let close = rest
            .find('}')
            .ok_or_else(|| format!("missing '}}' in \\{what}{{...}}"))?;
        let digits: String = rest[2..close]
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '_')
            .collect();
        let code = if digits.is_empty() {
            0
        } else {
            u32::from_str_radix(&digits, radix)
                .map_err(|_| format!("bad digits in \\{what}{{...}}"))?
        };
        Ok((code_char(code), close + 1))
    };
    match n {
        '0'..='7' => {
            let len = rest
                .bytes()
                .take(3)
                .take_while(|b| (b'0'..=b'7').contains(b))
                .count();
            let code = u32::from_str_radix(&rest[..len], 8).unwrap_or(0);
            Ok((code_char(code), len))
        }
        'o' if rest[1..].starts_with('{') => braced(8, "o"),
        'x' if rest[1..].starts_with('{') => braced(16, "x"),
        'x' => {
            let len = rest[1..]
                .bytes()
                .take(2)
                .take_while(|b| b.is_ascii_hexdigit())
                .count();
            let code = u32::from_str_radix(&rest[1..1 + len], 16).unwrap_or(0);
            Ok((code_char(code), 1 + len))
        }
        'c' => match chars.next() {
            Some(c) if c.is_ascii() => Ok((code_char((c.to_ascii_uppercase() as u32) ^ 64), 2)),
            _ => Err("\\c must be followed by an ASCII character".into()),
        },
        'N' if rest[1..].starts_with("{U+") => {
            let close = rest.find('}').ok_or("missing '}' in \\N{U+...}")?;
            let code =
                u32::from_str_radix(&rest[4..close], 16).map_err(|_| "bad digits in \\N{U+...}")?;
            Ok((code_char(code), close + 1))
        }
        'N' => Err(format!(
            "named characters \\N{{name}} {NOT_SUPPORTED} (write \\N{{U+XXXX}})"
        )),
        other => Ok((other, other.len_utf8())),
    }
}

impl Parser<'_> {
    /// Interpolates the body `span`; `pos` is where the quote starts.
    pub(crate) fn interpolate(
        &mut self,
        span: Span,
        mode: Mode,
        pos: usize,
    ) -> Result<Expr, CompileError> {
        // Interpolation frames are large; a nested subscript costs more of
        // the recursion budget.
        self.enter(pos, 8)?;
        let result = self.interpolate_body(span, mode, pos);
        self.leave(8);
        result
    }

    fn interpolate_body(
        &mut self,
        span: Span,
        mode: Mode,
        pos: usize,
    ) -> Result<Expr, CompileError> {
        let src = self.src;
        let text = src.get(span.start..span.end).unwrap_or("");
        let base = span.start;
        let mut b = Builder {
            parts: Vec::new(),
            depth: 0,
            lit: String::new(),
            case: None,
            one: None,
            quote: false,
        };
        let mut i = 0;
        while let Some(c) = text.get(i..).and_then(|r| r.chars().next()) {
            match c {
                '\\' => {
                    let rest = &text[i + 1..];
                    let Some(n) = rest.chars().next() else {
                        b.push_char('\\');
                        i += 1;
                        continue;
                    };
                    match n {
                        'U' => {
                            b.flush();
                            b.case = Some(Case::Upper);
                        }
                        'L' | 'F' => {
                            b.flush();
                            b.case = Some(Case::Lower);
                        }
                        'Q' => {
                            b.flush();
                            b.quote = true;
                        }
                        'E' => {
                            b.flush();
                            b.case = None;
                            b.quote = false;
                        }
                        'u' => b.one = Some(Case::Upper),
                        'l' => b.one = Some(Case::Lower),
                        _ if mode == Mode::Regex => {
                            b.push_raw(&text[i..i + 1 + n.len_utf8()]);
                            i += 1 + n.len_utf8();
                            continue;
                        }
                        _ => {
                            let (ch, used) =
                                decode_escape(rest).map_err(|m| self.err(m, base + i))?;
                            b.push_char(ch);
                            i += 1 + used;
                            continue;
                        }
                    }
                    i += 2;
                }
                '$' => match self.interp_scalar(text, i, base, mode)? {
                    Some((node, depth, end)) => {
                        b.push_node(node, depth);
                        i = end;
                    }
                    None => {
                        b.push_char('$');
                        i += 1;
                    }
                },
                '@' => match self.interp_array(text, i, base)? {
                    Some((node, end)) => {
                        b.push_node(node, 3);
                        i = end;
                    }
                    None => {
                        b.push_char('@');
                        i += 1;
                    }
                },
                c => {
                    b.push_char(c);
                    i += c.len_utf8();
                }
            }
        }
        b.flush();
        let depth = b.depth;
        let mut parts = b.parts;
        match parts.len() {
            0 => Ok(Expr::leaf(Node::Const(Value::Str(Cow::Borrowed(""))), pos)),
            1 if matches!(parts[0], Node::Const(_)) => {
                let node = parts.pop().unwrap_or(Node::Const(Value::Undef));
                Ok(Expr::leaf(node, pos))
            }
            _ => self.make(Node::Concat(parts), pos, &[depth]),
        }
    }

    /// `$name`, `${name}`, `$name[i]` or `$1` at `text[i]` (a `$`); None
    /// when the `$` is literal (end anchor, `$)`, a lone dollar).
    fn interp_scalar(
        &mut self,
        text: &str,
        i: usize,
        base: usize,
        mode: Mode,
    ) -> Result<Option<(Node, usize, usize)>, CompileError> {
        let after = i + 1;
        let rest = text.get(after..).unwrap_or("");
        let Some(first) = rest.chars().next() else {
            return Ok(None);
        };
        let var_pos = base + i;
        let (name, end) = if first == '{' {
            let Some(close) = rest.find('}') else {
                return Err(self.err("unterminated ${ in string", var_pos));
            };
            let inner = rest[1..close].trim();
            if inner.is_empty()
                || !inner.starts_with(is_ident_start)
                || ident_len(inner) != inner.len()
            {
                return Err(self.err(
                    format!(
                        "expressions in strings (${{ ... }}) {NOT_SUPPORTED}; use the . operator"
                    ),
                    var_pos,
                ));
            }
            (inner, after + close + 1)
        } else if first == '#' {
            // `$#name`: the last index of @name.
            let tail = &rest[1..];
            match tail.chars().next() {
                Some(c) if is_ident_start(c) => {
                    let len = ident_len(tail);
                    let id = self.resolve_array(&tail[..len], var_pos)?;
                    return Ok(Some((Node::ArrayLast(id), 1, after + 1 + len)));
                }
                Some('{') | Some('$') => {
                    return Err(self.err(
                        format!("$#{{...}} and $#$ref in strings {NOT_SUPPORTED}"),
                        var_pos,
                    ))
                }
                _ => return Ok(None),
            }
        } else if first.is_ascii_digit() {
            let len = rest.bytes().take_while(|b| b.is_ascii_digit()).count();
            let n: usize = rest[..len].parse().unwrap_or(usize::MAX);
            if n == 0 {
                return Err(self.err(format!("the special variable $0 {NOT_SUPPORTED}"), var_pos));
            }
            return Ok(Some((Node::Capture(n), 1, after + len)));
        } else if is_ident_start(first) {
            let len = ident_len(rest);
            (&rest[..len], after + len)
        } else {
            return Ok(None);
        };
        if mode == Mode::String {
            let tail = text.get(end..).unwrap_or("");
            if tail.starts_with('[') {
                if let Some(arr) = self.scope.array(name) {
                    if let Some(close) = subscript_close(text, end) {
                        let idx = self.sub_parse(Span {
                            start: base + end + 1,
                            end: base + close,
                        })?;
                        return Ok(Some((
                            Node::Elem(arr, Box::new(idx.node)),
                            idx.depth + 1,
                            close + 1,
                        )));
                    }
                }
            }
            if tail.starts_with('{') {
                return Err(self.err(
                    format!("hash element ${name}{{...}} in a string {NOT_SUPPORTED} (write \\{{ for a literal brace)"),
                    var_pos,
                ));
            }
            if tail.starts_with("->[") || tail.starts_with("->{") {
                return Err(self.err(
                    format!("dereferences (->) in a string {NOT_SUPPORTED}"),
                    var_pos,
                ));
            }
        }
        let id = self.resolve_scalar(name, var_pos)?;
        Ok(Some((Node::Scalar(id), 1, end)))
    }

    /// `@name` at `text[i]` (an `@`), joined with a space; None when the
    /// `@` is literal.
    fn interp_array(
        &mut self,
        text: &str,
        i: usize,
        base: usize,
    ) -> Result<Option<(Node, usize)>, CompileError> {
        let rest = text.get(i + 1..).unwrap_or("");
        let pos = base + i;
        match rest.chars().next() {
            Some(c) if is_ident_start(c) => {
                let len = ident_len(rest);
                let name = &rest[..len];
                let id = self.scope.array(name).ok_or_else(|| {
                    self.err(
                        format!("unknown array @{name} (write \\@ for a literal '@')"),
                        pos,
                    )
                })?;
                let mut end = i + 1 + len;
                let mut list = Node::Array(id);
                // `@name[i, j]`: a slice, when the brackets hold an index list.
                if text.get(end..).is_some_and(|t| t.starts_with('[')) {
                    if let Some(close) = subscript_close(text, end) {
                        let idx = self.sub_parse(Span {
                            start: base + end + 1,
                            end: base + close,
                        })?;
                        list = Node::Slice {
                            list: Box::new(list),
                            indices: Box::new(idx.node),
                        };
                        end = close + 1;
                    }
                }
                let join = Node::Call(
                    Func::Join,
                    vec![Node::Const(Value::Str(Cow::Borrowed(" "))), list],
                );
                Ok(Some((join, end)))
            }
            Some('{') | Some('$') => Err(self.err(
                format!("array expressions (@{{...}}, @$ref) in strings {NOT_SUPPORTED}"),
                pos,
            )),
            _ => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_decode_like_perl() {
        assert_eq!(decode_escape("n").unwrap(), ('\n', 1));
        assert_eq!(decode_escape("x41").unwrap(), ('A', 3));
        assert_eq!(decode_escape("x{263A}").unwrap(), ('☺', 7));
        assert_eq!(decode_escape("x").unwrap(), ('\0', 1));
        assert_eq!(decode_escape("0").unwrap(), ('\0', 1));
        assert_eq!(decode_escape("101").unwrap(), ('A', 3));
        assert_eq!(decode_escape("033").unwrap(), ('\x1b', 3));
        assert_eq!(decode_escape("cA").unwrap(), ('\x01', 2));
        assert_eq!(decode_escape("N{U+41}").unwrap(), ('A', 7));
        assert_eq!(decode_escape("\"").unwrap(), ('"', 1));
        assert_eq!(decode_escape("q").unwrap(), ('q', 1));
        assert_eq!(decode_escape("é").unwrap(), ('é', 2));
        assert_eq!(decode_escape("o{101}").unwrap(), ('A', 6));
        assert!(decode_escape("N{LATIN SMALL LETTER A}").is_err());
        assert!(decode_escape("x{zz}").is_err());
        assert!(decode_escape("x{41").is_err());
        assert_eq!(decode_escape("x{D800}").unwrap().0, '\u{FFFD}');
    }

    #[test]
    fn matching_brackets() {
        assert_eq!(find_matching("a[b[c]]d", 1, '[', ']'), Some(6));
        assert_eq!(find_matching("a[b", 1, '[', ']'), None);
    }
}
