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
    let mut digits = itoa::Buffer::new();
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
        right(&mut buf, digits.format(c.line).as_bytes(), 7);
        buf.push(b' ');
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
                        buf.push(b'.');
                        micros(&mut buf, us as u32);
                    }
                    None => buf.extend_from_slice(&[b' '; WALL]),
                }
                match prev {
                    Some(p) => {
                        // ` {sign}{s}.{µs:06}` right-aligned in 12, then a space.
                        let d = t - p;
                        let u = d.unsigned_abs();
                        let secs = digits.format(u / 1_000_000);
                        let width = usize::from(d < 0) + secs.len() + 7;
                        buf.push(b' ');
                        buf.extend(std::iter::repeat_n(b' ', 12usize.saturating_sub(width)));
                        if d < 0 {
                            buf.push(b'-');
                        }
                        buf.extend_from_slice(secs.as_bytes());
                        buf.push(b'.');
                        micros(&mut buf, (u % 1_000_000) as u32);
                        buf.push(b' ');
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

/// `text` right-aligned in `width` (as `{:>width}`).
fn right(buf: &mut Vec<u8>, text: &[u8], width: usize) {
    buf.extend(std::iter::repeat_n(b' ', width.saturating_sub(text.len())));
    buf.extend_from_slice(text);
}

/// Microseconds as six digits (as `{:06}`).
fn micros(buf: &mut Vec<u8>, us: u32) {
    let mut d = [b'0'; 6];
    let mut v = us;
    for slot in d.iter_mut().rev() {
        *slot = b'0' + (v % 10) as u8;
        v /= 10;
    }
    buf.extend_from_slice(&d);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hand_formatting_is_what_format_writes() {
        let mut b = Vec::new();
        right(&mut b, b"42", 7);
        micros(&mut b, 5);
        micros(&mut b, 999_999);
        right(&mut b, b"123456789", 7);
        assert_eq!(
            b,
            format!("{:>7}{:06}{:06}{:>7}", 42, 5, 999_999, 123456789).into_bytes()
        );
    }
}
