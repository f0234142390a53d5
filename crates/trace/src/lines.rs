//! Fast line splitting over any `Read`, in the manner of ripgrep's searcher:
//! one buffer, `memchr` for newlines, lines handed out as slices with no
//! copy unless a line straddles two reads.
//!
//! Why not `BufRead::read_until`: it copies every line into a caller
//! buffer. Why not a memory map: on this kind of machine its page faults
//! cost more than the read copies, and mapped pages count as resident
//! memory, which must stay flat however big the trace.

use std::fs::File;
use std::io::{self, Read};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Read size: fits in L2 with room to spare.
const CHUNK: usize = 256 << 10;

/// A byte range of a file, read with positional reads so that several
/// threads can read pieces of one file at once.
pub(crate) struct RangeReader {
    pub file: Arc<File>,
    pub pos: u64,
    pub end: u64,
    pub counter: Option<Arc<AtomicU64>>,
}

impl Read for RangeReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = (self.end.saturating_sub(self.pos)).min(buf.len() as u64) as usize;
        if want == 0 {
            return Ok(0);
        }
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        self.pos += n as u64;
        if let Some(c) = &self.counter {
            c.fetch_add(n as u64, Ordering::Relaxed);
        }
        Ok(n)
    }
}

/// The longest line kept by default: far longer than any real trace line
/// (the longest SQL texts are split over lines), short enough that a
/// runaway line (`/dev/zero`, a damaged stream) cannot exhaust memory.
pub const DEFAULT_MAX_LINE: usize = 64 << 20;

pub(crate) struct Lines<R> {
    inner: R,
    buf: Vec<u8>,
    /// Start of the unread part of `buf`.
    pos: usize,
    /// End of the valid data in `buf`.
    end: usize,
    /// Offset in the text of `buf[0]`.
    base: u64,
    eof: bool,
    /// Lines longer than this are not kept (see [`Line::overlong`]).
    max_line: usize,
    /// An overlong line was skipped by [`Lines::refill`]: its start offset,
    /// its line end's offset, and whether it had one (not at the end of
    /// input); handed out next as an empty line.
    skipped: Option<(u64, u64, bool)>,
    /// The read error that ended the input early, for the caller to report;
    /// the lines before it are handed out as usual.
    error: Option<io::Error>,
    /// Bytes of a line the error cut short (dropped: a line cut by damage
    /// cannot be trusted).
    cut: usize,
}

/// One line without its terminator (`\n` or `\r\n`), and whether the
/// terminator was there (a missing one marks a truncated last line).
pub(crate) struct Line<'a> {
    pub bytes: &'a [u8],
    pub terminated: bool,
    /// Byte offset of the line's start in the text.
    pub offset: u64,
    /// The line was longer than the limit: its bytes were dropped and it
    /// reads as an empty line.
    pub overlong: bool,
}

impl<R: Read> Lines<R> {
    pub fn new(inner: R) -> Self {
        Self::at(inner, 0)
    }

    /// Lines of a reader whose first byte is at `base` in the text.
    pub fn at(inner: R, base: u64) -> Self {
        Self::with_capacity(inner, base, CHUNK)
    }

    /// Like [`Lines::at`] with a small first buffer, for reading a few
    /// lines (it grows for longer ones).
    pub fn small(inner: R, base: u64) -> Self {
        Self::with_capacity(inner, base, 4096)
    }

    fn with_capacity(inner: R, base: u64, capacity: usize) -> Self {
        Lines {
            inner,
            buf: vec![0; capacity],
            pos: 0,
            end: 0,
            base,
            eof: false,
            max_line: DEFAULT_MAX_LINE,
            skipped: None,
            error: None,
            cut: 0,
        }
    }

    /// Sets the longest line kept (at least one read buffer).
    pub fn max_line(mut self, bytes: usize) -> Self {
        self.max_line = bytes.max(self.buf.len());
        self
    }

    /// The read error that ended the input early, if one did, and how many
    /// bytes of a cut-short line were dropped with it.
    pub fn take_error(&mut self) -> Option<(io::Error, usize)> {
        self.error.take().map(|e| (e, self.cut))
    }

    /// The first bytes of the input (up to one buffer), without consuming
    /// them: for sniffing a file before reading it line by line.
    pub fn head(&mut self) -> &[u8] {
        if self.end == self.pos && !self.eof {
            self.refill();
        }
        &self.buf[self.pos..self.end]
    }

    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// The next line, or `None` at the end of input (or at a read error:
    /// see [`Lines::take_error`]).
    #[inline]
    pub fn next_line(&mut self) -> Option<Line<'_>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.pos..self.end]) {
                let start = self.pos;
                let mut stop = start + i;
                self.pos = stop + 1;
                if stop > start && self.buf[stop - 1] == b'\r' {
                    stop -= 1;
                }
                return Some(Line {
                    bytes: &self.buf[start..stop],
                    terminated: true,
                    offset: self.base + start as u64,
                    overlong: false,
                });
            }
            if self.eof {
                if self.pos == self.end {
                    return None;
                }
                let start = self.pos;
                let mut stop = self.end;
                self.pos = self.end;
                if stop > start && self.buf[stop - 1] == b'\r' {
                    stop -= 1;
                }
                return Some(Line {
                    bytes: &self.buf[start..stop],
                    terminated: false,
                    offset: self.base + start as u64,
                    overlong: false,
                });
            }
            self.refill();
            if let Some((offset, _, terminated)) = self.skipped.take() {
                return Some(Line {
                    bytes: &[],
                    terminated,
                    offset,
                    overlong: true,
                });
            }
        }
    }

    /// The next block of whole lines (or the unterminated rest at the end),
    /// with its offset: for passes that search blocks rather than lines.
    /// An overlong line reads as an empty one (a lone line end), as
    /// [`Lines::next_line`] hands it out.
    pub fn next_block(&mut self) -> Option<(u64, &[u8])> {
        loop {
            if let Some(i) = memchr::memrchr(b'\n', &self.buf[self.pos..self.end]) {
                let start = self.pos;
                self.pos = start + i + 1;
                return Some((self.base + start as u64, &self.buf[start..self.pos]));
            }
            if self.eof {
                if self.pos == self.end {
                    return None;
                }
                let start = self.pos;
                self.pos = self.end;
                return Some((self.base + start as u64, &self.buf[start..self.end]));
            }
            self.refill();
            match self.skipped.take() {
                Some((_, nl, true)) => return Some((nl, b"\n")),
                Some((_, _, false)) => return None,
                None => {}
            }
        }
    }

    /// Reads more. Only here, off the per-line path: the partial line is
    /// moved to the front, the buffer grows when one line fills it, and a
    /// line past `max_line` is skipped to its end (see [`Lines::skipped`]).
    /// A read error ends the input: it is kept for [`Lines::take_error`],
    /// and the partial line it cut is dropped.
    #[cold]
    fn refill(&mut self) {
        if self.pos > 0 {
            self.base += self.pos as u64;
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            if self.end >= self.max_line {
                return self.skip_line();
            }
            let n = (self.buf.len() * 2).min(self.max_line.max(self.buf.len()));
            self.buf.resize(n, 0);
        }
        let _ = self.read_more();
    }

    /// One read into the free end of the buffer; `false` at the end of
    /// input or at an error.
    fn read_more(&mut self) -> bool {
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return false;
                }
                Ok(n) => {
                    self.end += n;
                    return true;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.eof = true;
                    self.cut = self.end - self.pos;
                    self.end = self.pos;
                    self.error = Some(e);
                    return false;
                }
            }
        }
    }

    /// The buffer holds the first `max_line` bytes of one line: drops them
    /// and what follows up to the line's end, reading in place.
    fn skip_line(&mut self) {
        let start = self.base;
        loop {
            let nl = memchr::memchr(b'\n', &self.buf[..self.end]);
            if let Some(i) = nl {
                self.skipped = Some((start, self.base + i as u64, true));
                self.pos = i + 1;
                return;
            }
            self.base += self.end as u64;
            self.end = 0;
            if !self.read_more() {
                if self.error.is_none() {
                    self.skipped = Some((start, self.base, false));
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> Vec<(String, bool, u64)> {
        let mut l = Lines::new(input);
        let mut out = vec![];
        while let Some(line) = l.next_line() {
            out.push((
                String::from_utf8_lossy(line.bytes).into_owned(),
                line.terminated,
                line.offset,
            ));
        }
        out
    }

    #[test]
    fn splits_lf_crlf_and_unterminated_last_line() {
        assert_eq!(
            all(b"a\r\nb\n\nc"),
            vec![
                ("a".into(), true, 0),
                ("b".into(), true, 3),
                ("".into(), true, 5),
                ("c".into(), false, 6)
            ]
        );
        assert!(all(b"").is_empty());
    }

    #[test]
    fn lines_longer_than_the_buffer_survive() {
        let long = "x".repeat(CHUNK * 2 + 17);
        let input = format!("{long}\nshort\n");
        let got = all(input.as_bytes());
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0.len(), long.len());
        assert_eq!(
            (got[1].0.as_str(), got[1].2),
            ("short", long.len() as u64 + 1)
        );
    }

    /// A reader that gives `data`, then fails.
    struct Failing<'a>(&'a [u8]);

    impl Read for Failing<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "incomplete stream",
                ));
            }
            let n = self.0.len().min(buf.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_read_error_ends_the_input_after_the_whole_lines_before_it() {
        let mut l = Lines::new(Failing(b"one\ntwo\nthr"));
        assert_eq!(l.next_line().unwrap().bytes, b"one");
        assert_eq!(l.next_line().unwrap().bytes, b"two");
        assert!(l.next_line().is_none(), "the cut line is dropped");
        let (e, cut) = l.take_error().unwrap();
        assert_eq!((e.to_string().as_str(), cut), ("incomplete stream", 3));
        assert!(l.take_error().is_none());
    }

    #[test]
    fn an_overlong_line_reads_as_empty_and_memory_stays_bounded() {
        let long = "y".repeat(CHUNK * 5 + 3);
        let input = format!("a\n{long}\nb\n{long}");
        let mut l = Lines::new(input.as_bytes()).max_line(CHUNK * 2);
        let mut got = vec![];
        while let Some(line) = l.next_line() {
            got.push((
                line.bytes.to_vec(),
                line.overlong,
                line.terminated,
                line.offset,
            ));
        }
        assert_eq!(
            got,
            vec![
                (b"a".to_vec(), false, true, 0),
                (vec![], true, true, 2),
                (b"b".to_vec(), false, true, long.len() as u64 + 3),
                (vec![], true, false, long.len() as u64 + 5),
            ]
        );
        assert!(l.buf.len() <= CHUNK * 2);
        // Blocks see the overlong line as a lone line end.
        let mut l = Lines::new(input.as_bytes()).max_line(CHUNK * 2);
        let mut newlines = 0;
        let mut text = Vec::new();
        while let Some((_, b)) = l.next_block() {
            newlines += memchr::memchr_iter(b'\n', b).count();
            text.extend_from_slice(b);
        }
        assert_eq!(newlines, 3);
        assert_eq!(text, b"a\n\nb\n");
    }

    #[test]
    fn head_peeks_without_consuming() {
        let mut l = Lines::new(&b"\0bin\nx\n"[..]);
        assert_eq!(l.head(), b"\0bin\nx\n");
        assert_eq!(l.next_line().unwrap().bytes, b"\0bin");
    }

    #[test]
    fn blocks_end_on_line_ends() {
        let mut l = Lines::new(&b"ab\ncd\nef"[..]);
        let (o, b) = l.next_block().unwrap();
        assert_eq!((o, b), (0, &b"ab\ncd\n"[..]));
        let (o, b) = l.next_block().unwrap();
        assert_eq!((o, b), (6, &b"ef"[..]));
        assert!(l.next_block().is_none());
    }
}
