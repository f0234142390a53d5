//! Tokenizer for the Perl expression subset.
//!
//! Perl cannot be tokenized without knowing what the parser expects: `/`
//! starts a regex where a term is expected and divides after one; `x` is the
//! repetition operator only after a term; `q{`, `m{`, `.5` are quotes and
//! numbers only where a term is expected. Like perl's own toke.c (its
//! `PL_expect`), the lexer remembers whether the previous token ended a term
//! and decides from that.
//!
//! Quote-like bodies (`"..."`, `qq{}`, `m//`) are returned as byte ranges of
//! the source, so that the parser can interpolate them and still report
//! errors at the exact position in the original text.

use crate::error::{column_of, CompileError};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Comma,
    FatComma,
    Question,
    Colon,
    Semi,
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Pow,
    Dot,
    Repeat,
    Lt,
    Gt,
    Le,
    Ge,
    NumEq,
    NumNe,
    Spaceship,
    StrLt,
    StrGt,
    StrLe,
    StrGe,
    StrEq,
    StrNe,
    StrCmp,
    AndAnd,
    OrOr,
    DefinedOr,
    Not,
    BitNot,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Bind,
    NotBind,
    WordNot,
    WordAnd,
    WordOr,
    WordXor,
    Range,
    Arrow,
    Inc,
    Dec,
    Backslash,
    DoubleColon,
}

impl Op {
    pub(crate) fn text(self) -> &'static str {
        match self {
            Op::LParen => "(",
            Op::RParen => ")",
            Op::LBracket => "[",
            Op::RBracket => "]",
            Op::LBrace => "{",
            Op::RBrace => "}",
            Op::Comma => ",",
            Op::FatComma => "=>",
            Op::Question => "?",
            Op::Colon => ":",
            Op::Semi => ";",
            Op::Plus => "+",
            Op::Minus => "-",
            Op::Star => "*",
            Op::Slash => "/",
            Op::Percent => "%",
            Op::Pow => "**",
            Op::Dot => ".",
            Op::Repeat => "x",
            Op::Lt => "<",
            Op::Gt => ">",
            Op::Le => "<=",
            Op::Ge => ">=",
            Op::NumEq => "==",
            Op::NumNe => "!=",
            Op::Spaceship => "<=>",
            Op::StrLt => "lt",
            Op::StrGt => "gt",
            Op::StrLe => "le",
            Op::StrGe => "ge",
            Op::StrEq => "eq",
            Op::StrNe => "ne",
            Op::StrCmp => "cmp",
            Op::AndAnd => "&&",
            Op::OrOr => "||",
            Op::DefinedOr => "//",
            Op::Not => "!",
            Op::BitNot => "~",
            Op::BitAnd => "&",
            Op::BitOr => "|",
            Op::BitXor => "^",
            Op::Shl => "<<",
            Op::Shr => ">>",
            Op::Bind => "=~",
            Op::NotBind => "!~",
            Op::WordNot => "not",
            Op::WordAnd => "and",
            Op::WordOr => "or",
            Op::WordXor => "xor",
            Op::Range => "..",
            Op::Arrow => "->",
            Op::Inc => "++",
            Op::Dec => "--",
            Op::Backslash => "\\",
            Op::DoubleColon => "::",
        }
    }
}

/// A byte range of the source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub end: usize,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Tok {
    Num(f64),
    /// A non-interpolating string, escapes already processed.
    Str(String),
    /// `"..."` or `qq{...}`: the raw body, interpolated by the parser.
    Interp {
        body: Span,
        open: char,
        close: char,
    },
    Qw(Vec<String>),
    /// `/.../`, `m{...}` or `qr{...}`.
    Pattern {
        body: Span,
        flags: String,
        flags_pos: usize,
        interpolate: bool,
        qr: bool,
    },
    Scalar(String),
    Array(String),
    ArrayLast(String),
    Capture(usize),
    Ident(String),
    Op(Op),
    /// An assignment operator (`=`, `+=`...), kept to give a clear error.
    Assign(String),
    Eof,
}

impl Tok {
    /// A literal, quote or variable: a whole term by itself. The lexer
    /// treats what follows one as coming after a term, and the parser lets
    /// one start a term; listing them once keeps the two in step.
    pub(crate) fn is_operand(&self) -> bool {
        match self {
            Tok::Num(_)
            | Tok::Str(_)
            | Tok::Interp { .. }
            | Tok::Qw(_)
            | Tok::Pattern { .. }
            | Tok::Scalar(_)
            | Tok::Array(_)
            | Tok::ArrayLast(_)
            | Tok::Capture(_) => true,
            Tok::Ident(_) | Tok::Op(_) | Tok::Assign(_) | Tok::Eof => false,
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
}

pub(crate) struct Lexer<'s> {
    src: &'s str,
    pos: usize,
    end: usize,
    prev_term: bool,
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}

fn is_ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

fn closing_delimiter(open: char) -> char {
    match open {
        '(' => ')',
        '[' => ']',
        '{' => '}',
        '<' => '>',
        c => c,
    }
}

const NOT_SUPPORTED: &str = "is not supported by tracelab's expression language";

impl<'s> Lexer<'s> {
    /// A lexer over `src[start..end]`; positions stay offsets into `src`.
    pub(crate) fn new(src: &'s str, start: usize, end: usize) -> Lexer<'s> {
        Lexer {
            src,
            pos: start,
            end: end.min(src.len()),
            prev_term: false,
        }
    }

    fn err(&self, msg: impl Into<String>, pos: usize) -> CompileError {
        CompileError::new(msg, self.src, pos)
    }

    fn char_at(&self, pos: usize) -> Option<char> {
        if pos >= self.end {
            return None;
        }
        self.src.get(pos..self.end).and_then(|s| s.chars().next())
    }

    fn byte_at(&self, pos: usize) -> Option<u8> {
        if pos >= self.end {
            None
        } else {
            self.src.as_bytes().get(pos).copied()
        }
    }

    fn rest(&self) -> &'s str {
        self.src.get(self.pos..self.end).unwrap_or("")
    }

    fn skip_space(&mut self) {
        loop {
            match self.byte_at(self.pos) {
                Some(b' ' | b'\t' | b'\n' | b'\r' | b'\x0b' | b'\x0c') => self.pos += 1,
                Some(b'#') => {
                    while let Some(b) = self.byte_at(self.pos) {
                        self.pos += 1;
                        if b == b'\n' {
                            break;
                        }
                    }
                }
                _ => return,
            }
        }
    }

    /// The next token.
    pub(crate) fn next_token(&mut self) -> Result<Token, CompileError> {
        self.skip_space();
        let start = self.pos;
        let Some(c) = self.char_at(start) else {
            return Ok(Token {
                tok: Tok::Eof,
                start: self.end,
                end: self.end,
            });
        };
        let tok = if c.is_ascii_digit()
            || (c == '.'
                && !self.prev_term
                && self.byte_at(start + 1).is_some_and(|b| b.is_ascii_digit()))
        {
            self.number()?
        } else if c == '\'' {
            self.pos += 1;
            Tok::Str(self.single_quoted(start, '\'', '\'')?)
        } else if c == '"' {
            self.pos += 1;
            let body = self.delimited(start, '"', '"')?;
            Tok::Interp {
                body,
                open: '"',
                close: '"',
            }
        } else if c == '`' {
            return Err(self.err(format!("backticks (shell commands) {NOT_SUPPORTED}"), start));
        } else if c == '$' {
            self.scalar()?
        } else if c == '@' {
            self.array()?
        } else if c == '/' && !self.prev_term {
            self.pos += 1;
            let body = self.delimited(start, '/', '/')?;
            self.pattern_tail(body, true, false)
        } else if is_ident_start(c) {
            self.word()?
        } else if !c.is_ascii() {
            return Err(self.err(format!("unexpected character '{c}'"), start));
        } else {
            self.operator(c)?
        };
        // A bareword (a word that names no function) is a string, a term:
        // `FETCH x 3` repeats it, `FETCH / 2` divides.
        self.prev_term = tok.is_operand()
            || matches!(tok, Tok::Op(Op::RParen | Op::RBracket | Op::RBrace))
            || matches!(&tok, Tok::Ident(w) if w == "undef" || crate::functions::lookup(w).is_none());
        Ok(Token {
            tok,
            start,
            end: self.pos,
        })
    }

    fn number(&mut self) -> Result<Tok, CompileError> {
        let start = self.pos;
        let b = |p: usize| self.byte_at(p);
        if b(start) == Some(b'0') {
            let radix = match b(start + 1) {
                Some(b'x' | b'X') => Some((16, 2)),
                Some(b'b' | b'B') => Some((2, 2)),
                Some(b'o' | b'O') => Some((8, 2)),
                Some(b'0'..=b'9' | b'_') => Some((8, 1)),
                _ => None,
            };
            if let Some((radix, skip)) = radix {
                let mut p = start + skip;
                let mut v = 0f64;
                let mut digits = 0;
                while let Some(c) = b(p) {
                    if c == b'_' {
                        p += 1;
                        continue;
                    }
                    let Some(d) = (c as char).to_digit(16) else {
                        break;
                    };
                    if d >= radix {
                        if radix == 8 && d < 10 {
                            return Err(self.err(format!("illegal octal digit '{}'", c as char), p));
                        }
                        if radix == 2 && d < 10 {
                            return Err(
                                self.err(format!("illegal binary digit '{}'", c as char), p)
                            );
                        }
                        break;
                    }
                    v = v * radix as f64 + d as f64;
                    digits += 1;
                    p += 1;
                }
                if digits == 0 && skip == 2 {
                    return Err(self.err("number has no digits after its base prefix", start));
                }
                self.pos = p;
                return Ok(Tok::Num(v));
            }
        }
        let mut text = String::new();
        let mut p = self.push_digits(start, &mut text);
        if b(p) == Some(b'.') && b(p + 1) != Some(b'.') {
            text.push('.');
            p = self.push_digits(p + 1, &mut text);
            if b(p) == Some(b'.') && b(p + 1).is_some_and(|c| c.is_ascii_digit()) {
                return Err(self.err(format!("version strings (1.2.3) {NOT_SUPPORTED}"), start));
            }
        }
        if matches!(b(p), Some(b'e' | b'E')) {
            let mut q = p + 1;
            let mut exp = String::from("e");
            if let Some(s @ (b'+' | b'-')) = b(q) {
                exp.push(s as char);
                q += 1;
            }
            if b(q).is_some_and(|c| c.is_ascii_digit()) {
                p = self.push_digits(q, &mut exp);
                text.push_str(&exp);
            }
        }
        self.pos = p;
        let text = if text.starts_with('.') {
            format!("0{text}")
        } else {
            text
        };
        text.parse::<f64>()
            .map(Tok::Num)
            .map_err(|_| self.err("malformed number", start))
    }

    /// Appends the decimal digits from `p` on to `text`, dropping the `_`
    /// separators Perl allows in numeric literals (`1_000`); returns the
    /// position after them. Integer part, fraction and exponent all use it.
    fn push_digits(&self, mut p: usize, text: &mut String) -> usize {
        while let Some(c) = self.byte_at(p) {
            if c.is_ascii_digit() {
                text.push(c as char);
            } else if c != b'_' {
                break;
            }
            p += 1;
        }
        p
    }

    /// Finds the end of a delimited body starting at `self.pos`, honouring
    /// backslash escapes and (for bracket pairs) nesting; leaves `self.pos`
    /// after the closing delimiter.
    fn delimited(
        &mut self,
        quote_start: usize,
        open: char,
        close: char,
    ) -> Result<Span, CompileError> {
        let body_start = self.pos;
        let mut depth = 0usize;
        let mut p = self.pos;
        while let Some(c) = self.char_at(p) {
            if c == '\\' {
                p += 1;
                if let Some(d) = self.char_at(p) {
                    p += d.len_utf8();
                }
                continue;
            }
            if c == close && depth == 0 {
                self.pos = p + c.len_utf8();
                return Ok(Span {
                    start: body_start,
                    end: p,
                });
            }
            if open != close {
                if c == open {
                    depth += 1;
                } else if c == close {
                    depth -= 1;
                }
            }
            p += c.len_utf8();
        }
        Err(self.err(
            format!(
                "unterminated string or pattern: no closing '{close}' for the '{open}' at column {}",
                column_of(self.src, quote_start)
            ),
            quote_start,
        ))
    }

    /// A non-interpolating body: only `\\` and an escaped delimiter are
    /// escapes, every other backslash is kept.
    fn single_quoted(
        &mut self,
        quote_start: usize,
        open: char,
        close: char,
    ) -> Result<String, CompileError> {
        let span = self.delimited(quote_start, open, close)?;
        let body = self.src.get(span.start..span.end).unwrap_or("");
        let mut out = String::with_capacity(body.len());
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' {
                match chars.peek() {
                    Some(&d) if d == '\\' || d == open || d == close => {
                        out.push(d);
                        chars.next();
                    }
                    _ => out.push('\\'),
                }
            } else {
                out.push(c);
            }
        }
        Ok(out)
    }

    fn pattern_tail(&mut self, body: Span, interpolate: bool, qr: bool) -> Tok {
        let flags_pos = self.pos;
        let mut flags = String::new();
        while let Some(c) = self.char_at(self.pos) {
            if !c.is_ascii_alphabetic() {
                break;
            }
            flags.push(c);
            self.pos += 1;
        }
        Tok::Pattern {
            body,
            flags,
            flags_pos,
            interpolate,
            qr,
        }
    }

    fn ident_at(&self, p: usize) -> &'s str {
        let s = self.src.get(p..self.end).unwrap_or("");
        let len = s
            .char_indices()
            .find(|&(_, c)| !is_ident_char(c))
            .map_or(s.len(), |(i, _)| i);
        &s[..len]
    }

    fn scalar(&mut self) -> Result<Tok, CompileError> {
        let start = self.pos;
        let p = start + 1;
        match self.char_at(p) {
            Some('{') => {
                let mut q = p + 1;
                while self.byte_at(q).is_some_and(|b| b == b' ' || b == b'\t') {
                    q += 1;
                }
                let name = self.ident_at(q);
                let mut r = q + name.len();
                while self.byte_at(r).is_some_and(|b| b == b' ' || b == b'\t') {
                    r += 1;
                }
                if !name.is_empty()
                    && name.starts_with(is_ident_start)
                    && self.byte_at(r) == Some(b'}')
                {
                    self.pos = r + 1;
                    Ok(Tok::Scalar(name.to_string()))
                } else {
                    Err(self.err(
                        format!("dereferencing with ${{...}} {NOT_SUPPORTED}"),
                        start,
                    ))
                }
            }
            Some('#') => {
                let name = self.ident_at(p + 1);
                if !name.is_empty() && name.starts_with(is_ident_start) {
                    self.pos = p + 1 + name.len();
                    Ok(Tok::ArrayLast(name.to_string()))
                } else {
                    Err(self.err(format!("'$#' without an array name {NOT_SUPPORTED}"), start))
                }
            }
            Some(c) if c.is_ascii_digit() => {
                let digits = self.ident_at(p);
                let n: usize = digits
                    .bytes()
                    .take_while(|b| b.is_ascii_digit())
                    .try_fold(0usize, |acc, b| {
                        acc.checked_mul(10)?.checked_add((b - b'0') as usize)
                    })
                    .unwrap_or(usize::MAX);
                let len = digits.bytes().take_while(|b| b.is_ascii_digit()).count();
                if n == 0 {
                    return Err(self.err(format!("the special variable $0 {NOT_SUPPORTED}"), start));
                }
                self.pos = p + len;
                Ok(Tok::Capture(n))
            }
            Some(c) if is_ident_start(c) => {
                let name = self.ident_at(p);
                let after = p + name.len();
                if self
                    .src
                    .get(after..self.end)
                    .is_some_and(|s| s.starts_with("::"))
                {
                    return Err(self.err(
                        format!("package variables (${name}::...) {NOT_SUPPORTED}"),
                        start,
                    ));
                }
                self.pos = after;
                Ok(Tok::Scalar(name.to_string()))
            }
            Some(':') => Err(self.err(
                format!("package variables ($::name) {NOT_SUPPORTED}"),
                start,
            )),
            Some(c) if !c.is_whitespace() => {
                Err(self.err(format!("the special variable ${c} {NOT_SUPPORTED}"), start))
            }
            _ => Err(self.err("expected a variable name after '$'", start)),
        }
    }

    fn array(&mut self) -> Result<Tok, CompileError> {
        let start = self.pos;
        match self.char_at(start + 1) {
            Some(c) if is_ident_start(c) => {
                let name = self.ident_at(start + 1);
                if self
                    .src
                    .get(start + 1 + name.len()..self.end)
                    .is_some_and(|s| s.starts_with("::"))
                {
                    return Err(self.err(
                        format!("package variables (@{name}::...) {NOT_SUPPORTED}"),
                        start,
                    ));
                }
                self.pos = start + 1 + name.len();
                Ok(Tok::Array(name.to_string()))
            }
            Some('{' | '$') => Err(self.err(
                format!("array dereferences (@{{...}}, @$ref) {NOT_SUPPORTED}"),
                start,
            )),
            _ => Err(self.err("expected an array name after '@'", start)),
        }
    }

    fn word(&mut self) -> Result<Tok, CompileError> {
        let start = self.pos;
        let word = self.ident_at(start);
        let after = start + word.len();
        if !self.prev_term {
            if let Some(tok) = self.quote_like(word, after)? {
                return Ok(tok);
            }
        }
        if self
            .src
            .get(after..self.end)
            .is_some_and(|s| s.starts_with("::"))
        {
            return Err(self.err(
                format!("package-qualified names ({word}::...) {NOT_SUPPORTED}"),
                start,
            ));
        }
        if self.prev_term && word.starts_with('x') && word[1..].bytes().all(|b| b.is_ascii_digit())
        {
            // `$s x3` is `$s x 3`; `x=` is an assignment.
            self.pos = start + 1;
            if word.len() == 1
                && self.byte_at(self.pos) == Some(b'=')
                && self.byte_at(self.pos + 1) != Some(b'=')
                && self.byte_at(self.pos + 1) != Some(b'~')
            {
                self.pos += 1;
                return Ok(Tok::Assign("x=".into()));
            }
            return Ok(Tok::Op(Op::Repeat));
        }
        self.pos = after;
        Ok(match word {
            "lt" => Tok::Op(Op::StrLt),
            "gt" => Tok::Op(Op::StrGt),
            "le" => Tok::Op(Op::StrLe),
            "ge" => Tok::Op(Op::StrGe),
            "eq" => Tok::Op(Op::StrEq),
            "ne" => Tok::Op(Op::StrNe),
            "cmp" => Tok::Op(Op::StrCmp),
            "and" => Tok::Op(Op::WordAnd),
            "or" => Tok::Op(Op::WordOr),
            "xor" => Tok::Op(Op::WordXor),
            "not" => Tok::Op(Op::WordNot),
            w => Tok::Ident(w.to_string()),
        })
    }

    /// `q qq qw m qr` (and `s tr y`, to reject them) followed by a delimiter.
    fn quote_like(&mut self, word: &str, after: usize) -> Result<Option<Tok>, CompileError> {
        if !matches!(word, "q" | "qq" | "qw" | "m" | "qr" | "s" | "tr" | "y") {
            return Ok(None);
        }
        let start = self.pos;
        let mut p = after;
        while self
            .byte_at(p)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            p += 1;
        }
        let spaced = p > after;
        let Some(open) = self.char_at(p) else {
            return Ok(None);
        };
        if open.is_whitespace()
            || (spaced && (open == '#' || is_ident_char(open)))
            || (open == '=' && self.byte_at(p + 1) == Some(b'>'))
            || (open == ',' || open == ';' || open == ')')
        {
            return Ok(None);
        }
        match word {
            "s" | "tr" | "y" => {
                return Err(self.err(
                    format!(
                        "{word}/// ({}) {NOT_SUPPORTED}",
                        if word == "s" {
                            "substitution"
                        } else {
                            "transliteration"
                        }
                    ),
                    start,
                ))
            }
            _ => {}
        }
        let close = closing_delimiter(open);
        self.pos = p + open.len_utf8();
        let tok = match word {
            "q" => Tok::Str(self.single_quoted(start, open, close)?),
            "qq" => {
                let body = self.delimited(start, open, close)?;
                if open == '\'' {
                    let text = self.src.get(body.start..body.end).unwrap_or("").to_string();
                    Tok::Str(text)
                } else {
                    Tok::Interp { body, open, close }
                }
            }
            "qw" => {
                let text = self.single_quoted(start, open, close)?;
                Tok::Qw(text.split_whitespace().map(str::to_string).collect())
            }
            _ => {
                let body = self.delimited(start, open, close)?;
                self.pattern_tail(body, open != '\'', word == "qr")
            }
        };
        Ok(Some(tok))
    }

    fn operator(&mut self, c: char) -> Result<Tok, CompileError> {
        let start = self.pos;
        let rest = self.rest();
        let expecting_term = !self.prev_term;
        if expecting_term {
            let next = rest[1..].chars().next();
            let names_something =
                next.is_some_and(|n| is_ident_start(n) || n == '{' || n == '$' || n == '^');
            if c == '%' && names_something {
                return Err(self.err(format!("hashes (%name) {NOT_SUPPORTED}"), start));
            }
            if c == '&' && names_something && !rest.starts_with("&&") {
                return Err(self.err(format!("calling subs with & {NOT_SUPPORTED}"), start));
            }
            if c == '<'
                && rest.starts_with("<<")
                && next.is_some_and(|_| {
                    rest[2..].starts_with(|n: char| {
                        n == '"' || n == '\'' || n == '~' || is_ident_start(n)
                    })
                })
            {
                return Err(self.err(format!("here-documents {NOT_SUPPORTED}"), start));
            }
        }
        const OPS: &[(&str, Option<Op>)] = &[
            ("<=>", Some(Op::Spaceship)),
            ("**=", None),
            ("||=", None),
            ("&&=", None),
            ("//=", None),
            ("<<=", None),
            (">>=", None),
            ("...", Some(Op::Range)),
            ("**", Some(Op::Pow)),
            ("=~", Some(Op::Bind)),
            ("!~", Some(Op::NotBind)),
            ("==", Some(Op::NumEq)),
            ("!=", Some(Op::NumNe)),
            ("<=", Some(Op::Le)),
            (">=", Some(Op::Ge)),
            ("&&", Some(Op::AndAnd)),
            ("||", Some(Op::OrOr)),
            ("//", Some(Op::DefinedOr)),
            ("..", Some(Op::Range)),
            ("->", Some(Op::Arrow)),
            ("++", Some(Op::Inc)),
            ("--", Some(Op::Dec)),
            ("=>", Some(Op::FatComma)),
            ("<<", Some(Op::Shl)),
            (">>", Some(Op::Shr)),
            ("::", Some(Op::DoubleColon)),
            ("+=", None),
            ("-=", None),
            ("*=", None),
            ("/=", None),
            (".=", None),
            ("%=", None),
            ("^=", None),
            ("|=", None),
            ("&=", None),
            ("(", Some(Op::LParen)),
            (")", Some(Op::RParen)),
            ("[", Some(Op::LBracket)),
            ("]", Some(Op::RBracket)),
            ("{", Some(Op::LBrace)),
            ("}", Some(Op::RBrace)),
            (",", Some(Op::Comma)),
            ("?", Some(Op::Question)),
            (":", Some(Op::Colon)),
            (";", Some(Op::Semi)),
            ("+", Some(Op::Plus)),
            ("-", Some(Op::Minus)),
            ("*", Some(Op::Star)),
            ("/", Some(Op::Slash)),
            ("%", Some(Op::Percent)),
            (".", Some(Op::Dot)),
            ("<", Some(Op::Lt)),
            (">", Some(Op::Gt)),
            ("=", None),
            ("!", Some(Op::Not)),
            ("~", Some(Op::BitNot)),
            ("&", Some(Op::BitAnd)),
            ("|", Some(Op::BitOr)),
            ("^", Some(Op::BitXor)),
            ("\\", Some(Op::Backslash)),
        ];
        for (text, op) in OPS {
            if rest.starts_with(text) {
                self.pos += text.len();
                return Ok(match op {
                    Some(op) => Tok::Op(*op),
                    None => Tok::Assign((*text).to_string()),
                });
            }
        }
        Err(self.err(format!("unexpected character '{c}'"), start))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(src: &str) -> Vec<Tok> {
        let mut lx = Lexer::new(src, 0, src.len());
        let mut out = Vec::new();
        loop {
            let t = lx.next_token().unwrap();
            if t.tok == Tok::Eof {
                return out;
            }
            out.push(t.tok);
        }
    }

    #[test]
    fn slash_is_regex_or_division_by_context() {
        assert!(matches!(toks("$a / 2")[1], Tok::Op(Op::Slash)));
        assert!(matches!(toks("$a =~ /x/i")[2], Tok::Pattern { .. }));
        assert!(matches!(toks("$a // 2")[1], Tok::Op(Op::DefinedOr)));
        assert!(matches!(toks("split //, $a")[1], Tok::Pattern { .. }));
    }

    #[test]
    fn x_is_repetition_only_after_a_term() {
        assert_eq!(toks("$s x 3")[1], Tok::Op(Op::Repeat));
        assert_eq!(toks("$s x3")[1], Tok::Op(Op::Repeat));
        assert_eq!(toks("$s x3")[2], Tok::Num(3.0));
        assert_eq!(toks("x")[0], Tok::Ident("x".into()));
        assert_eq!(toks("$s x= 3")[1], Tok::Assign("x=".into()));
    }

    #[test]
    fn numbers() {
        let n = |s: &str| match toks(s)[0] {
            Tok::Num(n) => n,
            ref t => panic!("{t:?}"),
        };
        assert_eq!(n("1_000"), 1000.0);
        assert_eq!(n("0x1F"), 31.0);
        assert_eq!(n("0x1_F"), 31.0);
        assert_eq!(n("017"), 15.0);
        assert_eq!(n("0b101"), 5.0);
        assert_eq!(n("0o17"), 15.0);
        assert_eq!(n("1e-6"), 1e-6);
        assert_eq!(n("1e+3"), 1000.0);
        assert_eq!(n(".5"), 0.5);
        assert_eq!(n("1."), 1.0);
        assert_eq!(n("0"), 0.0);
        assert_eq!(n("0.25"), 0.25);
        assert_eq!(toks("1..5")[1], Tok::Op(Op::Range));
        assert!(Lexer::new("019", 0, 3).next_token().is_err());
        assert!(Lexer::new("1.2.3", 0, 5).next_token().is_err());
        assert!(Lexer::new("0x", 0, 2).next_token().is_err());
    }

    #[test]
    fn quotes() {
        assert_eq!(toks(r"'a\'b\\c\d'")[0], Tok::Str(r"a'b\c\d".into()));
        assert_eq!(toks("q{a{b}c}")[0], Tok::Str("a{b}c".into()));
        assert_eq!(toks(r"q{a\}b}")[0], Tok::Str("a}b".into()));
        assert_eq!(toks("q(x)")[0], Tok::Str("x".into()));
        assert_eq!(toks("q<x>")[0], Tok::Str("x".into()));
        assert_eq!(toks("q!x!")[0], Tok::Str("x".into()));
        assert_eq!(toks("q/x/")[0], Tok::Str("x".into()));
        assert_eq!(toks("q {x}")[0], Tok::Str("x".into()));
        assert_eq!(
            toks("qw(a b  c)")[0],
            Tok::Qw(vec!["a".into(), "b".into(), "c".into()])
        );
        assert!(matches!(
            toks("qq{$a:$b}")[0],
            Tok::Interp {
                open: '{',
                close: '}',
                ..
            }
        ));
        assert!(matches!(toks("m{x}i")[0], Tok::Pattern { ref flags, .. } if flags == "i"));
        assert!(matches!(toks("qr/x/")[0], Tok::Pattern { qr: true, .. }));
        assert!(Lexer::new("'abc", 0, 4).next_token().is_err());
        assert!(Lexer::new("s/a/b/", 0, 6).next_token().is_err());
        assert!(Lexer::new("tr/a/b/", 0, 7).next_token().is_err());
    }

    #[test]
    fn variables() {
        assert_eq!(toks("$af")[0], Tok::Scalar("af".into()));
        assert_eq!(toks("${af}")[0], Tok::Scalar("af".into()));
        assert_eq!(toks("@bind")[0], Tok::Array("bind".into()));
        assert_eq!(toks("$#bind")[0], Tok::ArrayLast("bind".into()));
        assert_eq!(toks("$1")[0], Tok::Capture(1));
        for bad in [
            "$", "$0", "$&", "${ $x }", "$a::b", "@{x}", "%h", "&f", "$::x", "`ls`",
        ] {
            assert!(Lexer::new(bad, 0, bad.len()).next_token().is_err(), "{bad}");
        }
    }

    #[test]
    fn comments_and_words() {
        assert_eq!(toks("1 # comment\n + 2").len(), 3);
        assert_eq!(toks("$a eq $b")[1], Tok::Op(Op::StrEq));
        assert_eq!(toks("not 1")[0], Tok::Op(Op::WordNot));
        assert_eq!(toks("$x = 1")[1], Tok::Assign("=".into()));
        assert_eq!(toks("$x += 1")[1], Tok::Assign("+=".into()));
    }
}
