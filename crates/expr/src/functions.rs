//! The built-in functions: the parse-time table (name, argument count, and
//! whether it parses as a named unary operator like `lc $x eq "y"` or as a
//! list operator like `join ",", @bind`) and the string and number routines
//! behind them.
//!
//! Strings are Rust `&str`s, so offsets and lengths count characters, not
//! bytes (mrskew, running Perl without `use utf8`, counts bytes for
//! non-ASCII text; counting characters is the only choice that cannot cut a
//! character in half).

use crate::ast::Func;

/// How a function name parses when it is not followed by `(`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Syntax {
    /// Takes one argument that binds tighter than comparisons.
    NamedUnary,
    /// Takes the comma list to its right.
    ListOp,
}

pub(crate) struct FuncSpec {
    pub func: Option<Func>,
    pub syntax: Syntax,
    pub min: usize,
    pub max: usize,
}

const MANY: usize = usize::MAX;

/// `None` for names that are not functions. `split` and `scalar` have
/// their own syntax; their specs carry `func: None`.
pub(crate) fn lookup(name: &str) -> Option<FuncSpec> {
    use Func::*;
    use Syntax::*;
    let (func, syntax, min, max) = match name {
        "lc" => (Some(Lc), NamedUnary, 1, 1),
        "uc" => (Some(Uc), NamedUnary, 1, 1),
        "lcfirst" => (Some(Lcfirst), NamedUnary, 1, 1),
        "ucfirst" => (Some(Ucfirst), NamedUnary, 1, 1),
        "length" => (Some(Length), NamedUnary, 1, 1),
        "int" => (Some(Int), NamedUnary, 1, 1),
        "abs" => (Some(Abs), NamedUnary, 1, 1),
        "sqrt" => (Some(Sqrt), NamedUnary, 1, 1),
        "log" => (Some(Log), NamedUnary, 1, 1),
        "exp" => (Some(Exp), NamedUnary, 1, 1),
        "sin" => (Some(Sin), NamedUnary, 1, 1),
        "cos" => (Some(Cos), NamedUnary, 1, 1),
        "hex" => (Some(Hex), NamedUnary, 1, 1),
        "oct" => (Some(Oct), NamedUnary, 1, 1),
        "ord" => (Some(Ord), NamedUnary, 1, 1),
        "chr" => (Some(Chr), NamedUnary, 1, 1),
        "quotemeta" => (Some(Quotemeta), NamedUnary, 1, 1),
        "defined" => (Some(Defined), NamedUnary, 1, 1),
        "scalar" => (None, NamedUnary, 1, 1),
        "atan2" => (Some(Atan2), ListOp, 2, 2),
        "substr" => (Some(Substr), ListOp, 2, 3),
        "index" => (Some(Index), ListOp, 2, 3),
        "rindex" => (Some(Rindex), ListOp, 2, 3),
        "sprintf" => (Some(Sprintf), ListOp, 1, MANY),
        "join" => (Some(Join), ListOp, 1, MANY),
        "reverse" => (Some(Reverse), ListOp, 0, MANY),
        "basename" => (Some(Basename), ListOp, 1, MANY),
        "dirname" => (Some(Dirname), ListOp, 1, MANY),
        "fileparse" => (Some(Fileparse), ListOp, 1, MANY),
        "split" => (None, ListOp, 1, 3),
        _ => return None,
    };
    Some(FuncSpec {
        func,
        syntax,
        min,
        max,
    })
}

/// Function names, for the "unknown function" message.
pub(crate) const NAMES: &str =
    "lc uc lcfirst ucfirst length substr index rindex sprintf join split \
     int abs sqrt log exp sin cos atan2 hex oct ord chr defined scalar quotemeta reverse \
     basename dirname fileparse";

/// Does `f` produce a list in list context (so it must not be folded to a
/// single constant)?
pub(crate) fn returns_list(f: Func) -> bool {
    matches!(f, Func::Reverse | Func::Fileparse)
}

fn is_ascii_fast(s: &str) -> bool {
    s.is_ascii()
}

/// Number of characters.
pub(crate) fn char_len(s: &str) -> usize {
    if is_ascii_fast(s) {
        s.len()
    } else {
        s.chars().count()
    }
}

/// Byte offset of character `ci` (clamped to the end).
pub(crate) fn byte_offset(s: &str, ci: usize) -> usize {
    if is_ascii_fast(s) {
        return ci.min(s.len());
    }
    s.char_indices().nth(ci).map_or(s.len(), |(b, _)| b)
}

/// Character index of byte offset `bi` (a char boundary).
fn char_index(s: &str, bi: usize) -> usize {
    if is_ascii_fast(s) {
        bi
    } else {
        s.get(..bi).map_or(0, |p| p.chars().count())
    }
}

/// Perl's IV conversion of a number, as `%d` and integer arguments use it:
/// truncation toward zero, values past `i64` wrapping the way perl's
/// NV→UV→IV casts do.
pub(crate) fn to_iv(v: f64) -> i64 {
    const IV_LIMIT: f64 = 9_223_372_036_854_775_808.0; // 2^63
    const UV_LIMIT: f64 = 18_446_744_073_709_551_616.0; // 2^64
    if v.is_nan() {
        0
    } else if v < -IV_LIMIT {
        i64::MIN
    } else if v < IV_LIMIT {
        v as i64
    } else if v < UV_LIMIT {
        (v as u64) as i64
    } else {
        -1
    }
}

/// Perl's UV conversion (`%u %x %o %b`, bit operators).
pub(crate) fn to_uv(v: f64) -> u64 {
    if v.is_nan() {
        0
    } else if v < 0.0 {
        to_iv(v) as u64
    } else {
        v as u64
    }
}

/// Perl's `substr` offsets (perl's `Perl_translate_substr_offsets`):
/// `(start, length)` in characters, or None when out of the string.
pub(crate) fn substr_range(curlen: usize, pos: f64, len: Option<f64>) -> Option<(usize, usize)> {
    let curlen = curlen as i128;
    let mut p1 = to_iv(pos) as i128;
    if p1 < 0 {
        p1 += curlen;
    }
    if p1 > curlen {
        return None;
    }
    let mut p2 = match len {
        None => curlen,
        Some(l) => {
            let l = to_iv(l) as i128;
            if l < 0 {
                curlen + l
            } else {
                p1 + l
            }
        }
    };
    if p2 < 0 {
        if p1 < 0 {
            return None;
        }
        p2 = 0;
    } else if p1 < 0 {
        p1 = 0;
    }
    if p2 < p1 {
        p2 = p1;
    }
    if p2 > curlen {
        p2 = curlen;
    }
    Some((p1 as usize, (p2 - p1) as usize))
}

pub(crate) fn substr(s: &str, pos: f64, len: Option<f64>) -> Option<String> {
    let (start, n) = substr_range(char_len(s), pos, len)?;
    let b0 = byte_offset(s, start);
    let rest = &s[b0..];
    let b1 = byte_offset(rest, n);
    Some(rest[..b1].to_string())
}

/// Perl's `index`: first occurrence at or after character `pos`, or -1.
pub(crate) fn index(s: &str, needle: &str, pos: Option<f64>) -> f64 {
    let len = char_len(s) as i64;
    let start = pos.map_or(0, to_iv).clamp(0, len) as usize;
    let b = byte_offset(s, start);
    match s[b..].find(needle) {
        Some(off) => char_index(s, b + off) as f64,
        None => -1.0,
    }
}

/// Perl's `rindex`: last occurrence starting at or before character `pos`.
pub(crate) fn rindex(s: &str, needle: &str, pos: Option<f64>) -> f64 {
    let len = char_len(s) as i128;
    // perl: the match must end by POSITION + length(SUBSTR), clamped to the
    // string (so a negative POSITION finds only an empty SUBSTR).
    let end = match pos {
        Some(p) => (to_iv(p) as i128 + char_len(needle) as i128).clamp(0, len),
        None => len,
    } as usize;
    let limit = byte_offset(s, end);
    match s[..limit].rfind(needle) {
        Some(off) => char_index(s, off) as f64,
        None => -1.0,
    }
}

pub(crate) fn ucfirst(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

pub(crate) fn lcfirst(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_lowercase().chain(c).collect(),
        None => String::new(),
    }
}

/// Perl's `quotemeta`: a backslash before every ASCII non-word character.
pub(crate) fn quotemeta(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 4);
    for c in s.chars() {
        if c.is_ascii() && !(c.is_ascii_alphanumeric() || c == '_') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Digits in base `radix` with single underscores allowed, stopping at the
/// first other character (perl's `grok_hex`/`grok_oct`/`grok_bin`).
fn grok(s: &str, radix: u32) -> f64 {
    let mut v = 0f64;
    let mut prev_underscore = true;
    for c in s.chars() {
        if c == '_' && !prev_underscore {
            prev_underscore = true;
            continue;
        }
        match c.to_digit(radix) {
            Some(d) => {
                v = v * radix as f64 + d as f64;
                prev_underscore = false;
            }
            None => break,
        }
    }
    v
}

/// Perl's `hex`: an optional `0x`/`x` prefix, then hex digits.
pub(crate) fn hex(s: &str) -> f64 {
    let t = s
        .strip_prefix("0x")
        .or_else(|| s.strip_prefix("0X"))
        .or_else(|| s.strip_prefix('x'))
        .or_else(|| s.strip_prefix('X'))
        .unwrap_or(s);
    grok(t, 16)
}

/// Perl's `oct`: leading whitespace, then `0x`/`x` hex, `0b`/`b` binary,
/// `0o`/`o` or plain octal.
pub(crate) fn oct(s: &str) -> f64 {
    let t = s.trim_start();
    let t = t
        .strip_prefix('0')
        .filter(|r| r.starts_with(|c: char| c.is_ascii_alphabetic()))
        .unwrap_or(t);
    let mut chars = t.chars();
    match chars.next().map(|c| c.to_ascii_lowercase()) {
        Some('x') => grok(chars.as_str(), 16),
        Some('b') => grok(chars.as_str(), 2),
        Some('o') => grok(chars.as_str(), 8),
        _ => grok(t, 8),
    }
}

/// Perl's `chr`: negative or invalid code points give U+FFFD.
pub(crate) fn chr(n: f64) -> char {
    if n < 0.0 || n.is_nan() || n > u32::MAX as f64 {
        return '\u{FFFD}';
    }
    char::from_u32(n as u32).unwrap_or('\u{FFFD}')
}

/// File::Basename's `_strip_trailing_sep` on Unix: `s{(.)/*\z}{$1}s`.
fn strip_trailing_sep(s: &str) -> &str {
    let trimmed = s.trim_end_matches('/');
    if trimmed.is_empty() && !s.is_empty() {
        &s[..1]
    } else {
        trimmed
    }
}

/// File::Basename's split of a path on Unix (`m{^(.*/)?(.*)}s`): the
/// directory with its trailing `/` (`./` when there is none) and the last
/// component. `fileparse`, `basename` and `dirname` all start from it.
fn split_dir(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(i) => (&path[..=i], &path[i + 1..]),
        None => ("./", path),
    }
}

/// File::Basename's `fileparse` on Unix: `(name, dir, suffix)`, where each
/// suffix pattern is tried in turn against the end of the name.
pub(crate) fn fileparse<'s>(path: &'s str, suffixes: &[regex::Regex]) -> (String, &'s str, String) {
    let (dir, base) = split_dir(path);
    let mut base = base.to_string();
    let mut tail = String::new();
    for re in suffixes {
        if let Some(m) = re.find(&base) {
            let matched = m.as_str().to_string();
            base.truncate(m.start());
            tail = matched + &tail;
        }
    }
    (base, dir, tail)
}

/// File::Basename's `basename(path, @literal_suffixes)`.
pub(crate) fn basename(path: &str, suffixes: &[String]) -> String {
    let (dir, base) = split_dir(strip_trailing_sep(path));
    let mut base = base.to_string();
    let mut tail = String::new();
    for suffix in suffixes {
        if base.ends_with(suffix.as_str()) {
            let cut = base.len() - suffix.len();
            tail = format!("{}{}", &base[cut..], tail);
            base.truncate(cut);
        }
    }
    if !tail.is_empty() && base.is_empty() {
        base = tail;
    }
    if base.is_empty() {
        base = dir.to_string();
    }
    base
}

/// File::Basename's `dirname` on Unix.
pub(crate) fn dirname(path: &str) -> String {
    let (dir, base) = split_dir(path);
    let dir = strip_trailing_sep(dir);
    if base.is_empty() {
        strip_trailing_sep(split_dir(dir).0).to_string()
    } else {
        dir.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substr_follows_perl() {
        let s = |p: f64, l: Option<f64>| substr("abc", p, l);
        assert_eq!(s(-5.0, None).as_deref(), Some("abc"));
        assert_eq!(s(1.0, Some(-5.0)).as_deref(), Some(""));
        assert_eq!(s(3.0, None).as_deref(), Some(""));
        assert_eq!(s(4.0, None), None);
        assert_eq!(s(-5.0, Some(3.0)).as_deref(), Some("a"));
        assert_eq!(s(-5.0, Some(1.0)), None);
        assert_eq!(s(1.0, Some(100.0)).as_deref(), Some("bc"));
        assert_eq!(s(-1.0, Some(-1.0)).as_deref(), Some(""));
        assert_eq!(s(0.0, Some(-1.0)).as_deref(), Some("ab"));
        assert_eq!(substr("", 0.0, None).as_deref(), Some(""));
        assert_eq!(substr("", -1.0, None).as_deref(), Some(""));
        assert_eq!(substr("héllo", 1.0, Some(3.0)).as_deref(), Some("éll"));
        // perl's IV conversion makes 1e300 a -1 (and 1e19 a large negative).
        assert_eq!(substr("abc", 1e300, None).as_deref(), Some("c"));
        assert_eq!(substr("abc", 1e19, None).as_deref(), Some("abc"));
        assert_eq!(substr("abc", 0.0, Some(1e300)).as_deref(), Some("ab"));
        assert_eq!(substr("abc", f64::NAN, None).as_deref(), Some("abc"));
    }

    #[test]
    fn index_and_rindex_follow_perl() {
        assert_eq!(index("abc", "", Some(5.0)), 3.0);
        assert_eq!(rindex("abc", "", None), 3.0);
        assert_eq!(index("abc", "c", Some(-3.0)), 2.0);
        assert_eq!(rindex("abcabc", "b", Some(3.0)), 1.0);
        assert_eq!(rindex("abcabc", "b", Some(-1.0)), -1.0);
        assert_eq!(rindex("abc", "a", Some(-1.0)), -1.0);
        assert_eq!(rindex("abc", "", Some(-1.0)), 0.0);
        assert_eq!(rindex("abc", "c", Some(10.0)), 2.0);
        assert_eq!(rindex("abc", "", Some(10.0)), 3.0);
        assert_eq!(rindex("58081", "58081", Some(f64::NEG_INFINITY)), -1.0);
        assert_eq!(index("abc", "c", Some(f64::INFINITY)), 2.0);
        assert_eq!(index("hello", "l", None), 2.0);
        assert_eq!(rindex("hello", "l", None), 3.0);
        assert_eq!(index("héllo", "l", None), 2.0);
        assert_eq!(rindex("héllo", "é", Some(1.0)), 1.0);
        assert_eq!(index("abc", "x", None), -1.0);
    }

    #[test]
    fn basename_and_dirname_follow_file_basename() {
        let b = |p: &str| basename(p, &[]);
        assert_eq!(b("/a/b.trc"), "b.trc");
        assert_eq!(b("/a/b/"), "b");
        assert_eq!(b("/"), "/");
        assert_eq!(b(""), "./");
        assert_eq!(b("a"), "a");
        assert_eq!(b("a/"), "a");
        assert_eq!(b("//"), "/");
        assert_eq!(b("/a//b//"), "b");
        assert_eq!(basename("/x/a.trc.gz", &[".gz".into()]), "a.trc");
        assert_eq!(basename("/x/.gz", &[".gz".into()]), ".gz");
        let d = dirname;
        assert_eq!(d("/a/b.trc"), "/a");
        assert_eq!(d("b.trc"), ".");
        assert_eq!(d("/a/b/"), "/a");
        assert_eq!(d("/"), "/");
        assert_eq!(d(""), ".");
        assert_eq!(d("a/"), ".");
        assert_eq!(d("/a"), "/");
        assert_eq!(d("//a//b//"), "//a");
        assert_eq!(d("a/b"), "a");
        let suffix = regex::Regex::new(r"(?:\.[^.]*)\z").unwrap();
        let (name, dir, tail) = fileparse("/x/a.trc.gz", &[suffix]);
        assert_eq!((name.as_str(), dir, tail.as_str()), ("a.trc", "/x/", ".gz"));
    }

    #[test]
    fn numeric_string_functions() {
        assert_eq!(hex("0x1f"), 31.0);
        assert_eq!(hex("1_f"), 31.0);
        assert_eq!(hex("x1f"), 31.0);
        assert_eq!(hex("fg"), 15.0);
        assert_eq!(oct("0x1f"), 31.0);
        assert_eq!(oct("755"), 493.0);
        assert_eq!(oct("0b101"), 5.0);
        assert_eq!(oct(" 0o17"), 15.0);
        assert_eq!(oct("789"), 7.0);
        assert_eq!(oct("b101"), 5.0);
        assert_eq!(chr(66.0), 'B');
        assert_eq!(chr(-1.0), '\u{FFFD}');
        assert_eq!(chr(0xD800 as f64), '\u{FFFD}');
        assert_eq!(quotemeta("a.b*c é"), "a\\.b\\*c\\ é");
        assert_eq!(ucfirst("abc"), "Abc");
        assert_eq!(lcfirst("ABC"), "aBC");
        assert_eq!(ucfirst(""), "");
    }

    #[test]
    fn integer_conversions_wrap_like_perl() {
        assert_eq!(to_iv(1e19), -8446744073709551616);
        assert_eq!(to_iv(-1e20), i64::MIN);
        assert_eq!(to_iv(1e20), -1);
        assert_eq!(to_iv(-3.7), -3);
        assert_eq!(to_uv(-1.0), u64::MAX);
        assert_eq!(to_uv(1e20), u64::MAX);
        assert_eq!(to_uv(f64::NAN), 0);
    }

    #[test]
    fn spec_table() {
        assert_eq!(lookup("lc").unwrap().syntax, Syntax::NamedUnary);
        assert_eq!(lookup("join").unwrap().syntax, Syntax::ListOp);
        assert!(lookup("label").is_none());
        for name in NAMES.split_whitespace() {
            assert!(lookup(name).is_some(), "{name}");
        }
    }
}
