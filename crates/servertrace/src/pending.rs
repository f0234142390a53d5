//! A session's traffic and waits kept as they come, and turned into lines
//! later, a batch at a time.
//!
//! Why: in place, between the backend's own work, the decoding of the
//! protocol and the writing of lines run with cold caches (the backend
//! was asleep, other processes ran): measured on a 2-CPU VM at 40,000
//! select-only lookups a second, the same code took ~1 µs of the
//! backend's CPU a query there against ~0.1 µs in a loop over recorded
//! round trips. So after the session's start the library only copies
//! what the backend received and sent (the bytes, small) and notes each
//! wait (its event, times and parameters), with the point of the session
//! each happened at; the decoding and the lines happen when a batch is
//! full, when the flush timer fires, before anything done at once (a
//! large chunk, a statement inside PL/pgSQL) and at exit. The events are
//! replayed in their order through the same functions that handle them
//! at once, so the lines are the same.

use crate::names::WaitNames;
use crate::out::Params;
use crate::session::{At, Tracer};
use crate::stream::{Received, Sent, Streams};

/// A chunk of more bytes than this is not copied: the pending events are
/// turned into lines first, then the chunk at once (a large result or
/// COPY stays a pass over the bytes, with nothing kept).
pub const COPY_MAX: usize = 4096;
/// Pending events are turned into lines and written out once there are
/// this many, or this many bytes copied (some 130 select-only round
/// trips: about 40 KB of lines).
const EVENTS: usize = 384;
const BYTES: usize = 16 << 10;

enum Event {
    /// `len` bytes the backend received, next in `bytes`.
    Client { at: At, len: u32 },
    /// `len` bytes the backend sent, next in `bytes`.
    Server { at: At, len: u32 },
    /// A wait: its event, elapsed µs, end (`tim`) and parameters.
    Wait {
        info: u32,
        ela: i64,
        tim: i64,
        params: Params,
    },
}

/// The events not yet turned into lines, and the bytes they carry.
#[derive(Default)]
pub struct Pending {
    events: Vec<Event>,
    bytes: Vec<u8>,
}

impl Pending {
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Enough is pending to turn it into lines and write them out.
    #[inline]
    pub fn full(&self) -> bool {
        self.events.len() >= EVENTS || self.bytes.len() >= BYTES
    }

    #[inline]
    pub fn client(&mut self, at: At, bytes: &[u8]) {
        let len = bytes.len() as u32;
        self.push(Event::Client { at, len }, bytes);
    }

    #[inline]
    pub fn server(&mut self, at: At, bytes: &[u8]) {
        let len = bytes.len() as u32;
        self.push(Event::Server { at, len }, bytes);
    }

    /// An event and the bytes it carries.
    #[inline(always)]
    fn push(&mut self, e: Event, bytes: &[u8]) {
        self.events.push(e);
        self.bytes.extend_from_slice(bytes);
    }

    #[inline]
    pub fn wait(&mut self, info: u32, ela: i64, tim: i64, params: Params) {
        self.events.push(Event::Wait {
            info,
            ela,
            tim,
            params,
        });
    }

    /// Turns the pending events into lines, in their order, as `client`,
    /// `server` and `wait` would have at once; true if the client said
    /// Terminate among them.
    pub fn replay(&mut self, s: &mut Streams, t: &mut Tracer, names: &mut WaitNames) -> bool {
        let mut terminate = false;
        let Pending { events, bytes } = self;
        let mut at_byte = 0;
        let mut next = |len: u32| {
            let b = &bytes[at_byte..at_byte + len as usize];
            at_byte += len as usize;
            b
        };
        for e in events.drain(..) {
            match e {
                Event::Client { at, len } => {
                    terminate |= client(s, t, at, next(len)).terminate;
                }
                Event::Server { at, len } => {
                    // Never false here: only the answer to an SSL or GSS
                    // request, made before the session's start, can be,
                    // and nothing is kept before the start.
                    server(s, t, at, next(len));
                }
                Event::Wait {
                    info,
                    ela,
                    tim,
                    params,
                } => wait(t, names.name(info), ela, params, tim),
            }
        }
        bytes.clear();
        terminate
    }
}

/// Bytes the backend received, at `at`: the client's messages, into the
/// tracer's calls.
#[inline]
pub fn client(s: &mut Streams, t: &mut Tracer, at: At, bytes: &[u8]) -> Received {
    // The backend read from its client: it is between statements.
    t.nested_reset();
    s.client(bytes, |m| t.client(m, at))
}

/// Bytes the backend sent, at `at`; false if they accept SSL or GSS (the
/// rest of the conversation cannot be read).
#[inline]
pub fn server(s: &mut Streams, t: &mut Tracer, at: At, bytes: &[u8]) -> bool {
    match s.server(bytes) {
        Sent::Encrypted => return false,
        Sent::Kept([]) => {}
        sent => t.server_chunk(sent.msgs(), at),
    }
    true
}

/// A wait's line, on the cursor of the call it was part of (or of the
/// call before it: the wait for the client).
#[inline]
pub fn wait(t: &mut Tracer, name: &str, ela: i64, params: Params, tim: i64) {
    let cursor = t.wait_cursor();
    t.w.wait(cursor, name, ela, params, tim);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::out::Lines;
    use crate::stream::tests::typed as msg;

    fn cat(msgs: &[Vec<u8>]) -> Vec<u8> {
        msgs.concat()
    }

    /// What the backend did after its session began, in order.
    enum Step {
        Received(Vec<u8>),
        Sent(Vec<u8>),
        Waited(u32, Params),
    }

    /// A session: simple and extended queries, a Bind cut across two
    /// reads, a result larger than `COPY_MAX`, an error, waits.
    fn session() -> Vec<Step> {
        let ready = msg(b'Z', b"I");
        let row = |v: &[u8]| {
            let mut b = vec![0, 1];
            b.extend_from_slice(&(v.len() as u32).to_be_bytes());
            b.extend_from_slice(v);
            msg(b'D', &b)
        };
        let read = Params::Latch {
            timeout: -1,
            events: 1,
        };
        let mut parse = b"s1\0select v from t where k = $1\0".to_vec();
        parse.extend_from_slice(&[0, 1, 0, 0, 0, 23]);
        let bind = |v: &[u8]| {
            let mut b = b"\0s1\0".to_vec();
            b.extend_from_slice(&[0, 0, 0, 1]);
            b.extend_from_slice(&(v.len() as u32).to_be_bytes());
            b.extend_from_slice(v);
            b.extend_from_slice(&[0, 0]);
            msg(b'B', &b)
        };
        let exec = cat(&[bind(b"42"), msg(b'E', b"\0\0\0\0\0"), msg(b'S', b"")]);
        let answer = cat(&[
            msg(b'2', b""),
            row(b"forty-two"),
            msg(b'C', b"SELECT 1\0"),
            ready.clone(),
        ]);
        let big: Vec<Vec<u8>> = (0..400)
            .map(|i| row(format!("row {i:>12}").as_bytes()))
            .collect();
        let mut big = cat(&big);
        big.extend(msg(b'C', b"SELECT 400\0"));
        big.extend(ready.clone());
        assert!(big.len() > COPY_MAX);
        let (cut_a, cut_b) = exec.split_at(7);
        vec![
            Step::Waited(1, read),
            Step::Received(msg(b'Q', b"select 1\0")),
            Step::Sent(cat(&[
                msg(b'T', &[0, 0]),
                row(b"1"),
                msg(b'C', b"SELECT 1\0"),
                ready.clone(),
            ])),
            Step::Waited(1, read),
            Step::Received(cat(&[
                msg(b'P', &parse),
                msg(b'D', b"Ss1\0"),
                msg(b'S', b""),
            ])),
            Step::Sent(cat(&[
                msg(b'1', b""),
                msg(b't', &[0, 1, 0, 0, 0, 23]),
                msg(b'T', &[0, 0]),
                ready.clone(),
            ])),
            Step::Waited(1, read),
            Step::Received(exec.clone()),
            Step::Waited(
                2,
                Params::Io {
                    file: 16384,
                    block: 7,
                    bytes: 8192,
                },
            ),
            Step::Sent(answer.clone()),
            Step::Waited(1, read),
            Step::Received(cut_a.to_vec()),
            Step::Received(cut_b.to_vec()),
            Step::Sent(answer.clone()),
            Step::Waited(1, read),
            Step::Received(msg(b'Q', b"select v from big\0")),
            Step::Sent(big),
            Step::Waited(1, read),
            Step::Received(msg(b'Q', b"select nope\0")),
            Step::Sent(cat(&[
                msg(
                    b'E',
                    b"SERROR\0C42P01\0Mrelation \"nope\" does not exist\0\0",
                ),
                ready.clone(),
            ])),
            Step::Waited(1, read),
            Step::Received(exec),
            Step::Waited(3, Params::Flush { file: 1 }),
            Step::Sent(answer),
        ]
    }

    /// A tracer past the session's start (startup packet, AuthenticationOk,
    /// ReadyForQuery), its lines so far dropped.
    fn started() -> (Streams, Tracer) {
        let mut s = Streams::default();
        let mut sp = 196_608u32.to_be_bytes().to_vec();
        sp.extend_from_slice(b"user\0u\0database\0d\0\0");
        let mut startup = ((sp.len() + 4) as u32).to_be_bytes().to_vec();
        startup.extend_from_slice(&sp);
        assert!(s.startup(&startup).is_some());
        let mut t = Tracer::new(Lines::default(), true);
        let hello = cat(&[msg(b'R', &[0, 0, 0, 0]), msg(b'Z', b"I")]);
        assert!(server(&mut s, &mut t, At::default(), &hello));
        assert!(t.started());
        t.w.buf.clear();
        (s, t)
    }

    fn names() -> WaitNames {
        WaitNames::known(&[
            (1, "Client:ClientRead"),
            (2, "IO:DataFileRead"),
            (3, "IO:WALSync"),
        ])
    }

    /// The session's point at step `i`.
    fn point(i: usize) -> At {
        At {
            tim: 1_000_000 + 100 * i as i64,
            cpu: 50 * i as i64,
            waits: 10 * i as i64,
        }
    }

    /// The lines of the session with every step handled at once.
    fn at_once() -> String {
        let (mut s, mut t) = started();
        let mut names = names();
        for (i, step) in session().into_iter().enumerate() {
            let at = point(i);
            match step {
                Step::Received(b) => {
                    client(&mut s, &mut t, at, &b);
                }
                Step::Sent(b) => {
                    assert!(server(&mut s, &mut t, at, &b));
                }
                Step::Waited(info, params) => wait(&mut t, names.name(info), 7, params, at.tim),
            }
        }
        String::from_utf8(t.w.buf).unwrap()
    }

    /// The same, kept and turned into lines every `every` steps, and at
    /// once (after what is pending) for chunks over `COPY_MAX`, as the
    /// library does.
    fn kept(every: usize) -> String {
        let (mut s, mut t) = started();
        let mut names = names();
        let mut p = Pending::default();
        for (i, step) in session().into_iter().enumerate() {
            let at = point(i);
            match step {
                Step::Received(b) if b.len() <= COPY_MAX => p.client(at, &b),
                Step::Sent(b) if b.len() <= COPY_MAX => p.server(at, &b),
                Step::Waited(info, params) => p.wait(info, 7, at.tim, params),
                Step::Received(b) => {
                    p.replay(&mut s, &mut t, &mut names);
                    client(&mut s, &mut t, at, &b);
                }
                Step::Sent(b) => {
                    p.replay(&mut s, &mut t, &mut names);
                    assert!(server(&mut s, &mut t, at, &b));
                }
            }
            if (i + 1) % every == 0 {
                p.replay(&mut s, &mut t, &mut names);
                assert!(p.is_empty());
            }
        }
        p.replay(&mut s, &mut t, &mut names);
        String::from_utf8(t.w.buf).unwrap()
    }

    #[test]
    fn lines_made_later_are_the_lines_made_at_once() {
        let want = at_once();
        // The session's lines are all there, so that equal means something.
        let count = |s: &str, prefix: &str| s.lines().filter(|l| l.starts_with(prefix)).count();
        assert_eq!(count(&want, "EXEC #"), 6, "{want}");
        assert_eq!(count(&want, "FETCH #"), 5, "{want}");
        assert_eq!(count(&want, "ERROR #"), 1, "{want}");
        assert_eq!(count(&want, "WAIT #"), 9, "{want}");
        assert!(want.contains("nam='IO:DataFileRead' ela= 7 file#=16384 block#=7 bytes=8192"));
        assert!(want.contains("r=400,"), "{want}");
        assert!(want.contains("value=\"42\""), "{want}");
        for every in [1, 2, 3, 5, 1000] {
            assert_eq!(kept(every), want, "turned into lines every {every} steps");
        }
    }

    #[test]
    fn a_batch_is_full_at_its_events_or_its_bytes() {
        let mut p = Pending::default();
        for _ in 0..EVENTS - 1 {
            p.wait(1, 1, 1, Params::Flush { file: 1 });
        }
        assert!(!p.full());
        p.wait(1, 1, 1, Params::Flush { file: 1 });
        assert!(p.full());
        let mut p = Pending::default();
        p.client(At::default(), &vec![b'x'; BYTES - 1]);
        assert!(!p.full());
        p.server(At::default(), b"y");
        assert!(p.full());
    }
}
