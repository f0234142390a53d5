//! Writing traces in the 10046 format, so that tracelab's own traces (the
//! client side of `run`, the server side of `proxy`) profile with the same
//! reader and the same expressions as Oracle's.
//!
//! Lines are written as each operation ends, as Oracle does: a call's `tim`
//! is its end, waits come before the call that follows them. Writes are
//! buffered; nothing is flushed per line.

use std::io::{self, BufWriter, Write};

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
    out: BufWriter<W>,
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace with a header that names the engine, the side that
    /// wrote it and the timer, so that a reader knows what it profiles.
    pub fn new(out: W, h: &Header<'_>) -> io::Result<Self> {
        let mut out = BufWriter::with_capacity(64 << 10, out);
        writeln!(out, "Trace file {}", h.name)?;
        writeln!(
            out,
            "tracelab {} {}-side trace of {} (timer: {})",
            env!("CARGO_PKG_VERSION"),
            h.side,
            h.engine,
            h.timer
        )?;
        writeln!(out, "\n*** {}", h.started)?;
        Ok(TraceWriter { out })
    }

    /// PARSING IN CURSOR with the statement's text, then its PARSE line.
    pub fn parse(&mut self, cursor: u64, sql: &str, oct: u32, t: CallTimes) -> io::Result<()> {
        let (id, hv) = sqlid(sql);
        writeln!(self.out, "=====================")?;
        writeln!(
            self.out,
            "PARSING IN CURSOR #{cursor} len={} dep={} uid=0 oct={oct} lid=0 tim={} hv={hv} ad='0' sqlid='{id}'",
            sql.len(),
            t.dep,
            t.tim
        )?;
        writeln!(self.out, "{sql}")?;
        writeln!(self.out, "END OF STMT")?;
        self.call("PARSE", cursor, t)
    }

    /// A BINDS block: one `Bind#n` per value, `value=` omitted for NULL as
    /// Oracle does; character values quoted.
    pub fn binds(&mut self, cursor: u64, values: &[Option<&str>]) -> io::Result<()> {
        let mut n = itoa::Buffer::new();
        let o = &mut self.out;
        o.write_all(b"BINDS #")?;
        o.write_all(n.format(cursor).as_bytes())?;
        o.write_all(b":\n\n")?;
        for (i, v) in values.iter().enumerate() {
            o.write_all(b" Bind#")?;
            o.write_all(n.format(i).as_bytes())?;
            o.write_all(b"\n")?;
            if let Some(v) = v {
                o.write_all(b"  value=\"")?;
                // A newline inside a value would end the line early.
                for (k, part) in v.split('\n').enumerate() {
                    if k > 0 {
                        o.write_all(b" ")?;
                    }
                    o.write_all(part.as_bytes())?;
                }
                o.write_all(b"\"\n")?;
            }
        }
        Ok(())
    }

    pub fn exec(&mut self, cursor: u64, t: CallTimes) -> io::Result<()> {
        self.call("EXEC", cursor, t)
    }

    pub fn fetch(&mut self, cursor: u64, t: CallTimes) -> io::Result<()> {
        self.call("FETCH", cursor, t)
    }

    pub fn close(&mut self, cursor: u64, t: CallTimes) -> io::Result<()> {
        writeln!(
            self.out,
            "CLOSE #{cursor}:c={},e={},dep={},type=0,tim={}",
            t.c, t.e, t.dep, t.tim
        )
    }

    fn call(&mut self, name: &str, cursor: u64, t: CallTimes) -> io::Result<()> {
        // Written piece by piece with itoa rather than with `write!`: a
        // traced run writes three or four of these lines per call, and the
        // formatting machinery was the largest cost of tracing.
        let mut n = itoa::Buffer::new();
        let o = &mut self.out;
        o.write_all(name.as_bytes())?;
        o.write_all(b" #")?;
        o.write_all(n.format(cursor).as_bytes())?;
        o.write_all(b":c=")?;
        o.write_all(n.format(t.c).as_bytes())?;
        o.write_all(b",e=")?;
        o.write_all(n.format(t.e).as_bytes())?;
        o.write_all(b",p=0,cr=0,cu=0,mis=0,r=")?;
        o.write_all(n.format(t.r).as_bytes())?;
        o.write_all(b",dep=")?;
        o.write_all(n.format(t.dep).as_bytes())?;
        o.write_all(b",og=1,plh=0,tim=")?;
        o.write_all(n.format(t.tim).as_bytes())?;
        o.write_all(b"\n")
    }

    /// A WAIT of `ela` µs ending at `tim`, with Oracle's three parameter
    /// slots (`p1`..`p3`) given as name/value pairs.
    pub fn wait(
        &mut self,
        cursor: u64,
        name: &str,
        ela: i64,
        params: [(&str, i64); 3],
        tim: i64,
    ) -> io::Result<()> {
        let mut n = itoa::Buffer::new();
        let o = &mut self.out;
        o.write_all(b"WAIT #")?;
        o.write_all(n.format(cursor).as_bytes())?;
        o.write_all(b": nam='")?;
        o.write_all(name.as_bytes())?;
        o.write_all(b"' ela= ")?;
        o.write_all(n.format(ela).as_bytes())?;
        for (k, v) in params {
            o.write_all(b" ")?;
            o.write_all(k.as_bytes())?;
            o.write_all(b"=")?;
            o.write_all(n.format(v).as_bytes())?;
        }
        o.write_all(b" obj#=-1 tim=")?;
        o.write_all(n.format(tim).as_bytes())?;
        o.write_all(b"\n")
    }

    /// End of a transaction: commit or rollback.
    pub fn xctend(&mut self, rollback: bool, read_only: bool, tim: i64) -> io::Result<()> {
        writeln!(
            self.out,
            "XCTEND rlbk={}, rd_only={}, tim={tim}",
            rollback as u8, read_only as u8
        )
    }

    /// An error returned by the call just written on `cursor`: Oracle's
    /// `ERROR #c:err=N tim=T`. `err` is the engine's own code (a
    /// PostgreSQL SQLSTATE such as `57014`, which may hold letters).
    pub fn error(&mut self, cursor: u64, err: &str, tim: i64) -> io::Result<()> {
        writeln!(self.out, "ERROR #{cursor}:err={err} tim={tim}")
    }

    /// Writes out what is buffered (at the end of a run, or before a crash
    /// report: nothing recorded is lost).
    pub fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }

    /// Flushes and returns the underlying writer.
    pub fn into_inner(self) -> io::Result<W> {
        self.out.into_inner().map_err(|e| e.into_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
