//! Finding message boundaries in a PostgreSQL byte stream, on a copy of
//! what is forwarded: the bytes themselves go through untouched.
//!
//! Hand-written because the crates that parse the protocol (postgres-protocol)
//! decode whole messages into owned values and expect a client or a server
//! role; the proxy needs neither, only each message's type and, for the few
//! it traces, its body, across arbitrary read boundaries.

/// The largest message a client may announce. PostgreSQL itself refuses
/// messages over 1 GB (`PQ_LARGE_MESSAGE_LIMIT`); anything bigger is a
/// broken or hostile stream.
pub const MAX_MESSAGE: u32 = 0x4000_0000;

/// Bodies kept for tracing are cut here (a giant bind value is not worth
/// holding); parsers treat the cut body as truncated.
const CAPTURE_MAX: usize = 1 << 20;

/// A stream that broke the framing rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    pub typ: u8,
    pub len: u32,
}

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let t = if self.typ.is_ascii_graphic() {
            format!("'{}'", self.typ as char)
        } else {
            format!("0x{:02x}", self.typ)
        };
        write!(
            f,
            "message type {t} announces length {}, expected 4 to {MAX_MESSAGE}",
            self.len
        )
    }
}

enum State {
    /// Collecting the 5-byte header (type, length).
    Header { got: usize },
    /// Inside a body with this many bytes still to come.
    Body { remaining: usize, capture: bool },
}

/// Splits a stream of typed messages (after the startup packet).
pub struct Framer {
    state: State,
    hdr: [u8; 5],
    typ: u8,
    body: Vec<u8>,
}

impl Default for Framer {
    fn default() -> Self {
        Framer {
            state: State::Header { got: 0 },
            hdr: [0; 5],
            typ: 0,
            body: Vec::new(),
        }
    }
}

impl Framer {
    /// Feeds one chunk. For each message completed in it, calls
    /// `on(type, body)` — with the body only when `want(type)` says it is
    /// needed (empty otherwise). Returns the number of messages completed.
    pub fn feed(
        &mut self,
        mut data: &[u8],
        want: impl Fn(u8) -> bool,
        mut on: impl FnMut(u8, &[u8]),
    ) -> Result<u64, Malformed> {
        let mut done = 0;
        while !data.is_empty() {
            match self.state {
                State::Header { got } => {
                    let take = (5 - got).min(data.len());
                    self.hdr[got..got + take].copy_from_slice(&data[..take]);
                    data = &data[take..];
                    if got + take < 5 {
                        self.state = State::Header { got: got + take };
                        break;
                    }
                    self.typ = self.hdr[0];
                    let len =
                        u32::from_be_bytes([self.hdr[1], self.hdr[2], self.hdr[3], self.hdr[4]]);
                    if !(4..=MAX_MESSAGE).contains(&len) {
                        return Err(Malformed { typ: self.typ, len });
                    }
                    let remaining = len as usize - 4;
                    let capture = want(self.typ);
                    if remaining == 0 {
                        on(self.typ, &[]);
                        done += 1;
                        self.state = State::Header { got: 0 };
                    } else {
                        self.body.clear();
                        self.state = State::Body { remaining, capture };
                    }
                }
                State::Body { remaining, capture } => {
                    let take = remaining.min(data.len());
                    let (part, rest) = data.split_at(take);
                    data = rest;
                    let left = remaining - take;
                    if capture {
                        if left == 0 && self.body.is_empty() {
                            // The whole body is in this chunk: no copy.
                            on(self.typ, part);
                        } else {
                            let room = CAPTURE_MAX.saturating_sub(self.body.len());
                            self.body.extend_from_slice(&part[..part.len().min(room)]);
                            if left == 0 {
                                on(self.typ, &self.body);
                            }
                        }
                    } else if left == 0 {
                        on(self.typ, &[]);
                    }
                    if left == 0 {
                        done += 1;
                        self.state = State::Header { got: 0 };
                        if self.body.capacity() > CAPTURE_MAX {
                            self.body = Vec::new();
                        }
                    } else {
                        self.state = State::Body {
                            remaining: left,
                            capture,
                        };
                    }
                }
            }
        }
        Ok(done)
    }

    /// True between messages (no message half read): only there may the
    /// proxy add a message of its own.
    pub fn at_boundary(&self) -> bool {
        matches!(self.state, State::Header { got: 0 })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(t: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![t];
        v.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn splits_across_any_boundary() {
        let mut stream = msg(b'Q', b"select 1\0");
        stream.extend(msg(b'S', b""));
        stream.extend(msg(b'D', &[7u8; 300]));
        stream.extend(msg(b'Q', b"select 2\0"));
        for cut in 1..stream.len() {
            let mut f = Framer::default();
            let mut seen = Vec::new();
            let mut n = 0;
            for piece in stream.chunks(cut) {
                n += f
                    .feed(piece, |t| t == b'Q', |t, b| seen.push((t, b.to_vec())))
                    .unwrap();
            }
            assert_eq!(n, 4, "cut {cut}");
            assert!(f.at_boundary());
            assert_eq!(
                seen,
                vec![
                    (b'Q', b"select 1\0".to_vec()),
                    (b'S', vec![]),
                    (b'D', vec![]),
                    (b'Q', b"select 2\0".to_vec())
                ],
                "cut {cut}"
            );
        }
    }

    #[test]
    fn bad_lengths_are_malformed() {
        let mut f = Framer::default();
        let e = f
            .feed(&[b'Q', 0, 0, 0, 2], |_| true, |_, _| {})
            .unwrap_err();
        assert_eq!(e, Malformed { typ: b'Q', len: 2 });
        assert!(e.to_string().contains("length 2"));
        let mut f = Framer::default();
        assert!(f.feed(&[b'Q', 0xff, 0, 0, 0], |_| true, |_, _| {}).is_err());
    }
}
