//! What a line of a trace says about where it belongs: its cursor number,
//! its `***` context (session, module, ...), the header facts. The reader
//! hands out every line with its kind; these are the few facts of a line's
//! text the utilities need beyond it, read by prefix (no regex: they run
//! once per line).

use std::ops::Range;

/// The lines that name a cursor as `#N` right after a fixed prefix.
const CURSOR_PREFIXES: &[&[u8]] = &[
    b"PARSING IN CURSOR #",
    b"PARSE ERROR #",
    b"PARSE #",
    b"EXEC #",
    b"FETCH #",
    b"CLOSE #",
    b"UNMAP #",
    b"SORT UNMAP #",
    b"WAIT #",
    b"BINDS #",
    b"STAT #",
    b"ERROR #",
];

pub const SEPARATOR: &[u8] = b"=====================";

/// Where the cursor number is in a line (`140174154976552`, `0x7ff2…`,
/// `1`), if the line names one.
pub fn cursor_span(b: &[u8]) -> Option<Range<usize>> {
    if !matches!(
        b.first(),
        Some(b'P' | b'E' | b'F' | b'C' | b'U' | b'S' | b'W' | b'B')
    ) {
        return None;
    }
    let p = CURSOR_PREFIXES.iter().find(|p| b.starts_with(p))?;
    let s = p.len();
    let n = b[s..]
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric())
        .count();
    (n > 0).then_some(s..s + n)
}

/// A cursor number as a key: decimal, or hex after `0x`; one that does
/// not fit in 64 bits keys by its text's hash. (Digits read by hand: it
/// runs for most lines of a crop or merge, where `str::parse` after a
/// UTF-8 check cost a tenth of a merge's instructions.)
pub fn cursor_id(raw: &[u8]) -> u64 {
    let parsed = match raw.strip_prefix(b"0x") {
        Some(h) => number(h, 16),
        None => number(raw, 10),
    };
    parsed.unwrap_or_else(|| {
        use std::hash::{Hash, Hasher};
        let mut h = rustc_hash::FxHasher::default();
        raw.hash(&mut h);
        h.finish() | (1 << 63)
    })
}

/// What `u64::from_str_radix` reads from the digits of a cursor number
/// (ASCII letters and digits: no sign), or `None`.
fn number(digits: &[u8], radix: u32) -> Option<u64> {
    if digits.is_empty() {
        return None;
    }
    // Up to 19 decimal digits cannot overflow: no checked arithmetic.
    if radix == 10 && digits.len() <= 19 {
        return digits.iter().all(u8::is_ascii_digit).then(|| {
            digits
                .iter()
                .fold(0u64, |n, &c| n * 10 + u64::from(c - b'0'))
        });
    }
    digits.iter().try_fold(0u64, |n, &c| {
        let d = char::from(c).to_digit(radix)?;
        n.checked_mul(u64::from(radix))?.checked_add(u64::from(d))
    })
}

pub fn is_pic(b: &[u8]) -> bool {
    b.starts_with(b"PARSING IN CURSOR #")
}

/// The value of `key='…'` in a PARSING IN CURSOR line (`sqlid`, `ad`).
pub fn quoted_field<'a>(b: &'a [u8], key: &[u8]) -> Option<&'a [u8]> {
    let mut pat = Vec::with_capacity(key.len() + 3);
    pat.push(b' ');
    pat.extend_from_slice(key);
    pat.extend_from_slice(b"='");
    let i = memchr::memmem::find(b, &pat)? + pat.len();
    let n = memchr::memchr(b'\'', &b[i..])?;
    Some(&b[i..i + n])
}

/// The integer after ` key=` (`hv=`, `tim=`).
pub fn int_field(b: &[u8], key: &[u8]) -> Option<i64> {
    let mut pat = Vec::with_capacity(key.len() + 2);
    pat.push(b' ');
    pat.extend_from_slice(key);
    pat.push(b'=');
    let i = memchr::memmem::rfind(b, &pat)? + pat.len();
    let n = b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
    std::str::from_utf8(&b[i..i + n]).ok()?.parse().ok()
}

/// What a `***` line holds.
#[derive(Debug, PartialEq, Eq)]
pub enum Star<'a> {
    /// `*** 2022-09-01T17:39:34.556684-07:00 (PDB1(3))`.
    Stamp,
    /// `*** MODULE NAME:(SQL*Plus) 2022-…`: the name and the value.
    Named(&'a [u8], &'a [u8]),
    /// trcsess's `*** [ Unix process pid: 9850 ]`.
    Process(&'a [u8]),
    /// Anything else (`*** TRACE CONTINUED FROM FILE …`).
    Other,
}

/// Reads a `***` line; `None` for any other line.
pub fn star(b: &[u8]) -> Option<Star<'_>> {
    let rest = b.strip_prefix(b"***")?.trim_ascii_start();
    if rest.first().is_some_and(u8::is_ascii_digit) {
        return Some(Star::Stamp);
    }
    if let Some(r) = rest.strip_prefix(b"[ Unix process pid: ") {
        let n = r.iter().take_while(|c| c.is_ascii_digit()).count();
        return Some(Star::Process(&r[..n]));
    }
    let Some(open) = memchr::memmem::find(rest, b":(") else {
        return Some(Star::Other);
    };
    let name = &rest[..open];
    let v = &rest[open + 2..];
    // The value may hold ") " itself (`MODULE NAME:(perl@h (TNS V1-V3))`):
    // the timestamp is after the last one.
    let end = match memchr::memmem::rfind(v, b") ") {
        Some(i) => i,
        None => v.len() - usize::from(v.ends_with(b")")),
    };
    Some(Star::Named(name, &v[..end]))
}

/// The timestamp of a `***` line as the reader reads it (the line's wall
/// clock, µs since 1970 in the trace's local time), and the text after
/// the seconds' fraction up to the first space (the zone: `-07:00`).
pub fn stamp(b: &[u8]) -> Option<(i64, &[u8])> {
    let rest = b.strip_prefix(b"***")?.trim_ascii_start();
    let s = if rest.first().is_some_and(u8::is_ascii_digit) {
        rest
    } else if rest.ends_with(b"***") || rest.starts_with(b"[") {
        return None;
    } else {
        &rest[memchr::memmem::rfind(rest, b") ")? + 2..]
    };
    let wall = tracelab_trace::parse_wall_clock(s)?;
    let after = s
        .iter()
        .skip(19)
        .position(|c| !(c.is_ascii_digit() || *c == b'.'))
        .map_or(s.len(), |i| i + 19);
    let end = s[after..]
        .iter()
        .position(|c| *c == b' ')
        .map_or(s.len(), |i| i + after);
    Some((wall, &s[after..end]))
}

/// The context a logical session is found by (trcsess's keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Session,
    ClientId,
    Service,
    Module,
    Action,
}

impl Field {
    pub const ALL: [Field; 5] = [
        Field::Session,
        Field::ClientId,
        Field::Service,
        Field::Module,
        Field::Action,
    ];

    /// From the name in a `*** NAME:(value)` line.
    pub fn of_star(name: &[u8]) -> Option<Field> {
        Some(match name {
            b"SESSION ID" => Field::Session,
            b"CLIENT ID" => Field::ClientId,
            b"SERVICE NAME" => Field::Service,
            b"MODULE NAME" => Field::Module,
            b"ACTION NAME" => Field::Action,
            _ => return None,
        })
    }

    pub fn index(self) -> usize {
        self as usize
    }
}

/// A 9i `APPNAME mod='SQL*Plus' mh=… act='' ah=…` line: module and action.
pub fn appname(b: &[u8]) -> Option<(&[u8], &[u8])> {
    let r = b.strip_prefix(b"APPNAME mod='")?;
    let m = memchr::memmem::find(r, b"' mh=")?;
    let a = memchr::memmem::find(r, b" act='")? + 6;
    let ae = memchr::memmem::rfind(r, b"' ah=").filter(|e| *e >= a)?;
    Some((&r[..m], &r[a..ae]))
}

/// Facts of a trace's header (the lines before its first `***` line).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeaderFacts {
    pub version: Option<String>,
    /// `Unix process pid: 9850, image: …`.
    pub pid: Option<String>,
    pub instance: Option<String>,
}

impl HeaderFacts {
    /// Reads what a header line says.
    pub fn see(&mut self, b: &[u8]) {
        let text = |s: &[u8]| String::from_utf8_lossy(s).trim().to_string();
        if let Some(v) = b.strip_prefix(b"Version ") {
            // `Version 19.12.0.0.0` under the banner (the OS's `Version:`
            // line has a colon).
            if v.first().is_some_and(u8::is_ascii_digit) {
                self.version = Some(text(v));
            }
        } else if let Some(r) = b.strip_prefix(b"Unix process pid: ") {
            let n = r.iter().take_while(|c| c.is_ascii_digit()).count();
            self.pid = Some(text(&r[..n]));
        } else if let Some(r) = b.strip_prefix(b"Instance name:") {
            self.instance = Some(text(r));
        } else if b.starts_with(b"Oracle") && self.version.is_none() {
            // The banner's release, for versions without a `Version` line
            // (12.2, 9i: "… Release 12.2.0.1.0 - 64bit Production").
            if let Some(i) = memchr::memmem::find(b, b"Release ") {
                let r = &b[i + 8..];
                let n = r
                    .iter()
                    .take_while(|c| c.is_ascii_digit() || **c == b'.')
                    .count();
                if n > 0 {
                    self.version = Some(text(&r[..n]));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_numbers_are_found_after_their_prefix() {
        let l = b"WAIT #140174156064264: nam='x' ela= 4 tim=1";
        assert_eq!(&l[cursor_span(l).unwrap()], b"140174156064264");
        let l = b"SORT UNMAP #0x7ff2:c=1";
        assert_eq!(&l[cursor_span(l).unwrap()], b"0x7ff2");
        assert_eq!(cursor_span(b"STAT #7 id=1"), Some(6..7));
        assert_eq!(cursor_span(b"XCTEND rlbk=0"), None);
        assert_eq!(cursor_span(b"Some text"), None);
        assert_eq!(cursor_id(b"0x10"), 16);
        assert_eq!(cursor_id(b"17"), 17);
        for raw in [
            &b"140174154976552"[..],
            b"0x7ff2A",
            b"18446744073709551615",
            b"18446744073709551616",
            b"9999999999999999999",
            b"99999999999999999999",
            b"0xffffffffffffffff0",
            b"12ab",
            b"0x",
            b"",
        ] {
            let s = std::str::from_utf8(raw).unwrap();
            let std = match s.strip_prefix("0x") {
                Some(h) => u64::from_str_radix(h, 16).ok(),
                None => s.parse().ok(),
            };
            match std {
                Some(v) => assert_eq!(cursor_id(raw), v, "{s}"),
                None => assert_eq!(cursor_id(raw) >> 63, 1, "{s}: keyed by its hash"),
            }
        }
    }

    #[test]
    fn star_lines_give_their_value_even_with_parentheses_in_it() {
        assert_eq!(
            star(b"*** MODULE NAME:(perl@h (TNS V1-V3)) 2022-09-01T17:39:34.556708-07:00"),
            Some(Star::Named(b"MODULE NAME", b"perl@h (TNS V1-V3)"))
        );
        assert_eq!(
            star(b"*** CLIENT ID:() 2019-07-09T09:57:07.703512-07:00"),
            Some(Star::Named(b"CLIENT ID", b""))
        );
        assert_eq!(
            star(b"*** [ Unix process pid: 9850 ]"),
            Some(Star::Process(b"9850"))
        );
        assert_eq!(star(b"*** 2018-04-05 18:18:44.341"), Some(Star::Stamp));
        let (w, zone) = stamp(b"*** SESSION ID:(1.2) 2022-09-01T17:39:34.556701-07:00").unwrap();
        assert_eq!(zone, b"-07:00");
        assert_eq!(
            tracelab_trace::format_wall_clock(w),
            "2022-09-01T17:39:34.556701"
        );
        let (_, zone) = stamp(b"*** 2024-03-26T18:41:12.322015-07:00 (PDB1(3))").unwrap();
        assert_eq!(zone, b"-07:00");
        assert_eq!(stamp(b"*** 2018-04-05 18:18:44.341").unwrap().1, b"");
    }

    #[test]
    fn header_facts_take_the_version_line_or_the_banner() {
        let mut h = HeaderFacts::default();
        h.see(b"Oracle Database 12c Enterprise Edition Release 12.2.0.1.0 - 64bit Production");
        h.see(b"Version:\t#2 SMP Fri Nov 4 15:48:30 PDT 2016");
        h.see(b"Unix process pid: 9850, image: oracle@x");
        assert_eq!(h.version.as_deref(), Some("12.2.0.1.0"));
        assert_eq!(h.pid.as_deref(), Some("9850"));
        let mut h = HeaderFacts::default();
        h.see(b"Oracle Database 19c Enterprise Edition Release 19.0.0.0.0 - Production");
        h.see(b"Version 19.12.0.0.0");
        assert_eq!(h.version.as_deref(), Some("19.12.0.0.0"));
        assert_eq!(
            appname(b"APPNAME mod='SQL*Plus' mh=3669949024 act='' ah=4029777240"),
            Some((&b"SQL*Plus"[..], &b""[..]))
        );
    }
}
