//! Writing chosen lines as a trace: the wall clock of every timed line
//! stays what the reader gave it in its own file, and (in a merge) cursor
//! numbers that two processes share are renumbered.

use std::io::Write;

use rustc_hash::FxHashMap;
use tracelab_trace::WallClock;

use crate::error::{write_err, ToolsError};
use crate::scan;
use crate::select::{Item, Timed};

pub struct Sink<W: Write> {
    out: W,
    what: String,
    /// A `***` timestamp written and not yet anchored by a `tim`, and the
    /// anchor in force: the reader's wall clock of the output so far.
    pending: Option<i64>,
    anchor: Option<WallClock>,
    /// How the last timestamp was written (`T` or a space between date
    /// and time, and its zone), for the ones this writes.
    t_style: bool,
    zone: Vec<u8>,
    renamer: Option<Renamer>,
    pub stamps_added: u64,
    pub renumbered: u64,
}

impl<W: Write> Sink<W> {
    pub fn new(out: W, what: &str, renumber: bool) -> Self {
        Sink {
            out,
            what: what.to_string(),
            pending: None,
            anchor: None,
            t_style: true,
            zone: Vec::new(),
            renamer: renumber.then(Renamer::default),
            stamps_added: 0,
            renumbered: 0,
        }
    }

    /// Writes one line of cursor namespace `ns` (a process).
    pub fn write(&mut self, item: &Item<'_>, ns: usize) -> Result<(), ToolsError> {
        if item.text.starts_with(b"***") {
            if let Some((wall, zone)) = scan::stamp(&item.text) {
                self.pending = Some(wall);
                self.zone = zone.to_vec();
                self.t_style = stamp_has_t(&item.text);
            }
        }
        if let Some(t) = item.timed {
            self.timed(t)?;
        }
        let renamed = match (&mut self.renamer, &item.span) {
            (Some(r), Some(span)) => r.rename(ns, &item.text[span.clone()]).map(|new| {
                let mut v = Vec::with_capacity(item.text.len() + 4);
                v.extend_from_slice(&item.text[..span.start]);
                v.extend_from_slice(&new);
                v.extend_from_slice(&item.text[span.end..]);
                v
            }),
            _ => None,
        };
        if renamed.is_some() {
            self.renumbered += 1;
        }
        let text = renamed.as_deref().unwrap_or(item.text.as_ref());
        self.line(text)
    }

    fn line(&mut self, text: &[u8]) -> Result<(), ToolsError> {
        self.out
            .write_all(text)
            .and_then(|()| self.out.write_all(b"\n"))
            .map_err(write_err(&self.what))
    }

    /// A timed line: if the output as written so far would map its `tim`
    /// to another wall clock than its own file does (the lines between
    /// its file's timestamp and it were left out, or another file's clock
    /// is in force), a timestamp line for its own wall clock goes first.
    fn timed(&mut self, t: Timed) -> Result<(), ToolsError> {
        let want = t.wall.map(|w| w.wall_us + (t.tim - w.tim));
        let have = match self.pending {
            Some(p) => Some(p),
            None => self.anchor.map(|a| a.wall_us + (t.tim - a.tim)),
        };
        match want {
            Some(w) if have != Some(w) => {
                let mut s = tracelab_trace::format_wall_clock(w);
                if !self.t_style {
                    s = s.replacen('T', " ", 1);
                }
                let mut text = format!("*** {s}").into_bytes();
                text.extend_from_slice(&self.zone);
                self.line(&text)?;
                self.stamps_added += 1;
                self.pending = None;
                self.anchor = Some(WallClock {
                    wall_us: w,
                    tim: t.tim,
                });
            }
            _ => {
                if let Some(p) = self.pending.take() {
                    self.anchor = Some(WallClock {
                        wall_us: p,
                        tim: t.tim,
                    });
                }
            }
        }
        Ok(())
    }

    pub fn flush(&mut self) -> Result<(), ToolsError> {
        self.out.flush().map_err(write_err(&self.what))
    }
}

/// Whether a `***` line's timestamp has `T` between date and time.
fn stamp_has_t(b: &[u8]) -> bool {
    let rest = &b[3..];
    let start = match memchr::memmem::rfind(rest, b") ") {
        Some(i)
            if !rest
                .trim_ascii_start()
                .first()
                .is_some_and(u8::is_ascii_digit) =>
        {
            i + 2
        }
        _ => rest.len() - rest.trim_ascii_start().len(),
    };
    rest.get(start + 10) == Some(&b'T')
}

/// Cursor numbers per process: the first process to use a number keeps
/// it; another process that uses the same number gets a free one, so that
/// its calls do not take the other's statement.
#[derive(Default)]
struct Renamer {
    map: FxHashMap<(usize, u64), u64>,
    owner: FxHashMap<u64, (usize, u64)>,
}

impl Renamer {
    /// The new text of cursor `raw` of `ns`, if it changes.
    fn rename(&mut self, ns: usize, raw: &[u8]) -> Option<Vec<u8>> {
        let id = scan::cursor_id(raw);
        if id == 0 {
            return None;
        }
        let out = match self.map.get(&(ns, id)) {
            Some(o) => *o,
            None => {
                let mut o = id;
                while self.owner.get(&o).is_some_and(|n| *n != (ns, id)) {
                    o = o.wrapping_add(1).max(1);
                }
                self.owner.insert(o, (ns, id));
                self.map.insert((ns, id), o);
                o
            }
        };
        (out != id).then(|| {
            if raw.starts_with(b"0x") {
                format!("0x{out:x}").into_bytes()
            } else {
                out.to_string().into_bytes()
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_process_using_a_number_gets_another() {
        let mut r = Renamer::default();
        assert_eq!(r.rename(0, b"7"), None);
        assert_eq!(r.rename(1, b"7"), Some(b"8".to_vec()));
        // Its own 8 cannot be 8 any more.
        assert_eq!(r.rename(1, b"8"), Some(b"9".to_vec()));
        assert_eq!(r.rename(0, b"7"), None);
        assert_eq!(r.rename(1, b"7"), Some(b"8".to_vec()));
        assert_eq!(r.rename(1, b"0"), None);
        assert_eq!(r.rename(2, b"0x7"), Some(b"0xa".to_vec()));
        assert_eq!(r.rename(0, b"9"), Some(b"11".to_vec()));
    }

    #[test]
    fn timestamp_style_is_read_after_the_context_value() {
        assert!(stamp_has_t(
            b"*** SESSION ID:(1.2) 2022-09-01T17:39:34.556701-07:00"
        ));
        assert!(stamp_has_t(
            b"*** 2022-09-01T17:39:34.556701-07:00 (PDB1(3))"
        ));
        assert!(!stamp_has_t(b"*** 2018-04-05 18:18:44.341"));
        assert!(!stamp_has_t(b"*** MODULE NAME:(T) 2018-04-05 18:18:44.341"));
    }
}
