//! Compiled patterns for `=~`, `!~` and `split`: constant patterns are
//! compiled once by the parser; patterns built at run time (`$x =~ $y`,
//! `/^$prefix/`) go through a small per-thread cache so that a pattern that
//! repeats from record to record is compiled once per thread, without a lock
//! shared between worker threads.

use std::cell::RefCell;
use std::sync::OnceLock;

use regex::Regex;

use crate::ast::Node;
use crate::perl_regex::{self, Flags};
use crate::EvalError;

#[derive(Debug, Clone)]
pub(crate) enum Pattern {
    /// Compiled at compile time.
    Static(Regex),
    /// A pattern whose text is computed per evaluation.
    Dynamic { source: Box<Node>, flags: Flags },
}

/// `split`'s first argument.
#[derive(Debug, Clone)]
pub(crate) enum SplitPattern {
    /// `split ' '`: awk mode, leading whitespace dropped, split on `\s+`.
    Awk,
    /// A `/regex/` literal (possibly interpolating).
    Regex(Pattern),
    /// Any other expression: its string value is the pattern, and a single
    /// space at run time means awk mode, as in Perl.
    Expr(Box<Node>),
}

const CACHE_LIMIT: usize = 32;

/// One cached run-time pattern: its text, modifiers and compiled form (or
/// the compile error, so a bad pattern is not recompiled per record).
type CacheEntry = (String, Flags, Result<Regex, String>);

thread_local! {
    /// A short list searched linearly: looking up by `&str` this way needs
    /// no key allocation, and the working set of run-time patterns is small.
    static CACHE: RefCell<Vec<CacheEntry>> = const { RefCell::new(Vec::new()) };
}

/// Runs `f` with the compiled run-time pattern `pat`, compiling it at most
/// once per thread while it stays in the cache. (The regex is lent rather
/// than cloned out: a cloned `Regex` gets a fresh match-cache pool, which
/// would cost an allocation per record.)
pub(crate) fn with_dynamic_regex<T>(
    pat: &str,
    flags: Flags,
    f: impl FnOnce(&Regex) -> T,
) -> Result<T, EvalError> {
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let pos = cache.iter().position(|(p, fl, _)| *fl == flags && p == pat);
        let pos = match pos {
            Some(p) => p,
            None => {
                if cache.len() >= CACHE_LIMIT {
                    drop(cache.remove(0));
                }
                cache.push((pat.to_string(), flags, perl_regex::compile(pat, flags)));
                cache.len() - 1
            }
        };
        match &cache[pos].2 {
            Ok(re) => Ok(f(re)),
            Err(e) => Err(EvalError::new(e.clone())),
        }
    })
}

/// The awk-mode separator `\s+`, compiled once per process.
pub(crate) fn awk_regex() -> &'static Regex {
    static AWK: OnceLock<Regex> = OnceLock::new();
    AWK.get_or_init(|| Regex::new(r"\s+").expect("constant pattern"))
}

/// Perl's `split`: fields between matches, capture groups after each
/// separator, no field from a zero-length match at the start, trailing empty
/// fields dropped unless `limit` is negative, at most `limit` fields when it
/// is positive.
pub(crate) fn split_fields(re: &Regex, text: &str, awk: bool, limit: i64) -> Vec<Option<String>> {
    let text = if awk {
        text.trim_start_matches(|c: char| c.is_whitespace())
    } else {
        text
    };
    let mut out: Vec<Option<String>> = Vec::new();
    if text.is_empty() {
        return out;
    }
    let groups = re.captures_len();
    let mut last = 0;
    let mut fields = 0i64;
    for caps in re.captures_iter(text) {
        if limit > 0 && fields >= limit - 1 {
            break;
        }
        let Some(m) = caps.get(0) else { continue };
        if m.start() == 0 && m.end() == 0 {
            continue;
        }
        out.push(Some(text[last..m.start()].to_string()));
        fields += 1;
        for g in 1..groups {
            out.push(caps.get(g).map(|c| c.as_str().to_string()));
        }
        last = m.end();
    }
    out.push(Some(text[last..].to_string()));
    if limit == 0 {
        while matches!(out.last(), Some(None))
            || matches!(out.last(), Some(Some(s)) if s.is_empty())
        {
            out.pop();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(p: &str, text: &str, limit: i64) -> Vec<String> {
        let re = perl_regex::compile(p, Flags::default()).unwrap();
        split_fields(&re, text, false, limit)
            .into_iter()
            .map(|f| f.unwrap_or_else(|| "undef".into()))
            .collect()
    }

    #[test]
    fn split_matches_perl() {
        assert_eq!(split(",", "a,b,,c,,", 0), ["a", "b", "", "c"]);
        assert_eq!(split("(,)", "a,b", 0), ["a", ",", "b"]);
        assert_eq!(split("", "abc", 2), ["a", "bc"]);
        assert_eq!(split("", "ab", -1), ["a", "b", ""]);
        assert_eq!(split("(a)|b", "xayb", 0), ["x", "a", "y"]);
        assert_eq!(split(",", "a,b,c,,,", -1), ["a", "b", "c", "", "", ""]);
        assert_eq!(split("x*", "axb", 0), ["a", "b"]);
        assert_eq!(split(",", ",a", 0), ["", "a"]);
        assert_eq!(split("b", "abc", 1), ["abc"]);
        assert!(split(",", "", 0).is_empty());
        let awk = split_fields(awk_regex(), "  a b  c ", true, 0);
        assert_eq!(awk, [Some("a".into()), Some("b".into()), Some("c".into())]);
    }

    #[test]
    fn dynamic_cache_compiles_and_reports_errors() {
        let f = Flags::default();
        assert!(with_dynamic_regex("a+", f, |r| r.is_match("aa")).unwrap());
        assert!(with_dynamic_regex("a+", f, |r| r.is_match("a")).unwrap());
        assert!(with_dynamic_regex("(", f, |_| ()).is_err());
        assert!(with_dynamic_regex("(", f, |_| ()).is_err());
        for i in 0..(CACHE_LIMIT + 5) {
            assert!(
                with_dynamic_regex(&format!("x{i}"), f, |r| r.is_match(&format!("x{i}"))).unwrap()
            );
        }
        let i = Flags {
            i: true,
            ..Flags::default()
        };
        assert!(with_dynamic_regex("A", i, |r| r.is_match("a")).unwrap());
        assert!(!with_dynamic_regex("A", f, |r| r.is_match("a")).unwrap());
    }
}
