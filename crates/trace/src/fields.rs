//! Field parsers for single trace lines. Pure functions over bytes, written
//! for the reader's inner loop: no allocation, no regex.

use crate::call::{DbFields, WaitFields};

/// Parses an optionally negative decimal integer; the whole slice must be
/// digits.
#[inline]
pub(crate) fn int(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first() {
        Some(b'-') => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v * 10 + d as i64;
    }
    Some(if neg { -v } else { v })
}

/// Why a field's value is not a number. Values are capped at 18 digits
/// (so that sums, differences and unit conversions of them can never
/// wrap); a longer run of digits says so rather than "not a number".
#[cold]
fn not_a_number(key: &[u8], value: &[u8]) -> String {
    let digits = value.strip_prefix(b"-").unwrap_or(value);
    let why = if digits.len() > 18 && digits.iter().all(u8::is_ascii_digit) {
        " (more than 18 digits: too large for a trace's field, read as missing)"
    } else {
        ""
    };
    format!(
        "expected a number after '{}=', found '{}'{why}",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(value)
    )
}

/// Splits `#<cursor>:rest` or `#<cursor> rest` into the cursor text, a
/// numeric key (decimal or `0x` hex) and the rest after the separator.
pub(crate) fn cursor(s: &[u8]) -> Option<(&[u8], u64, &[u8])> {
    let s = s.strip_prefix(b"#")?;
    if let Some(hex) = s.strip_prefix(b"0x").or_else(|| s.strip_prefix(b"0X")) {
        let len = hex.iter().take_while(|b| b.is_ascii_hexdigit()).count();
        let end = 2 + len;
        let key = u64::from_str_radix(std::str::from_utf8(&hex[..len]).ok()?, 16).ok()?;
        return finish_cursor(s, end, key);
    }
    // Decimal: one pass that finds the end and computes the key.
    let mut key: u64 = 0;
    let mut end = 0;
    for &b in s.iter().take(20) {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        key = key.wrapping_mul(10).wrapping_add(d as u64);
        end += 1;
    }
    // 19 digits always fit in a u64; longer ids are not cursor numbers.
    if end == 0 || end > 19 {
        return None;
    }
    finish_cursor(s, end, key)
}

/// The cursor id must end at `:`, a space or the end of the line.
#[inline]
fn finish_cursor(s: &[u8], end: usize, key: u64) -> Option<(&[u8], u64, &[u8])> {
    match s.get(end) {
        None => Some((&s[..end], key, &[][..])),
        Some(b':') | Some(b' ') => Some((&s[..end], key, &s[end + 1..])),
        Some(_) => None,
    }
}

/// Parses a comma-separated `key=value` list of a database call (also the
/// `, `-separated XCTEND list and the LOB list). Unknown keys are ignored;
/// a known key whose value is not a number is an error naming the key.
///
/// One pass over the bytes: this runs for every database call of a trace.
pub(crate) fn db_fields(s: &[u8], f: &mut DbFields) -> Result<(), String> {
    if canonical(s, f) {
        return Ok(());
    }
    *f = DbFields::default();
    let mut i = 0;
    let n = s.len();
    while i < n {
        while i < n && (s[i] == b' ' || s[i] == b',') {
            i += 1;
        }
        let key_start = i;
        while i < n && s[i] != b'=' && s[i] != b',' {
            i += 1;
        }
        if i >= n || s[i] == b',' {
            continue; // a word without '=': tolerated
        }
        let key = &s[key_start..i];
        i += 1;
        let val_start = i;
        let neg = i < n && s[i] == b'-';
        if neg {
            i += 1;
        }
        let digits_start = i;
        let mut v: i64 = 0;
        while i < n && s[i].is_ascii_digit() && i - digits_start < 18 {
            v = v * 10 + (s[i] - b'0') as i64;
            i += 1;
        }
        let ok = i > digits_start && (i == n || s[i] == b',' || s[i] == b' ');
        // Dispatch on length and first byte: a slice `match` compiles to a
        // chain of memcmp calls, and this runs for every field of every
        // database call.
        let slot = match (key.len(), key.first().copied().unwrap_or(0)) {
            (1, b'c') => &mut f.c,
            (1, b'e') => &mut f.e,
            (1, b'p') => &mut f.p,
            (1, b'r') => &mut f.r,
            (2, b'c') if key[1] == b'r' => &mut f.cr,
            (2, b'c') if key[1] == b'u' => &mut f.cu,
            (2, b'o') if key[1] == b'g' => &mut f.og,
            (3, b'm') if key == b"mis" => &mut f.mis,
            (3, b'd') if key == b"dep" => &mut f.dep,
            (3, b'p') if key == b"plh" => &mut f.plh,
            (3, b't') if key == b"tim" => &mut f.tim,
            (4, b't') if key == b"type" => &mut f.typ,
            (4, b'r') if key == b"rlbk" => &mut f.rlbk,
            (5, b'b') if key == b"bytes" => &mut f.bytes,
            (7, b'r') if key == b"rd_only" => &mut f.rd_only,
            _ => {
                while i < n && s[i] != b',' {
                    i += 1;
                }
                continue;
            }
        };
        if ok {
            *slot = Some(if neg { -v } else { v });
        } else {
            while i < n && s[i] != b',' {
                i += 1;
            }
            // LOB lines write `type=TEMPORARY LOB`, CLOSE lines `type=1`.
            if key != b"type" {
                return Err(not_a_number(key, &s[val_start..i]));
            }
        }
    }
    depth(f)
}

/// Oracle's recursive depths start at 0: a negative one is damage, and the
/// line is refused (a file's `$depmin` must not depend on it).
#[inline]
fn depth(f: &DbFields) -> Result<(), String> {
    match f.dep {
        Some(d) if d < 0 => Err(format!(
            "expected a depth of 0 or more after 'dep=', found '{d}'"
        )),
        _ => Ok(()),
    }
}

/// The fields of PARSE, EXEC and FETCH lines from 11.1.0.7 on, in the
/// order Oracle writes them: read without looking up keys. `false` when
/// the line is laid out otherwise (the general parser then reads it).
#[inline]
fn canonical(s: &[u8], f: &mut DbFields) -> bool {
    let mut i = 0;
    let mut read = || -> Option<()> {
        f.c = Some(field(s, &mut i, b"c=", b',')?);
        f.e = Some(field(s, &mut i, b"e=", b',')?);
        if s.get(i) == Some(&b'd') {
            // CLOSE: c, e, dep, type, tim.
            f.dep = Some(field(s, &mut i, b"dep=", b',').filter(|d| *d >= 0)?);
            f.typ = Some(field(s, &mut i, b"type=", b',')?);
            f.tim = Some(field(s, &mut i, b"tim=", b'\n')?);
            return Some(());
        }
        f.p = Some(field(s, &mut i, b"p=", b',')?);
        f.cr = Some(field(s, &mut i, b"cr=", b',')?);
        f.cu = Some(field(s, &mut i, b"cu=", b',')?);
        f.mis = Some(field(s, &mut i, b"mis=", b',')?);
        f.r = Some(field(s, &mut i, b"r=", b',')?);
        // A negative depth is damage: the general parser says so.
        f.dep = Some(field(s, &mut i, b"dep=", b',').filter(|d| *d >= 0)?);
        f.og = Some(field(s, &mut i, b"og=", b',')?);
        f.plh = Some(field(s, &mut i, b"plh=", b',')?);
        f.tim = Some(field(s, &mut i, b"tim=", b'\n')?);
        Some(())
    };
    read().is_some()
}

/// `key` then an integer then `sep` (`\n` meaning the end of the line)
/// at `*i`; advances past the separator.
#[inline(always)]
fn field(s: &[u8], i: &mut usize, key: &'static [u8], sep: u8) -> Option<i64> {
    let rest = s.get(*i..)?;
    let rest = rest.strip_prefix(key)?;
    let (neg, digits) = match rest.split_first() {
        Some((b'-', tail)) => (true, tail),
        _ => (false, rest),
    };
    let mut v: i64 = 0;
    let mut n = 0;
    for &b in digits {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(d as i64);
        n += 1;
    }
    if n == 0 || n > 18 {
        return None;
    }
    let after = &digits[n..];
    let used = match (sep, after.first()) {
        (b'\n', None) => 0,
        (b',', Some(b',')) => 1,
        _ => return None,
    };
    *i = s.len() - after.len() + used;
    Some(if neg { -v } else { v })
}

/// If `s` ends with `<key><integer>`, the integer and the text before the
/// key. Reads backwards from the end: cheaper than searching forwards.
/// The value is what [`int`] makes of the run of digits and `-` before
/// the end, read in the same backward pass that finds the run (a second,
/// forward pass over `tim=`'s 14 digits cost as much as the first).
fn trailing_int<'a, const K: usize>(s: &'a [u8], key: &[u8; K]) -> Option<(Option<i64>, &'a [u8])> {
    let (mut at, mut v, mut unit, mut digits) = (s.len(), 0i64, 1i64, 0usize);
    while at > 0 && s[at - 1].is_ascii_digit() {
        if digits < 18 {
            v += i64::from(s[at - 1] - b'0') * unit;
            unit = unit.wrapping_mul(10);
        }
        digits += 1;
        at -= 1;
    }
    let neg = at > 0 && s[at - 1] == b'-';
    at -= usize::from(neg);
    // More digits or signs before: a run `int` does not read as a number.
    let mut valid = (1..=18).contains(&digits);
    while at > 0 && (s[at - 1].is_ascii_digit() || s[at - 1] == b'-') {
        valid = false;
        at -= 1;
    }
    // A fixed-size compare: registers, not a memcmp call.
    let before = &s[..at];
    if before.last_chunk::<K>()? != key {
        return None;
    }
    let value = valid.then_some(if neg { -v } else { v });
    debug_assert_eq!(value, int(&s[at..]));
    Some((value, &before[..at - K]))
}

/// A parsed WAIT line body (after `WAIT #cursor:`).
pub(crate) struct Wait<'a> {
    pub name: &'a [u8],
    pub fields: WaitFields<'a>,
}

/// Parses ` nam='<event>' ela= <µs> <p1name>=<v> <p2name>=<v> <p3name>=<v>
/// obj#=<n> tim=<µs>`; 9i lines have no obj# and no tim. Parameter names
/// contain spaces and `#`, so the values are read positionally: each value
/// is the word after an `=`.
pub(crate) fn wait(s: &[u8]) -> Result<Wait<'_>, String> {
    let s = s.strip_prefix(b" ").unwrap_or(s);
    let body = match s.split_first_chunk::<5>() {
        Some((b"nam='", body)) => body,
        _ => return Err("expected nam='<event>' after the cursor".to_string()),
    };
    let mut close = None;
    let mut from = 0;
    while let Some(q) = memchr::memchr(b'\'', &body[from..]) {
        let at = from + q;
        if matches!(body[at..].first_chunk::<6>(), Some(b"' ela=")) {
            close = Some(at);
            break;
        }
        from = at + 1;
    }
    let close = close.ok_or_else(|| "expected ' ela=' after the event name".to_string())?;
    let name = &body[..close];
    let mut rest = &body[close + 6..];
    while let [b' ', tail @ ..] = rest {
        rest = tail;
    }
    let num_end = rest.iter().position(|&b| b == b' ').unwrap_or(rest.len());
    let ela = int(&rest[..num_end]).ok_or_else(|| not_a_number(b"ela", &rest[..num_end]))?;
    let mut rest = &rest[num_end..];
    let mut fields = WaitFields {
        ela,
        ..WaitFields::default()
    };
    // tim= and obj# are the last two tokens; read them from the end.
    if let Some((tim, before)) = trailing_int(rest, b" tim=") {
        fields.tim = Some(tim.ok_or_else(|| not_a_number(b"tim", &rest[before.len() + 5..]))?);
        rest = before;
    } else if let Some(i) = memchr::memmem::rfind(rest, b" tim=") {
        return Err(not_a_number(b"tim", &rest[i + 5..]));
    }
    if let Some((obj, before)) = trailing_int(rest, b" obj#=") {
        fields.obj = obj;
        rest = before;
    }
    fields.params = rest;
    Ok(Wait { name, fields })
}

/// Fields of a PARSING IN CURSOR or PARSE ERROR line: space-separated
/// `key=value`, values possibly quoted.
#[derive(Default)]
pub(crate) struct Pic<'a> {
    pub dep: Option<i64>,
    pub uid: Option<i64>,
    pub oct: Option<i64>,
    pub lid: Option<i64>,
    pub tim: Option<i64>,
    pub hv: Option<i64>,
    pub err: Option<i64>,
    pub ad: &'a [u8],
    pub sqlid: &'a [u8],
}

pub(crate) fn pic(s: &[u8]) -> Pic<'_> {
    let mut p = Pic::default();
    for word in s.split(|&b| b == b' ' || b == b':') {
        let Some(eq) = memchr::memchr(b'=', word) else {
            continue;
        };
        let (key, val) = (&word[..eq], &word[eq + 1..]);
        let unq = val
            .strip_prefix(b"'")
            .and_then(|v| v.strip_suffix(b"'"))
            .unwrap_or(val);
        match key {
            b"dep" => p.dep = int(val),
            b"uid" => p.uid = int(val),
            b"oct" => p.oct = int(val),
            b"lid" => p.lid = int(val),
            b"tim" => p.tim = int(val),
            b"hv" => p.hv = int(val),
            b"err" => p.err = int(val),
            b"ad" => p.ad = unq,
            b"sqlid" => p.sqlid = unq,
            _ => {}
        }
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The backward read gives what `int` gives for the same run.
    #[test]
    fn trailing_ints_read_as_int_reads_them() {
        for tail in [
            "7",
            "-1",
            "123456789012345678",
            "1234567890123456789",
            "-",
            "--5",
            "1-2",
            "5-",
            "0",
            "-0",
            "",
        ] {
            let line = format!("x tim={tail}");
            let got = trailing_int(line.as_bytes(), b" tim=");
            let want = Some((int(tail.as_bytes()), &b"x"[..]));
            assert_eq!(got, want, "{tail:?}");
        }
        assert_eq!(trailing_int(b"x obj=5", b" tim="), None);
    }

    #[test]
    fn ints() {
        assert_eq!(int(b"123"), Some(123));
        assert_eq!(int(b"-1"), Some(-1));
        assert_eq!(int(b""), None);
        assert_eq!(int(b"-"), None);
        assert_eq!(int(b"12a"), None);
        assert_eq!(int(b"9999999999999999999999"), None);
    }

    #[test]
    fn cursors_decimal_and_hex() {
        let (id, key, rest) = cursor(b"#140661336887528:c=1").unwrap();
        assert_eq!(
            (id, key, rest),
            (&b"140661336887528"[..], 140661336887528, &b"c=1"[..])
        );
        let (id, key, _) = cursor(b"#0x7ff225353470: nam").unwrap();
        assert_eq!(id, b"0x7ff225353470");
        assert_eq!(key, 0x7ff225353470);
        assert!(cursor(b"#zz:").is_none());
        assert!(cursor(b"140:").is_none());
    }

    #[test]
    fn db_call_fields() {
        let mut f = DbFields::default();
        db_fields(
            b"c=58,e=57,p=0,cr=0,cu=0,mis=0,r=0,dep=1,og=4,plh=560797611,tim=14521990545600",
            &mut f,
        )
        .unwrap();
        assert_eq!(
            (f.c, f.e, f.dep, f.tim),
            (Some(58), Some(57), Some(1), Some(14521990545600))
        );
        let mut x = DbFields::default();
        db_fields(b"rlbk=0, rd_only=1, tim=5793511831940", &mut x).unwrap();
        assert_eq!(
            (x.rlbk, x.rd_only, x.tim),
            (Some(0), Some(1), Some(5793511831940))
        );
        let err = db_fields(b"c=1,e=x", &mut DbFields::default()).unwrap_err();
        assert!(err.contains("'e='"), "{err}");
        for line in [
            &b"c=1,e=1,p=0,cr=0,cu=0,mis=0,r=0,dep=-1,og=1,plh=0,tim=5"[..],
            b"c=1,e=1,dep=-1,tim=5",
        ] {
            let err = db_fields(line, &mut DbFields::default()).unwrap_err();
            assert!(err.contains("depth of 0 or more"), "{err}");
        }
    }

    #[test]
    fn wait_fields_named_and_9i() {
        let w = wait(b" nam='SQL*Net message from client' ela= 495 driver id=1952673792 #bytes=1 p3=0 obj#=-1 tim=7782186390163").unwrap();
        assert_eq!(w.name, b"SQL*Net message from client");
        assert_eq!(w.fields.ela, 495);
        assert_eq!(w.fields.p(1), Some("1952673792"));
        assert_eq!(w.fields.p(2), Some("1"));
        assert_eq!(w.fields.p(3), Some("0"));
        assert_eq!(w.fields.p123(), [Some(1952673792), Some(1), Some(0)]);
        assert_eq!(w.fields.p(4), None);
        assert_eq!(w.fields.obj, Some(-1));
        assert_eq!(w.fields.tim, Some(7782186390163));
        let old = wait(b" nam='db file sequential read' ela= 2769 p1=37 p2=12931 p3=1").unwrap();
        assert_eq!(
            (old.fields.p(1), old.fields.p(3), old.fields.tim),
            (Some("37"), Some("1"), None)
        );
        assert_eq!(old.fields.p123(), [Some(37), Some(12931), Some(1)]);
        let two = wait(b" nam='x' ela= 1 a=1 b=2 tim=3").unwrap();
        assert_eq!(two.fields.p123(), [Some(1), Some(2), None]);
        // Integers as `str::parse` reads the words `p(n)` gives, whatever
        // their sign, length or garbage.
        for params in [
            " a=+7 b=-3 c=0x1F",
            " a=9223372036854775807 b=9223372036854775808 c=-9223372036854775808",
            " a=1234567890123456789 b=123456789012345678 c=12a",
            " a= b=- c=+",
            " a=+-1 b=+1234567890123456789 c=-123456789012345678",
        ] {
            let line = format!(" nam='x' ela= 1{params} obj#=-1 tim=3");
            let w = wait(line.as_bytes()).unwrap();
            let parsed = [1, 2, 3].map(|n| w.fields.p(n).and_then(|v| v.parse::<i64>().ok()));
            assert_eq!(w.fields.p123(), parsed, "{params}");
        }
        assert!(wait(b" nam='x' ela= abc tim=1").is_err());
        assert!(wait(b" garbage").is_err());
    }

    #[test]
    fn numbers_past_18_digits_say_so() {
        let long = "more than 18 digits";
        let e = wait(b" nam='x' ela= 9223372036854775807 p1=0 obj#=-1 tim=1")
            .err()
            .unwrap();
        assert!(
            e.contains("after 'ela=', found '9223372036854775807' (more than"),
            "{e}"
        );
        let e = wait(b" nam='x' ela= 1 p1=0 obj#=-1 tim=12345678901234567890")
            .err()
            .unwrap();
        assert!(
            e.contains("after 'tim=', found '12345678901234567890'") && e.contains(long),
            "{e}"
        );
        let e = db_fields(
            b"c=9223372036854775807,e=1,dep=0,tim=1",
            &mut DbFields::default(),
        )
        .err()
        .unwrap();
        assert!(
            e.contains("after 'c=', found '9223372036854775807'") && e.contains(long),
            "{e}"
        );
        // Not digits: no word about their count.
        let e = wait(b" nam='x' ela= 12x tim=1").err().unwrap();
        assert!(!e.contains(long), "{e}");
    }

    #[test]
    fn pic_fields() {
        let p = pic(b"len=63 dep=0 uid=108 oct=3 lid=108 tim=7782186390222 hv=462614443 ad='9d37bed8' sqlid='0gjpt6cdt5vxb'");
        assert_eq!((p.dep, p.oct, p.hv), (Some(0), Some(3), Some(462614443)));
        assert_eq!(p.sqlid, b"0gjpt6cdt5vxb");
        assert_eq!(p.ad, b"9d37bed8");
    }
}
