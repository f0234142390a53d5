//! Writing traces in the 10046 format, so that tracelab's own traces (the
//! client side of `run`, the server side of `proxy`) profile with the same
//! reader and the same expressions as Oracle's.
//!
//! Lines are written as each operation ends, as Oracle does: a call's `tim`
//! is its end, waits come before the call that follows them. Writes are
//! buffered; nothing is flushed per line.
//!
//! A traced call writes about seven lines, at up to 100,000 calls a second
//! per process, so the hot lines (calls, waits, binds) are assembled by
//! hand (see `Line`) and appended to the writer's own buffer, where
//! `BufWriter` paid a `memcpy` call for every piece, some twenty per line.

use std::io::{self, Write};

use md5::{Digest, Md5};

/// Oracle's SQL_ID of a statement text: the last 8 bytes of the MD5 of the
/// text and a NUL, read as two little-endian 32-bit words, in base 32 with
/// Oracle's alphabet. The same text has the same sqlid in an Oracle trace
/// and in a tracelab trace. Also returns the hash value (`hv=`), the low
/// word.
pub fn sqlid(sql: &str) -> (String, u32) {
    const ALPHABET: &[u8; 32] = b"0123456789abcdfghjkmnpqrstuvwxyz";
    let mut h = Md5::new();
    h.update(sql.as_bytes());
    h.update([0u8]);
    let d = h.finalize();
    let hi = u32::from_le_bytes([d[8], d[9], d[10], d[11]]);
    let lo = u32::from_le_bytes([d[12], d[13], d[14], d[15]]);
    let mut n = ((hi as u64) << 32) | lo as u64;
    let mut id = [b'0'; 13];
    for slot in id.iter_mut().rev() {
        *slot = ALPHABET[(n % 32) as usize];
        n /= 32;
    }
    (String::from_utf8_lossy(&id).into_owned(), lo)
}

/// The fixed parts of the WAIT lines of one cursor and event, rendered
/// once: a client session writes two WAIT lines a call, and their cursor,
/// name and parameters are the same call after call, so only `ela` and
/// `tim` are written per line (`TraceWriter::wait_line`).
#[derive(Debug, Clone)]
pub struct WaitLine {
    cursor: u64,
    name: String,
    keys: [String; 3],
    values: [i64; 3],
    /// `WAIT #c: nam='name' ela= `
    head: Vec<u8>,
    /// ` p1=v1 p2=v2 p3=v3 obj#=-1 tim=`
    tail: Vec<u8>,
    /// Short enough to be written in place (`Line::CAP`).
    hot: bool,
}

impl WaitLine {
    pub fn new(cursor: u64, name: &str, params: [(&str, i64); 3]) -> WaitLine {
        let head = format!("WAIT #{cursor}: nam='{name}' ela= ").into_bytes();
        let tail = format!(
            " {}={} {}={} {}={} obj#=-1 tim=",
            params[0].0, params[0].1, params[1].0, params[1].1, params[2].0, params[2].1
        )
        .into_bytes();
        // Two numbers of at most 20 bytes each and the newline.
        let hot = head.len() + tail.len() + 41 <= Line::CAP;
        WaitLine {
            cursor,
            name: name.to_string(),
            keys: params.map(|(k, _)| k.to_string()),
            values: params.map(|(_, v)| v),
            head,
            tail,
            hot,
        }
    }

    /// The cursor the lines are written for.
    pub fn cursor(&self) -> u64 {
        self.cursor
    }

    fn params(&self) -> [(&str, i64); 3] {
        [0, 1, 2].map(|i| (self.keys[i].as_str(), self.values[i]))
    }
}

/// Who wrote a trace, for its header.
#[derive(Debug, Clone)]
pub struct Header<'a> {
    /// The trace's own name (`Trace file ...`).
    pub name: &'a str,
    /// `postgres`, `mysql`, `sqlite`, ...
    pub engine: &'a str,
    /// `client` or `server`.
    pub side: &'a str,
    /// The clock read for each timestamp (`vdso`, `syscall`, `coarse`).
    pub timer: &'a str,
    /// Wall-clock time when the trace starts, ISO 8601 (the `***` line
    /// that anchors `tim` to the wall clock).
    pub started: &'a str,
}

/// The database-call statistics Oracle writes on PARSE/EXEC/FETCH lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallTimes {
    /// CPU of the call, µs.
    pub c: i64,
    /// Elapsed time of the call, µs.
    pub e: i64,
    /// Rows.
    pub r: i64,
    pub dep: i64,
    /// End of the call, µs on the trace's clock.
    pub tim: i64,
}

/// A 10046-format trace being written.
pub struct TraceWriter<W: Write> {
    /// `None` only after `into_inner`.
    out: Option<W>,
    /// Lines not yet written to `out`: `buf[..len]`. Allocated once,
    /// `BUFFER` plus room for one hot line, which is assembled in place.
    buf: Box<[u8]>,
    len: usize,
    /// The slow lines (statement texts, long values) are formatted here
    /// first.
    scratch: Vec<u8>,
    /// Cursors whose text may carry a password (see `crate::secrets`):
    /// their binds are never written.
    secret: Vec<u64>,
    /// The first write that failed (a full disk): nothing more is written,
    /// so that the trace ends at a buffer's edge rather than in a stream
    /// of partial lines, and `flush` reports it.
    broken: Option<(io::ErrorKind, String)>,
}

/// How much a writer buffers before it writes.
const BUFFER: usize = 64 << 10;

/// One hot trace line being assembled in place at the end of the writer's
/// buffer.
///
/// Why by hand: pushing piece by piece into a `Vec<u8>` reloads the
/// vector's length after every byte stored (a byte store may alias it) and
/// pays a `memcpy` call per piece, some twenty per line; assembling on the
/// stack and appending cost a copy of every line. Here a line is a slice
/// with a local cursor: literals are copied inline and numbers written in
/// place, two digits at a time, straight into the buffer.
struct Line<'a> {
    b: &'a mut [u8],
    n: usize,
}

impl Line<'_> {
    /// Room a line may take: the buffer always has this much past `len`.
    const CAP: usize = 384;
    /// Longest name or value written into a line; longer ones take the
    /// slow path (the caller checks with `fits`).
    const PIECE: usize = 160;

    #[inline]
    fn fits(piece: &str) -> bool {
        piece.len() <= Line::PIECE
    }

    #[cfg(test)]
    fn text(&self) -> String {
        String::from_utf8(self.b[..self.n].to_vec()).unwrap()
    }

    #[inline]
    fn put(&mut self, s: &[u8]) {
        self.b[self.n..self.n + s.len()].copy_from_slice(s);
        self.n += s.len();
    }

    #[inline(always)]
    fn int(&mut self, v: i64) {
        // One digit, the most common number of a line (the cursor, `dep`,
        // `r`, a wait's parameters): a store, inline.
        if (0..10).contains(&v) {
            self.b[self.n] = b'0' + v as u8;
            self.n += 1;
            return;
        }
        self.wide(v);
    }

    /// A number of two digits or more, or a negative one.
    fn wide(&mut self, v: i64) {
        if v < 0 {
            self.b[self.n] = b'-';
            self.n += 1;
        }
        let u = v.unsigned_abs();
        if u < 100_000_000 {
            self.eight(u as u32, true);
        } else if u < 10_000_000_000_000_000 {
            // A `tim` of the epoch's µs has 16 digits.
            self.eight((u / 100_000_000) as u32, true);
            self.eight((u % 100_000_000) as u32, false);
        } else {
            self.eight((u / 10_000_000_000_000_000) as u32, true);
            let rest = u % 10_000_000_000_000_000;
            self.eight((rest / 100_000_000) as u32, false);
            self.eight((rest % 100_000_000) as u32, false);
        }
    }

    /// Writes `x` (< 10^8) as eight digits, or without its leading zeros
    /// when `trim` (then `x` > 0). The digits are computed all at once in
    /// one u64, a byte each, and stored with one 8-byte write (the bytes
    /// past the trimmed number are overwritten by what follows or never
    /// kept): a `tim` of 7-8 digits costs ~50 instructions, where two
    /// digits at a time after a digit count cost ~90. Each step splits
    /// every lane of the word in two with a multiply-shift that divides
    /// exactly in its range: 4-digit lanes by 100 (x * 10486 >> 20 for
    /// x < 10^4), 2-digit lanes by 10 (x * 103 >> 10 for x < 100).
    #[inline]
    fn eight(&mut self, x: u32, trim: bool) {
        let x = x as u64;
        let halves = (x / 10_000) | ((x % 10_000) << 32);
        let hundreds = ((halves * 10_486) >> 20) & 0x0000_007f_0000_007f;
        let quarters = ((halves - 100 * hundreds) << 16) | hundreds;
        let tens = ((quarters * 103) >> 10) & 0x000f_000f_000f_000f;
        let digits = ((quarters - 10 * tens) << 8) | tens;
        // Byte i is digit i: leading zero digits are the low zero bytes.
        let skip = if trim {
            (digits.trailing_zeros() / 8) as usize
        } else {
            0
        };
        let ascii = (digits | 0x3030_3030_3030_3030) >> (8 * skip);
        self.b[self.n..self.n + 8].copy_from_slice(&ascii.to_le_bytes());
        self.n += 8 - skip;
    }
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace with a header that names the engine, the side that
    /// wrote it and the timer, so that a reader knows what it profiles.
    pub fn new(out: W, h: &Header<'_>) -> io::Result<Self> {
        let mut w = TraceWriter {
            out: Some(out),
            buf: vec![0; BUFFER + Line::CAP].into_boxed_slice(),
            len: 0,
            scratch: Vec::new(),
            secret: Vec::new(),
            broken: None,
        };
        w.slow(format_args!(
            "Trace file {}\ntracelab {} {}-side trace of {} (timer: {})\n\n*** {}\n",
            h.name,
            env!("CARGO_PKG_VERSION"),
            h.side,
            h.engine,
            h.timer,
            h.started
        ))?;
        Ok(w)
    }

    /// A hot line, assembled in place: `Line::CAP` bytes are free.
    #[inline]
    fn line(&mut self) -> Line<'_> {
        Line {
            b: &mut self.buf[self.len..],
            n: 0,
        }
    }

    /// Keeps the `n` bytes a `Line` wrote and writes what is buffered once
    /// there is enough of it.
    #[inline]
    fn keep(&mut self, n: usize) -> io::Result<()> {
        self.len += n;
        if self.len >= BUFFER {
            self.write_buffered()?;
        }
        Ok(())
    }

    /// A line of any length, formatted with `format_args!`.
    fn slow(&mut self, args: std::fmt::Arguments<'_>) -> io::Result<()> {
        let mut text = std::mem::take(&mut self.scratch);
        text.clear();
        text.write_fmt(args)?;
        let r = self.append(&text);
        self.scratch = text;
        r
    }

    /// Appends bytes of any length, writing out each full buffer.
    fn append(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            // keep() leaves len below BUFFER: there is room for one more.
            let k = (BUFFER - self.len).min(bytes.len());
            self.buf[self.len..self.len + k].copy_from_slice(&bytes[..k]);
            bytes = &bytes[k..];
            self.keep(k)?;
        }
        Ok(())
    }

    fn write_buffered(&mut self) -> io::Result<()> {
        if let Some((kind, what)) = &self.broken {
            // Emptied all the same: a full disk does not stop the session.
            self.len = 0;
            return Err(io::Error::new(*kind, what.clone()));
        }
        if let Some(out) = self.out.as_mut() {
            if self.len > 0 {
                // Emptied whether or not the write succeeds: a full disk
                // does not stop the session.
                let r = out.write_all(&self.buf[..self.len]);
                self.len = 0;
                if let Err(e) = r {
                    self.broken = Some((e.kind(), e.to_string()));
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// The first write error, if a write failed: the trace is incomplete
    /// from there on.
    pub fn failure(&self) -> Option<String> {
        self.broken.as_ref().map(|(_, what)| what.clone())
    }

    /// PARSING IN CURSOR with the statement text, END OF STMT, and the
    /// PARSE call. `oct` is Oracle's command type (3 for SELECT).
    /// A statement that may carry a password is written masked (see
    /// `crate::secrets`), and its cursor's binds are left out.
    pub fn parse(&mut self, cursor: u64, sql: &str, oct: u32, t: CallTimes) -> io::Result<()> {
        self.secret.retain(|&c| c != cursor);
        if crate::secrets::mentions_password(sql) {
            self.secret.push(cursor);
        }
        let sql = crate::secrets::redact_sql(sql);
        let (id, hv) = sqlid(&sql);
        self.slow(format_args!(
            "=====================\n\
             PARSING IN CURSOR #{cursor} len={} dep={} uid=0 oct={oct} lid=0 tim={} hv={hv} ad='0' sqlid='{id}'\n\
             {sql}\nEND OF STMT\n",
            sql.len(),
            t.dep,
            t.tim
        ))?;
        self.call("PARSE", cursor, t)
    }

    /// The bind values of the next EXEC (`None` is NULL: no value line, as
    /// Oracle writes it). A value's line breaks become spaces: a trace
    /// line is one line.
    pub fn binds(&mut self, cursor: u64, values: &[Option<&str>]) -> io::Result<()> {
        if !self.secret.is_empty() && self.secret.contains(&cursor) {
            return Ok(());
        }
        let mut l = self.line();
        l.put(b"BINDS #");
        l.int(cursor as i64);
        l.put(b":\n\n");
        let mut n = l.n;
        for (i, v) in values.iter().enumerate() {
            if n > Line::CAP - Line::PIECE - 64 {
                self.keep(n)?;
                n = 0;
            }
            let mut l = self.line();
            l.n = n;
            l.put(b" Bind#");
            l.int(i as i64);
            l.put(b"\n");
            n = l.n;
            let Some(v) = v else { continue };
            if Line::fits(v) && !v.contains('\n') {
                l.put(b"  value=\"");
                l.put(v.as_bytes());
                l.put(b"\"\n");
                n = l.n;
                continue;
            }
            // A long or multi-line value: written as it comes.
            self.keep(n)?;
            n = 0;
            self.append(b"  value=\"")?;
            for (k, part) in v.split('\n').enumerate() {
                if k > 0 {
                    self.append(b" ")?;
                }
                self.append(part.as_bytes())?;
            }
            self.append(b"\"\n")?;
        }
        self.keep(n)
    }

    /// An EXEC call.
    pub fn exec(&mut self, cursor: u64, t: CallTimes) -> io::Result<()> {
        self.call("EXEC", cursor, t)
    }

    /// A FETCH call (`t.r` rows).
    pub fn fetch(&mut self, cursor: u64, t: CallTimes) -> io::Result<()> {
        self.call("FETCH", cursor, t)
    }

    /// A CLOSE call (type=0: the cursor is closed, not cached).
    pub fn close(&mut self, cursor: u64, t: CallTimes) -> io::Result<()> {
        self.slow(format_args!(
            "CLOSE #{cursor}:c={},e={},dep={},type=0,tim={}\n",
            t.c, t.e, t.dep, t.tim
        ))
    }

    fn call(&mut self, name: &str, cursor: u64, t: CallTimes) -> io::Result<()> {
        let mut l = self.line();
        l.put(name.as_bytes());
        l.put(b" #");
        l.int(cursor as i64);
        l.put(b":c=");
        l.int(t.c);
        l.put(b",e=");
        l.int(t.e);
        l.put(b",p=0,cr=0,cu=0,mis=0,r=");
        l.int(t.r);
        l.put(b",dep=");
        l.int(t.dep);
        l.put(b",og=1,plh=0,tim=");
        l.int(t.tim);
        l.put(b"\n");
        let n = l.n;
        self.keep(n)
    }

    /// A WAIT line: `ela` µs waiting for `name`, with Oracle's three
    /// parameters of that event, ending at `tim`.
    pub fn wait(
        &mut self,
        cursor: u64,
        name: &str,
        ela: i64,
        params: [(&str, i64); 3],
        tim: i64,
    ) -> io::Result<()> {
        let pieces = name.len() + params.iter().map(|(k, _)| k.len()).sum::<usize>();
        if pieces > Line::PIECE {
            return self.slow(format_args!(
                "WAIT #{cursor}: nam='{name}' ela= {ela} {}={} {}={} {}={} obj#=-1 tim={tim}\n",
                params[0].0, params[0].1, params[1].0, params[1].1, params[2].0, params[2].1
            ));
        }
        let mut l = self.line();
        l.put(b"WAIT #");
        l.int(cursor as i64);
        l.put(b": nam='");
        l.put(name.as_bytes());
        l.put(b"' ela= ");
        l.int(ela);
        for (k, v) in params {
            l.put(b" ");
            l.put(k.as_bytes());
            l.put(b"=");
            l.int(v);
        }
        l.put(b" obj#=-1 tim=");
        l.int(tim);
        l.put(b"\n");
        let n = l.n;
        self.keep(n)
    }

    /// A WAIT line from its fixed parts (see [`WaitLine`]): `ela` µs,
    /// ending at `tim`. The same line as [`TraceWriter::wait`] writes.
    pub fn wait_line(&mut self, w: &WaitLine, ela: i64, tim: i64) -> io::Result<()> {
        if !w.hot {
            return self.wait(w.cursor, &w.name, ela, w.params(), tim);
        }
        let mut l = self.line();
        l.put(&w.head);
        l.int(ela);
        l.put(&w.tail);
        l.int(tim);
        l.put(b"\n");
        let n = l.n;
        self.keep(n)
    }

    /// End of a transaction: commit or rollback.
    pub fn xctend(&mut self, rollback: bool, read_only: bool, tim: i64) -> io::Result<()> {
        self.slow(format_args!(
            "XCTEND rlbk={}, rd_only={}, tim={tim}\n",
            rollback as u8, read_only as u8
        ))
    }

    /// An error returned by the call just written on `cursor`: Oracle's
    /// `ERROR #c:err=N tim=T`. `err` is the engine's own code (a
    /// PostgreSQL SQLSTATE such as `57014`, which may hold letters).
    pub fn error(&mut self, cursor: u64, err: &str, tim: i64) -> io::Result<()> {
        self.slow(format_args!("ERROR #{cursor}:err={err} tim={tim}\n"))
    }

    /// Writes everything buffered; an error if it, or any write before
    /// it, failed.
    pub fn flush(&mut self) -> io::Result<()> {
        self.write_buffered()?;
        let r = match self.out.as_mut() {
            Some(out) => out.flush(),
            None => Ok(()),
        };
        if let Err(e) = &r {
            self.broken = Some((e.kind(), e.to_string()));
        }
        r
    }

    /// Flushes and hands back the writer.
    pub fn into_inner(mut self) -> io::Result<W> {
        self.flush()?;
        self.out
            .take()
            .ok_or_else(|| io::Error::other("the trace writer was already taken"))
    }
}

/// A trace dropped without `flush` is still written out, as `BufWriter`
/// would (errors then have nowhere to go).
impl<W: Write> Drop for TraceWriter<W> {
    fn drop(&mut self) {
        let _ = self.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEADER: Header<'static> = Header {
        name: "t",
        engine: "postgres",
        side: "client",
        timer: "vdso",
        started: "x",
    };

    /// A write that fails (a full disk) is remembered: nothing more is
    /// written and `flush` says so, however many lines came after it.
    #[test]
    fn a_failed_write_is_reported_by_flush() {
        let mut w = TraceWriter::new(std::fs::File::create("/dev/full").unwrap(), &HEADER).unwrap();
        let t = CallTimes {
            c: 1,
            e: 2,
            r: 0,
            dep: 0,
            tim: 3,
        };
        for _ in 0..5000 {
            let _ = w.exec(1, t);
        }
        assert!(w.failure().is_some());
        let e = w.flush().unwrap_err();
        assert!(e.to_string().contains("No space left on device"), "{e}");
        assert!(w.flush().is_err(), "still broken");
    }

    #[test]
    fn error_line_is_oracles_with_a_sqlstate() {
        let mut w = TraceWriter::new(
            Vec::new(),
            &Header {
                name: "t",
                engine: "postgres",
                side: "server (proxy)",
                timer: "monotonic",
                started: "2026-01-01T00:00:00Z",
            },
        )
        .unwrap();
        w.error(3, "57014", 1234).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert!(text.ends_with("\nERROR #3:err=57014 tim=1234\n"), "{text}");
    }

    #[test]
    fn hot_lines_are_oracles() {
        let mut w = TraceWriter::new(
            Vec::new(),
            &Header {
                name: "t",
                engine: "postgres",
                side: "client",
                timer: "vdso",
                started: "2026-01-01T00:00:00+00:00",
            },
        )
        .unwrap();
        let t = CallTimes {
            c: 0,
            e: 1_234_567_890_123,
            r: -1,
            dep: 0,
            tim: i64::MIN,
        };
        w.exec(7, t).unwrap();
        w.wait(
            7,
            "SQL*Net message from client",
            -42,
            [("driver id", 0), ("#bytes", 1), ("p3", i64::MAX)],
            9,
        )
        .unwrap();
        w.binds(7, &[Some("a\nb"), None, Some("")]).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        let body = text.split_once("+00:00\n").unwrap().1;
        assert_eq!(
            body,
            format!(
                "EXEC #7:c=0,e=1234567890123,p=0,cr=0,cu=0,mis=0,r=-1,dep=0,og=1,plh=0,tim={}\n\
                 WAIT #7: nam='SQL*Net message from client' ela= -42 driver id=0 #bytes=1 p3={} obj#=-1 tim=9\n\
                 BINDS #7:\n\n Bind#0\n  value=\"a b\"\n Bind#1\n Bind#2\n  value=\"\"\n",
                i64::MIN,
                i64::MAX
            )
        );
    }

    #[test]
    fn numbers_are_written_as_format_writes_them() {
        let mut values = vec![i64::MIN, i64::MAX, i64::MIN + 1, -1, 0];
        let mut p = 1i64;
        for _ in 0..18 {
            values.extend([p - 1, p, p + 1, -p, 7 * p]);
            p *= 10;
        }
        // And a spread of every length, each a line of its own.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..20_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push((x >> (x % 64)) as i64);
        }
        for v in values {
            let mut b = [0u8; Line::CAP];
            let mut l = Line { b: &mut b, n: 0 };
            l.int(v);
            assert_eq!(l.text(), v.to_string());
        }
    }

    #[test]
    fn long_names_and_values_take_the_slow_path_intact() {
        let mut w = TraceWriter::new(Vec::new(), &HEADER).unwrap();
        let long = "n".repeat(500);
        let k = "k".repeat(150);
        w.wait(1, &long, 5, [(&k, 1), (&k, 2), (&k, 3)], 9).unwrap();
        let many: Vec<String> = (0..40)
            .map(|i| format!("{i}{}", "v".repeat(i * 7)))
            .collect();
        let vals: Vec<Option<&str>> = many.iter().map(|v| Some(v.as_str())).collect();
        w.binds(2, &vals).unwrap();
        let text = String::from_utf8(w.into_inner().unwrap()).unwrap();
        assert!(text.contains(&format!(
            "WAIT #1: nam='{long}' ela= 5 {k}=1 {k}=2 {k}=3 obj#=-1 tim=9\n"
        )));
        let mut want = String::from("BINDS #2:\n\n");
        for (i, v) in many.iter().enumerate() {
            want.push_str(&format!(" Bind#{i}\n  value=\"{v}\"\n"));
        }
        assert!(text.ends_with(&want), "{text}");
    }

    /// A WAIT line from its rendered parts is the line `wait` writes,
    /// short or long (the slow path), with extreme numbers.
    #[test]
    fn a_rendered_wait_line_is_the_wait_line() {
        let long = "n".repeat(300);
        type Case<'a> = (u64, &'a str, [(&'a str, i64); 3]);
        let cases: [Case; 3] = [
            (
                1,
                "SQL*Net message from client",
                [("driver id", 0), ("#bytes", 1), ("p3", 0)],
            ),
            (
                1_000_002,
                "x",
                [("a", i64::MIN), ("b", -7), ("c", i64::MAX)],
            ),
            (3, &long, [("k", 1), ("k", 2), ("k", 3)]),
        ];
        for (cursor, name, params) in cases {
            let line = WaitLine::new(cursor, name, params);
            assert_eq!(line.cursor(), cursor);
            for (ela, tim) in [
                (0, 0),
                (-42, 9),
                (i64::MAX, i64::MIN),
                (123_456, 98_765_432),
            ] {
                let mut a = TraceWriter::new(Vec::new(), &HEADER).unwrap();
                a.wait(cursor, name, ela, params, tim).unwrap();
                let mut b = TraceWriter::new(Vec::new(), &HEADER).unwrap();
                b.wait_line(&line, ela, tim).unwrap();
                let (a, b) = (a.into_inner().unwrap(), b.into_inner().unwrap());
                assert_eq!(String::from_utf8(b).unwrap(), String::from_utf8(a).unwrap());
            }
        }
    }

    #[test]
    fn a_dropped_writer_writes_what_it_buffered() {
        let mut out = Vec::new();
        {
            let mut w = TraceWriter::new(&mut out, &HEADER).unwrap();
            for i in 0..10_000 {
                w.exec(
                    1,
                    CallTimes {
                        tim: i,
                        ..CallTimes::default()
                    },
                )
                .unwrap();
            }
        }
        let text = String::from_utf8(out).unwrap();
        assert_eq!(text.matches("EXEC #1:").count(), 10_000);
        assert!(text.ends_with("tim=9999\n"));
    }

    #[test]
    fn sqlid_is_oracles() {
        // From the PARSING IN CURSOR lines of real 19c traces in
        // tests/fixtures (db-ping and crc-local-force).
        assert_eq!(
            sqlid("select systimestamp at local from dual@droplet_link"),
            ("b3w11b0c5apvk".to_string(), 408246130)
        );
        assert_eq!(
            sqlid("BEGIN DBMS_OUTPUT.ENABLE(NULL); END;").0,
            "5t10uu7v11s5t"
        );
        assert_eq!(
            sqlid("select max(FA#) from SYS_FBA_FA"),
            ("fzrshwabvtwc0".to_string(), 2545742208)
        );
    }
}
