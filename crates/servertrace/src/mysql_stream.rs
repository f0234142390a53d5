//! The MariaDB/MySQL client-server protocol, decoded from the bytes a
//! connection thread of `mariadbd` receives and sends (see `mariadb.rs`).
//!
//! Both directions of one connection go to one [`Conversation`], in the
//! order the server read and wrote them: what it received from the client
//! to [`Conversation::client_bytes`], what it sent to
//! [`Conversation::server_bytes`]. recv(2) and send(2) may cut a packet
//! anywhere and may hold several; the framing below carries the rest over.
//! Out come [`Event`]s: the greeting, the login, each command the client
//! sent and, for each command that has an answer, one `Done` with what the
//! server answered.
//!
//! Why a state machine over both directions rather than one per side: the
//! server's packets are not self-describing. Whether a packet starting with
//! 0xFE ends a result set or is a row depends on the capabilities the
//! client asked for in its handshake response (CLIENT_DEPRECATE_EOF), and
//! whether the answer is a result set, a prepared statement's definitions
//! or a plain OK depends on the command the client sent.
//!
//! Memory stays bounded whatever the input: a packet is handed over where
//! it lies in the caller's buffer when it is whole there (the usual case),
//! and only a packet cut by a read is copied, at most its first bytes (64
//! KiB of SQL text, ~1 KiB of a login or an error, 64 bytes of anything
//! else: rows are counted, never kept). Nothing here panics on any input
//! (see the garbage test).
//!
//! Not followed: the compressed protocol (CLIENT_COMPRESS, zlib is not in
//! std) and TLS, after which the decoder reports it once and goes quiet;
//! MySQL 8's query attributes (CLIENT_QUERY_ATTRIBUTES, which MariaDB does
//! not offer).

use std::collections::VecDeque;

/// A physical packet this long is continued by the next one.
const MAX_PAYLOAD: usize = 0xFF_FFFF;

/// The most of a COM_QUERY's / COM_STMT_PREPARE's SQL text kept: a longer
/// statement is reported cut there (`truncated`), so that a 1 GB INSERT
/// costs 64 KiB, not 1 GB.
pub const SQL_KEEP: usize = 64 * 1024;

/// The most kept of a packet nothing needs much of (a row, a column
/// definition, an OK, a COM_STMT_EXECUTE with its parameters): the header
/// fields read from it are all within its first bytes.
const SMALL_KEEP: usize = 64;

/// The most kept of the packets of the login (the greeting: version
/// string and capabilities; the client's handshake response: user name up
/// to 80 characters of up to 4 bytes each, auth data, database name) and
/// of an ERR packet (a message of up to 512 bytes).
const LOGIN_KEEP: usize = 2048;

/// The most commands awaiting an answer kept (a client may pipeline:
/// send several commands before reading the answers). Beyond, the oldest
/// is given up (reported answered with what is known).
const MAX_PENDING: usize = 4096;

// Capability flags (Protocol::CapabilityFlags), as the handshake packets
// carry them; MariaDB's own ones are in the upper 32 bits.
/// MariaDB clears this one (called CLIENT_LONG_PASSWORD by MySQL) to say
/// that its extended capabilities follow in the filler.
const CLIENT_MYSQL: u64 = 1;
const CLIENT_CONNECT_WITH_DB: u64 = 1 << 3;
const CLIENT_COMPRESS: u64 = 1 << 5;
const CLIENT_PROTOCOL_41: u64 = 1 << 9;
const CLIENT_SSL: u64 = 1 << 11;
const CLIENT_SECURE_CONNECTION: u64 = 1 << 15;
const CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA: u64 = 1 << 21;
const CLIENT_DEPRECATE_EOF: u64 = 1 << 24;
/// MySQL 8's zstd compression: as unreadable as zlib here.
const CLIENT_ZSTD_COMPRESSION: u64 = 1 << 26;
/// MariaDB 10.6+: a column count packet carries a "metadata follows" byte,
/// and the column definitions are left out when it is 0.
const MARIADB_CLIENT_CACHE_METADATA: u64 = 1 << 36;

// Server status flags, in OK and EOF packets.
const SERVER_MORE_RESULTS_EXISTS: u16 = 0x0008;
const SERVER_STATUS_CURSOR_EXISTS: u16 = 0x0040;

/// The bytes of one connection and the state between its two directions.
///
/// One per connection, kept for the connection's life: its buffers are
/// reused from packet to packet, so that a round trip whose packets each
/// arrive whole allocates nothing but the events' own strings.
#[derive(Default)]
pub struct Conversation {
    client: Framer,
    server: Framer,
    state: State,
}

impl Conversation {
    pub fn new() -> Self {
        Self::default()
    }

    /// Bytes the server sent (its greeting, its answers), as send(2) or
    /// write(2) passed them; the events they complete are appended to
    /// `out` (which the caller clears and reuses, so that no event vector
    /// is allocated per call).
    pub fn server_bytes(&mut self, mut b: &[u8], out: &mut Vec<Event>) {
        let Conversation { server, state, .. } = self;
        while !state.quiet {
            let Some(p) = server.next(&mut b, |first, _| state.server_keep(first)) else {
                break;
            };
            state.on_server(&p, out);
        }
    }

    /// Bytes the server received from the client (its handshake response,
    /// its commands), as recv(2) or read(2) returned them (not those of a
    /// MSG_PEEK, which are read again later).
    pub fn client_bytes(&mut self, mut b: &[u8], out: &mut Vec<Event>) {
        let Conversation { client, state, .. } = self;
        while !state.quiet {
            let Some(p) = client.next(&mut b, |first, seq| state.client_keep(first, seq)) else {
                break;
            };
            state.on_client(&p, out);
        }
    }
}

/// What the conversation says, in the order it happened.
///
/// Each `Command` that has an answer (all but COM_QUIT, COM_STMT_CLOSE and
/// COM_STMT_SEND_LONG_DATA) is followed, later, by exactly one `Done`; so
/// is the `Login`. A client may pipeline (send a COM_STMT_PREPARE and a
/// COM_STMT_EXECUTE together, as MariaDB Connector/C's execute_direct and
/// the JDBC driver's batches do): then several `Command`s come before the
/// `Done`s, which answer them in order, oldest first. A `Done` with no
/// `Login` nor `Command` before it is a greeting that was an ERR (too many
/// connections, host blocked).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The server's initial handshake (protocol version 10): its
    /// connection id (the thread id, as in SHOW PROCESSLIST and
    /// CONNECTION_ID()) and its version string as sent (MariaDB prefixes
    /// it with "5.5.5-" for old replication clients).
    Greeting { connection_id: u32, version: String },
    /// The client's handshake response: the user name and the database
    /// (empty without CLIENT_CONNECT_WITH_DB). Answered by a `Done` (Ok or
    /// Error) once the authentication exchange is over.
    Login { user: String, database: String },
    /// The client asked for TLS (an SSLRequest): the rest of the stream
    /// is encrypted and nothing more comes out.
    Encrypted,
    /// The client asked for the compressed protocol: the rest of the
    /// stream cannot be read (no zlib in std) and nothing more comes out.
    Compressed,
    /// A command began: the client's whole command packet has arrived.
    Command(Command),
    /// The server finished answering the oldest command (or login)
    /// awaiting an answer.
    Done(Answer),
}

/// The SQL text of a COM_QUERY or COM_STMT_PREPARE: its bytes as sent,
/// in the client's character set (which this decoder does not know: the
/// caller decodes, `String::from_utf8_lossy(&sql)` works through `Deref`).
///
/// `truncated`: the text is longer than [`SQL_KEEP`] bytes and was cut
/// there (before a UTF-8 character the cut would split).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Sql {
    pub text: Vec<u8>,
    pub truncated: bool,
}

impl std::ops::Deref for Sql {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.text
    }
}

/// A client command (the first byte of a packet of sequence id 0).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    /// COM_QUERY (0x03).
    Query(Sql),
    /// COM_STMT_PREPARE (0x16).
    Prepare(Sql),
    /// COM_STMT_EXECUTE (0x17). MariaDB's statement id 0xFFFFFFFF means
    /// "the statement prepared last" (used when pipelining a prepare and
    /// its execute). With a cursor asked for in its flags, the answer is
    /// the result's metadata only (`Rows { rows: 0 }`), the rows come with
    /// COM_STMT_FETCH.
    Execute { stmt_id: u32 },
    /// COM_STMT_SEND_LONG_DATA (0x18), no answer.
    SendLongData { stmt_id: u32, param: u16 },
    /// COM_STMT_CLOSE (0x19), no answer.
    Close { stmt_id: u32 },
    /// COM_STMT_RESET (0x1a).
    Reset { stmt_id: u32 },
    /// COM_STMT_FETCH (0x1c): up to `rows` rows of an open cursor.
    Fetch { stmt_id: u32, rows: u32 },
    /// COM_QUIT (0x01), no answer.
    Quit,
    /// COM_INIT_DB (0x02): USE `database` (decoded as UTF-8, invalid
    /// bytes replaced).
    InitDb { database: String },
    /// COM_PING (0x0e).
    Ping,
    /// COM_SET_OPTION (0x1b): 0 multi-statements on, 1 off.
    SetOption { option: u16 },
    /// COM_RESET_CONNECTION (0x1f).
    ResetConnection,
    /// Any other command, by its byte (COM_CHANGE_USER 0x11, COM_FIELD_LIST
    /// 0x04, COM_STATISTICS 0x09, MariaDB's COM_STMT_BULK_EXECUTE 0xfa,
    /// ...), and a known one too short to read.
    Other(u8),
}

/// What the server answered a command (or the login).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// OK (or EOF, for the commands answered so). For a multi-statement
    /// query of statements without result sets, the sum of their
    /// affected rows.
    Ok { affected_rows: u64 },
    /// ERR, also when it ends a result set midway (an error while sending
    /// rows) or a multi-statement query (the statements after it do not
    /// run). `sqlstate` is empty when the server sent none (an ERR sent
    /// before the client's capabilities were known).
    Error {
        code: u16,
        sqlstate: String,
        message: String,
    },
    /// One result set or more (text or binary; a CALL, a multi-statement
    /// query): the rows of all of them. Also the answer to a
    /// COM_STMT_EXECUTE that opened a cursor (0 rows: they come with
    /// COM_STMT_FETCH) and to a COM_STMT_FETCH.
    Rows { rows: u64 },
    /// The answer to a COM_STMT_PREPARE, after all its parameter and
    /// column definitions.
    Prepared {
        statement_id: u32,
        params: u16,
        columns: u16,
    },
}

// ---------------------------------------------------------------------
// Framing

/// A logical packet (physical packets of 0xFFFFFF bytes joined with the
/// one that ends them).
struct Packet<'a> {
    /// The sequence id of its first physical packet (0: a client command).
    seq: u8,
    /// The sequence id the other side answers with: that of its last
    /// physical packet plus one.
    next_seq: u8,
    /// Its whole payload length.
    len: u64,
    /// Its payload's first bytes, as many as were asked to be kept.
    data: &'a [u8],
}

impl Packet<'_> {
    fn first(&self) -> Option<u8> {
        self.data.first().copied()
    }
}

/// One direction of a connection cut into logical packets.
#[derive(Default)]
struct Framer {
    /// The header of the physical packet being read, `head_len` bytes of
    /// it so far.
    head: [u8; 4],
    head_len: usize,
    /// Payload bytes of the current physical packet still to come.
    left: usize,
    /// The current physical packet is 0xFFFFFF long: the logical packet
    /// goes on in the next.
    full: bool,
    /// A logical packet has begun and not ended.
    open: bool,
    seq: u8,
    next_seq: u8,
    /// Payload bytes of the logical packet read so far.
    total: u64,
    /// How many of its bytes to keep, decided on its first byte.
    keep: usize,
    /// Its first `keep` bytes: only for a packet cut by a read, and
    /// reused (cleared, never shrunk: at most the largest `keep`).
    kept: Vec<u8>,
}

fn u24(b: &[u8]) -> usize {
    b[0] as usize | (b[1] as usize) << 8 | (b[2] as usize) << 16
}

impl Framer {
    /// The next whole logical packet of `input` (advanced past it), or
    /// `None` once `input` is used up (what is left of a packet is carried
    /// over). `keep(first byte, seq)` says how many bytes of a packet to
    /// keep: called once per packet with a payload, before its bytes are
    /// copied, so that nothing beyond is ever stored.
    fn next<'s, 'i: 's>(
        &'s mut self,
        input: &mut &'i [u8],
        keep: impl Fn(u8, u8) -> usize,
    ) -> Option<Packet<'s>> {
        if !self.open && self.head_len == 0 && input.len() >= 4 {
            // A whole packet where it lies (the usual case): no copy.
            let whole: &'i [u8] = input;
            let len = u24(whole);
            if len < MAX_PAYLOAD && whole.len() - 4 >= len {
                let seq = whole[3];
                *input = &whole[4 + len..];
                let k = if len == 0 {
                    0
                } else {
                    keep(whole[4], seq).min(len)
                };
                return Some(Packet {
                    seq,
                    next_seq: seq.wrapping_add(1),
                    len: len as u64,
                    data: &whole[4..4 + k],
                });
            }
        }
        loop {
            if self.head_len < 4 {
                if input.is_empty() {
                    return None;
                }
                let k = (4 - self.head_len).min(input.len());
                self.head[self.head_len..self.head_len + k].copy_from_slice(&input[..k]);
                self.head_len += k;
                *input = &input[k..];
                if self.head_len < 4 {
                    return None;
                }
                let len = u24(&self.head);
                let seq = self.head[3];
                if !self.open {
                    self.open = true;
                    self.seq = seq;
                    self.total = 0;
                    self.keep = 0;
                    self.kept.clear();
                }
                self.next_seq = seq.wrapping_add(1);
                self.left = len;
                self.full = len == MAX_PAYLOAD;
            }
            let k = self.left.min(input.len());
            if k > 0 {
                if self.total == 0 {
                    self.keep = keep(input[0], self.seq);
                }
                let room = self.keep.saturating_sub(self.kept.len()).min(k);
                self.kept.extend_from_slice(&input[..room]);
                self.total += k as u64;
                self.left -= k;
                *input = &input[k..];
            }
            if self.left > 0 {
                return None;
            }
            // The physical packet is complete.
            self.head_len = 0;
            if self.full {
                continue;
            }
            self.open = false;
            return Some(Packet {
                seq: self.seq,
                next_seq: self.next_seq,
                len: self.total,
                data: &self.kept,
            });
        }
    }
}

// ---------------------------------------------------------------------
// Field readers: all return None (or a default) past the end, never panic.

fn u16_at(b: &[u8], i: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(i..i + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

/// A length-encoded integer at `i`: its value and the index after it.
/// None for 0xFB (NULL), 0xFF (not an integer) and past the end.
fn lenenc(b: &[u8], i: usize) -> Option<(u64, usize)> {
    let n = |w: usize| -> Option<(u64, usize)> {
        let bytes = b.get(i + 1..i + 1 + w)?;
        let v = bytes
            .iter()
            .rev()
            .fold(0u64, |v, &x| (v << 8) | u64::from(x));
        Some((v, i + 1 + w))
    };
    match *b.get(i)? {
        x @ 0..=0xFA => Some((u64::from(x), i + 1)),
        0xFC => n(2),
        0xFD => n(3),
        0xFE => n(8),
        _ => None,
    }
}

/// A NUL-terminated string at `i` (to the end if unterminated, as a kept
/// packet may be cut): its bytes and the index after the NUL.
fn cstr(b: &[u8], i: usize) -> (&[u8], usize) {
    let rest = b.get(i..).unwrap_or(&[]);
    match rest.iter().position(|&x| x == 0) {
        Some(n) => (&rest[..n], i + n + 1),
        None => (rest, b.len().max(i)),
    }
}

/// How much of `b` to keep so as not to end inside a UTF-8 character
/// (cut there by what was kept): its length, or where that character
/// begins.
fn utf8_end(b: &[u8]) -> usize {
    // A lead byte among the last three whose sequence runs past the end.
    for back in 1..=3.min(b.len()) {
        let x = b[b.len() - back];
        if x & 0xC0 == 0xC0 {
            let need = if x >= 0xF0 {
                4
            } else if x >= 0xE0 {
                3
            } else {
                2
            };
            return if need > back { b.len() - back } else { b.len() };
        }
        if x & 0x80 == 0 {
            break;
        }
    }
    b.len()
}

/// Bytes as text: invalid UTF-8 replaced, but a character cut by the end
/// of what was kept dropped (not shown as a replacement character).
fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..utf8_end(b)]).into_owned()
}

/// An ERR packet's content.
fn error(d: &[u8]) -> Answer {
    let code = u16_at(d, 1).unwrap_or(0);
    let (sqlstate, message) = if d.get(3) == Some(&b'#') {
        (
            text(d.get(4..9).unwrap_or(&[])),
            text(d.get(9..).unwrap_or(&[])),
        )
    } else {
        (String::new(), text(d.get(3..).unwrap_or(&[])))
    };
    Answer::Error {
        code,
        sqlstate,
        message,
    }
}

/// MariaDB's progress report (CLIENT_PROGRESS): an ERR of code 0xFFFF sent
/// during a long command (ALTER TABLE, LOAD DATA), which does not end it.
fn is_progress(d: &[u8]) -> bool {
    d.len() >= 3 && d[0] == 0xFF && d[1] == 0xFF && d[2] == 0xFF
}

/// An OK packet's (or an OK with the EOF header's) affected rows and
/// status flags.
fn ok_fields(d: &[u8]) -> (u64, u16) {
    let Some((affected, i)) = lenenc(d, 1) else {
        return (0, 0);
    };
    let status = lenenc(d, i).and_then(|(_, j)| u16_at(d, j)).unwrap_or(0);
    (affected, status)
}

// ---------------------------------------------------------------------
// The conversation's state

/// What kind of answer a command gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Awaits {
    /// The authentication exchange (login, COM_CHANGE_USER): packets
    /// from both sides until the server's OK or ERR.
    Auth,
    /// OK, ERR, LOCAL INFILE request or result sets (COM_QUERY,
    /// COM_STMT_EXECUTE, most others).
    Results,
    /// COM_STMT_PREPARE's OK and definitions, or ERR.
    Prepare,
    /// Rows (or definitions) until an end packet, without column count
    /// (COM_STMT_FETCH, COM_FIELD_LIST).
    Rows,
    /// One packet, whatever it is (COM_PING, COM_STATISTICS's bare text,
    /// COM_SET_OPTION's EOF, ...).
    Simple,
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    awaits: Awaits,
    /// The sequence id the server's answer starts with.
    first_seq: u8,
}

/// Where the answer to the oldest pending command is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum Phase {
    /// Its first packet, or the first of its next result (after one
    /// flagged SERVER_MORE_RESULTS_EXISTS).
    #[default]
    Start,
    /// The authentication exchange.
    Auth,
    /// Column definitions left before the rows.
    ColumnDefs(u64),
    /// The EOF after the column definitions (without DEPRECATE_EOF).
    ColumnsEof,
    Rows,
    /// A prepared statement's definitions (and their EOFs) left.
    Definitions(u32),
    /// The server asked for a LOCAL INFILE: the client sends the file
    /// (packets whose sequence ids may wrap to 0: not commands), until an
    /// empty packet.
    LocalInfile,
    /// The file was sent: the server's OK or ERR is to come.
    LocalInfileSent,
}

#[derive(Default)]
struct State {
    /// The server's greeting was seen (or skipped: the stream was joined
    /// late).
    greeted: bool,
    /// The client's handshake response was seen (or skipped).
    responded: bool,
    /// The server's capabilities, from its greeting (0 before).
    server_caps: u64,
    /// The capabilities in effect: the client's, as the server keeps them
    /// (those it offered too).
    caps: u64,
    /// TLS or compression began: nothing more is decoded.
    quiet: bool,
    /// Commands awaiting an answer, oldest first.
    pending: VecDeque<Pending>,
    /// The answer to the oldest is being followed.
    phase: Phase,
    /// The server sent something since the oldest became the oldest: the
    /// server, one thread per connection, reads a command only once it
    /// has answered the previous one, so a command arriving then means
    /// that answer is over (see `on_client`).
    touched: bool,
    /// The answer's first packet was recognized: its next packet must
    /// have `expect` (when known) as sequence id.
    started: bool,
    expect: Option<u8>,
    /// Lost track of an answer: server packets that do not start the next
    /// one are skipped without counting as its answer.
    lost: bool,
    // What the answer said so far.
    rows: u64,
    affected: u64,
    result_sets: u32,
    prepared: Option<(u32, u16, u16)>,
}

impl State {
    fn deprecate_eof(&self) -> bool {
        self.caps & CLIENT_DEPRECATE_EOF != 0
    }

    /// How much of a client packet to keep.
    fn client_keep(&self, first: u8, seq: u8) -> usize {
        if !self.responded {
            LOGIN_KEEP
        } else if seq != 0 {
            // Auth data, a LOCAL INFILE file: not read.
            0
        } else {
            match first {
                0x03 | 0x16 => 1 + SQL_KEEP,
                0x02 => 1 + 512,
                _ => SMALL_KEEP,
            }
        }
    }

    /// How much of a server packet to keep.
    fn server_keep(&self, first: u8) -> usize {
        if !self.greeted || first == 0xFF {
            LOGIN_KEEP
        } else {
            SMALL_KEEP
        }
    }

    // --- the client side

    fn on_client(&mut self, p: &Packet, out: &mut Vec<Event>) {
        if !self.responded && p.seq != 0 {
            self.greeted = true;
            self.responded = true;
            self.handshake_response(p, out);
            return;
        }
        if matches!(self.phase, Phase::LocalInfile) && !self.pending.is_empty() {
            // File contents, whatever their sequence id; an empty packet
            // ends the file.
            if p.len == 0 {
                self.phase = Phase::LocalInfileSent;
            }
            return;
        }
        if p.seq != 0 {
            // Auth data after the response, or the end of a command
            // longer than 16 MiB... (joined already): nothing to read.
            return;
        }
        let Some(&byte) = p.data.first() else {
            return;
        };
        // A command: the stream may have been joined after the login.
        self.greeted = true;
        self.responded = true;
        if self.touched {
            // The server had begun answering the oldest command and reads
            // this one: that answer is over, whether or not it was
            // followed to its end.
            self.give_up(out);
        }
        let d = p.data;
        let sql = || {
            let truncated = p.len > d.len() as u64;
            let body = &d[1..];
            // A cut may split a character: drop its first bytes.
            let end = if truncated {
                utf8_end(body)
            } else {
                body.len()
            };
            Sql {
                text: body[..end].to_vec(),
                truncated,
            }
        };
        let id = || u32_at(d, 1);
        let cmd = match byte {
            0x03 => Command::Query(sql()),
            0x16 => Command::Prepare(sql()),
            0x17 => id().map_or(Command::Other(byte), |stmt_id| Command::Execute { stmt_id }),
            0x18 => match (id(), u16_at(d, 5)) {
                (Some(stmt_id), Some(param)) => Command::SendLongData { stmt_id, param },
                _ => Command::Other(byte),
            },
            0x19 => id().map_or(Command::Other(byte), |stmt_id| Command::Close { stmt_id }),
            0x1a => id().map_or(Command::Other(byte), |stmt_id| Command::Reset { stmt_id }),
            0x1c => match (id(), u32_at(d, 5)) {
                (Some(stmt_id), Some(rows)) => Command::Fetch { stmt_id, rows },
                _ => Command::Other(byte),
            },
            0x01 => Command::Quit,
            0x02 => Command::InitDb {
                database: text(&d[1..]),
            },
            0x0e => Command::Ping,
            0x1b => Command::SetOption {
                option: u16_at(d, 1).unwrap_or(0),
            },
            0x1f => Command::ResetConnection,
            _ => Command::Other(byte),
        };
        out.push(Event::Command(cmd));
        let awaits = match byte {
            // No answer.
            0x01 | 0x18 | 0x19 => return,
            0x16 => Awaits::Prepare,
            // COM_CHANGE_USER.
            0x11 => Awaits::Auth,
            // COM_STMT_FETCH; COM_FIELD_LIST (column definitions and an
            // end packet).
            0x1c | 0x04 => Awaits::Rows,
            // COM_INIT_DB, COM_CREATE_DB, COM_DROP_DB, COM_REFRESH,
            // COM_SHUTDOWN, COM_STATISTICS, COM_PROCESS_KILL, COM_DEBUG,
            // COM_PING, COM_STMT_RESET, COM_SET_OPTION,
            // COM_RESET_CONNECTION.
            0x02 | 0x05..=0x09 | 0x0c | 0x0d | 0x0e | 0x1a | 0x1b | 0x1f => Awaits::Simple,
            _ => Awaits::Results,
        };
        self.push(awaits, p.next_seq, out);
    }

    fn push(&mut self, awaits: Awaits, first_seq: u8, out: &mut Vec<Event>) {
        if self.pending.len() >= MAX_PENDING {
            self.give_up(out);
        }
        self.pending.push_back(Pending { awaits, first_seq });
    }

    fn handshake_response(&mut self, p: &Packet, out: &mut Vec<Event>) {
        let d = p.data;
        let Some(low) = u16_at(d, 0) else {
            return;
        };
        let mut caps = u64::from(low);
        let (user, mut i);
        if caps & CLIENT_PROTOCOL_41 != 0 {
            caps |= u64::from(u16_at(d, 2).unwrap_or(0)) << 16;
            if caps & CLIENT_MYSQL == 0 {
                caps |= u64::from(u32_at(d, 28).unwrap_or(0)) << 32;
            }
            // An SSLRequest is the response's first 32 bytes alone; the
            // whole response sent again inside TLS keeps the SSL flag.
            if caps & CLIENT_SSL != 0
                && d.len() <= 32
                && (!self.greeted_caps() || self.server_caps & CLIENT_SSL != 0)
            {
                // An SSLRequest (32 bytes): TLS follows, and the whole
                // handshake response comes again inside it. The caller
                // feeds nothing more, or, where it reads the TLS
                // library's plaintext, the rest in the clear.
                out.push(Event::Encrypted);
                self.responded = false;
                return;
            }
            (user, i) = cstr(d, 32);
            // The auth response.
            if caps & CLIENT_PLUGIN_AUTH_LENENC_CLIENT_DATA != 0 {
                i = match lenenc(d, i) {
                    Some((n, j)) => j.saturating_add(n.min(usize::MAX as u64) as usize),
                    None => d.len(),
                };
            } else if caps & CLIENT_SECURE_CONNECTION != 0 {
                i = i + 1 + d.get(i).copied().unwrap_or(0) as usize;
            } else {
                i = cstr(d, i).1;
            }
        } else {
            // Protocol::HandshakeResponse320: flags u16, max packet u24,
            // user, auth data.
            (user, i) = cstr(d, 5);
            i = cstr(d, i).1;
        }
        let database = if caps & CLIENT_CONNECT_WITH_DB != 0 {
            text(cstr(d, i).0)
        } else {
            String::new()
        };
        self.caps = if self.greeted_caps() {
            caps & self.server_caps
        } else {
            caps
        };
        out.push(Event::Login {
            user: text(user),
            database,
        });
        if self.caps & (CLIENT_COMPRESS | CLIENT_ZSTD_COMPRESSION) != 0 {
            // The packets after the login OK (maybe the OK itself) are
            // compressed: better report nothing than misread them.
            self.go_quiet(Event::Compressed, out);
            return;
        }
        self.push(Awaits::Auth, p.next_seq, out);
    }

    fn greeted_caps(&self) -> bool {
        self.server_caps != 0
    }

    fn go_quiet(&mut self, e: Event, out: &mut Vec<Event>) {
        out.push(e);
        self.quiet = true;
        self.pending.clear();
    }

    // --- the server side

    fn on_server(&mut self, p: &Packet, out: &mut Vec<Event>) {
        if !self.greeted {
            self.greeted = true;
            match p.first() {
                Some(0x0A) => return self.greeting(p.data, out),
                Some(0xFF) => return out.push(Event::Done(error(p.data))),
                // Not a greeting: the stream was joined late.
                _ => {}
            }
        }
        let Some(front) = self.pending.front().copied() else {
            // Nothing asked (an ERR before the server closes an idle
            // connection, or an answer not followed).
            return;
        };
        let expect = if self.started {
            self.expect
        } else {
            Some(front.first_seq)
        };
        if expect.is_some_and(|e| e != p.seq) {
            if self.started {
                // Lost track (a misread, or an answer shorter than
                // thought): that answer is over, report what is known;
                // this packet may start the next one.
                self.give_up(out);
                self.lost = true;
                if self.pending.front().is_some_and(|f| f.first_seq == p.seq) {
                    self.on_server(p, out);
                }
            } else if !self.lost {
                // Not the answer expected, but an answer: the command has
                // one (see `touched`).
                self.touched = true;
            }
            return;
        }
        self.lost = false;
        self.touched = true;
        self.started = true;
        self.expect = Some(p.seq.wrapping_add(1));
        let d = p.data;
        let first = p.first();
        if first == Some(0xFF) && !is_progress(d) {
            return self.finish(error(d), out);
        }
        if first == Some(0xFF) || first.is_none() {
            // A progress report, an empty packet: nothing to read.
            return;
        }
        match self.phase {
            Phase::Start => match front.awaits {
                Awaits::Auth => {
                    self.phase = Phase::Auth;
                    self.auth(p, out)
                }
                Awaits::Simple => {
                    let affected = if first == Some(0x00) {
                        ok_fields(d).0
                    } else {
                        0
                    };
                    self.finish(
                        Answer::Ok {
                            affected_rows: affected,
                        },
                        out,
                    )
                }
                Awaits::Prepare => self.prepare_ok(d, out),
                Awaits::Rows => {
                    self.phase = Phase::Rows;
                    self.result_sets += 1;
                    self.row(p, out)
                }
                Awaits::Results => self.result_start(p, out),
            },
            Phase::Auth => self.auth(p, out),
            Phase::ColumnDefs(n) => {
                if n > 1 {
                    self.phase = Phase::ColumnDefs(n - 1);
                } else {
                    self.after_column_defs();
                }
            }
            Phase::ColumnsEof => {
                if let Some(status) = self.eof_status(p) {
                    if status & SERVER_STATUS_CURSOR_EXISTS != 0 {
                        // A cursor was opened: no rows now.
                        let rows = self.rows;
                        self.finish(Answer::Rows { rows }, out);
                    } else {
                        self.phase = Phase::Rows;
                    }
                } else {
                    // No EOF where one was due: take it as a row.
                    self.phase = Phase::Rows;
                    self.row(p, out);
                }
            }
            Phase::Rows => self.row(p, out),
            Phase::Definitions(n) => {
                if n > 1 {
                    self.phase = Phase::Definitions(n - 1);
                } else {
                    let (statement_id, params, columns) = self.prepared.unwrap_or_default();
                    self.finish(
                        Answer::Prepared {
                            statement_id,
                            params,
                            columns,
                        },
                        out,
                    );
                }
            }
            Phase::LocalInfile | Phase::LocalInfileSent => {
                self.expect = None;
                if first == Some(0x00) {
                    self.ok(d, out);
                }
            }
        }
    }

    /// The server's greeting (Protocol::HandshakeV10).
    fn greeting(&mut self, d: &[u8], out: &mut Vec<Event>) {
        let (version, i) = cstr(d, 1);
        let connection_id = u32_at(d, i).unwrap_or(0);
        // Then auth data (8), filler (1), capabilities (2), charset (1),
        // status (2), capabilities (2), auth data length (1), reserved (6),
        // MariaDB's extended capabilities (4).
        if let (Some(low), Some(high)) = (u16_at(d, i + 13), u16_at(d, i + 18)) {
            let mut caps = u64::from(low) | u64::from(high) << 16;
            if caps & CLIENT_MYSQL == 0 {
                caps |= u64::from(u32_at(d, i + 27).unwrap_or(0)) << 32;
            }
            self.server_caps = caps;
        }
        out.push(Event::Greeting {
            connection_id,
            version: text(version),
        });
    }

    fn auth(&mut self, p: &Packet, out: &mut Vec<Event>) {
        // The client answers in between: sequence ids are not followed.
        self.expect = None;
        if p.first() == Some(0x00) {
            self.finish(Answer::Ok { affected_rows: 0 }, out);
        }
        // Else an auth switch (0xFE), more auth data (0x01), a prompt.
    }

    fn prepare_ok(&mut self, d: &[u8], out: &mut Vec<Event>) {
        let (Some(statement_id), Some(columns), Some(params)) =
            (u32_at(d, 1), u16_at(d, 5), u16_at(d, 7))
        else {
            return self.finish(Answer::Ok { affected_rows: 0 }, out);
        };
        self.prepared = Some((statement_id, params, columns));
        let eofs = if self.deprecate_eof() {
            0
        } else {
            u32::from(params > 0) + u32::from(columns > 0)
        };
        let n = u32::from(params) + u32::from(columns) + eofs;
        if n == 0 {
            self.finish(
                Answer::Prepared {
                    statement_id,
                    params,
                    columns,
                },
                out,
            );
        } else {
            self.phase = Phase::Definitions(n);
        }
    }

    /// The first packet of a result: OK, LOCAL INFILE request, or the
    /// column count of a result set.
    fn result_start(&mut self, p: &Packet, out: &mut Vec<Event>) {
        let d = p.data;
        match d[0] {
            0x00 => self.ok(d, out),
            0xFB => {
                self.phase = Phase::LocalInfile;
                self.expect = None;
            }
            _ => {
                if let Some(status) = self.end_status(p) {
                    // An EOF where an OK was due (old servers' answer to
                    // some commands).
                    return self.end_of_result(status, out);
                }
                let Some((columns, i)) = lenenc(d, 0) else {
                    return;
                };
                self.result_sets += 1;
                let metadata =
                    self.caps & MARIADB_CLIENT_CACHE_METADATA == 0 || d.get(i) != Some(&0);
                if columns > 0 && metadata {
                    self.phase = Phase::ColumnDefs(columns);
                } else {
                    self.after_column_defs();
                }
            }
        }
    }

    fn after_column_defs(&mut self) {
        self.phase = if self.deprecate_eof() {
            Phase::Rows
        } else {
            Phase::ColumnsEof
        };
    }

    /// A packet where rows are due: a row, or the end of the result.
    fn row(&mut self, p: &Packet, out: &mut Vec<Event>) {
        match self.end_status(p) {
            Some(status) => self.end_of_result(status, out),
            None => self.rows += 1,
        }
    }

    /// The status flags of `p` if it ends a result set: an OK with the
    /// EOF header with DEPRECATE_EOF (a row may start with 0xFE only as
    /// the 8-byte length of a value, so its payload is at least 16 MiB),
    /// an EOF without (a row starting with 0xFE is at least 9 bytes).
    fn end_status(&self, p: &Packet) -> Option<u16> {
        if p.first() != Some(0xFE) {
            return None;
        }
        if self.deprecate_eof() {
            (p.len < MAX_PAYLOAD as u64).then(|| ok_fields(p.data).1)
        } else {
            self.eof_status(p)
        }
    }

    /// The status flags of an EOF packet (0xFE, warnings, status).
    fn eof_status(&self, p: &Packet) -> Option<u16> {
        (p.first() == Some(0xFE) && p.len < 9).then(|| u16_at(p.data, 3).unwrap_or(0))
    }

    fn end_of_result(&mut self, status: u16, out: &mut Vec<Event>) {
        if status & SERVER_MORE_RESULTS_EXISTS != 0 {
            self.phase = Phase::Start;
        } else {
            let a = self.answer();
            self.finish(a, out);
        }
    }

    fn ok(&mut self, d: &[u8], out: &mut Vec<Event>) {
        let (affected, status) = ok_fields(d);
        self.affected = self.affected.saturating_add(affected);
        self.end_of_result(status, out);
    }

    /// What is known of the answer: rows if a result set began.
    fn answer(&self) -> Answer {
        if let (Some((statement_id, params, columns)), 0) = (self.prepared, self.result_sets) {
            Answer::Prepared {
                statement_id,
                params,
                columns,
            }
        } else if self.result_sets > 0 {
            Answer::Rows { rows: self.rows }
        } else {
            Answer::Ok {
                affected_rows: self.affected,
            }
        }
    }

    /// The oldest command's answer is over.
    fn finish(&mut self, a: Answer, out: &mut Vec<Event>) {
        out.push(Event::Done(a));
        self.pending.pop_front();
        self.phase = Phase::Start;
        self.touched = false;
        self.started = false;
        self.expect = None;
        self.rows = 0;
        self.affected = 0;
        self.result_sets = 0;
        self.prepared = None;
    }

    /// The oldest command's answer is over before it was followed to its
    /// end: report what is known of it.
    fn give_up(&mut self, out: &mut Vec<Event>) {
        if !self.pending.is_empty() {
            let a = self.answer();
            self.finish(a, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // --- building packets

    /// Physical packets of `payload` (cut at 0xFFFFFF), sequence ids from
    /// `seq`.
    fn pkt(seq: u8, payload: &[u8]) -> Vec<u8> {
        let mut v = Vec::with_capacity(payload.len() + 8);
        let mut seq = seq;
        let mut rest = payload;
        loop {
            let n = rest.len().min(MAX_PAYLOAD);
            v.extend_from_slice(&(n as u32).to_le_bytes()[..3]);
            v.push(seq);
            v.extend_from_slice(&rest[..n]);
            rest = &rest[n..];
            seq = seq.wrapping_add(1);
            if n < MAX_PAYLOAD {
                return v;
            }
        }
    }

    fn lenenc_str(v: &mut Vec<u8>, s: &[u8]) {
        assert!(s.len() < 251);
        v.push(s.len() as u8);
        v.extend_from_slice(s);
    }

    const CAPS: u32 = 0x0000_0001 // CLIENT_MYSQL (LONG_PASSWORD): no MariaDB extension
        | 1 << 2 // LONG_FLAG
        | 1 << 3 // CONNECT_WITH_DB
        | 1 << 9 // PROTOCOL_41
        | 1 << 13 // TRANSACTIONS
        | 1 << 15 // SECURE_CONNECTION
        | 1 << 16 // MULTI_STATEMENTS
        | 1 << 17 // MULTI_RESULTS
        | 1 << 18 // PS_MULTI_RESULTS
        | 1 << 19 // PLUGIN_AUTH
        | 1 << 21; // PLUGIN_AUTH_LENENC_CLIENT_DATA
    const SSL: u32 = 1 << 11;
    const DEPRECATE: u32 = 1 << 24;

    fn greeting(server_caps: u32) -> Vec<u8> {
        let mut g = vec![0x0A];
        g.extend_from_slice(b"5.5.5-10.11.6-MariaDB\0");
        g.extend_from_slice(&42u32.to_le_bytes());
        g.extend_from_slice(b"abcdefgh\0");
        g.extend_from_slice(&(server_caps as u16).to_le_bytes());
        g.push(45);
        g.extend_from_slice(&2u16.to_le_bytes());
        g.extend_from_slice(&((server_caps >> 16) as u16).to_le_bytes());
        g.push(21);
        g.extend_from_slice(&[0; 6]);
        g.extend_from_slice(&0u32.to_le_bytes());
        g.extend_from_slice(b"ijklmnopqrst\0mysql_native_password\0");
        pkt(0, &g)
    }

    fn response(caps: u32, user: &str, db: &str) -> Vec<u8> {
        let mut r = caps.to_le_bytes().to_vec();
        r.extend_from_slice(&(1u32 << 24).to_le_bytes());
        r.push(45);
        r.extend_from_slice(&[0; 23]);
        r.extend_from_slice(user.as_bytes());
        r.push(0);
        r.push(20);
        r.extend_from_slice(&[7; 20]);
        r.extend_from_slice(db.as_bytes());
        r.push(0);
        r.extend_from_slice(b"mysql_native_password\0");
        pkt(1, &r)
    }

    fn ok(seq: u8, affected: u8, status: u16) -> Vec<u8> {
        let mut o = vec![0x00, affected, 0];
        o.extend_from_slice(&status.to_le_bytes());
        o.extend_from_slice(&[0, 0]);
        pkt(seq, &o)
    }

    /// The end of a result set: an EOF, or an OK with the EOF header.
    fn end(seq: u8, deprecate: bool, status: u16) -> Vec<u8> {
        if deprecate {
            let mut o = vec![0xFE, 0, 0];
            o.extend_from_slice(&status.to_le_bytes());
            o.extend_from_slice(&[0, 0]);
            pkt(seq, &o)
        } else {
            let mut e = vec![0xFE, 0, 0];
            e.extend_from_slice(&status.to_le_bytes());
            pkt(seq, &e)
        }
    }

    fn err(seq: u8, code: u16, state: &str, msg: &str) -> Vec<u8> {
        let mut e = vec![0xFF];
        e.extend_from_slice(&code.to_le_bytes());
        e.push(b'#');
        e.extend_from_slice(state.as_bytes());
        e.extend_from_slice(msg.as_bytes());
        pkt(seq, &e)
    }

    fn coldef(seq: u8, name: &str) -> Vec<u8> {
        let mut c = Vec::new();
        for s in [
            &b"def"[..],
            b"shop",
            b"t",
            b"t",
            name.as_bytes(),
            name.as_bytes(),
        ] {
            lenenc_str(&mut c, s);
        }
        c.push(0x0C);
        c.extend_from_slice(&33u16.to_le_bytes());
        c.extend_from_slice(&11u32.to_le_bytes());
        c.push(3);
        c.extend_from_slice(&[0, 0, 0, 0, 0]);
        pkt(seq, &c)
    }

    fn command(byte: u8, body: &[u8]) -> Vec<u8> {
        let mut c = vec![byte];
        c.extend_from_slice(body);
        pkt(0, &c)
    }

    /// A text result set of `n` rows of one column, sequence ids from 1,
    /// ending with `status`.
    fn text_result(deprecate: bool, n: u8, status: u16) -> (Vec<u8>, u8) {
        let mut v = pkt(1, &[1]);
        v.extend(coldef(2, "id"));
        let mut seq = 3;
        if !deprecate {
            v.extend(end(seq, false, 0));
            seq += 1;
        }
        for i in 0..n {
            let mut r = Vec::new();
            lenenc_str(&mut r, (i + 1).to_string().as_bytes());
            v.extend(pkt(seq, &r));
            seq += 1;
        }
        v.extend(end(seq, deprecate, status));
        (v, seq + 1)
    }

    #[derive(Clone, Copy)]
    enum Side {
        Server,
        Client,
    }
    use Side::*;

    /// Feeds each step in chunks of `chunk` bytes (0: whole).
    fn run_chunked(script: &[(Side, Vec<u8>)], chunk: usize) -> Vec<Event> {
        let mut c = Conversation::new();
        let mut out = Vec::new();
        for (side, bytes) in script {
            let n = if chunk == 0 {
                bytes.len().max(1)
            } else {
                chunk
            };
            for part in bytes.chunks(n) {
                match side {
                    Server => c.server_bytes(part, &mut out),
                    Client => c.client_bytes(part, &mut out),
                }
            }
        }
        out
    }

    fn run(script: &[(Side, Vec<u8>)]) -> Vec<Event> {
        run_chunked(script, 0)
    }

    fn login(caps: u32) -> Vec<(Side, Vec<u8>)> {
        vec![
            (Server, greeting(0xFFFF_F7FF)),
            (Client, response(caps, "app", "shop")),
            (Server, ok(2, 0, 2)),
        ]
    }

    fn login_events() -> Vec<Event> {
        vec![
            Event::Greeting {
                connection_id: 42,
                version: "5.5.5-10.11.6-MariaDB".into(),
            },
            Event::Login {
                user: "app".into(),
                database: "shop".into(),
            },
            Event::Done(Answer::Ok { affected_rows: 0 }),
        ]
    }

    fn sql_of(sql: &str) -> Sql {
        Sql {
            text: sql.as_bytes().to_vec(),
            truncated: false,
        }
    }

    fn query(sql: &str) -> Event {
        Event::Command(Command::Query(sql_of(sql)))
    }

    fn query_with_rows(deprecate: bool) {
        let mut s = login(CAPS | if deprecate { DEPRECATE } else { 0 });
        s.push((Client, command(0x03, b"SELECT id FROM t")));
        s.push((Server, text_result(deprecate, 3, 0x0002).0));
        let mut want = login_events();
        want.push(query("SELECT id FROM t"));
        want.push(Event::Done(Answer::Rows { rows: 3 }));
        assert_eq!(run(&s), want);
    }

    #[test]
    fn login_and_query_with_eof() {
        query_with_rows(false);
    }

    #[test]
    fn login_and_query_deprecate_eof() {
        query_with_rows(true);
    }

    #[test]
    fn deprecate_eof_mismatch_is_noticed() {
        // Decoded with DEPRECATE_EOF but sent with EOFs: the EOF after the
        // column definitions ends the result (0 rows), so the capability
        // matters (this guards the test above against passing by luck).
        let mut s = login(CAPS | DEPRECATE);
        s.push((Client, command(0x03, b"SELECT id FROM t")));
        s.push((Server, text_result(false, 3, 0).0));
        let ev = run(&s);
        assert_eq!(ev[4], Event::Done(Answer::Rows { rows: 0 }));
    }

    /// A prepare of `SELECT a, b FROM t WHERE id = ?` and its execute with
    /// a binary result set of 2 rows.
    fn prepare_execute(deprecate: bool) -> Vec<(Side, Vec<u8>)> {
        let mut s = login(CAPS | if deprecate { DEPRECATE } else { 0 });
        s.push((Client, command(0x16, b"SELECT a, b FROM t WHERE id = ?")));
        let mut prep = vec![0x00];
        prep.extend_from_slice(&7u32.to_le_bytes());
        prep.extend_from_slice(&2u16.to_le_bytes()); // columns
        prep.extend_from_slice(&1u16.to_le_bytes()); // params
        prep.extend_from_slice(&[0, 0, 0]);
        let mut a = pkt(1, &prep);
        let mut seq = 2;
        a.extend(coldef(seq, "?"));
        seq += 1;
        if !deprecate {
            a.extend(end(seq, false, 2));
            seq += 1;
        }
        for name in ["a", "b"] {
            a.extend(coldef(seq, name));
            seq += 1;
        }
        if !deprecate {
            a.extend(end(seq, false, 2));
        }
        s.push((Server, a));
        let mut exec = 7u32.to_le_bytes().to_vec();
        exec.push(0); // no cursor
        exec.extend_from_slice(&1u32.to_le_bytes());
        exec.push(0); // null bitmap
        exec.push(1); // types follow
        exec.extend_from_slice(&[3, 0]);
        exec.extend_from_slice(&5u32.to_le_bytes());
        s.push((Client, command(0x17, &exec)));
        let mut r = pkt(1, &[2]);
        r.extend(coldef(2, "a"));
        r.extend(coldef(3, "b"));
        let mut seq = 4;
        if !deprecate {
            r.extend(end(seq, false, 2));
            seq += 1;
        }
        for i in 0..2u32 {
            let mut row = vec![0x00, 0x00];
            row.extend_from_slice(&i.to_le_bytes());
            row.extend_from_slice(&(i * 10).to_le_bytes());
            r.extend(pkt(seq, &row));
            seq += 1;
        }
        r.extend(end(seq, deprecate, 2));
        s.push((Server, r));
        s
    }

    fn prepare_execute_events() -> Vec<Event> {
        let mut want = login_events();
        want.extend([
            Event::Command(Command::Prepare(sql_of("SELECT a, b FROM t WHERE id = ?"))),
            Event::Done(Answer::Prepared {
                statement_id: 7,
                params: 1,
                columns: 2,
            }),
            Event::Command(Command::Execute { stmt_id: 7 }),
            Event::Done(Answer::Rows { rows: 2 }),
        ]);
        want
    }

    #[test]
    fn prepare_and_execute_binary_rows() {
        assert_eq!(run(&prepare_execute(true)), prepare_execute_events());
        assert_eq!(run(&prepare_execute(false)), prepare_execute_events());
    }

    #[test]
    fn pipelined_prepare_and_execute() {
        // Both commands in one read, both answers in one write: the
        // answers go to the commands in order.
        let s = prepare_execute(false);
        let mut p = s[..3].to_vec();
        let mut c = s[3].1.clone();
        c.extend_from_slice(&s[5].1);
        let mut a = s[4].1.clone();
        a.extend_from_slice(&s[6].1);
        p.push((Client, c));
        p.push((Server, a));
        let want = prepare_execute_events();
        let mut got = run(&p);
        assert_eq!(got[..3], want[..3]);
        assert_eq!(
            got.drain(3..).collect::<Vec<_>>(),
            vec![
                want[3].clone(),
                want[5].clone(),
                want[4].clone(),
                want[6].clone()
            ]
        );
    }

    #[test]
    fn error_answer() {
        let mut s = login(CAPS | DEPRECATE);
        s.push((Client, command(0x03, b"SELECT * FROM nope")));
        s.push((
            Server,
            err(1, 1146, "42S02", "Table 'shop.nope' doesn't exist"),
        ));
        let ev = run(&s);
        assert_eq!(
            ev[4],
            Event::Done(Answer::Error {
                code: 1146,
                sqlstate: "42S02".into(),
                message: "Table 'shop.nope' doesn't exist".into(),
            })
        );
        assert_eq!(ev.len(), 5);
    }

    #[test]
    fn error_in_the_middle_of_rows() {
        let mut s = login(CAPS);
        s.push((Client, command(0x03, b"SELECT f(id) FROM t")));
        let mut r = pkt(1, &[1]);
        r.extend(coldef(2, "f"));
        r.extend(end(3, false, 0));
        r.extend(pkt(4, &[1, b'1']));
        r.extend(err(5, 1365, "22012", "Division by 0"));
        s.push((Server, r));
        s.push((Client, command(0x0e, &[])));
        s.push((Server, ok(1, 0, 2)));
        let ev = run(&s);
        assert_eq!(
            ev[4..],
            [
                Event::Done(Answer::Error {
                    code: 1365,
                    sqlstate: "22012".into(),
                    message: "Division by 0".into(),
                }),
                Event::Command(Command::Ping),
                Event::Done(Answer::Ok { affected_rows: 0 }),
            ]
        );
    }

    #[test]
    fn failed_login_and_auth_switch() {
        let s = vec![
            (Server, greeting(0xFFFF_F7FF)),
            (Client, response(CAPS, "bob", "")),
            (
                Server,
                err(2, 1045, "28000", "Access denied for user 'bob'"),
            ),
        ];
        let ev = run(&s);
        assert_eq!(
            ev[1..],
            [
                Event::Login {
                    user: "bob".into(),
                    database: "".into()
                },
                Event::Done(Answer::Error {
                    code: 1045,
                    sqlstate: "28000".into(),
                    message: "Access denied for user 'bob'".into(),
                }),
            ]
        );
        // An auth switch, more data, then OK: no command, one Done.
        let mut switch = vec![0xFE];
        switch.extend_from_slice(b"client_ed25519\0");
        let s = vec![
            (Server, greeting(0xFFFF_F7FF)),
            (Client, response(CAPS, "app", "shop")),
            (Server, pkt(2, &switch)),
            (Client, pkt(3, &[9; 64])),
            (Server, ok(4, 0, 2)),
            (Client, command(0x03, b"SELECT 1")),
            (Server, ok(1, 0, 2)),
        ];
        let mut want = login_events();
        want.push(query("SELECT 1"));
        want.push(Event::Done(Answer::Ok { affected_rows: 0 }));
        assert_eq!(run(&s), want);
    }

    #[test]
    fn chunked_feeding_gives_the_same_events() {
        let mut s = prepare_execute(false);
        s.push((Client, command(0x03, "SELECT 'é' FROM nope".as_bytes())));
        s.push((
            Server,
            err(1, 1146, "42S02", "Table 'shop.nope' doesn't exist"),
        ));
        s.push((Client, command(0x19, &7u32.to_le_bytes())));
        s.push((Client, command(0x03, b"SELECT id FROM t")));
        s.push((Server, text_result(false, 3, 2).0));
        let whole = run(&s);
        let mut want = prepare_execute_events();
        want.extend([
            Event::Command(Command::Query(sql_of("SELECT 'é' FROM nope"))),
            Event::Done(Answer::Error {
                code: 1146,
                sqlstate: "42S02".into(),
                message: "Table 'shop.nope' doesn't exist".into(),
            }),
            Event::Command(Command::Close { stmt_id: 7 }),
            query("SELECT id FROM t"),
            Event::Done(Answer::Rows { rows: 3 }),
        ]);
        assert_eq!(whole, want);
        for chunk in [1, 2, 3, 7] {
            assert_eq!(run_chunked(&s, chunk), whole, "chunks of {chunk}");
        }
        // And each direction's steps joined into one write.
        let mut joined: Vec<(Side, Vec<u8>)> = Vec::new();
        for (side, b) in s {
            match joined.last_mut() {
                Some((last, v)) if matches!((*last, side), (Client, Client) | (Server, Server)) => {
                    v.extend(b)
                }
                _ => joined.push((side, b)),
            }
        }
        assert_eq!(run(&joined), whole);
    }

    /// A text row of one value of `n` bytes (length as an 8-byte int).
    fn long_row(n: usize) -> Vec<u8> {
        let mut row = vec![0xFE];
        row.extend_from_slice(&(n as u64).to_le_bytes());
        row.resize(9 + n, b'x');
        row
    }

    fn long_row_counted_once(deprecate: bool) {
        let mut s = login(CAPS | if deprecate { DEPRECATE } else { 0 });
        s.push((Client, command(0x03, b"SELECT doc FROM t")));
        let mut r = pkt(1, &[1]);
        r.extend(coldef(2, "doc"));
        let mut seq = 3;
        if !deprecate {
            r.extend(end(seq, false, 0));
            seq += 1;
        }
        // 0xFFFFFF + 100 bytes: two physical packets.
        r.extend(pkt(seq, &long_row(MAX_PAYLOAD + 100 - 9)));
        r.extend(end(seq + 2, deprecate, 2));
        s.push((Server, r));
        let want = Event::Done(Answer::Rows { rows: 1 });
        assert_eq!(run(&s)[4], want);
        let mut c = Conversation::new();
        let mut out = Vec::new();
        for (side, b) in &s {
            for part in b.chunks(65_536 + 7) {
                match side {
                    Server => c.server_bytes(part, &mut out),
                    Client => c.client_bytes(part, &mut out),
                }
            }
        }
        assert_eq!(out[4], want);
        // Only the first bytes of the row were kept.
        assert!(c.server.kept.capacity() <= LOGIN_KEEP);
    }

    #[test]
    fn long_row_over_two_packets_with_eof() {
        long_row_counted_once(false);
    }

    #[test]
    fn long_row_over_two_packets_deprecate_eof() {
        long_row_counted_once(true);
    }

    #[test]
    fn row_starting_with_fe_is_a_row_without_deprecate_eof() {
        let mut s = login(CAPS);
        s.push((Client, command(0x03, b"SELECT s FROM t")));
        let mut r = pkt(1, &[1]);
        r.extend(coldef(2, "s"));
        r.extend(end(3, false, 0));
        r.extend(pkt(4, &long_row(5))); // 14 bytes from 0xFE
        r.extend(pkt(5, &[1, b'a']));
        r.extend(end(6, false, 2));
        s.push((Server, r));
        assert_eq!(run(&s)[4], Event::Done(Answer::Rows { rows: 2 }));
    }

    #[test]
    fn stmt_close_has_no_answer() {
        let mut s = login(CAPS | DEPRECATE);
        s.push((Client, command(0x19, &7u32.to_le_bytes())));
        s.push((Client, command(0x03, b"SELECT id FROM t")));
        s.push((Server, text_result(true, 2, 2).0));
        let mut want = login_events();
        want.push(Event::Command(Command::Close { stmt_id: 7 }));
        want.push(query("SELECT id FROM t"));
        want.push(Event::Done(Answer::Rows { rows: 2 }));
        assert_eq!(run(&s), want);
    }

    fn more_results(deprecate: bool) {
        let mut s = login(CAPS | if deprecate { DEPRECATE } else { 0 });
        s.push((Client, command(0x03, b"CALL two()")));
        // Two result sets (2 and 3 rows), then the CALL's own OK.
        let (mut a, seq) = text_result(deprecate, 2, 0x0002 | SERVER_MORE_RESULTS_EXISTS);
        let mut b = Vec::new();
        // The second starts where the first ended: renumber.
        let (b2, n) = text_result(deprecate, 3, 0x0002 | SERVER_MORE_RESULTS_EXISTS);
        let mut rest = &b2[..];
        let mut s2 = seq;
        while rest.len() >= 4 {
            let len = u24(rest);
            let mut p = rest[..4 + len].to_vec();
            p[3] = s2;
            s2 += 1;
            b.extend(p);
            rest = &rest[4 + len..];
        }
        assert_eq!(s2, seq + n - 1);
        a.extend(b);
        a.extend(ok(s2, 0, 0x0002));
        s.push((Server, a));
        let ev = run(&s);
        assert_eq!(ev[4..], [Event::Done(Answer::Rows { rows: 5 })]);
    }

    #[test]
    fn more_results_are_summed_with_eof() {
        more_results(false);
    }

    #[test]
    fn more_results_are_summed_deprecate_eof() {
        more_results(true);
    }

    #[test]
    fn multi_statement_oks_are_summed() {
        let mut s = login(CAPS | DEPRECATE);
        s.push((Client, command(0x03, b"DELETE FROM a; DELETE FROM b")));
        let mut a = ok(1, 2, 0x000A);
        a.extend(ok(2, 3, 0x0002));
        s.push((Server, a));
        assert_eq!(run(&s)[4..], [Event::Done(Answer::Ok { affected_rows: 5 })]);
    }

    /// An SSLRequest: `Encrypted`, then the login the client sends again
    /// inside TLS (sequence 2), read where the caller feeds it in the
    /// clear (from the TLS library), and the session as ever.
    #[test]
    fn ssl_request_then_the_login_in_the_clear() {
        let mut r = (CAPS | SSL).to_le_bytes().to_vec();
        r.extend_from_slice(&(1u32 << 24).to_le_bytes());
        r.push(45);
        r.extend_from_slice(&[0; 23]);
        assert_eq!(r.len(), 32);
        let mut s = vec![(Server, greeting(0xFFFF_FFFF)), (Client, pkt(1, &r))];
        let ev = run(&s);
        assert_eq!(ev.len(), 2);
        assert_eq!(ev[1], Event::Encrypted);
        let mut login = (CAPS | SSL).to_le_bytes().to_vec();
        login.extend_from_slice(&(1u32 << 24).to_le_bytes());
        login.push(45);
        login.extend_from_slice(&[0; 23]);
        login.extend_from_slice(b"alice\0");
        login.push(0);
        s.push((Client, pkt(2, &login)));
        s.push((Server, ok(3, 0, 2)));
        s.push((Client, command(0x03, b"SELECT 1")));
        s.push((Server, ok(1, 0, 2)));
        let ev = run(&s);
        assert!(
            ev.iter()
                .any(|e| matches!(e, Event::Login { user, .. } if user == "alice")),
            "{ev:?}"
        );
        assert_eq!(
            ev.last(),
            Some(&Event::Done(Answer::Ok { affected_rows: 0 })),
            "{ev:?}"
        );
    }

    #[test]
    fn cursor_then_fetch() {
        let mut s = login(CAPS);
        let mut exec = 3u32.to_le_bytes().to_vec();
        exec.push(1); // CURSOR_TYPE_READ_ONLY
        exec.extend_from_slice(&1u32.to_le_bytes());
        s.push((Client, command(0x17, &exec)));
        let mut r = pkt(1, &[1]);
        r.extend(coldef(2, "id"));
        r.extend(end(3, false, 0x0002 | SERVER_STATUS_CURSOR_EXISTS));
        s.push((Server, r));
        let mut fetch = 3u32.to_le_bytes().to_vec();
        fetch.extend_from_slice(&100u32.to_le_bytes());
        s.push((Client, command(0x1c, &fetch)));
        let mut r = pkt(1, &[0, 0, 1, 0, 0, 0]);
        r.extend(pkt(2, &[0, 0, 2, 0, 0, 0]));
        r.extend(end(3, false, 0x0002 | 0x0080));
        s.push((Server, r));
        assert_eq!(
            run(&s)[3..],
            [
                Event::Command(Command::Execute { stmt_id: 3 }),
                Event::Done(Answer::Rows { rows: 0 }),
                Event::Command(Command::Fetch {
                    stmt_id: 3,
                    rows: 100
                }),
                Event::Done(Answer::Rows { rows: 2 }),
            ]
        );
    }

    #[test]
    fn progress_reports_do_not_end_a_command() {
        let mut s = login(CAPS | DEPRECATE);
        s.push((Client, command(0x03, b"ALTER TABLE t ADD c INT")));
        let mut a = pkt(
            1,
            &[
                0xFF, 0xFF, 0xFF, 1, 1, 2, 0x10, 0, 0, 5, b's', b't', b'a', b'g', b'e',
            ],
        );
        a.extend(ok(2, 0, 2));
        s.push((Server, a));
        assert_eq!(run(&s)[4..], [Event::Done(Answer::Ok { affected_rows: 0 })]);
    }

    #[test]
    fn local_infile() {
        let mut s = login(CAPS | DEPRECATE);
        s.push((
            Client,
            command(0x03, b"LOAD DATA LOCAL INFILE 'a.csv' INTO TABLE t"),
        ));
        s.push((Server, pkt(1, b"\xFBa.csv")));
        // 300 packets of file: the sequence ids wrap through 0.
        let mut file = Vec::new();
        let mut seq = 2u8;
        for _ in 0..300 {
            file.extend(pkt(seq, b"\x03,b\n"));
            seq = seq.wrapping_add(1);
        }
        file.extend(pkt(seq, &[]));
        s.push((Client, file));
        s.push((Server, ok(seq.wrapping_add(1), 200, 2)));
        s.push((Client, command(0x0e, &[])));
        s.push((Server, ok(1, 0, 2)));
        let ev = run(&s);
        assert_eq!(
            ev[4..],
            [
                Event::Done(Answer::Ok { affected_rows: 200 }),
                Event::Command(Command::Ping),
                Event::Done(Answer::Ok { affected_rows: 0 }),
            ]
        );
    }

    #[test]
    fn an_answer_not_followed_ends_at_the_next_command() {
        let mut s = login(CAPS | DEPRECATE);
        s.push((Client, command(0x03, b"SELECT 5 columns")));
        // Five columns announced, two definitions seen, then silence.
        let mut a = pkt(1, &[5]);
        a.extend(coldef(2, "a"));
        a.extend(coldef(3, "b"));
        s.push((Server, a));
        s.push((Client, command(0x03, b"SELECT 1")));
        s.push((Server, ok(1, 0, 2)));
        assert_eq!(
            run(&s)[4..],
            [
                Event::Done(Answer::Rows { rows: 0 }),
                query("SELECT 1"),
                Event::Done(Answer::Ok { affected_rows: 0 }),
            ]
        );
    }

    #[test]
    fn a_sequence_break_ends_the_answer() {
        // A result cut short (lost track), then a pipelined command's
        // answer starting with its sequence id: it is recognized.
        let mut s = login(CAPS | DEPRECATE);
        let mut c = command(0x03, b"SELECT a");
        c.extend(command(0x0e, &[]));
        s.push((Client, c));
        let mut a = pkt(1, &[3]);
        a.extend(coldef(2, "a"));
        a.extend(ok(1, 0, 2));
        s.push((Server, a));
        assert_eq!(
            run(&s)[4..],
            [
                Event::Command(Command::Ping),
                Event::Done(Answer::Rows { rows: 0 }),
                Event::Done(Answer::Ok { affected_rows: 0 }),
            ]
        );
    }

    #[test]
    fn long_sql_is_cut() {
        let mut s = login(CAPS | DEPRECATE);
        let mut sql = b"SELECT '".to_vec();
        // 3-byte characters, so that the cut falls inside one.
        while sql.len() < SQL_KEEP + 1000 {
            sql.extend_from_slice("€".as_bytes());
        }
        sql.extend_from_slice(b"'");
        let mut cut = Vec::new();
        for chunk in [0, 1000] {
            let mut s = s.clone();
            s.push((Client, command(0x03, &sql)));
            let ev = run_chunked(&s, chunk);
            let Event::Command(Command::Query(got)) = &ev[3] else {
                panic!("{:?}", ev[3]);
            };
            assert!(got.truncated);
            let got = String::from_utf8_lossy(got).into_owned();
            assert!(got.len() <= SQL_KEEP && got.len() > SQL_KEEP - 4);
            assert!(got.ends_with('€'));
            cut.push(got.clone());
        }
        assert_eq!(cut[0], cut[1]);
        s.push((Client, command(0x03, b"SELECT 1")));
        assert_eq!(run(&s)[3], query("SELECT 1"));
    }

    #[test]
    fn other_commands() {
        let mut s = login(CAPS);
        s.push((Client, command(0x02, b"shop2")));
        s.push((Server, ok(1, 0, 2)));
        s.push((Client, command(0x1b, &[1, 0])));
        s.push((Server, end(1, false, 2)));
        s.push((Client, command(0x09, &[])));
        s.push((Server, pkt(1, b"Uptime: 5  Threads: 1")));
        s.push((Client, command(0x1f, &[])));
        s.push((Server, ok(1, 0, 2)));
        s.push((Client, command(0x01, &[])));
        assert_eq!(
            run(&s)[3..],
            [
                Event::Command(Command::InitDb {
                    database: "shop2".into()
                }),
                Event::Done(Answer::Ok { affected_rows: 0 }),
                Event::Command(Command::SetOption { option: 1 }),
                Event::Done(Answer::Ok { affected_rows: 0 }),
                Event::Command(Command::Other(0x09)),
                Event::Done(Answer::Ok { affected_rows: 0 }),
                Event::Command(Command::ResetConnection),
                Event::Done(Answer::Ok { affected_rows: 0 }),
                Event::Command(Command::Quit),
            ]
        );
    }

    #[test]
    fn compression_goes_quiet() {
        let s = vec![
            (Server, greeting(0xFFFF_F7FF)),
            (Client, response(CAPS | 1 << 5, "app", "shop")),
            (Server, ok(2, 0, 2)),
            (Client, command(0x03, b"SELECT 1")),
        ];
        let ev = run(&s);
        assert_eq!(ev.len(), 3);
        assert_eq!(ev[2], Event::Compressed);
    }

    /// xorshift64: garbage without a crate.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> usize {
            (self.next() % n) as usize
        }
    }

    fn bounded(c: &Conversation) {
        assert!(c.client.kept.capacity() <= 2 * (1 + SQL_KEEP));
        assert!(c.server.kept.capacity() <= 2 * LOGIN_KEEP);
        assert!(c.state.pending.len() <= MAX_PENDING);
    }

    #[test]
    fn garbage_does_not_panic_and_memory_stays_bounded() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        let interesting = [0x00, 0x01, 0x03, 0x0A, 0x16, 0x17, 0x1c, 0xFB, 0xFE, 0xFF];
        for round in 0..300 {
            let mut c = Conversation::new();
            let mut out = Vec::new();
            let mut events = 0;
            for _ in 0..60 {
                let mut b = Vec::new();
                if round % 3 == 0 {
                    // Raw garbage, some of it long headers.
                    for _ in 0..rng.below(300) {
                        b.push(rng.next() as u8);
                    }
                } else {
                    // Packets of plausible shape, random content.
                    for _ in 0..rng.below(5) {
                        let len = match rng.below(10) {
                            0 => rng.below(70_000),
                            1 => 0,
                            _ => rng.below(40),
                        };
                        let mut p = vec![interesting[rng.below(10)]];
                        for _ in 1..len {
                            p.push(match rng.below(4) {
                                0 => interesting[rng.below(10)],
                                _ => rng.next() as u8,
                            });
                        }
                        p.truncate(len);
                        let seq = if rng.below(2) == 0 {
                            0
                        } else {
                            rng.below(6) as u8
                        };
                        b.extend(pkt(seq, &p));
                    }
                }
                let chunk = 1 + rng.below(64);
                let server = rng.below(2) == 0;
                for part in b.chunks(chunk) {
                    if server {
                        c.server_bytes(part, &mut out);
                    } else {
                        c.client_bytes(part, &mut out);
                    }
                }
                events += out.len();
                out.clear();
                bounded(&c);
            }
            // A header announcing 16 MiB, fed in pieces: nothing kept.
            let mut b = vec![0xFF, 0xFF, 0xFF, 0];
            b.resize(1 << 20, 0xFE);
            c.server_bytes(&b, &mut out);
            c.client_bytes(&b, &mut out);
            bounded(&c);
            assert!(events < 100_000);
        }
    }
}
