//! The lines of a 10046 trace, as tracelab's trace writer
//! (`crates/trace/src/writer.rs`) writes them, into a buffer that the
//! library writes out (see `lib.rs`: one write(2) per buffer or before the
//! backend waits for its client).
//!
//! A second writer rather than the trace crate's: the preload library has
//! no dependencies (see the crate's doc). The lines are the same, a test
//! reads them back with tracelab's reader.

use std::io::Write;

use crate::md5::sqlid;
use crate::secrets;

/// The statistics of a PARSE/EXEC/FETCH/CLOSE line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallTimes {
    /// CPU of the call, µs.
    pub c: i64,
    /// Elapsed, µs.
    pub e: i64,
    pub r: i64,
    pub dep: i64,
    /// End of the call, µs on the trace's clock.
    pub tim: i64,
}

/// A trace's lines not yet written out.
#[derive(Default)]
pub struct Lines {
    pub buf: Vec<u8>,
    /// Cursors whose text may carry a password: no binds are written.
    secret: Vec<u64>,
    /// The seconds of the last `tim` written, and their digits: every
    /// line ends with a 16-digit `tim`, whose first ten change once a
    /// second.
    tim_secs: i64,
    tim_digits: [u8; 24],
    tim_len: u8,
}

impl Lines {
    /// Writes the buffered lines to the trace (one write(2)) and empties
    /// the buffer. A failed write (a full disk) ends the trace at a
    /// buffer's edge: the session goes on untraced rather than buffering
    /// forever.
    pub fn write_to(&mut self, out: &mut Option<std::fs::File>) {
        if self.buf.is_empty() {
            return;
        }
        if let Some(f) = out.as_mut() {
            if f.write_all(&self.buf).is_err() {
                *out = None;
            }
        }
        self.buf.clear();
    }

    /// The header: the trace's name, who wrote it (the server side of
    /// PostgreSQL), the timer, and the wall clock at which `tim` starts.
    pub fn header(&mut self, name: &str, version: &str, engine: &str, started: &str) {
        let _ = write!(
            self.buf,
            "Trace file {name}\ntracelab {version} server-side trace of {engine} (timer: monotonic)\n\n*** {started}\n"
        );
    }

    /// A comment-free line of the session's identity, as Oracle writes
    /// `*** SESSION ID:` (the reader skips `***` lines after the first).
    pub fn session(&mut self, pid: i32, database: &str, user: &str, application: &str) {
        let clean = |s: &str| s.replace(['\n', '\r'], " ");
        let _ = writeln!(
            self.buf,
            "*** SESSION ID:({pid}) database={} user={} application_name={}",
            clean(database),
            clean(user),
            clean(application)
        );
    }

    pub fn parse(&mut self, cursor: u64, sql: &str, oct: u32, t: CallTimes) {
        self.secret.retain(|&c| c != cursor);
        let sql = if secrets::mentions_password(sql) {
            self.secret.push(cursor);
            secrets::redact_sql(sql)
        } else {
            std::borrow::Cow::Borrowed(sql)
        };
        let (id, hv) = sqlid(&sql);
        self.text("=====================\nPARSING IN CURSOR #");
        self.int(cursor as i64);
        self.text(" len=");
        self.int(sql.len() as i64);
        self.text(" dep=");
        self.int(t.dep);
        self.text(" uid=0 oct=");
        self.int(oct as i64);
        self.text(" lid=0 tim=");
        self.tim(t.tim);
        self.text(" hv=");
        self.int(hv as i64);
        self.text(" ad='0' sqlid='");
        self.text(&id);
        self.text("'\n");
        self.text(&sql);
        self.text("\nEND OF STMT\n");
        self.call("PARSE", cursor, t);
    }

    /// The BINDS block of the next EXEC: its values' lines, made by
    /// `bind_line` when the Bind arrived.
    pub fn binds(&mut self, cursor: u64, lines: &[u8]) {
        if self.secret.contains(&cursor) {
            return;
        }
        // SAFETY: as in `call`, and the lines' length on top.
        unsafe {
            let mut p = self.line(32 + lines.len());
            p = put(p, b"BINDS #");
            p = put_int(p, cursor as i64);
            p = put(p, b":\n\n");
            std::ptr::copy_nonoverlapping(lines.as_ptr(), p, lines.len());
            self.done(p.add(lines.len()));
        }
    }

    /// A PARSE, EXEC or FETCH line. Inlined where it is called, so that
    /// the name is copied as the constant it is there.
    #[inline(always)]
    pub fn call(&mut self, name: &str, cursor: u64, t: CallTimes) {
        // SAFETY: `LINE` bytes are reserved: the name (5), 16 pieces of
        // text (79) and six numbers of at most 20 digits and a sign, the
        // `tim` with its slack (see `put_tim`).
        unsafe {
            let mut p = put_times(self.line(LINE), name.as_bytes(), cursor, t);
            p = put(p, b",p=0,cr=0,cu=0,mis=0,r=");
            p = put_int(p, t.r);
            p = put(p, b",dep=");
            p = put_int(p, t.dep);
            p = put(p, b",og=1,plh=0,tim=");
            p = self.put_tim(p, t.tim);
            p = put(p, b"\n");
            self.done(p);
        }
    }

    pub fn close(&mut self, cursor: u64, t: CallTimes) {
        // SAFETY: as in `call`.
        unsafe {
            let mut p = put_times(self.line(LINE), b"CLOSE", cursor, t);
            p = put(p, b",dep=");
            p = put_int(p, t.dep);
            p = put(p, b",type=0,tim=");
            p = self.put_tim(p, t.tim);
            p = put(p, b"\n");
            self.done(p);
        }
    }

    pub fn wait(&mut self, cursor: u64, name: &str, ela: i64, params: Params, tim: i64) {
        // SAFETY: as in `call`, and the name's length on top.
        unsafe {
            let mut p = self.line(LINE + name.len());
            p = put(p, b"WAIT #");
            p = put_int(p, cursor as i64);
            p = put(p, b": nam='");
            p = put(p, name.as_bytes());
            p = put(p, b"' ela= ");
            p = put_int(p, ela);
            match params {
                Params::Io { file, block, bytes } => {
                    p = put(p, b" file#=");
                    p = put_int(p, file);
                    p = put(p, b" block#=");
                    p = put_int(p, block);
                    p = put(p, b" bytes=");
                    p = put_int(p, bytes);
                }
                Params::Flush { file } => {
                    p = put(p, b" file#=");
                    p = put_int(p, file);
                    p = put(p, b" p2=0 p3=0");
                }
                Params::Class { ty } => {
                    p = put(p, b" type=");
                    p = put_int(p, ty);
                    p = put(p, b" p2=0 p3=0");
                }
                Params::Address { address } => {
                    p = put(p, b" address=");
                    p = put_int(p, address);
                    p = put(p, b" p2=0 p3=0");
                }
                Params::Queue { socket } => {
                    p = put(p, b" socket=");
                    p = put_int(p, socket);
                    p = put(p, b" p2=0 p3=0");
                }
                Params::Latch { timeout, events } => {
                    p = put(p, b" timeout=");
                    p = put_int(p, timeout);
                    p = put(p, b" events=");
                    p = put_int(p, events);
                    p = put(p, b" p3=0");
                }
            }
            p = put(p, b" obj#=-1 tim=");
            p = self.put_tim(p, tim);
            p = put(p, b"\n");
            self.done(p);
        }
    }

    pub fn xctend(&mut self, rollback: bool, read_only: bool, tim: i64) {
        self.text("XCTEND rlbk=");
        self.int(rollback as i64);
        self.text(", rd_only=");
        self.int(read_only as i64);
        self.text(", tim=");
        self.tim(tim);
        self.text("\n");
    }

    pub fn error(&mut self, cursor: u64, err: &str, tim: i64) {
        self.text("ERROR #");
        self.int(cursor as i64);
        self.text(":err=");
        self.text(err);
        self.text(" tim=");
        self.tim(tim);
        self.text("\n");
    }

    #[inline(always)]
    fn text(&mut self, s: &str) {
        self.buf.extend_from_slice(s.as_bytes());
    }

    #[inline(always)]
    fn int(&mut self, n: i64) {
        push_int(&mut self.buf, n);
    }

    /// Where the next line goes, `room` bytes reserved past the end of
    /// the buffer; the line is written with `put`, `put_int` and
    /// `put_tim`, each piece with no check of the room, and ended with
    /// `done` (one reservation and one length update per line, not one
    /// per piece).
    #[inline(always)]
    fn line(&mut self, room: usize) -> *mut u8 {
        self.buf.reserve(room);
        // SAFETY: within the allocation (at its length).
        unsafe { self.buf.as_mut_ptr().add(self.buf.len()) }
    }

    /// The line begun with `line` ends at `end`.
    ///
    /// # Safety
    /// `end` is in the room `line` reserved, and every byte before it was
    /// written.
    #[inline(always)]
    unsafe fn done(&mut self, end: *mut u8) {
        let len = end.offset_from(self.buf.as_ptr()) as usize;
        self.buf.set_len(len);
    }

    #[inline(always)]
    fn tim(&mut self, tim: i64) {
        // SAFETY: `TIM` bytes reserved.
        unsafe {
            let p = self.line(TIM);
            let p = self.put_tim(p, tim);
            self.done(p);
        }
    }

    /// A `tim` (µs since the epoch) at `p`: the seconds' digits as
    /// written last time unless the second changed, then the six digits
    /// of the µs.
    ///
    /// # Safety
    /// `TIM` bytes of room at `p` (16 are written whatever the length of
    /// the seconds, then overwritten).
    #[inline(always)]
    unsafe fn put_tim(&mut self, p: *mut u8, tim: i64) -> *mut u8 {
        if tim < 1_000_000 {
            return put_int(p, tim);
        }
        let secs = tim / 1_000_000;
        // `tim_secs` starts at 0, which no tim of 1 s or more has.
        if secs != self.tim_secs {
            self.new_second(secs);
        }
        // The seconds' digits, 16 bytes copied at once (their count, at
        // most 13, is added).
        std::ptr::copy_nonoverlapping(self.tim_digits.as_ptr(), p, 16);
        let p = p.add(self.tim_len as usize);
        let us = (tim - secs * 1_000_000) as usize;
        let (hi, lo) = (us / 10_000, us % 10_000);
        let (mid, lo) = (lo / 100, lo % 100);
        let pairs = DIGIT_PAIRS.as_ptr();
        std::ptr::copy_nonoverlapping(pairs.add(hi * 2), p, 2);
        std::ptr::copy_nonoverlapping(pairs.add(mid * 2), p.add(2), 2);
        std::ptr::copy_nonoverlapping(pairs.add(lo * 2), p.add(4), 2);
        p.add(6)
    }

    #[cold]
    fn new_second(&mut self, secs: i64) {
        self.tim_secs = secs;
        let mut digits = Vec::new();
        push_int(&mut digits, secs);
        self.tim_digits = [0; 24];
        self.tim_digits[..digits.len()].copy_from_slice(&digits);
        self.tim_len = digits.len() as u8;
    }
}

/// The room reserved for a line of fixed pieces and numbers (at most 21
/// bytes each), its `tim` included.
const LINE: usize = 256;
/// The room a `tim` needs: 13 digits of seconds at most, 16 bytes
/// copied, 6 of µs.
const TIM: usize = 32;

/// The parameters of a WAIT line, named as Oracle's are for the kind of
/// call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Params {
    /// A file's read or write: `file#`, `block#`, `bytes`.
    Io { file: i64, block: i64, bytes: i64 },
    /// A file's flush: `file#`, `p2=0 p3=0`.
    Flush { file: i64 },
    /// A latch (epoll) wait, a semaphore, a sleep: `timeout`, `events`,
    /// `p3=0`.
    Latch { timeout: i64, events: i64 },
    /// A wait MariaDB announced: its `thd_wait_type`, `p2=0 p3=0`.
    Class { ty: i64 },
    /// A lock's wait: the lock's `address`, `p2=0 p3=0` (Oracle's latch
    /// waits give the latch's address as their p1).
    Address { address: i64 },
    /// A request's wait in a thread pool's queue: the connection's
    /// `socket`, `p2=0 p3=0`.
    Queue { socket: i64 },
}

/// A call line's start, `NAME #cursor:c=C,e=E`, at `p`; returns the
/// byte after it.
///
/// # Safety
/// The name's length and 70 bytes of room at `p`.
#[inline(always)]
unsafe fn put_times(p: *mut u8, name: &[u8], cursor: u64, t: CallTimes) -> *mut u8 {
    let mut p = put(p, name);
    p = put(p, b" #");
    p = put_int(p, cursor as i64);
    p = put(p, b":c=");
    p = put_int(p, t.c);
    p = put(p, b",e=");
    put_int(p, t.e)
}

/// Copies `s` to `p`; returns the byte after it. Short pieces (names,
/// keys) are copied with two overlapping loads rather than a call to
/// memcpy; the constant ones the compiler copies as it likes.
///
/// # Safety
/// `s.len()` bytes of room at `p`.
#[inline(always)]
unsafe fn put(p: *mut u8, s: &[u8]) -> *mut u8 {
    let n = s.len();
    let src = s.as_ptr();
    if (8..=16).contains(&n) {
        let a = std::ptr::read_unaligned(src as *const u64);
        let b = std::ptr::read_unaligned(src.add(n - 8) as *const u64);
        std::ptr::write_unaligned(p as *mut u64, a);
        std::ptr::write_unaligned(p.add(n - 8) as *mut u64, b);
    } else if (4..8).contains(&n) {
        let a = std::ptr::read_unaligned(src as *const u32);
        let b = std::ptr::read_unaligned(src.add(n - 4) as *const u32);
        std::ptr::write_unaligned(p as *mut u32, a);
        std::ptr::write_unaligned(p.add(n - 4) as *mut u32, b);
    } else {
        std::ptr::copy_nonoverlapping(src, p, n);
    }
    p.add(n)
}

/// "00" to "99", the two digits of each number below 100 in turn.
const DIGIT_PAIRS: [u8; 200] = *b"\
    0001020304050607080910111213141516171819\
    2021222324252627282930313233343536373839\
    4041424344454647484950515253545556575859\
    6061626364656667686970717273747576777879\
    8081828384858687888990919293949596979899";

/// The lines of the value of bind `i` (`None` is NULL) in a BINDS block.
/// Written when the Bind arrives, into a buffer the block reuses, so that
/// no value is kept as a String of its own.
pub fn bind_line(out: &mut Vec<u8>, i: usize, value: Option<&[u8]>) {
    let v = value.unwrap_or_default();
    // ` Bind#`, the number, `  value="` and its end: 39 bytes at most.
    out.reserve(48 + v.len());
    // SAFETY: the room is reserved, and every byte up to `p` written.
    unsafe {
        let start = out.as_mut_ptr().add(out.len());
        let mut p = put(start, b" Bind#");
        p = put_int(p, i as i64);
        p = put(p, b"\n");
        if value.is_some() {
            p = put(p, b"  value=\"");
            // A value's line breaks would end its line early.
            for &b in v {
                *p = if b == b'\n' { b' ' } else { b };
                p = p.add(1);
            }
            p = put(p, b"\"\n");
        }
        out.set_len(out.len() + p.offset_from(start) as usize);
    }
}

/// `n` in decimal. Written out by hand: `write!` goes through core::fmt's
/// machinery (a Formatter, padding, one virtual call per piece), which
/// cost the traced backend about as many instructions per query as the
/// rest of the tracer together (counted with callgrind); the trace lines
/// carry ~25 numbers per query. The digits go straight into the buffer,
/// two at a time from the right, once their count is known: no digit
/// array copied with a call to memcpy, no bounds checks (~35 fewer
/// instructions a number than through a digit array).
#[inline]
fn push_int(buf: &mut Vec<u8>, n: i64) {
    buf.reserve(20);
    // SAFETY: 20 bytes reserved (a number and its sign).
    unsafe {
        let p = buf.as_mut_ptr().add(buf.len());
        let end = put_int(p, n);
        buf.set_len(buf.len() + end.offset_from(p) as usize);
    }
}

/// `n` in decimal at `p` (see `push_int`); returns the byte after it.
///
/// # Safety
/// 20 bytes of room at `p`.
#[inline(always)]
unsafe fn put_int(p: *mut u8, n: i64) -> *mut u8 {
    const PAIRS: &[u8; 200] = &DIGIT_PAIRS;
    // One digit, the most common number of a line (the cursor, `dep`,
    // `r`, `c` of a FETCH): no digit count, no loop.
    if (0..10).contains(&n) {
        *p = b'0' + n as u8;
        return p.add(1);
    }
    let mut v = n.unsigned_abs();
    let digits = {
        let mut d = 1;
        let mut x = v;
        while x >= 10_000 {
            x /= 10_000;
            d += 4;
        }
        d + (x >= 10) as usize + (x >= 100) as usize + (x >= 1000) as usize
    };
    let len = digits + (n < 0) as usize;
    // The digits fill `digits` bytes from the right, the sign the byte
    // before them.
    let mut end = p.add(len);
    while v >= 100 {
        let k = (v % 100) as usize * 2;
        v /= 100;
        end = end.sub(2);
        std::ptr::copy_nonoverlapping(PAIRS.as_ptr().add(k), end, 2);
    }
    if v >= 10 {
        end = end.sub(2);
        std::ptr::copy_nonoverlapping(PAIRS.as_ptr().add(v as usize * 2), end, 2);
    } else {
        end = end.sub(1);
        *end = b'0' + v as u8;
    }
    if n < 0 {
        *p = b'-';
    }
    p.add(len)
}

/// `us` µs since the Unix epoch as RFC 3339 with microseconds (UTC), the
/// `***` line's form in tracelab's traces. Hand-written (no dependencies):
/// days to a civil date by Howard Hinnant's algorithm.
pub fn rfc3339(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let micros = us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{micros:06}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `tim` reuses the seconds' digits: right across a second's edge,
    /// with µs that need zeros, and for small values.
    #[test]
    fn tims() {
        let mut l = Lines::default();
        let tims = [
            1_795_816_807_911_602,
            1_795_816_807_000_007,
            1_795_816_808_000_000,
            1_795_816_808_090_100,
            1_795_816_807_999_999,
            99,
            1_000_000,
            1_795_816_809_123_456,
        ];
        for t in tims {
            l.tim(t);
            l.text(" ");
        }
        let want: String = tims.iter().map(|t| format!("{t} ")).collect();
        assert_eq!(String::from_utf8(l.buf).unwrap(), want);
    }

    #[test]
    fn numbers() {
        let mut l = Lines::default();
        for n in [0, 7, -1, 10, 1_795_816_807_911_602, i64::MIN, i64::MAX] {
            l.int(n);
            l.text(" ");
        }
        assert_eq!(
            String::from_utf8(l.buf).unwrap(),
            format!("0 7 -1 10 1795816807911602 {} {} ", i64::MIN, i64::MAX)
        );
        // Every digit count, at its edges, both signs: what the count of
        // digits decides (where the writing starts) is right at each.
        let mut p = 1i64;
        loop {
            for n in [p - 1, p, p + 1, p * 9 / 10 * 10 + 9] {
                for n in [n, -n] {
                    let mut buf = b"x".to_vec();
                    push_int(&mut buf, n);
                    assert_eq!(buf, format!("x{n}").into_bytes());
                }
            }
            match p.checked_mul(10) {
                Some(q) => p = q,
                None => break,
            }
        }
    }

    #[test]
    fn lines_as_the_trace_writer_writes_them() {
        let mut l = Lines::default();
        let t = CallTimes {
            c: 12,
            e: 40,
            r: 1,
            dep: 0,
            tim: 99,
        };
        let mut values = Vec::new();
        bind_line(&mut values, 0, Some(b"a\nb"));
        bind_line(&mut values, 1, None);
        l.binds(2, &values);
        l.call("EXEC", 2, t);
        l.close(2, t);
        l.wait(
            2,
            "IO:DataFileRead",
            6,
            Params::Io {
                file: 2686,
                block: 0,
                bytes: 8192,
            },
            99,
        );
        l.wait(2, "IO:WALSync", 16, Params::Flush { file: 3 }, 99);
        l.wait(
            2,
            "Client:ClientRead",
            7,
            Params::Latch {
                timeout: -1,
                events: 1,
            },
            99,
        );
        l.xctend(false, true, 99);
        l.error(2, "42P01", 99);
        assert_eq!(
            String::from_utf8(l.buf).unwrap(),
            "BINDS #2:\n\n Bind#0\n  value=\"a b\"\n Bind#1\n\
             EXEC #2:c=12,e=40,p=0,cr=0,cu=0,mis=0,r=1,dep=0,og=1,plh=0,tim=99\n\
             CLOSE #2:c=12,e=40,dep=0,type=0,tim=99\n\
             WAIT #2: nam='IO:DataFileRead' ela= 6 file#=2686 block#=0 bytes=8192 obj#=-1 tim=99\n\
             WAIT #2: nam='IO:WALSync' ela= 16 file#=3 p2=0 p3=0 obj#=-1 tim=99\n\
             WAIT #2: nam='Client:ClientRead' ela= 7 timeout=-1 events=1 p3=0 obj#=-1 tim=99\n\
             XCTEND rlbk=0, rd_only=1, tim=99\n\
             ERROR #2:err=42P01 tim=99\n"
        );
    }

    #[test]
    fn dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(rfc3339(951_782_400_000_001), "2000-02-29T00:00:00.000001Z");
        assert_eq!(
            rfc3339(1_700_000_000_123_456),
            "2023-11-14T22:13:20.123456Z"
        );
    }
}
