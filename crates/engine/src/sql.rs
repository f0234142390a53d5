//! SQL text in tokens: the one lexer every walker of SQL text in tracelab
//! goes through (placeholder rewriting, the result cache's table names and
//! refusals, MariaDB's qualified names, a study's script splitter and its
//! select lists), so that all of them see literals, comments, dollar
//! quotes, quoted names and placeholders alike.
//!
//! Ours rather than sqlparser's tokenizer (or pg_query's scanner): the
//! rewriters copy the text around each placeholder byte for byte, so they
//! need each token's byte range in the original text, and
//! [`inline_binds`] runs once per execution under the simple protocol, a
//! hot path where a token is two offsets and a kind, nothing allocated.
//! sqlparser's tokenizer hands out owned tokens (a `String` per word and
//! literal) located by line and column; pg_query links PostgreSQL's C
//! parser. Only the lexical rules below are needed.

/// The SQL a text is written in, where their lexical rules differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Dialect {
    /// PostgreSQL's rules (SQLite's text is read by them too): `E'...'`
    /// strings with backslash escapes, dollar quotes, nested `/* */`
    /// comments, words that start with a letter or `_`, `$n` and `:name`
    /// placeholders, `::` casts.
    #[default]
    Postgres,
    /// MariaDB's: backslash escapes in every string, `#` comments to the
    /// end of the line, words that may start with a digit or `$`, no
    /// dollar quotes.
    MariaDb,
}

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `'...'` (`''` inside), `E'...'` (and `\'`), or MariaDB's `'...'`
    /// (both). Unclosed: to the end of the text.
    Literal,
    /// `-- ...` to the end of the line (the newline not included),
    /// `/* ... */` (nested in PostgreSQL), MariaDB's `# ...`.
    Comment,
    /// `$$...$$`, `$tag$...$tag$` (a tag of letters, digits and `_`, not
    /// starting with a digit).
    DollarQuoted,
    /// `"..."` (`""` inside) or `` `...` `` (` `` ` inside).
    QuotedName,
    /// An unquoted name or keyword: letters, digits, `_` and `$`, starting
    /// with a letter or `_` (MariaDB: also a digit or `$`); non-ASCII
    /// letters count as letters.
    Word,
    /// `$1`, `:1`, `:name`.
    Placeholder,
    /// `::`.
    Cast,
    /// A run of whitespace.
    Space,
    /// Any other character, one at a time (`;`, `(`, `,`, digits, ...).
    Other,
}

/// A token: its kind and its byte range in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
}

impl Token {
    /// Its text.
    #[inline]
    pub fn text<'a>(&self, sql: &'a str) -> &'a str {
        &sql[self.start..self.end]
    }

    /// Whether it is text that is not code: a literal, a comment, a dollar
    /// quote or a quoted name.
    #[inline]
    pub fn is_quoted(&self) -> bool {
        matches!(
            self.kind,
            Kind::Literal | Kind::Comment | Kind::DollarQuoted | Kind::QuotedName
        )
    }
}

/// The tokens of an SQL text, in order; together they cover it.
#[derive(Debug, Clone)]
pub struct Lexer<'a> {
    sql: &'a str,
    at: usize,
    dialect: Dialect,
}

/// The tokens of `sql` by PostgreSQL's rules.
pub fn tokens(sql: &str) -> Lexer<'_> {
    Lexer::new(sql, Dialect::Postgres, 0)
}

#[inline]
fn word_byte(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80
}

impl<'a> Lexer<'a> {
    /// The tokens of `sql` from byte `from` (a character boundary) on.
    pub fn new(sql: &'a str, dialect: Dialect, from: usize) -> Lexer<'a> {
        Lexer {
            sql,
            at: from.min(sql.len()),
            dialect,
        }
    }

    /// Where the next token starts.
    pub fn position(&self) -> usize {
        self.at
    }

    /// The end of a quoted text opened at `i` by `q`, a doubled `q` being
    /// one inside it and, with `backslash`, `\` escaping the next byte.
    fn quoted(&self, i: usize, q: u8, backslash: bool) -> usize {
        let b = self.sql.as_bytes();
        let mut j = i + 1;
        while j < b.len() {
            match b[j] {
                b'\\' if backslash => j += 2,
                c if c == q => {
                    if b.get(j + 1) == Some(&q) {
                        j += 2;
                    } else {
                        return j + 1;
                    }
                }
                _ => j += 1,
            }
        }
        b.len()
    }

    /// The end of a `/*` comment at `i`; PostgreSQL's nest.
    fn block_comment(&self, i: usize) -> usize {
        let b = self.sql.as_bytes();
        let nests = self.dialect == Dialect::Postgres;
        let (mut depth, mut j) = (1usize, i + 2);
        while j < b.len() {
            if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    return j;
                }
            } else if nests && b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                depth += 1;
                j += 2;
            } else {
                j += 1;
            }
        }
        b.len()
    }

    /// A dollar-quoted string at `i`, if one starts there: its end.
    fn dollar_quote(&self, i: usize) -> Option<usize> {
        let b = self.sql.as_bytes();
        if b.get(i + 1).is_some_and(u8::is_ascii_digit) {
            return None;
        }
        let mut j = i + 1;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
            j += 1;
        }
        if j >= b.len() || b[j] != b'$' {
            return None;
        }
        let tag = &self.sql[i..=j];
        Some(
            self.sql[j + 1..]
                .find(tag)
                .map_or(b.len(), |k| j + 1 + k + tag.len()),
        )
    }

    fn run(&self, from: usize, keep: impl Fn(u8) -> bool) -> usize {
        run_end(self.sql.as_bytes(), from, keep)
    }

    fn next_token(&self, i: usize) -> (Kind, usize) {
        let b = self.sql.as_bytes();
        let next = b.get(i + 1).copied();
        let pg = self.dialect == Dialect::Postgres;
        match b[i] {
            b'\'' => (Kind::Literal, self.quoted(i, b'\'', !pg)),
            b'E' | b'e' if pg && next == Some(b'\'') => {
                (Kind::Literal, self.quoted(i + 1, b'\'', true))
            }
            b'-' if next == Some(b'-') => (Kind::Comment, self.run(i, |c| c != b'\n')),
            b'#' if !pg => (Kind::Comment, self.run(i, |c| c != b'\n')),
            b'/' if next == Some(b'*') => (Kind::Comment, self.block_comment(i)),
            b'"' => (Kind::QuotedName, self.quoted(i, b'"', false)),
            b'`' => (Kind::QuotedName, self.quoted(i, b'`', false)),
            b'$' if pg => match (self.dollar_quote(i), next) {
                (Some(end), _) => (Kind::DollarQuoted, end),
                (None, Some(d)) if d.is_ascii_digit() => {
                    (Kind::Placeholder, self.run(i + 1, |c| c.is_ascii_digit()))
                }
                _ => (Kind::Other, i + 1),
            },
            b':' if next == Some(b':') => (Kind::Cast, i + 2),
            b':' if pg && next.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') => (
                Kind::Placeholder,
                self.run(i + 1, |c| c.is_ascii_alphanumeric() || c == b'_'),
            ),
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                (Kind::Word, self.run(i + 1, word_byte))
            }
            c if !pg && (c.is_ascii_digit() || c == b'$') => {
                (Kind::Word, self.run(i + 1, word_byte))
            }
            c if c.is_ascii_whitespace() => {
                (Kind::Space, self.run(i + 1, |c| c.is_ascii_whitespace()))
            }
            _ => (
                Kind::Other,
                i + self.sql[i..].chars().next().map_or(1, char::len_utf8),
            ),
        }
    }
}

impl Iterator for Lexer<'_> {
    type Item = Token;

    #[inline]
    fn next(&mut self) -> Option<Token> {
        if self.at >= self.sql.len() {
            return None;
        }
        let start = self.at;
        let (kind, end) = self.next_token(start);
        self.at = end;
        Some(Token { kind, start, end })
    }
}

/// If a string literal, a comment or a dollar-quoted string starts at byte
/// `i`, where it ends (the byte after it; the end of the text if it is not
/// closed), by PostgreSQL's rules.
pub fn skip_literal_or_comment(sql: &str, i: usize) -> Option<usize> {
    Lexer::new(sql, Dialect::Postgres, i)
        .next()
        .filter(|t| matches!(t.kind, Kind::Literal | Kind::Comment | Kind::DollarQuoted))
        .map(|t| t.end)
}

/// Copies `sql`, letting `token` rewrite each token outside quoted text:
/// it appends its replacement and returns true, or returns false to have
/// the token copied as it is; it may take further tokens from the lexer
/// (a cast after a placeholder). Every placeholder rewriter walks SQL
/// this way.
fn rewrite<'a>(
    sql: &'a str,
    mut token: impl FnMut(Token, &mut Lexer<'a>, &mut String) -> bool,
) -> String {
    let mut out = String::with_capacity(sql.len() + 16);
    let mut lexer = tokens(sql);
    while let Some(t) = lexer.next() {
        // Literals, comments, dollar quotes and quoted names are copied
        // as they are: a `:name` or `$1` inside them is not a placeholder.
        if t.is_quoted() || !token(t, &mut lexer, &mut out) {
            out.push_str(t.text(sql));
        }
    }
    out
}

/// `$n`'s number when the token is one and `n` is at least 1.
#[inline]
fn dollar_number(sql: &str, t: &Token) -> Option<usize> {
    if t.kind != Kind::Placeholder || sql.as_bytes()[t.start] != b'$' {
        return None;
    }
    sql[t.start + 1..t.end]
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
}

/// The end of the run of bytes from `start` that `keep` accepts.
fn run_end(b: &[u8], start: usize, keep: impl Fn(u8) -> bool) -> usize {
    b[start..]
        .iter()
        .position(|&x| !keep(x))
        .map_or(b.len(), |p| start + p)
}

/// Rewrites Oracle-style placeholders (`:1`, `:name`) as PostgreSQL's
/// (`$1`...), numbered by first appearance (a repeated `:name` reuses its
/// number, as Oracle binds by name). Leaves quoted text, `::` casts and
/// `$n` alone.
pub fn postgres_placeholders(sql: &str) -> String {
    let mut names: Vec<&str> = Vec::new();
    rewrite(sql, |t, _, out| {
        if t.kind != Kind::Placeholder || sql.as_bytes()[t.start] != b':' {
            return false;
        }
        let name = &sql[t.start + 1..t.end];
        let n = match names.iter().position(|x| *x == name) {
            Some(p) => p + 1,
            None => {
                names.push(name);
                names.len()
            }
        };
        out.push_str(&format!("${n}"));
        true
    })
}

/// The number of bind values `engine_sql` (placeholders already `$n`)
/// takes: its highest `$n`, 0 for none.
pub fn placeholder_count(engine_sql: &str) -> usize {
    tokens(engine_sql)
        .filter_map(|t| dollar_number(engine_sql, &t))
        .max()
        .unwrap_or(0)
}

/// Where the first placeholder of `sql` (`:1`, `:name` or `$1`, outside
/// quoted text) starts, as a byte offset.
pub fn first_placeholder(sql: &str) -> Option<usize> {
    tokens(sql)
        .find(|t| t.kind == Kind::Placeholder)
        .map(|t| t.start)
}

/// Copies `sql`, letting `f` write what replaces each `$n` placeholder
/// outside quoted text (`n` counts from 1).
pub fn map_dollar_placeholders(sql: &str, mut f: impl FnMut(usize, &mut String)) -> String {
    rewrite(sql, |t, _, out| match dollar_number(sql, &t) {
        Some(n) => {
            f(n, out);
            true
        }
        None => false,
    })
}

/// The type name of a `::type` cast right after a placeholder, and the
/// lexer past it: a word of letters, digits and `_` straight after `::`.
fn cast_after<'a>(sql: &'a str, lexer: &Lexer<'a>) -> Option<(&'a str, Lexer<'a>)> {
    let mut ahead = lexer.clone();
    ahead.next().filter(|c| c.kind == Kind::Cast)?;
    let at = ahead.position();
    let b = sql.as_bytes();
    let end = run_end(b, at, |x| x.is_ascii_alphanumeric() || x == b'_');
    if end == at {
        return None;
    }
    Some((&sql[at..end], Lexer::new(sql, Dialect::Postgres, end)))
}

/// As [`map_dollar_placeholders`] for engines without `::` casts: a
/// `$n::type` (from a bind file's `#types:` line) becomes
/// `CAST(<placeholder> AS type)`, the placeholder written by `f`.
pub fn map_typed_placeholders(sql: &str, mut f: impl FnMut(usize, &mut String)) -> String {
    rewrite(sql, |t, lexer, out| {
        let Some(n) = dollar_number(sql, &t) else {
            return false;
        };
        match cast_after(sql, lexer) {
            Some((ty, past)) => {
                out.push_str("CAST(");
                f(n, out);
                out.push_str(" AS ");
                out.push_str(ty);
                out.push(')');
                *lexer = past;
            }
            None => f(n, out),
        }
        true
    })
}

/// Gives each `$n` of `sql` the type `types[n - 1]` as a `::type` cast
/// (unless it has one already): how a bind file's `#types:` line reaches
/// the statement.
pub fn cast_placeholders(sql: &str, types: &[Option<String>]) -> String {
    rewrite(sql, |t, _, out| {
        let Some(n) = dollar_number(sql, &t) else {
            return false;
        };
        out.push_str(t.text(sql));
        if let Some(Some(ty)) = types.get(n - 1) {
            if !sql[t.end..].starts_with("::") {
                out.push_str("::");
                out.push_str(ty);
            }
        }
        true
    })
}

/// The statement with its `$n` placeholders replaced by the values as SQL
/// literals (quoted, `'` doubled; NULL for `None`), for the simple query
/// protocol, which sends no separate values. Quoted text is left alone.
pub fn inline_binds(sql: &str, values: &[Option<&str>]) -> String {
    inline_literals(sql, values, false)
}

/// As [`inline_binds`]; with `backslashes` a `\` is doubled too, as
/// MariaDB's string literals need.
pub fn inline_literals(sql: &str, values: &[Option<&str>], backslashes: bool) -> String {
    map_dollar_placeholders(sql, |n, out| match values.get(n - 1) {
        Some(Some(v)) => {
            out.push('\'');
            for ch in v.chars() {
                match ch {
                    '\'' => out.push_str("''"),
                    '\\' if backslashes => out.push_str("\\\\"),
                    _ => out.push(ch),
                }
            }
            out.push('\'');
        }
        Some(None) => out.push_str("NULL"),
        None => {
            out.push('$');
            out.push_str(&n.to_string());
        }
    })
}

/// `text` as an SQL string literal: in single quotes, each quote doubled
/// (standard SQL; PostgreSQL with standard_conforming_strings, its default).
pub fn quote_literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

#[cfg(test)]
mod tests {
    use super::skip_literal_or_comment as skip;

    use super::{tokens, Dialect, Kind, Lexer};

    /// Each token's kind and text.
    fn lex(sql: &str, d: Dialect) -> Vec<(Kind, &str)> {
        let toks: Vec<_> = Lexer::new(sql, d, 0).collect();
        // The tokens cover the text, in order, with nothing left out.
        let joined: String = toks.iter().map(|t| t.text(sql)).collect();
        assert_eq!(joined, sql);
        toks.iter().map(|t| (t.kind, t.text(sql))).collect()
    }

    fn kinds_of(sql: &str, kind: Kind) -> Vec<&str> {
        lex(sql, Dialect::Postgres)
            .into_iter()
            .filter(|(k, _)| *k == kind)
            .map(|(_, t)| t)
            .collect()
    }

    #[test]
    fn dollar_quotes_end_at_their_own_tag() {
        let sql = "do $fn$ begin perform $$x$$; raise '$1'; end $fn$; select $1, $2x";
        assert_eq!(
            kinds_of(sql, Kind::DollarQuoted),
            ["$fn$ begin perform $$x$$; raise '$1'; end $fn$"]
        );
        assert_eq!(kinds_of(sql, Kind::Placeholder), ["$1", "$2"]);
        // A tag may not start with a digit; an unclosed quote runs to the end.
        assert_eq!(kinds_of("$a_1$ x", Kind::DollarQuoted), ["$a_1$ x"]);
        // `$` inside a word is part of it, not a quote or a placeholder.
        assert_eq!(kinds_of("select a$1$b", Kind::Word), ["select", "a$1$b"]);
    }

    #[test]
    fn postgres_comments_nest() {
        let sql = "select /* a /* b */ :no */ :yes -- :no\n1";
        assert_eq!(
            kinds_of(sql, Kind::Comment),
            ["/* a /* b */ :no */", "-- :no"]
        );
        assert_eq!(kinds_of(sql, Kind::Placeholder), [":yes"]);
        // MariaDB's do not.
        let m = lex("/* a /* b */ c", Dialect::MariaDb);
        assert_eq!(m[0], (Kind::Comment, "/* a /* b */"));
    }

    #[test]
    fn e_strings_take_backslash_escapes() {
        let sql = r"select E'it\'s :no', e'\\', 'a\', :yes";
        assert_eq!(
            kinds_of(sql, Kind::Literal),
            [r"E'it\'s :no'", r"e'\\'", r"'a\'"]
        );
        assert_eq!(kinds_of(sql, Kind::Placeholder), [":yes"]);
        // E at the end of a word is the word's.
        assert_eq!(kinds_of("select type'x'", Kind::Literal), ["'x'"]);
    }

    #[test]
    fn quoted_names_double_their_quote() {
        let sql = "select \"a \"\" :no\", `b`` :no`, :yes from \"open";
        assert_eq!(
            kinds_of(sql, Kind::QuotedName),
            ["\"a \"\" :no\"", "`b`` :no`", "\"open"]
        );
        assert_eq!(kinds_of(sql, Kind::Placeholder), [":yes"]);
    }

    #[test]
    fn casts_are_not_placeholders() {
        assert_eq!(
            lex("x::int,:n,:1", Dialect::Postgres),
            [
                (Kind::Word, "x"),
                (Kind::Cast, "::"),
                (Kind::Word, "int"),
                (Kind::Other, ","),
                (Kind::Placeholder, ":n"),
                (Kind::Other, ","),
                (Kind::Placeholder, ":1"),
            ]
        );
        assert_eq!(kinds_of("a[1:n] :", Kind::Placeholder), [":n"]);
    }

    #[test]
    fn mariadb_escapes_hash_comments_and_words() {
        let m = lex("select 'it\\'s', `t`, 1abc, $x # c\n;", Dialect::MariaDb);
        let of =
            |k: Kind| -> Vec<&str> { m.iter().filter(|(x, _)| *x == k).map(|(_, t)| *t).collect() };
        assert_eq!(of(Kind::Literal), ["'it\\'s'"]);
        assert_eq!(of(Kind::Comment), ["# c"]);
        assert_eq!(of(Kind::Word), ["select", "1abc", "$x"]);
        assert_eq!(of(Kind::QuotedName), ["`t`"]);
        // In PostgreSQL `#` is an operator and `1abc` a number and a word.
        let p = kinds_of("select 1abc # 2", Kind::Word);
        assert_eq!(p, ["select", "abc"]);
    }

    #[test]
    fn non_ascii_letters_make_words_and_other_text_stays_whole() {
        assert_eq!(
            kinds_of("select café, ü_1 from t", Kind::Word),
            ["select", "café", "ü_1", "from", "t"]
        );
        assert_eq!(tokens("").count(), 0);
        lex("'unclosed", Dialect::Postgres);
        lex("é€ ; -- x", Dialect::MariaDb);
    }

    #[test]
    fn placeholders_in_comments_and_e_strings_are_not_found() {
        use super::{first_placeholder, placeholder_count};
        // Old scanners ended the comment at its first `*/`, the E string
        // at its `\'`.
        let sql = "select /* /* */ :no */ :yes";
        assert_eq!(&sql[first_placeholder(sql).unwrap()..], ":yes");
        let sql = r"select E'\'', :yes";
        assert_eq!(&sql[first_placeholder(sql).unwrap()..], ":yes");
        assert_eq!(placeholder_count("select /* /* */ $9 */ $1"), 1);
    }

    #[test]
    fn placeholders_are_counted_and_found_outside_quotes() {
        use super::{first_placeholder, placeholder_count, postgres_placeholders};
        assert_eq!(
            placeholder_count(&postgres_placeholders("select :a, :b, :a")),
            2
        );
        assert_eq!(placeholder_count("select $3, '$9'"), 3);
        assert_eq!(placeholder_count("select now()::date, 'x:y'"), 0);
        let sql = "select 1::int,\n -- :no\n 'it''s :no' , :yes";
        assert_eq!(&sql[first_placeholder(sql).unwrap()..], ":yes");
        assert_eq!(first_placeholder("select $$ :no $$"), None);
    }

    #[test]
    fn literals_comments_and_dollar_quotes_are_skipped_whole() {
        let s = "x 'it''s' y";
        assert_eq!(&s[2..skip(s, 2).unwrap()], "'it''s'");
        let s = "a -- c\nb";
        assert_eq!(&s[2..skip(s, 2).unwrap()], "-- c");
        let s = "a /* c */ b";
        assert_eq!(&s[2..skip(s, 2).unwrap()], "/* c */");
        let s = "do $f$ begin; end $f$;";
        assert_eq!(&s[3..skip(s, 3).unwrap()], "$f$ begin; end $f$");
        let s = "$$x$$";
        assert_eq!(skip(s, 0), Some(5));
        assert_eq!(skip("$1 + 2", 0), None, "a placeholder");
        assert_eq!(skip("'open", 0), Some(5), "unclosed: to the end");
        assert_eq!(skip("abc", 1), None);
    }
}
