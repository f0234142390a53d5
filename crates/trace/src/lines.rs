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
}

/// One line without its terminator (`\n` or `\r\n`), and whether the
/// terminator was there (a missing one marks a truncated last line).
pub(crate) struct Line<'a> {
    pub bytes: &'a [u8],
    pub terminated: bool,
    /// Byte offset of the line's start in the text.
    pub offset: u64,
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
        }
    }

    pub fn inner(&self) -> &R {
        &self.inner
    }

    /// The next line, or `None` at the end of input.
    #[inline]
    pub fn next_line(&mut self) -> io::Result<Option<Line<'_>>> {
        loop {
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.pos..self.end]) {
                let start = self.pos;
                let mut stop = start + i;
                self.pos = stop + 1;
                if stop > start && self.buf[stop - 1] == b'\r' {
                    stop -= 1;
                }
                return Ok(Some(Line {
                    bytes: &self.buf[start..stop],
                    terminated: true,
                    offset: self.base + start as u64,
                }));
            }
            if self.eof {
                if self.pos == self.end {
                    return Ok(None);
                }
                let start = self.pos;
                let mut stop = self.end;
                self.pos = self.end;
                if stop > start && self.buf[stop - 1] == b'\r' {
                    stop -= 1;
                }
                return Ok(Some(Line {
                    bytes: &self.buf[start..stop],
                    terminated: false,
                    offset: self.base + start as u64,
                }));
            }
            self.refill()?;
        }
    }

    /// The next block of whole lines (or the unterminated rest at the end),
    /// with its offset: for passes that search blocks rather than lines.
    pub fn next_block(&mut self) -> io::Result<Option<(u64, &[u8])>> {
        loop {
            if let Some(i) = memchr::memrchr(b'\n', &self.buf[self.pos..self.end]) {
                let start = self.pos;
                self.pos = start + i + 1;
                return Ok(Some((self.base + start as u64, &self.buf[start..self.pos])));
            }
            if self.eof {
                if self.pos == self.end {
                    return Ok(None);
                }
                let start = self.pos;
                self.pos = self.end;
                return Ok(Some((self.base + start as u64, &self.buf[start..self.end])));
            }
            self.refill()?;
        }
    }

    fn refill(&mut self) -> io::Result<()> {
        // Move the partial line to the front, grow if one line fills the buffer.
        if self.pos > 0 {
            self.base += self.pos as u64;
            self.buf.copy_within(self.pos..self.end, 0);
            self.end -= self.pos;
            self.pos = 0;
        }
        if self.end == self.buf.len() {
            let n = self.buf.len() * 2;
            self.buf.resize(n, 0);
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(());
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
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
        while let Some(line) = l.next_line().unwrap() {
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

    #[test]
    fn blocks_end_on_line_ends() {
        let mut l = Lines::new(&b"ab\ncd\nef"[..]);
        let (o, b) = l.next_block().unwrap().unwrap();
        assert_eq!((o, b), (0, &b"ab\ncd\n"[..]));
        let (o, b) = l.next_block().unwrap().unwrap();
        assert_eq!((o, b), (6, &b"ef"[..]));
        assert!(l.next_block().unwrap().is_none());
    }
}
