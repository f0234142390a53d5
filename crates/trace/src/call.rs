//! The call model: what every consumer of a trace sees.

use std::sync::Arc;

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
    /// The value of parameter `n` (1 to 3) after `ela=`, whatever its name
    /// (`driver id=`, `#bytes=`, `file#=`, ...): the word after the n-th
    /// `=`. Parsed on demand: most profiles never read them.
    pub fn p(&self, n: usize) -> Option<&'a str> {
        let rest = self.params;
        let mut pos = 0;
        for k in 1..=n {
            let eq = pos + memchr::memchr(b'=', &rest[pos..])?;
            let start = eq + 1;
            let end = rest[start..]
                .iter()
                .position(|&b| b == b' ')
                .map_or(rest.len(), |i| start + i);
            if k == n {
                return std::str::from_utf8(&rest[start..end]).ok();
            }
            pos = end;
        }
        None
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
}

impl Call<'_> {
    /// mrskew's accounted-for duration in microseconds: a database call's
    /// CPU `c`, a WAIT's `ela` (reference §A.7).
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
}
