//! Reading gzip text (RFC 1952, any number of members) so that a file
//! damaged mid-stream yields every byte decoded before the damage.
//!
//! Hand-written around flate2's raw inflater, not flate2's gzip readers:
//! those drop what one `read` call decoded when that call meets the
//! damage, and a call decodes up to a whole read buffer (256 KiB, the
//! first thousands of lines of a trace), so a small file damaged in its
//! middle read as damaged before its first line. Here the bytes decoded
//! before an error are handed out, and the error comes with the next
//! call. Header and trailer are read as RFC 1952 lays them out; the
//! inflating is flate2's.

use std::io::{self, BufRead, Read};

use flate2::{Crc, Decompress, FlushDecompress, Status};

/// Header flag bits (RFC 1952, 2.3.1).
const FHCRC: u8 = 1 << 1;
const FEXTRA: u8 = 1 << 2;
const FNAME: u8 = 1 << 3;
const FCOMMENT: u8 = 1 << 4;

enum Part {
    /// Before a member's header (or at the end of the input).
    Header,
    Body,
    /// After the last member, or after an error.
    Done,
}

/// The uncompressed text of gzip input.
pub(crate) struct GzipText<R> {
    inner: R,
    inflate: Decompress,
    crc: Crc,
    part: Part,
    members: u64,
    /// Compressed bytes consumed before the current member.
    member_start: u64,
    consumed: u64,
    /// The error met by a call that also decoded text: handed out by the
    /// next call.
    pending: Option<io::Error>,
}

impl<R: BufRead> GzipText<R> {
    pub fn new(inner: R) -> Self {
        GzipText {
            inner,
            inflate: Decompress::new(false),
            crc: Crc::new(),
            part: Part::Header,
            members: 0,
            member_start: 0,
            consumed: 0,
            pending: None,
        }
    }

    fn damaged(&mut self, why: String) -> io::Error {
        self.part = Part::Done;
        io::Error::new(io::ErrorKind::InvalidData, why)
    }

    fn byte(&mut self) -> io::Result<u8> {
        let mut b = [0u8];
        self.exact(&mut b)?;
        Ok(b[0])
    }

    fn exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.inner.read_exact(buf).map_err(|e| {
            if e.kind() == io::ErrorKind::UnexpectedEof {
                io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the gzip stream is cut short (a member's header or trailer is incomplete)",
                )
            } else {
                e
            }
        })?;
        self.consumed += buf.len() as u64;
        Ok(())
    }

    /// Reads a member's header; `false` at the end of the input.
    fn header(&mut self) -> io::Result<bool> {
        let head = self.inner.fill_buf()?;
        let magic = head.first() == Some(&0x1f) && head.get(1).is_none_or(|b| *b == 0x8b);
        if head.is_empty() {
            if self.members == 0 {
                return Err(self.damaged("the gzip stream is empty".into()));
            }
            self.part = Part::Done;
            return Ok(false);
        }
        self.member_start = self.consumed;
        let mut fixed = [0u8; 10];
        if magic {
            self.exact(&mut fixed)?;
        }
        if fixed[..3] != [0x1f, 0x8b, 8] {
            let at = self.member_start;
            return Err(self.damaged(format!(
                "no gzip member header at compressed byte {at} (after {} whole members)",
                self.members
            )));
        }
        let flags = fixed[3];
        if flags & FEXTRA != 0 {
            let mut len = [0u8; 2];
            self.exact(&mut len)?;
            let mut skip = u16::from_le_bytes(len);
            while skip > 0 {
                self.byte()?;
                skip -= 1;
            }
        }
        for flag in [FNAME, FCOMMENT] {
            if flags & flag != 0 {
                while self.byte()? != 0 {}
            }
        }
        if flags & FHCRC != 0 {
            let mut crc = [0u8; 2];
            self.exact(&mut crc)?;
        }
        self.inflate.reset(false);
        self.crc.reset();
        self.part = Part::Body;
        Ok(true)
    }

    /// Reads a member's trailer and checks it against the text decoded.
    fn trailer(&mut self) -> io::Result<()> {
        let mut t = [0u8; 8];
        self.exact(&mut t)?;
        let crc = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let size = u32::from_le_bytes([t[4], t[5], t[6], t[7]]);
        self.members += 1;
        if crc != self.crc.sum() || size != self.crc.amount() {
            return Err(self.damaged(format!(
                "the gzip checksum does not match (member {} at compressed byte {}): the text decoded before here is damaged somewhere",
                self.members, self.member_start
            )));
        }
        self.part = Part::Header;
        Ok(())
    }
}

impl<R: BufRead> Read for GzipText<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.pending.take() {
            return Err(e);
        }
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.part {
                Part::Done => return Ok(0),
                Part::Header => {
                    if !self.header()? {
                        return Ok(0);
                    }
                }
                Part::Body => {
                    let input = self.inner.fill_buf()?;
                    let eof = input.is_empty();
                    let (before_in, before_out) =
                        (self.inflate.total_in(), self.inflate.total_out());
                    let flush = if eof {
                        FlushDecompress::Finish
                    } else {
                        FlushDecompress::None
                    };
                    let status = self.inflate.decompress(input, buf, flush);
                    let used = (self.inflate.total_in() - before_in) as usize;
                    let made = (self.inflate.total_out() - before_out) as usize;
                    self.inner.consume(used);
                    self.consumed += used as u64;
                    self.crc.update(&buf[..made]);
                    let error = match status {
                        Ok(Status::StreamEnd) => self.trailer().err(),
                        Ok(Status::Ok | Status::BufError) if made == 0 && eof => {
                            Some(self.damaged(format!(
                                "the gzip stream is cut short (member {} ends without its last block)",
                                self.members + 1
                            )))
                        }
                        Ok(_) => None,
                        Err(e) => {
                            let at = self.consumed;
                            Some(self.damaged(format!(
                                "the gzip stream is damaged near compressed byte {at}: {e}"
                            )))
                        }
                    };
                    match (error, made) {
                        (Some(e), 0) => return Err(e),
                        (Some(e), _) => {
                            self.pending = Some(e);
                            return Ok(made);
                        }
                        (None, 0) => {}
                        (None, _) => return Ok(made),
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn gzip(parts: &[&[u8]]) -> Vec<u8> {
        let mut out = Vec::new();
        for p in parts {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(p).unwrap();
            out.extend(e.finish().unwrap());
        }
        out
    }

    fn read_all(bytes: &[u8], chunk: usize) -> (Vec<u8>, Option<String>) {
        let mut r = GzipText::new(io::BufReader::with_capacity(4096, bytes));
        let mut out = Vec::new();
        let mut buf = vec![0u8; chunk];
        loop {
            match r.read(&mut buf) {
                Ok(0) => return (out, None),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, Some(e.to_string())),
            }
        }
    }

    #[test]
    fn members_are_read_one_after_the_other() {
        let text: Vec<u8> = (0..200_000u32)
            .flat_map(|i| format!("{i}\n").into_bytes())
            .collect();
        let gz = gzip(&[&text[..1000], &text[1000..], b""]);
        for chunk in [1, 7, 1 << 16] {
            let (out, err) = read_all(&gz, chunk);
            assert_eq!((out.len(), err), (text.len(), None));
            assert!(out == text);
        }
        // flate2's header options (a name) are skipped.
        let mut e = flate2::GzBuilder::new()
            .filename("x.trc")
            .comment("c")
            .extra(vec![1, 2, 3])
            .write(Vec::new(), flate2::Compression::fast());
        e.write_all(b"named\n").unwrap();
        assert_eq!(
            read_all(&e.finish().unwrap(), 64),
            (b"named\n".to_vec(), None)
        );
    }

    #[test]
    fn the_text_before_damage_comes_out_then_the_error() {
        let text: Vec<u8> = (0..100_000u32)
            .flat_map(|i| format!("line {i}\n").into_bytes())
            .collect();
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&text[..300_000]).unwrap();
        e.flush().unwrap();
        let at = e.get_ref().len();
        e.write_all(&text[300_000..]).unwrap();
        let mut gz = e.finish().unwrap();
        // The block after the sync flush gets the reserved block type.
        gz[at] |= 0b110;
        let (out, err) = read_all(&gz, 1 << 20);
        assert!(out == text[..300_000], "{} bytes", out.len());
        assert!(err.unwrap().contains("damaged near compressed byte"));
        // A wrong checksum: all the text, then the error.
        let mut gz = gzip(&[&text]);
        let n = gz.len();
        gz[n - 8] ^= 1;
        let (out, err) = read_all(&gz, 1 << 20);
        assert_eq!(out.len(), text.len());
        assert!(err.unwrap().contains("checksum does not match"));
        // Cut short.
        let gz = gzip(&[&text]);
        let (out, err) = read_all(&gz[..gz.len() / 2], 1 << 20);
        assert!(!out.is_empty() && text.starts_with(&out));
        assert!(err.unwrap().contains("cut short"));
        // Not gzip after a member.
        let mut gz = gzip(&[b"a\n"]);
        gz.extend_from_slice(b"junk");
        let (out, err) = read_all(&gz, 64);
        assert_eq!(out, b"a\n");
        assert!(err
            .unwrap()
            .contains("no gzip member header at compressed byte"));
    }
}
