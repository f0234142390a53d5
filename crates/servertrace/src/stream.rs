//! The two byte streams of a backend's client connection cut into
//! protocol messages: what the backend receives (a startup packet, then
//! typed messages) and what it sends (a one-byte answer to an SSL or GSS
//! request, then typed messages). recv(2) and send(2) may cut a message
//! anywhere; the parsers carry the rest over.

use crate::message::{self, ClientRef};

/// The most of one message's body kept (a Query or Parse is traced with
/// its text cut there, as the proxy does); the rest is skipped.
const KEEP: usize = 1 << 20;

/// What the startup packet says of the connection.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Startup {
    pub user: String,
    pub database: String,
    pub application: String,
}

/// A message being read.
#[derive(Default)]
struct Parser {
    /// The header read so far (type and length; length only when
    /// untyped).
    head: [u8; 5],
    head_len: usize,
    /// Body bytes still to come.
    need: usize,
    body: Vec<u8>,
    keep: bool,
}

impl Parser {
    /// Feeds `bytes`; calls `done(type, body)` for each whole message
    /// (`type` 0 for an untyped one). `keep(type)` says whose bodies are
    /// kept. Inlined, with the closures, into its two callers.
    #[inline(always)]
    fn feed(
        &mut self,
        mut bytes: &[u8],
        typed: impl Fn() -> bool,
        keep: impl Fn(u8) -> bool,
        mut done: impl FnMut(u8, &[u8]),
    ) {
        while !bytes.is_empty() {
            let head = if typed() { 5 } else { 4 };
            if self.head_len == 0 && bytes.len() >= head {
                // A whole message in `bytes` (the usual case: a backend
                // reads 8 KB at a time) is handed over where it lies,
                // not copied.
                let l = &bytes[head - 4..head];
                let need =
                    (u32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize).saturating_sub(4);
                if bytes.len() - head >= need {
                    let t = if head == 5 { bytes[0] } else { 0 };
                    let body = if keep(t) {
                        &bytes[head..head + need.min(KEEP)]
                    } else {
                        &[]
                    };
                    bytes = &bytes[head + need..];
                    done(t, body);
                    continue;
                }
            }
            if self.head_len < head {
                let k = (head - self.head_len).min(bytes.len());
                self.head[self.head_len..self.head_len + k].copy_from_slice(&bytes[..k]);
                self.head_len += k;
                bytes = &bytes[k..];
                if self.head_len < head {
                    return;
                }
                let l = &self.head[head - 4..head];
                let len = u32::from_be_bytes([l[0], l[1], l[2], l[3]]) as usize;
                self.need = len.saturating_sub(4);
                let t = if head == 5 { self.head[0] } else { 0 };
                self.keep = keep(t);
                self.body.clear();
            }
            let k = self.need.min(bytes.len());
            if self.keep && self.body.len() < KEEP {
                let room = (KEEP - self.body.len()).min(k);
                self.body.extend_from_slice(&bytes[..room]);
            }
            self.need -= k;
            bytes = &bytes[k..];
            if self.need == 0 {
                let t = if head == 5 { self.head[0] } else { 0 };
                self.head_len = 0;
                done(t, &self.body);
            }
        }
    }
}

/// Both directions of one connection.
#[derive(Default)]
pub struct Streams {
    client: Parser,
    server: Parser,
    /// The startup packet is behind us: the client's messages are typed.
    started: bool,
    /// An SSL or GSS request was made: the server's next byte answers it.
    answer_pending: bool,
    /// The messages of the last send(2), the first `sent` of them: kept
    /// from one send to the next with their bodies' buffers, so that a
    /// round trip allocates nothing here.
    sent_msgs: Vec<(u8, Vec<u8>)>,
}

/// What one send(2) of the backend held.
pub enum Sent<'a> {
    /// The server accepted SSL or GSS encryption: nothing more can be
    /// read.
    Encrypted,
    /// Whole messages only (the usual case: the backend sends a round
    /// trip's answers together), read where they lie.
    Whole(&'a [u8]),
    /// Messages of which some began in an earlier send: each with the
    /// body the tracer reads (copied).
    Kept(&'a [(u8, Vec<u8>)]),
}

impl<'a> Sent<'a> {
    /// The messages: type and body.
    pub fn msgs(&self) -> Msgs<'a> {
        match *self {
            Sent::Encrypted => Msgs::Kept([].iter()),
            Sent::Whole(bytes) => Msgs::Whole(bytes),
            Sent::Kept(kept) => Msgs::Kept(kept.iter()),
        }
    }
}

/// The messages of a send (see `Sent::msgs`).
#[derive(Clone)]
pub enum Msgs<'a> {
    Whole(&'a [u8]),
    Kept(std::slice::Iter<'a, (u8, Vec<u8>)>),
}

impl<'a> Iterator for Msgs<'a> {
    type Item = (u8, &'a [u8]);

    fn next(&mut self) -> Option<(u8, &'a [u8])> {
        match self {
            Msgs::Whole(bytes) => {
                // Checked whole by `whole`.
                let (head, rest) = bytes.split_first_chunk::<5>()?;
                let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
                let (body, rest) = rest.split_at(len.saturating_sub(4).min(rest.len()));
                *bytes = rest;
                Some((head[0], body))
            }
            Msgs::Kept(it) => it.next().map(|(t, b)| (*t, b.as_slice())),
        }
    }
}

/// Whether `bytes` are typed messages, each whole.
fn whole(mut bytes: &[u8]) -> bool {
    while let Some((head, rest)) = bytes.split_first_chunk::<5>() {
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        match rest.get(len.saturating_sub(4)..) {
            Some(rest) => bytes = rest,
            None => return false,
        }
    }
    bytes.is_empty()
}

/// What one recv(2) of the backend held besides the messages (which go
/// to the caller's function).
#[derive(Default)]
pub struct Received {
    /// A startup packet (after an SSL request was refused).
    pub startup: Option<Startup>,
    /// The client said Terminate.
    pub terminate: bool,
}

/// A startup packet's parameters.
fn startup_params(body: &[u8]) -> Startup {
    // body: the protocol code, then name/value pairs of C strings.
    let mut s = Startup::default();
    let mut parts = body.get(4..).unwrap_or(&[]).split(|&b| b == 0);
    while let (Some(k), Some(v)) = (parts.next(), parts.next()) {
        if k.is_empty() {
            break;
        }
        let v = String::from_utf8_lossy(v).into_owned();
        match k {
            b"user" => s.user = v,
            b"database" => s.database = v,
            b"application_name" => s.application = v,
            _ => {}
        }
    }
    if s.database.is_empty() {
        s.database = s.user.clone();
    }
    s
}

/// The code after a startup-like packet's length.
/// A startup packet's protocol version 3.x: 3.0, and 3.2, which
/// PostgreSQL 18's libpq asks for with `max_protocol_version=3.2` (its
/// messages that matter here are 3.0's; the cancel key grew, which the
/// tracer does not read). The SSL, GSS and cancel requests' codes have
/// 1234 where the major version is.
fn protocol_3(code: u32) -> bool {
    code >> 16 == 3
}

fn code(body: &[u8]) -> u32 {
    body.get(..4)
        .map_or(0, |c| u32::from_be_bytes([c[0], c[1], c[2], c[3]]))
}

impl Streams {
    /// The first bytes a process received on a stream socket: `None` if
    /// they are not a client's first packet (a process that is no client
    /// backend); `Some(Some(params))` for a startup packet, `Some(None)`
    /// for an SSL or GSS request (the startup packet comes later).
    pub fn startup(&mut self, bytes: &[u8]) -> Option<Option<Startup>> {
        let len = u32::from_be_bytes(bytes.get(..4)?.try_into().ok()?) as usize;
        if !(8..=message::MAX_STARTUP as usize).contains(&len) {
            return None;
        }
        let c = code(&bytes[4..]);
        if !protocol_3(c) && c != message::SSL_REQUEST && c != message::GSSENC_REQUEST {
            return None;
        }
        let r = self.client(bytes, |_| {});
        Some(r.startup)
    }

    /// Bytes the backend received: each message the tracer follows goes
    /// to `each`, borrowed from `bytes` or from the parser's buffer.
    pub fn client(&mut self, bytes: &[u8], mut each: impl FnMut(ClientRef<'_>)) -> Received {
        let mut r = Received::default();
        let Streams {
            client,
            started,
            answer_pending,
            ..
        } = self;
        let started_now = std::cell::Cell::new(*started);
        client.feed(
            bytes,
            || started_now.get(),
            |t| t == 0 || message::client_traced(t),
            |t, body| {
                if t == 0 {
                    match code(body) {
                        c if protocol_3(c) => {
                            r.startup = Some(startup_params(body));
                            started_now.set(true);
                        }
                        message::SSL_REQUEST | message::GSSENC_REQUEST => *answer_pending = true,
                        _ => {}
                    }
                    return;
                }
                if t == b'X' {
                    r.terminate = true;
                } else if let Some(m) = message::decode_client_ref(t, body) {
                    each(m);
                }
            },
        );
        *started = started_now.get();
        r
    }

    /// Bytes the backend sent.
    pub fn server<'a>(&'a mut self, mut bytes: &'a [u8]) -> Sent<'a> {
        if self.answer_pending {
            self.answer_pending = false;
            match bytes.first() {
                Some(b'S' | b'G') => return Sent::Encrypted,
                Some(_) => bytes = &bytes[1..],
                None => return Sent::Kept(&[]),
            }
        }
        let Streams {
            server, sent_msgs, ..
        } = self;
        if server.head_len == 0 && whole(bytes) {
            return Sent::Whole(bytes);
        }
        let mut n = 0;
        server.feed(
            bytes,
            || true,
            message::server_traced,
            |t, body| {
                if n == sent_msgs.len() {
                    sent_msgs.push((t, Vec::new()));
                }
                let m = &mut sent_msgs[n];
                m.0 = t;
                m.1.clear();
                m.1.extend_from_slice(body);
                n += 1;
            },
        );
        Sent::Kept(&sent_msgs[..n])
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A typed protocol message: its type, length and body.
    pub(crate) fn typed(t: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![t];
        m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    /// Protocol version 3.0 in a startup packet.
    const PROTOCOL_3: u32 = 196_608;

    fn startup() -> Vec<u8> {
        startup_of(PROTOCOL_3)
    }

    fn startup_of(version: u32) -> Vec<u8> {
        let mut body = version.to_be_bytes().to_vec();
        body.extend_from_slice(b"user\0alice\0application_name\0app1\0\0");
        let mut m = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        m.extend_from_slice(&body);
        m
    }

    #[test]
    fn messages_cut_anywhere_are_whole_again() {
        let mut s = Streams::default();
        let first = s.startup(&startup()).unwrap().unwrap();
        assert_eq!(
            first,
            Startup {
                user: "alice".into(),
                database: "alice".into(),
                application: "app1".into()
            }
        );
        let mut bytes = typed(b'Q', b"select 1\0");
        bytes.extend(typed(b'P', b"s1\0select $1\0\0\0"));
        bytes.extend(typed(b'X', b""));
        let expected = vec![
            "Query(\"select 1\")".to_string(),
            "Parse { name: \"s1\", sql: \"select $1\" }".to_string(),
        ];
        let show = |m: ClientRef<'_>| match m {
            ClientRef::Query(q) => format!("Query({:?})", String::from_utf8_lossy(q)),
            ClientRef::Parse { name, sql } => format!(
                "Parse {{ name: {:?}, sql: {:?} }}",
                String::from_utf8_lossy(name),
                String::from_utf8_lossy(sql)
            ),
            other => format!("{other:?}"),
        };
        // Cut every 3 bytes (copied and carried over), then whole (read
        // where they lie).
        for size in [3, bytes.len()] {
            let mut msgs = Vec::new();
            let mut terminate = false;
            for chunk in bytes.chunks(size) {
                let r = s.client(chunk, |m| msgs.push(show(m)));
                terminate |= r.terminate;
            }
            assert_eq!(msgs, expected, "chunks of {size}");
            assert!(terminate);
        }
    }

    /// Protocol 3.2 (PostgreSQL 18's libpq with `max_protocol_version=3.2`)
    /// is a session as 3.0 is; 2.0 and a cancel request are not.
    #[test]
    fn a_startup_of_protocol_3_2_begins_a_session() {
        let mut s = Streams::default();
        let first = s.startup(&startup_of(3 << 16 | 2)).unwrap().unwrap();
        assert_eq!(first.user, "alice");
        assert!(Streams::default().startup(&startup_of(2 << 16)).is_none());
        let mut cancel = 16u32.to_be_bytes().to_vec();
        cancel.extend_from_slice(&80_877_102u32.to_be_bytes());
        cancel.extend_from_slice(&[0; 8]);
        assert!(Streams::default().startup(&cancel).is_none());
    }

    #[test]
    fn an_ssl_request_refused_then_a_startup() {
        let mut s = Streams::default();
        let mut ssl = 8u32.to_be_bytes().to_vec();
        ssl.extend_from_slice(&message::SSL_REQUEST.to_be_bytes());
        assert_eq!(s.startup(&ssl), Some(None));
        let mut answer = vec![b'N'];
        answer.extend(typed(b'Z', b"I"));
        let sent = s.server(&answer);
        assert_eq!(sent.msgs().collect::<Vec<_>>(), [(b'Z', &b"I"[..])]);
        assert!(s.client(&startup(), |_| {}).startup.is_some());
        // Accepted: nothing more can be read.
        let mut s = Streams::default();
        s.startup(&ssl);
        assert!(matches!(s.server(b"S"), Sent::Encrypted));
    }

    /// A round trip's answers in one send are read where they lie; cut
    /// across sends they are carried over: the same messages either way.
    #[test]
    fn answers_whole_or_cut_are_the_same() {
        let mut bytes = typed(b'2', b"");
        bytes.extend(typed(b'D', b"\0\x01\0\0\0\x01x"));
        bytes.extend(typed(b'C', b"SELECT 1\0"));
        bytes.extend(typed(b'Z', b"I"));
        let traced = |msgs: Vec<(u8, &[u8])>| -> Vec<(u8, Vec<u8>)> {
            msgs.into_iter()
                .map(|(t, b)| {
                    (
                        t,
                        if message::server_traced(t) {
                            b.to_vec()
                        } else {
                            vec![]
                        },
                    )
                })
                .collect()
        };
        let mut s = Streams::default();
        let sent = s.server(&bytes);
        assert!(matches!(sent, Sent::Whole(_)));
        let whole = traced(sent.msgs().collect());
        assert_eq!(
            whole,
            [
                (b'2', vec![]),
                (b'D', vec![]),
                (b'C', b"SELECT 1\0".to_vec()),
                (b'Z', b"I".to_vec())
            ]
        );
        let mut s = Streams::default();
        let mut cut = Vec::new();
        for chunk in bytes.chunks(7) {
            cut.extend(traced(s.server(chunk).msgs().collect()));
        }
        assert_eq!(cut, whole);
    }

    #[test]
    fn not_a_client() {
        // A server's answer read by a libpq connection inside a worker.
        let mut s = Streams::default();
        assert_eq!(s.startup(&typed(b'R', &0u32.to_be_bytes())), None);
        assert_eq!(s.startup(b"\0\0"), None);
    }
}
