//! Translation of Perl regular expressions into the `regex` crate's syntax.
//!
//! The `regex` crate guarantees linear-time matching, which matters when a
//! pattern runs against millions of trace calls, but its syntax differs from
//! Perl's in a few places that mrskew users do hit:
//!
//! * Perl's `$` (without `/m`) also matches before a final newline, `\Z`
//!   likewise; the crate's `$` is `\z`.
//! * A `{` that does not start a quantifier is a literal in Perl, an error in
//!   the crate; inside a class `[`, `&&`, `--` and `~~` are literal in Perl
//!   but nested classes / set operations in the crate.
//! * `\h`, `\v`, `\R`, `\N`, `\e`, octal escapes and `\c` controls have no
//!   (or a different) meaning in the crate; `\<` and `\>` are literals in Perl
//!   but word boundaries in the crate.
//! * `/x` ignores whitespace inside classes in the crate but not in Perl, so
//!   this module removes `/x` whitespace and comments itself.
//!
//! Constructs the crate cannot run at all (backreferences, lookaround,
//! atomic groups, possessive quantifiers, recursion, `\G`, `\K`) are reported
//! as errors naming the construct instead of being silently mistranslated.

use regex::Regex;

/// Pattern modifiers (`/imsx`, plus `/n`); `g`, `o`, `c` and the charset
/// modifiers are accepted and have no effect on a single match.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub(crate) struct Flags {
    pub i: bool,
    pub m: bool,
    pub s: bool,
    pub x: bool,
    pub n: bool,
}

impl Flags {
    /// Parses the modifiers after a match operator.
    pub(crate) fn parse(text: &str) -> Result<Flags, String> {
        let mut f = Flags::default();
        for c in text.chars() {
            match c {
                'i' => f.i = true,
                'm' => f.m = true,
                's' => f.s = true,
                'x' => f.x = true,
                'n' => f.n = true,
                'g' | 'o' | 'c' | 'a' | 'u' | 'l' | 'd' | 'p' => {}
                'e' | 'r' => {
                    return Err(format!(
                        "the /{c} modifier belongs to s/// substitution, which is not supported by tracelab's expression language"
                    ))
                }
                _ => return Err(format!("unknown regex modifier /{c}")),
            }
        }
        Ok(f)
    }

    /// The modifiers in Perl's canonical order, as `qr//` prints them.
    pub(crate) fn perl_letters(&self) -> String {
        let mut s = String::new();
        for (on, c) in [
            (self.m, 'm'),
            (self.s, 's'),
            (self.i, 'i'),
            (self.x, 'x'),
            (self.n, 'n'),
        ] {
            if on {
                s.push(c);
            }
        }
        s
    }
}

/// Compiles Perl pattern `pat` with modifiers `flags`.
pub(crate) fn compile(pat: &str, flags: Flags) -> Result<Regex, String> {
    let translated = translate(pat, flags)?;
    regex::RegexBuilder::new(&translated)
        .size_limit(1 << 24)
        .build()
        .map_err(|e| match e {
            regex::Error::Syntax(msg) => {
                let last = msg
                    .lines()
                    .rev()
                    .find(|l| !l.trim().is_empty())
                    .unwrap_or("");
                format!(
                    "invalid regex /{pat}/: {}",
                    last.trim_start_matches("error: ")
                )
            }
            regex::Error::CompiledTooBig(_) => format!("regex /{pat}/ is too big"),
            _ => format!("invalid regex /{pat}/"),
        })
}

const HSPACE: &str = r"\t\x20\xA0\x{1680}\x{180E}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}";
const VSPACE: &str = r"\n\x0B\x0C\r\x{85}\x{2028}\x{2029}";

/// Characters the `regex` crate treats as meta characters (and therefore
/// accepts escaped); other escaped punctuation is emitted as a plain literal.
fn is_crate_meta(c: char) -> bool {
    matches!(
        c,
        '\\' | '.'
            | '+'
            | '*'
            | '?'
            | '('
            | ')'
            | '|'
            | '['
            | ']'
            | '{'
            | '}'
            | '^'
            | '$'
            | '#'
            | '&'
            | '-'
            | '~'
    )
}

/// Group-local modifier state: `(?x)` and `(?m)` change how this module
/// reads the rest of the group.
#[derive(Clone, Copy)]
struct GroupState {
    x: bool,
    m: bool,
    n: bool,
}

struct Translator<'p> {
    chars: Vec<char>,
    i: usize,
    out: String,
    pat: &'p str,
    stack: Vec<GroupState>,
    cur: GroupState,
}

/// Rewrites Perl pattern syntax into `regex` crate syntax (see module docs).
pub(crate) fn translate(pat: &str, flags: Flags) -> Result<String, String> {
    let mut t = Translator {
        chars: pat.chars().collect(),
        i: 0,
        out: String::with_capacity(pat.len() + 8),
        pat,
        stack: Vec::new(),
        cur: GroupState {
            x: flags.x,
            m: flags.m,
            n: flags.n,
        },
    };
    let mut prefix = String::new();
    if flags.i {
        prefix.push('i');
    }
    if flags.m {
        prefix.push('m');
    }
    if flags.s {
        prefix.push('s');
    }
    if !prefix.is_empty() {
        t.out.push_str("(?");
        t.out.push_str(&prefix);
        t.out.push(')');
    }
    t.run()?;
    Ok(t.out)
}

impl Translator<'_> {
    fn peek(&self, k: usize) -> Option<char> {
        self.chars.get(self.i + k).copied()
    }

    /// Skips a comment (`/x`'s `# ...` or `(?#...)`): moves past the next
    /// `end`; false when the pattern ends first.
    fn skip_past(&mut self, end: char) -> bool {
        while let Some(d) = self.peek(0) {
            self.i += 1;
            if d == end {
                return true;
            }
        }
        false
    }

    fn unsupported(&self, what: &str) -> String {
        format!(
            "{what} in /{}/ is not supported by tracelab's expression language (the regex engine guarantees linear time and has no such feature)",
            self.pat
        )
    }

    fn run(&mut self) -> Result<(), String> {
        while let Some(c) = self.peek(0) {
            self.i += 1;
            match c {
                '\\' => self.escape(false)?,
                '[' => self.class()?,
                '(' => self.group()?,
                ')' => {
                    self.cur = self.stack.pop().unwrap_or(self.cur);
                    self.out.push(')');
                }
                '$' => {
                    if self.cur.m {
                        self.out.push('$');
                    } else {
                        self.out.push_str(r"(?:\n?\z)");
                    }
                }
                '{' => {
                    if let Some(len) = self.quantifier_len() {
                        self.out.push('{');
                        let body: String = self.chars[self.i..self.i + len].iter().collect();
                        let body = if body.starts_with(',') {
                            format!("0{body}")
                        } else {
                            body
                        };
                        self.out.push_str(&body);
                        self.i += len;
                        self.after_quantifier()?;
                    } else {
                        self.out.push_str(r"\{");
                    }
                }
                '}' => self.out.push_str(r"\}"),
                ']' => self.out.push_str(r"\]"),
                '*' | '+' | '?' => {
                    self.out.push(c);
                    self.after_quantifier()?;
                }
                '#' if self.cur.x => {
                    self.skip_past('\n');
                }
                c if self.cur.x && c.is_whitespace() => {}
                '#' => self.out.push_str(r"\#"),
                c if c.is_whitespace() && c != ' ' => {
                    // Literal control whitespace (e.g. a tab); escape it so it
                    // survives even if a `(?x)` were ever in effect.
                    self.out.push_str(&format!(r"\x{{{:X}}}", c as u32));
                }
                c => self.out.push(c),
            }
        }
        Ok(())
    }

    /// After a quantifier: `?` (lazy) is fine, `+` (possessive) is not.
    fn after_quantifier(&mut self) -> Result<(), String> {
        match self.peek(0) {
            Some('?') => {
                self.i += 1;
                self.out.push('?');
                Ok(())
            }
            Some('+') => Err(self.unsupported("a possessive quantifier")),
            _ => Ok(()),
        }
    }

    /// Length of a `{n}`, `{n,}`, `{n,m}` or `{,m}` quantifier body (up to
    /// and including `}`), or None when the `{` is a literal.
    fn quantifier_len(&self) -> Option<usize> {
        let mut k = 0;
        let mut digits_before = 0;
        while self.peek(k).is_some_and(|c| c.is_ascii_digit()) {
            k += 1;
            digits_before += 1;
        }
        let mut digits_after = 0;
        let mut comma = false;
        if self.peek(k) == Some(',') {
            comma = true;
            k += 1;
            while self.peek(k).is_some_and(|c| c.is_ascii_digit()) {
                k += 1;
                digits_after += 1;
            }
        }
        if self.peek(k) != Some('}') {
            return None;
        }
        if digits_before == 0 && !(comma && digits_after > 0) {
            return None;
        }
        Some(k + 1)
    }

    fn group(&mut self) -> Result<(), String> {
        if self.peek(0) != Some('?') {
            self.stack.push(self.cur);
            self.out.push_str(if self.cur.n { "(?:" } else { "(" });
            return Ok(());
        }
        self.i += 1;
        match self.peek(0) {
            Some('#') => {
                if self.skip_past(')') {
                    Ok(())
                } else {
                    Err(format!("unterminated (?#...) comment in /{}/", self.pat))
                }
            }
            Some(':') => {
                self.i += 1;
                self.stack.push(self.cur);
                self.out.push_str("(?:");
                Ok(())
            }
            Some('=') | Some('!') => Err(self.unsupported("lookahead (?=...) / (?!...)")),
            Some('<') if matches!(self.peek(1), Some('=') | Some('!')) => {
                Err(self.unsupported("lookbehind (?<=...) / (?<!...)"))
            }
            Some('<') => {
                self.i += 1;
                self.named_group('>')
            }
            Some('\'') => {
                self.i += 1;
                self.named_group('\'')
            }
            Some('P') if self.peek(1) == Some('<') => {
                self.i += 2;
                self.named_group('>')
            }
            Some('P') if self.peek(1) == Some('=') => {
                Err(self.unsupported("a named backreference (?P=name)"))
            }
            Some('>') => Err(self.unsupported("an atomic group (?>...)")),
            Some('|') => Err(self.unsupported("a branch reset group (?|...)")),
            Some('{') | Some('?') => Err(self.unsupported("embedded code (?{...})")),
            Some('(') => Err(self.unsupported("a conditional (?(...)...)")),
            Some(c) if c == 'R' || c == '&' || c == '+' || c.is_ascii_digit() => {
                Err(self.unsupported("regex recursion (?R) / (?1) / (?&name)"))
            }
            Some('-') if self.peek(1).is_some_and(|c| c.is_ascii_digit()) => {
                Err(self.unsupported("regex recursion (?-1)"))
            }
            _ => self.flag_group(),
        }
    }

    fn named_group(&mut self, close: char) -> Result<(), String> {
        let mut name = String::new();
        while let Some(c) = self.peek(0) {
            self.i += 1;
            if c == close {
                if name.is_empty() {
                    break;
                }
                self.stack.push(self.cur);
                self.out.push_str("(?P<");
                self.out.push_str(&name);
                self.out.push('>');
                return Ok(());
            }
            if !(c.is_alphanumeric() || c == '_') {
                break;
            }
            name.push(c);
        }
        Err(format!("bad named group in /{}/", self.pat))
    }

    /// `(?flags)` or `(?flags:...)`, including Perl's `(?^...)` reset.
    fn flag_group(&mut self) -> Result<(), String> {
        let mut on = String::new();
        let mut off = String::new();
        let mut negate = false;
        let mut state = self.cur;
        loop {
            let Some(c) = self.peek(0) else {
                return Err(format!("unterminated (? group in /{}/", self.pat));
            };
            self.i += 1;
            match c {
                '^' => {
                    // Back to the defaults (d-imnsx), then the listed ones.
                    for f in ['i', 'm', 's'] {
                        if !off.contains(f) {
                            off.push(f);
                        }
                    }
                    state.x = false;
                    state.m = false;
                    state.n = false;
                }
                '-' => negate = true,
                'i' | 's' | 'm' => {
                    let (add, remove) = if negate {
                        (&mut off, &mut on)
                    } else {
                        (&mut on, &mut off)
                    };
                    if !add.contains(c) {
                        add.push(c);
                    }
                    remove.retain(|d| d != c);
                    if c == 'm' {
                        state.m = !negate;
                    }
                }
                'x' => state.x = !negate,
                'n' => state.n = !negate,
                'a' | 'u' | 'l' | 'd' | 'p' | 'o' | 'g' | 'c' => {}
                ':' | ')' => {
                    let mut group = String::from("(?");
                    group.push_str(&on);
                    if !off.is_empty() {
                        group.push('-');
                        group.push_str(&off);
                    }
                    if c == ':' {
                        group.push(':');
                        self.stack.push(self.cur);
                        self.out.push_str(&group);
                    } else if group.len() > 2 {
                        group.push(')');
                        self.out.push_str(&group);
                    }
                    self.cur = state;
                    return Ok(());
                }
                _ => {
                    return Err(format!(
                        "unknown or unsupported (?{c}...) construct in /{}/",
                        self.pat
                    ))
                }
            }
        }
    }

    fn hex_escape(&mut self) -> Result<u32, String> {
        if self.peek(0) == Some('{') {
            self.i += 1;
            let mut v: u32 = 0;
            loop {
                let Some(c) = self.peek(0) else {
                    return Err(format!("unterminated \\x{{...}} in /{}/", self.pat));
                };
                self.i += 1;
                if c == '}' {
                    return Ok(v);
                }
                if c == '_' || c == ' ' {
                    continue;
                }
                let d = c.to_digit(16).ok_or_else(|| {
                    format!("bad hex digit '{c}' in \\x{{...}} in /{}/", self.pat)
                })?;
                v = v.saturating_mul(16).saturating_add(d);
            }
        }
        Ok(self.short_code(16, 0))
    }

    /// The unbraced numeric escapes (`\x1B`, `\0`, `\033`): `first` (the
    /// value of a digit already read) followed by at most two more digits
    /// of `radix`, as far as they go.
    fn short_code(&mut self, radix: u32, first: u32) -> u32 {
        let mut v = first;
        for _ in 0..2 {
            match self.peek(0).and_then(|d| d.to_digit(radix)) {
                Some(d) => {
                    v = v * radix + d;
                    self.i += 1;
                }
                None => break,
            }
        }
        v
    }

    fn push_code(&mut self, code: u32) {
        let code = if char::from_u32(code).is_some() {
            code
        } else {
            0xFFFD
        };
        self.out.push_str(&format!(r"\x{{{code:X}}}"));
    }

    /// The escape after a backslash; `in_class` for `[...]` context.
    fn escape(&mut self, in_class: bool) -> Result<(), String> {
        let Some(c) = self.peek(0) else {
            return Err(format!("trailing backslash in /{}/", self.pat));
        };
        self.i += 1;
        match c {
            'd' | 'D' | 'w' | 'W' | 's' | 'S' | 'n' | 't' | 'r' | 'f' => {
                self.out.push('\\');
                self.out.push(c);
            }
            'b' if in_class => self.out.push_str(r"\x08"),
            'b' | 'B' if self.peek(0) == Some('{') => {
                return Err(self.unsupported("a \\b{...} boundary type"))
            }
            'b' | 'B' | 'A' | 'z' => {
                self.out.push('\\');
                self.out.push(c);
            }
            'Z' if !in_class => self.out.push_str(r"(?:\n?\z)"),
            'a' => self.out.push_str(r"\x07"),
            'e' => self.out.push_str(r"\x1B"),
            'h' => self.out.push_str(&format!("[{HSPACE}]")),
            'H' => self.out.push_str(&format!("[^{HSPACE}]")),
            'v' => self.out.push_str(&format!("[{VSPACE}]")),
            'V' => self.out.push_str(&format!("[^{VSPACE}]")),
            'R' if !in_class => self.out.push_str(&format!(r"(?:\r\n|[{VSPACE}])")),
            'N' if self.peek(0) == Some('{') => {
                if self.peek(1) == Some('U') && self.peek(2) == Some('+') {
                    self.i += 2;
                    self.chars[self.i] = '{';
                    let code = self.hex_escape()?;
                    self.push_code(code);
                } else {
                    return Err(self.unsupported("a named character \\N{name}"));
                }
            }
            'N' if !in_class => self.out.push_str(r"[^\n]"),
            'x' => {
                let code = self.hex_escape()?;
                self.push_code(code);
            }
            'o' if self.peek(0) == Some('{') => {
                self.i += 1;
                let mut v: u32 = 0;
                loop {
                    let Some(d) = self.peek(0) else {
                        return Err(format!("unterminated \\o{{...}} in /{}/", self.pat));
                    };
                    self.i += 1;
                    if d == '}' {
                        break;
                    }
                    let d = d
                        .to_digit(8)
                        .ok_or_else(|| format!("bad octal digit in /{}/", self.pat))?;
                    v = v.saturating_mul(8).saturating_add(d);
                }
                self.push_code(v);
            }
            '0' => {
                let code = self.short_code(8, 0);
                self.push_code(code);
            }
            '1'..='7' if in_class || self.peek(0).is_some_and(|d| d.is_ascii_digit()) => {
                let code = self.short_code(8, c.to_digit(8).unwrap_or(0));
                self.push_code(code);
            }
            '1'..='9' | 'g' | 'k' => {
                return Err(self.unsupported("a backreference (\\1, \\g{..}, \\k<..>)"))
            }
            'c' => {
                let Some(ctl) = self.peek(0) else {
                    return Err(format!(
                        "missing control character after \\c in /{}/",
                        self.pat
                    ));
                };
                self.i += 1;
                self.push_code((ctl.to_ascii_uppercase() as u32) ^ 64);
            }
            'p' | 'P' => {
                self.out.push('\\');
                self.out.push(c);
                if self.peek(0) == Some('{') {
                    while let Some(d) = self.peek(0) {
                        self.i += 1;
                        self.out.push(d);
                        if d == '}' {
                            break;
                        }
                    }
                } else if let Some(d) = self.peek(0) {
                    self.i += 1;
                    self.out.push(d);
                }
            }
            'G' => return Err(self.unsupported("the \\G anchor")),
            'K' => return Err(self.unsupported("\\K (keep)")),
            'X' => return Err(self.unsupported("\\X (extended grapheme)")),
            'C' => return Err(self.unsupported("\\C (single byte)")),
            '<' | '>' => self.out.push(c),
            c if c.is_ascii_alphanumeric() => {
                return Err(format!("unsupported escape \\{c} in /{}/", self.pat))
            }
            c if is_crate_meta(c) => {
                self.out.push('\\');
                self.out.push(c);
            }
            c if c.is_whitespace() && c != ' ' => self.push_code(c as u32),
            c => self.out.push(c),
        }
        Ok(())
    }

    /// A bracketed character class; `[` has been consumed.
    fn class(&mut self) -> Result<(), String> {
        self.out.push('[');
        if self.peek(0) == Some('^') {
            self.i += 1;
            self.out.push('^');
        }
        if self.peek(0) == Some(']') {
            self.i += 1;
            self.out.push_str(r"\]");
        }
        let mut last_dash = false;
        loop {
            let Some(c) = self.peek(0) else {
                return Err(format!("unterminated character class in /{}/", self.pat));
            };
            self.i += 1;
            let dash = c == '-';
            match c {
                ']' => {
                    self.out.push(']');
                    return Ok(());
                }
                '[' if matches!(self.peek(0), Some(':')) => {
                    // POSIX class [:name:] or [:^name:]
                    let start = self.i - 1;
                    let mut k = self.i + 1;
                    let mut found = false;
                    while k + 1 < self.chars.len() {
                        if self.chars[k] == ':' && self.chars[k + 1] == ']' {
                            found = true;
                            break;
                        }
                        if !(self.chars[k].is_ascii_alphabetic() || self.chars[k] == '^') {
                            break;
                        }
                        k += 1;
                    }
                    if found {
                        let text: String = self.chars[start..k + 2].iter().collect();
                        self.out.push_str(&text);
                        self.i = k + 2;
                    } else {
                        self.out.push_str(r"\[");
                    }
                }
                '[' if matches!(self.peek(0), Some('=') | Some('.')) => {
                    return Err(self.unsupported("a POSIX [= =] / [. .] class"))
                }
                '[' => self.out.push_str(r"\["),
                '\\' => self.escape(true)?,
                '&' | '~' => {
                    self.out.push('\\');
                    self.out.push(c);
                }
                '-' if last_dash => self.out.push_str(r"\-"),
                c if c.is_whitespace() && c != ' ' => self.push_code(c as u32),
                c => self.out.push(c),
            }
            last_dash = dash;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn re(p: &str, f: &str) -> Regex {
        compile(p, Flags::parse(f).unwrap()).unwrap()
    }

    fn err(p: &str) -> String {
        compile(p, Flags::default()).unwrap_err()
    }

    #[test]
    fn perl_dollar_matches_before_final_newline() {
        assert!(re("read$", "").is_match("db file read\n"));
        assert!(re("read$", "").is_match("db file read"));
        assert!(!re("read$", "").is_match("read\nx"));
        assert!(re("read$", "m").is_match("read\nx"));
        assert!(re(r"a\Z", "").is_match("a\n"));
    }

    #[test]
    fn flags() {
        assert!(re("READ", "i").is_match("db file sequential read"));
        assert!(re("a.b", "s").is_match("a\nb"));
        assert!(!re("a.b", "").is_match("a\nb"));
        assert!(re("a b # comment\n c", "x").is_match("abc"));
        assert!(re("a[ ]b", "x").is_match("a b"));
        assert!(re(r"a\ b", "x").is_match("a b"));
        assert!(re("^b", "m").is_match("a\nb"));
        assert!(Flags::parse("go").is_ok());
        assert!(Flags::parse("e").is_err());
        assert!(Flags::parse("z").is_err());
        assert_eq!(Flags::parse("xim").unwrap().perl_letters(), "mix");
    }

    #[test]
    fn literal_braces_and_brackets() {
        assert!(re("a{", "").is_match("a{"));
        assert!(re("{foo}", "").is_match("x{foo}"));
        assert!(re("a{2}", "").is_match("aa"));
        assert!(!re("^a{2}$", "").is_match("a"));
        assert!(re("^a{,2}$", "").is_match("aa"));
        assert!(re("[[]", "").is_match("["));
        assert!(re("[]a]", "").is_match("]"));
        assert!(re("[a&&b]", "").is_match("&"));
        assert!(re("[~]", "").is_match("~"));
        assert!(re("[[:digit:]]", "").is_match("5"));
        assert!(re("]", "").is_match("]"));
        assert!(re("}", "").is_match("}"));
    }

    #[test]
    fn escapes() {
        assert!(re(r"\h+", "").is_match("a \tb"));
        assert!(re(r"^\v$", "").is_match("\n"));
        assert!(re(r"\e", "").is_match("\x1b"));
        assert!(re(r"\x41\x{42}", "").is_match("AB"));
        assert!(re(r"\101", "").is_match("A"));
        assert!(re(r"\0", "").is_match("\0"));
        assert!(re(r"\cA", "").is_match("\x01"));
        assert!(re(r"\<a\>", "").is_match("<a>"));
        assert!(re(r"a\/b", "").is_match("a/b"));
        assert!(re(r"\:\@\%", "").is_match(":@%"));
        assert!(re(r"\N+", "").is_match("abc"));
        assert!(re(r"\N{U+263A}", "").is_match("☺"));
        assert!(re(r"[\b]", "").is_match("\x08"));
        assert!(re(r"\#", "x").is_match("#"));
        assert!(re(r"\R", "").is_match("\r\n"));
        assert!(re(r"\pL", "").is_match("é"));
        assert!(re(r"(?<name>a)(?'other'b)", "").is_match("ab"));
        assert!(re(r"(?i)A(?-i)b", "").is_match("ab"));
        assert!(re(r"(?^i:A)", "").is_match("a"));
        assert!(re(r"a(?#comment)b", "").is_match("ab"));
        assert!(re(r"(a)", "n").captures_len() == 1);
        assert!(re(r"a+?b*?c??", "").is_match("abc"));
    }

    #[test]
    fn unsupported_constructs_are_named() {
        assert!(err(r"(a)\1").contains("backreference"));
        assert!(err(r"a(?=b)").contains("lookahead"));
        assert!(err(r"(?<!a)b").contains("lookbehind"));
        assert!(err(r"(?>a)").contains("atomic"));
        assert!(err(r"a++").contains("possessive"));
        assert!(err(r"\Ga").contains("\\G"));
        assert!(err(r"a\K").contains("\\K"));
        assert!(err(r"(?R)").contains("recursion"));
        assert!(err(r"\q").contains("unsupported escape"));
        assert!(err(r"[abc").contains("unterminated"));
        assert!(err(r"a\").contains("trailing backslash"));
        assert!(err(r"(").contains("invalid regex"));
        assert!(err(r"(?z)").contains("unsupported"));
    }
}
