//! The facts a trace states once, in its header: which database, host,
//! session, service, module and action wrote it, and the `***` timestamp
//! that ties its `tim` clock to the wall clock.

use tracelab_trace::{Call, CallKind, ReadOptions, Reader, TraceFile};

/// How far into a file the header is looked for: Oracle's header is a
/// few hundred bytes; a trace whose first call is further than this has
/// no usable header.
const HEADER_BYTES: u64 = 256 * 1024;

/// What the header says (each `None` when the trace does not say it).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Header {
    /// `Trace file NAME`: the name the database gave the trace.
    pub trace_name: Option<String>,
    /// The banner (`Oracle Database 19c Enterprise Edition Release ...`,
    /// or tracelab's `tracelab 0.1.0 client-side trace of postgres ...`).
    pub banner: Option<String>,
    /// `Version 19.3.0.0.0`, else the banner's `Release`.
    pub version: Option<String>,
    /// `Node name:`.
    pub host: Option<String>,
    /// `Instance name:`.
    pub instance: Option<String>,
    /// `Unix process pid:`.
    pub pid: Option<i64>,
    /// `*** SESSION ID:(SID.SERIAL)`.
    pub session: Option<String>,
    pub service: Option<String>,
    pub module: Option<String>,
    pub action: Option<String>,
    pub client_id: Option<String>,
    /// The first `***` timestamp, µs since 1970 in UTC (a timestamp
    /// written without a zone is taken as UTC: see `utc_offset_s`).
    pub wall_us: Option<i64>,
    /// The zone of that timestamp in seconds east of UTC, when written.
    pub utc_offset_s: Option<i32>,
    /// Wall-clock µs minus `tim` µs: the first `tim` after the timestamp
    /// is taken to be that moment, as Method R's tools do.
    pub tim_offset_us: Option<i64>,
}

impl Header {
    /// `tim` (µs on the trace's clock) as µs since 1970 UTC.
    pub fn wall(&self, tim: i64) -> Option<i64> {
        self.tim_offset_us.map(|o| o + tim)
    }

    /// Reads the header of `file` (its first 256 kB, `HEADER_BYTES`).
    pub fn read(file: TraceFile) -> Header {
        let mut h = Header::default();
        let opts = ReadOptions {
            all_lines: true,
            line_numbers: false,
            statements: false,
            ..ReadOptions::default()
        };
        // A file that cannot be read is reported by the main read.
        let _ = Reader::new(opts).read_before(file, HEADER_BYTES, |c| h.see(c));
        h
    }

    fn see(&mut self, c: &Call<'_>) {
        if self.tim_offset_us.is_some() {
            return;
        }
        if c.kind != CallKind::Line {
            if let (Some(wall), Some(tim)) = (self.wall_us, c.tim_us()) {
                self.tim_offset_us = Some(wall - tim);
            }
            return;
        }
        let text = String::from_utf8_lossy(c.text);
        let line = text.trim_end();
        let after = |prefix: &str| line.strip_prefix(prefix).map(|v| v.trim().to_string());
        if let Some(v) = after("Trace file ") {
            self.trace_name.get_or_insert(v);
        } else if line.starts_with("Oracle Database") || line.starts_with("Oracle9i") {
            self.banner.get_or_insert(line.to_string());
            if self.version.is_none() {
                self.version = line
                    .split_once("Release ")
                    .and_then(|(_, r)| r.split_whitespace().next())
                    .map(str::to_string);
            }
        } else if line.starts_with("tracelab ") {
            self.banner.get_or_insert(line.to_string());
            self.version = line.split_whitespace().nth(1).map(str::to_string);
        } else if let Some(v) = after("Version ") {
            // "Version 19.3.0.0.0" (the database), not "Version:" (the OS).
            self.version = Some(v);
        } else if let Some(v) = after("Node name:") {
            self.host.get_or_insert(v);
        } else if let Some(v) = after("Instance name:") {
            self.instance.get_or_insert(v);
        } else if let Some(v) = after("Unix process pid:") {
            let pid = v
                .split(|ch: char| !ch.is_ascii_digit())
                .next()
                .unwrap_or("");
            self.pid = self.pid.or(pid.parse().ok());
        } else if let Some(rest) = line.strip_prefix("*** ") {
            self.star_line(rest);
        }
    }

    /// `*** SESSION ID:(39.64812) 2023-...`, `*** MODULE NAME:(...) ...`,
    /// or a bare `*** 2023-08-30T23:05:42.075026+00:00` timestamp.
    fn star_line(&mut self, rest: &str) {
        if rest.starts_with(|ch: char| ch.is_ascii_digit()) {
            if self.wall_us.is_none() {
                if let Some((us, off)) = parse_timestamp(rest) {
                    self.wall_us = Some(us);
                    self.utc_offset_s = off;
                }
            }
            return;
        }
        let Some((key, tail)) = rest.split_once(":(") else {
            return;
        };
        // The value runs to the last ')' before the timestamp: module
        // names hold parentheses of their own ("perl@host (TNS V1-V3)").
        let value = match tail.rfind(") ") {
            Some(i) => &tail[..i],
            None => tail.strip_suffix(')').unwrap_or(tail),
        };
        let slot = match key {
            "SESSION ID" => &mut self.session,
            "SERVICE NAME" => &mut self.service,
            "MODULE NAME" => &mut self.module,
            "ACTION NAME" => &mut self.action,
            "CLIENT ID" => &mut self.client_id,
            _ => return,
        };
        if slot.is_none() {
            *slot = Some(value.to_string());
        }
    }
}

/// `2023-08-30T23:05:42.075026+00:00`, `2023-05-19T05:28:00.339263 (PDB)`,
/// `2008-01-01 12:00:00.123`: µs since 1970 UTC, and the zone's offset in
/// seconds when written (a timestamp without one is read as UTC).
pub fn parse_timestamp(s: &str) -> Option<(i64, Option<i32>)> {
    let b = s.as_bytes();
    let num = |from: usize, len: usize| -> Option<u32> {
        let d = b.get(from..from + len)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| d.iter().fold(0u32, |n, &ch| n * 10 + u32::from(ch - b'0')))
    };
    let (y, mo, d) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    if b.get(4) != Some(&b'-') || !matches!(b.get(10), Some(b'T') | Some(b' ')) {
        return None;
    }
    let (h, mi, sec) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    let mut at = 19;
    let mut micros = 0u32;
    if b.get(at) == Some(&b'.') {
        at += 1;
        let digits = b[at..].iter().take_while(|c| c.is_ascii_digit()).count();
        let frac = &s[at..at + digits];
        let six: String = frac.chars().chain(std::iter::repeat('0')).take(6).collect();
        micros = six.parse().ok()?;
        at += digits;
    }
    let offset = match b.get(at) {
        Some(&sign @ (b'+' | b'-')) => {
            let (oh, om) = (num(at + 1, 2)?, num(at + 4, 2)?);
            let secs = (oh * 3600 + om * 60) as i32;
            Some(if sign == b'-' { -secs } else { secs })
        }
        _ => None,
    };
    let local = chrono::NaiveDate::from_ymd_opt(y as i32, mo, d)?
        .and_hms_micro_opt(h, mi, sec, micros)?
        .and_utc()
        .timestamp_micros();
    Some((local - i64::from(offset.unwrap_or(0)) * 1_000_000, offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_of_every_style() {
        // 2023-08-30T23:05:42.075026Z
        let z = 1_693_436_742_075_026;
        assert_eq!(
            parse_timestamp("2023-08-30T23:05:42.075026+00:00"),
            Some((z, Some(0)))
        );
        assert_eq!(
            parse_timestamp("2023-08-31T01:05:42.075026+02:00"),
            Some((z, Some(7200)))
        );
        assert_eq!(
            parse_timestamp("2023-08-30T23:05:42.075026 (TESTPDB(11))"),
            Some((z, None))
        );
        assert_eq!(
            parse_timestamp("2023-08-30 23:05:42.075"),
            Some((z - 26, None))
        );
        assert_eq!(parse_timestamp("SESSION ID:(1.2)"), None);
    }
}
