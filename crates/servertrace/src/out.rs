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
}

impl Lines {
    /// The header: the trace's name, who wrote it (the server side of
    /// PostgreSQL), the timer, and the wall clock at which `tim` starts.
    pub fn header(&mut self, name: &str, version: &str, started: &str) {
        let _ = write!(
            self.buf,
            "Trace file {name}\ntracelab {version} server-side trace of postgres (timer: monotonic)\n\n*** {started}\n"
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
        if secrets::mentions_password(sql) {
            self.secret.push(cursor);
        }
        let sql = secrets::redact_sql(sql);
        let (id, hv) = sqlid(&sql);
        let _ = write!(
            self.buf,
            "=====================\nPARSING IN CURSOR #{cursor} len={} dep={} uid=0 oct={oct} lid=0 tim={} hv={hv} ad='0' sqlid='{id}'\n{sql}\nEND OF STMT\n",
            sql.len(),
            t.dep,
            t.tim
        );
        self.call("PARSE", cursor, t);
    }

    /// Bind values of the next EXEC (`None` is NULL).
    pub fn binds(&mut self, cursor: u64, values: &[Option<String>]) {
        if self.secret.contains(&cursor) {
            return;
        }
        let _ = write!(self.buf, "BINDS #{cursor}:\n\n");
        for (i, v) in values.iter().enumerate() {
            let _ = writeln!(self.buf, " Bind#{i}");
            if let Some(v) = v {
                let _ = writeln!(self.buf, "  value=\"{}\"", v.replace('\n', " "));
            }
        }
    }

    pub fn call(&mut self, name: &str, cursor: u64, t: CallTimes) {
        let _ = writeln!(
            self.buf,
            "{name} #{cursor}:c={},e={},p=0,cr=0,cu=0,mis=0,r={},dep={},og=1,plh=0,tim={}",
            t.c, t.e, t.r, t.dep, t.tim
        );
    }

    pub fn close(&mut self, cursor: u64, t: CallTimes) {
        let _ = writeln!(
            self.buf,
            "CLOSE #{cursor}:c={},e={},dep={},type=0,tim={}",
            t.c, t.e, t.dep, t.tim
        );
    }

    pub fn wait(&mut self, cursor: u64, name: &str, ela: i64, p: [(&str, i64); 3], tim: i64) {
        let _ = writeln!(
            self.buf,
            "WAIT #{cursor}: nam='{name}' ela= {ela} {}={} {}={} {}={} obj#=-1 tim={tim}",
            p[0].0, p[0].1, p[1].0, p[1].1, p[2].0, p[2].1
        );
    }

    pub fn xctend(&mut self, rollback: bool, read_only: bool, tim: i64) {
        let _ = writeln!(
            self.buf,
            "XCTEND rlbk={}, rd_only={}, tim={tim}",
            rollback as u8, read_only as u8
        );
    }

    pub fn error(&mut self, cursor: u64, err: &str, tim: i64) {
        let _ = writeln!(self.buf, "ERROR #{cursor}:err={err} tim={tim}");
    }
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
