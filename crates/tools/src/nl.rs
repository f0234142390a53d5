//! `nl`: a trace's lines with their numbers, the wall-clock time of each
//! timed line and the time since the call before it (Method R's mrnl).

use std::io::Write;

use tracelab_trace::{format_wall_clock, CallKind, ReadOptions, Reader, Source};

use crate::error::{write_err, ToolsError};

/// Width of a wall-clock time as written: `2022-09-01T17:39:34.556684`.
const WALL: usize = 26;

/// Writes every line of `file` to `out` as `LINE WALL-CLOCK DELTA TEXT`:
/// the wall clock of a call's end (its `tim` through the latest `***`
/// timestamp), the seconds since the previous call's end; blank for lines
/// without a `tim`. Returns the reader's warnings.
pub fn number_lines(file: &str, out: impl Write, what: &str) -> Result<Vec<String>, ToolsError> {
    let trace = tracelab_trace::open(&Source::from_arg(file))?;
    let mut out = std::io::BufWriter::with_capacity(1 << 20, out);
    let mut reader = Reader::new(ReadOptions {
        all_lines: true,
        chained: true,
        ..ReadOptions::default()
    });
    let mut failed: Option<std::io::Error> = None;
    let mut prev: Option<i64> = None;
    let mut buf: Vec<u8> = Vec::with_capacity(256);
    let mut delta = String::with_capacity(24);
    // The date and time to the second, formatted once per second.
    let mut second: Option<(i64, String)> = None;
    let summary = reader.read(trace, |c| {
        if failed.is_some() {
            return;
        }
        buf.clear();
        let tim = if c.kind == CallKind::Line {
            None
        } else {
            c.tim_us()
        };
        let _ = write!(buf, "{:>7} ", c.line);
        match tim {
            Some(t) => {
                match c.wall_us(t, 1.0) {
                    Some(w) => {
                        let (sec, us) = (w.div_euclid(1_000_000), w.rem_euclid(1_000_000));
                        if second.as_ref().is_none_or(|s| s.0 != sec) {
                            let mut text = format_wall_clock(sec * 1_000_000);
                            text.truncate(19);
                            second = Some((sec, text));
                        }
                        if let Some((_, text)) = &second {
                            buf.extend_from_slice(text.as_bytes());
                        }
                        let _ = write!(buf, ".{us:06}");
                    }
                    None => buf.extend_from_slice(&[b' '; WALL]),
                }
                match prev {
                    Some(p) => {
                        let d = t - p;
                        let sign = if d < 0 { "-" } else { "" };
                        let d = d.unsigned_abs();
                        delta.clear();
                        let _ = std::fmt::Write::write_fmt(
                            &mut delta,
                            format_args!("{sign}{}.{:06}", d / 1_000_000, d % 1_000_000),
                        );
                        let _ = write!(buf, " {delta:>12} ");
                    }
                    None => buf.extend_from_slice(&[b' '; 14]),
                }
                prev = Some(t);
            }
            None => buf.extend_from_slice(&[b' '; WALL + 14]),
        }
        buf.extend_from_slice(c.text);
        buf.push(b'\n');
        if let Err(e) = out.write_all(&buf) {
            failed = Some(e);
        }
    })?;
    if let Some(e) = failed {
        return Err(write_err(what)(e));
    }
    out.flush().map_err(write_err(what))?;
    Ok(summary
        .diagnostics
        .kept
        .iter()
        .map(ToString::to_string)
        .collect())
}
