//! The call model: what every consumer of a trace sees.

use std::sync::{Arc, OnceLock};

use crate::shareable::Shareable;

/// Name of the pseudo-call for time inside a database call not covered by
/// its CPU or its waits (e − c − Σ ela of the waits it contains).
pub const PSEUDO_WITHIN: &str = "unaccounted-for within calls";
/// Name of the pseudo-call for the gaps between one top-level call or
/// between-call wait and the next.
pub const PSEUDO_BETWEEN: &str = "unaccounted-for between calls";

/// What kind of line a call came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    Parse,
    Exec,
    Fetch,
    Close,
    Unmap,
    SortUnmap,
    /// LOBREAD, LOBWRITE, LOBTMPCREATE, ... (no cursor number).
    Lob,
    Xctend,
    /// RPC EXEC (no `tim`).
    Rpc,
    Wait,
    /// Time the trace does not account for (only with `--unaccounted`).
    Unaccounted,
    /// A line that is no call at all (only with `ReadOptions::all_lines`):
    /// it has no duration.
    Line,
}

impl CallKind {
    /// Database calls ("dbcalls"): everything but WAITs and pseudo-calls.
    pub fn is_dbcall(self) -> bool {
        !matches!(
            self,
            CallKind::Wait | CallKind::Unaccounted | CallKind::Line
        )
    }
}

/// The statement a cursor was bound to by its latest PARSING IN CURSOR, or a
/// placeholder for a cursor whose text the trace does not hold.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Statement {
    /// `sqlid=` (11.1+), or the placeholder `#<cursor>:<file>` when the
    /// statement is unknown, as mrskew writes it.
    pub sqlid: String,
    /// The SQL text up to END OF STMT (newlines kept), or the placeholder.
    pub sql: String,
    pub hv: Option<i64>,
    pub oct: Option<i64>,
    pub uid: Option<i64>,
    pub lid: Option<i64>,
    /// Recursive depth from PARSING IN CURSOR, or learnt from the cursor's
    /// database calls when the text is unknown.
    pub dep: Option<i64>,
    pub ad: String,
    /// Whether this is a placeholder (no PARSING IN CURSOR seen).
    pub placeholder: bool,
    /// Cache of [`Statement::shareable`], computed on first use; leave it
    /// at its default.
    pub normalised: OnceLock<Shareable>,
}

impl Statement {
    /// The literal-normalised text and its SQL_ID (mrskew's `$ssql`,
    /// `$ssqlid`; see [`crate::shareable`]), computed once per statement.
    /// A placeholder statement is its own shareable form.
    pub fn shareable(&self) -> &Shareable {
        self.normalised.get_or_init(|| {
            if self.placeholder {
                Shareable {
                    sql: self.sql.clone(),
                    sqlid: self.sqlid.clone(),
                }
            } else {
                Shareable::of(&self.sql)
            }
        })
    }
}

/// Where a trace's `tim` clock meets the wall clock: the `tim` of the
/// first timed line after a `***` timestamp, and that timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallClock {
    /// Microseconds since 1970-01-01 00:00:00 in the trace's local time,
    /// as written (the zone offset, when written, is not applied).
    pub wall_us: i64,
    pub tim: i64,
}

/// Reads a `***` timestamp: `2017-06-27 13:56:36.872` (up to 12.1) or
/// `2024-03-26T18:41:12.322015-07:00 (PDB1(3))` (12.2 on), with or without
/// a zone; what follows the seconds is ignored. Microseconds since 1970 in
/// the local time as written.
pub fn parse_wall_clock(s: &[u8]) -> Option<i64> {
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let d = s.get(r)?;
        d.iter().all(u8::is_ascii_digit).then_some(())?;
        std::str::from_utf8(d).ok()?.parse().ok()
    };
    if s.get(4) != Some(&b'-') || s.get(7) != Some(&b'-') || !matches!(s.get(10), Some(b' ' | b'T'))
    {
        return None;
    }
    let date = chrono::NaiveDate::from_ymd_opt(num(0..4)? as i32, num(5..7)?, num(8..10)?)?;
    if s.get(13) != Some(&b':') || s.get(16) != Some(&b':') {
        return None;
    }
    let mut micros = 0u32;
    if s.get(19) == Some(&b'.') {
        let frac: Vec<u8> = s[20..]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .take(6)
            .copied()
            .collect();
        for k in 0..6 {
            micros = micros * 10 + frac.get(k).map_or(0, |d| u32::from(d - b'0'));
        }
    }
    let t = date.and_hms_micro_opt(num(11..13)?, num(14..16)?, num(17..19)?, micros)?;
    Some(t.and_utc().timestamp_micros())
}

/// A wall clock as mrwhen prints it: `2023-05-11T08:14:01.903343`.
pub fn format_wall_clock(us: i64) -> String {
    use chrono::{Datelike, Timelike};
    match chrono::DateTime::from_timestamp_micros(us) {
        Some(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}",
            t.year(),
            t.month(),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.timestamp_subsec_micros()
        ),
        None => String::new(),
    }
}

/// Raw fields of a database-call line (`c=…,e=…,…`), in microseconds where
/// they are times.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DbFields {
    pub c: Option<i64>,
    pub e: Option<i64>,
    pub p: Option<i64>,
    pub cr: Option<i64>,
    pub cu: Option<i64>,
    pub mis: Option<i64>,
    pub r: Option<i64>,
    pub dep: Option<i64>,
    pub og: Option<i64>,
    pub plh: Option<i64>,
    pub tim: Option<i64>,
    /// CLOSE `type=`.
    pub typ: Option<i64>,
    /// LOB `bytes=`.
    pub bytes: Option<i64>,
    /// XCTEND `rlbk=` and `rd_only=`.
    pub rlbk: Option<i64>,
    pub rd_only: Option<i64>,
}

/// Raw fields of a WAIT line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WaitFields<'a> {
    pub ela: i64,
    /// The text between `ela=`'s value and `obj#=`/`tim=`: the three named
    /// parameters, read on demand by [`WaitFields::p`].
    pub params: &'a [u8],
    pub obj: Option<i64>,
    pub tim: Option<i64>,
}

impl<'a> WaitFields<'a> {
    /// The parameters' values in order, whatever their names (`driver
    /// id=`, `#bytes=`, `file#=`, ...): the word after each `=`.
    fn values(&self) -> impl Iterator<Item = &'a [u8]> {
        let rest = self.params;
        let mut pos = 0;
        std::iter::from_fn(move || {
            let start = pos + memchr::memchr(b'=', &rest[pos..])? + 1;
            let end = memchr::memchr(b' ', &rest[start..]).map_or(rest.len(), |i| start + i);
            pos = end;
            Some(&rest[start..end])
        })
    }

    /// `[p(1), p(2), p(3)]` as integers, in one pass over the parameters
    /// (the calls export reads all three for every WAIT): what
    /// `p(n)?.parse::<i64>()` gives, without a UTF-8 check and a search
    /// call a value, which cost the export more than the wait line's own
    /// parsing.
    pub fn p123(&self) -> [Option<i64>; 3] {
        let mut out = [None; 3];
        let b = self.params;
        let mut at = 0;
        for slot in &mut out {
            // A byte loop, not memchr: the names are a few bytes long.
            while at < b.len() && b[at] != b'=' {
                at += 1;
            }
            if at == b.len() {
                break;
            }
            let start = at + 1;
            // Most values are a few digits and a space: read as they are
            // found; anything else is cut at the space and parsed whole.
            let mut i = start;
            let neg = b.get(i) == Some(&b'-');
            i += usize::from(neg);
            let (digits, mut v) = (i, 0i64);
            while i < b.len() && i - digits < 18 && b[i].is_ascii_digit() {
                v = v * 10 + i64::from(b[i] - b'0');
                i += 1;
            }
            if i > digits && b.get(i).is_none_or(|&c| c == b' ') {
                *slot = Some(if neg { -v } else { v });
            } else {
                while i < b.len() && b[i] != b' ' {
                    i += 1;
                }
                *slot = parse_i64(&b[start..i]);
            }
            at = i;
        }
        out
    }

    /// The value of parameter `n` (1 to 3) after `ela=`: the word after
    /// the n-th `=`. Parsed on demand: most profiles never read them.
    pub fn p(&self, n: usize) -> Option<&'a str> {
        let v = self.values().nth(n.checked_sub(1)?)?;
        std::str::from_utf8(v).ok()
    }
}

/// A word as `str::parse::<i64>` reads it (a sign, then decimal digits):
/// the fields' integer parser, which has no `+` and stops at 18 digits;
/// a longer word goes to the standard parser, which knows where i64 ends.
fn parse_i64(w: &[u8]) -> Option<i64> {
    let unsigned = w.strip_prefix(b"+").unwrap_or(w);
    if unsigned.len() > 18 {
        return std::str::from_utf8(w).ok()?.parse().ok();
    }
    match w.first() {
        // `+-1` is no number.
        Some(b'+') if unsigned.first() == Some(&b'-') => None,
        _ => crate::fields::int(unsigned),
    }
}

/// One database call, WAIT, or (on request) unaccounted-for pseudo-call.
#[derive(Debug, Clone)]
pub struct Call<'a> {
    pub kind: CallKind,
    /// `$nam`: `EXEC`, `LOBREAD`, the wait event name, ...
    pub name: &'a str,
    /// 1-based line number in the uncompressed text (see
    /// [`crate::ReadOptions::line_numbers`]).
    pub line: u64,
    /// Byte offset of the line in the uncompressed text: orders calls
    /// across the pieces of a file read in parallel.
    pub offset: u64,
    /// The line as written (without its terminator).
    pub text: &'a [u8],
    /// The cursor number as written (`140661336887528`, `0x7ff2…`), or
    /// empty; ASCII digits (hex digits after `0x`).
    pub cursor: &'a [u8],
    /// The cursor number as the reader keys it (decimal, or hex after
    /// `0x`), `None` when the call has no cursor: consumers that keep
    /// state by cursor need not parse `cursor` again.
    pub cursor_key: Option<u64>,
    /// The line's `dep=` field. WAIT, XCTEND and LOB lines have none, and
    /// mrskew then treats `$dep` as undefined (numerically 0): a wait inside
    /// recursive SQL still passes the default `$dep==$depmin` filter (checked
    /// against mrskew's published db-ping profile).
    pub dep: Option<i64>,
    /// Minimum depth of the file's calls (or `--depmin`). Known for sure
    /// only at the end of a file: while reading, the minimum so far. A
    /// consumer that filters on it and sees it change drops what it
    /// gathered and reads the part before again with
    /// [`crate::Reader::read_before`] and a fixed depth.
    pub depmin: i64,
    pub stmt: &'a Statement,
    /// Line of the cursor's latest PARSE / EXEC (0 if none yet).
    pub parse_id: u64,
    pub exec_id: u64,
    /// Bind values of the cursor's current execution, as written (character
    /// values keep their quotes).
    pub binds: &'a [Option<Arc<str>>],
    pub db: DbFields,
    pub wait: WaitFields<'a>,
    /// Duration in microseconds of a pseudo-call.
    pub pseudo_us: i64,
    /// Counter of think-time islands (see [`crate::ReadOptions::thinktime_us`]).
    pub island_id: u64,
    /// The latest wall-clock anchor before the call, if the trace has a
    /// `***` timestamp before it (see [`Call::wall_us`]).
    pub wall: Option<WallClock>,
}

impl Call<'_> {
    /// mrskew's accounted-for duration in microseconds: a database call's
    /// CPU `c`, a WAIT's `ela` (mrskew's `$af`:
    /// `c` for a dbcall, `ela` for a syscall).
    pub fn af_us(&self) -> i64 {
        match self.kind {
            CallKind::Line => 0,
            CallKind::Wait => self.wait.ela,
            CallKind::Unaccounted => self.pseudo_us,
            _ => self.db.c.unwrap_or(0),
        }
    }

    /// The call's own elapsed time in microseconds: `e` or `ela`.
    pub fn dur_us(&self) -> i64 {
        match self.kind {
            CallKind::Line => 0,
            CallKind::Wait => self.wait.ela,
            CallKind::Unaccounted => self.pseudo_us,
            _ => self.db.e.unwrap_or(0),
        }
    }

    /// End time (`tim`) in microseconds, if written.
    pub fn tim_us(&self) -> Option<i64> {
        match self.kind {
            CallKind::Wait => self.wait.tim,
            _ => self.db.tim,
        }
    }

    /// The wall clock (microseconds since 1970, local time) at `tim`, a
    /// value of the trace's `tim` clock, through the latest `***` timestamp
    /// (a `*** YYYY-MM-DD hh:mm:ss.ffffff` line pairs a wall-clock time
    /// with the `tim` of the lines after it); `tim_unit_us` is microseconds per `tim` unit.
    pub fn wall_us(&self, tim: i64, tim_unit_us: f64) -> Option<i64> {
        let w = self.wall?;
        let delta = (tim - w.tim) as f64 * tim_unit_us;
        Some(w.wall_us.saturating_add(delta.round() as i64))
    }
}
