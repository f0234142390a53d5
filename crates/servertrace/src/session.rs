//! The calls of one backend's session, from the protocol messages it
//! receives and sends: the proxy's derivation (crates/proxy/src/tracer.rs)
//! moved inside the server, so that the statement ids, cursor numbers and
//! call order of a server trace are those of the proxy's and the client's
//! traces of the same conversation, and they join call by call.
//!
//! What differs from the proxy: a client message counts from the moment
//! the backend's recv(2) returned it, a server message from the moment the
//! backend hands it to send(2); every point carries the backend's CPU
//! clock too, so `c` is the backend's CPU during the call; and the waits
//! between calls are not derived here but timed where the backend blocks
//! (`lib.rs`), named with PostgreSQL's wait event. The backend sends the
//! answers of one round trip together (its output is buffered until
//! ReadyForQuery), so, as in the proxy, answers sent in one write cannot
//! be told apart in time: a PARSE or CLOSE answered with an execution
//! gets e=0 and the execution carries the round trip.

use std::collections::VecDeque;
use std::hash::{BuildHasherDefault, Hasher};

// A name or a statement from the wire as text.
use crate::message::{self, wire_text as text, ClientRef};
use crate::out::{CallTimes, Lines};

/// A point of the session: `tim` (µs, the trace's clock), the
/// backend's CPU clock (µs), and the elapsed time of the waits so far
/// (µs).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct At {
    pub tim: i64,
    pub cpu: i64,
    pub waits: i64,
}

/// Timing state of the execution at the front of the queue (Execute or
/// one statement of a Query): one per tracer, as only the front
/// operation is ever under way; set back when the front operation goes.
#[derive(Debug, Default, Clone, Copy)]
struct Exec {
    /// EXEC line written (rows are being fetched).
    exec_written: bool,
    /// Start of the EXEC (or of the next FETCH once EXEC is written).
    fetch_start: At,
    rows: i64,
}

/// What a client message asked for, waiting for its answer. Small and
/// copied: the rare payloads are queued beside it (`texts` for a Parse's
/// or a CloseStmt's, `values` for an Execute's BINDS block), and the
/// execution's timing state is the tracer's (`Tracer::x`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// Its statement text and name are in `texts`.
    Parse,
    Bind,
    Describe,
    Execute,
    /// Its name is in `texts`.
    CloseStmt,
    ClosePortal,
    Sync,
    Query,
    Func,
}

#[derive(Debug, Clone, Copy)]
struct Op {
    kind: Kind,
    /// An Execute: the portal's first.
    first: bool,
    /// A payload waits beside it: a Parse's or CloseStmt's text in
    /// `texts`, an Execute's BINDS block in `values` (until its EXEC
    /// line takes it).
    payload: bool,
    /// Parse, Execute, Query, CloseStmt: the cursor (else 0).
    cursor: u64,
    /// When it was sent; for a Query, the start of its current statement.
    sent: At,
}

struct Portal {
    cursor: u64,
    /// The lines of its BINDS block, until its first Execute.
    values: Option<Vec<u8>>,
    executed: bool,
}

/// Where a connection's trace goes, and the state that pairs the two
/// directions' messages into calls.
pub struct Tracer {
    pub w: Lines,
    binds: bool,
    started: bool,
    ops: VecDeque<Op>,
    /// The texts of the Parse (statement, name) and CloseStmt (name)
    /// operations queued, in their order.
    texts: VecDeque<(String, String)>,
    /// The text of the last such operation taken off the queue.
    popped: Option<(String, String)>,
    /// The BINDS blocks of the Execute operations queued with one.
    values: VecDeque<Vec<u8>>,
    /// The front execution's timing.
    x: Exec,
    /// The last server message seen.
    last_done: At,
    last_cursor: u64,
    stmts: HashMap<String, u64>,
    /// Cursors whose text mentions a password: no binds are written.
    secret: HashSet<u64>,
    /// The statement the last Bind named, as it came, with its cursor and
    /// whether it is secret: a client binds the same statement over and
    /// over. Forgotten when a statement is parsed or released.
    last_bound: Option<(Vec<u8>, u64, bool)>,
    free: Vec<u64>,
    next_cursor: u64,
    /// Named portals; the unnamed one, which clients use nearly always,
    /// is `unnamed` (no hashing of its name per round trip).
    portals: HashMap<String, Portal>,
    unnamed: Option<Portal>,
    bind_start: Option<At>,
    status: u8,
    xct_written: bool,
    wrote: bool,
    /// Statements run inside the client's (see `executor.rs`): their
    /// cursors by text, numbered from `NESTED_CURSORS` so that the
    /// client's cursor numbers stay those of the client's and the proxy's
    /// traces; and the ones under way, innermost last.
    nested_cursors: HashMap<String, u64>,
    nested: Vec<u64>,
    /// BINDS blocks' buffers, kept from one execution to the next so
    /// that a round trip allocates nothing for its values.
    spare: Vec<Vec<u8>>,
    /// Where a bind value is made (binary, or cut) before it goes into
    /// its block.
    scratch: String,
}

/// The maps of names and texts looked up at every round trip, hashed with
/// FxHash (the rustc_hash crate's function, written out: the library has
/// no dependencies) instead of SipHash, whose resistance to chosen keys
/// a backend's own statement names do not need; it cost ~160
/// instructions a lookup.
type HashMap<K, V> = std::collections::HashMap<K, V, BuildHasherDefault<FxHasher>>;
type HashSet<K> = std::collections::HashSet<K, BuildHasherDefault<FxHasher>>;

#[derive(Default)]
struct FxHasher(u64);

impl Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.add(u64::from_le_bytes([
                c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7],
            ]));
        }
        for &b in chunks.remainder() {
            self.add(b as u64);
        }
    }

    fn write_u8(&mut self, n: u8) {
        self.add(n as u64);
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl FxHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

/// The first cursor number of the statements inside the client's.
const NESTED_CURSORS: u64 = 10_000;

pub(crate) fn times(start: At, end: At, r: i64) -> CallTimes {
    let e = (end.tim - start.tim).max(0);
    // The CPU clock is read at the call's ends only (a read after a
    // preemption is a system call, see crates/threadclock): the CPU the
    // backend spent inside the call's waits
    // (a read from the OS page cache is CPU and a wait) is left out by
    // bounding `c` with the elapsed time outside the waits, so that `c`
    // plus the waits never exceed `e`. Where the backend was also off CPU
    // outside the waits (preempted), `c` may keep up to that much of the
    // waits' CPU. The bound also covers a CPU clock that ticks at a
    // coarser step than the monotonic one.
    let outside = (e - (end.waits - start.waits)).max(0);
    CallTimes {
        c: (end.cpu - start.cpu).clamp(0, outside),
        e,
        r,
        dep: 0,
        tim: end.tim,
    }
}

/// The later of two points.
fn later(a: At, b: At) -> At {
    if b.tim > a.tim {
        b
    } else {
        a
    }
}

/// The count at the end of a CommandComplete tag (`INSERT 0 5` → 5).
fn tag_count(tag: &str) -> i64 {
    tag.rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Tags of statements that change nothing (for XCTEND's rd_only);
/// `word` is the tag's first.
fn read_only_tag(tag: &str, word: &str) -> bool {
    matches!(
        word,
        "SELECT"
            | "BEGIN"
            | "START"
            | "SHOW"
            | "SET"
            | "FETCH"
            | "MOVE"
            | "DECLARE"
            | "CLOSE"
            | "LISTEN"
            | "UNLISTEN"
            | "NOTIFY"
            | "DISCARD"
            | "RESET"
            | "EXPLAIN"
            | "COMMIT"
            | "ROLLBACK"
            | "SAVEPOINT"
            | "RELEASE"
            | "PREPARE"
            | "DEALLOCATE"
            | "EXECUTE"
            | ""
    ) || (word == "COPY" && tag_count(tag) == 0)
}

impl Tracer {
    pub fn new(w: Lines, binds: bool) -> Tracer {
        Tracer {
            w,
            binds,
            started: false,
            ops: VecDeque::new(),
            texts: VecDeque::new(),
            popped: None,
            values: VecDeque::new(),
            x: Exec::default(),
            last_done: At::default(),
            last_cursor: 0,
            stmts: HashMap::default(),
            secret: Default::default(),
            last_bound: None,
            free: Vec::new(),
            next_cursor: 2,
            portals: HashMap::default(),
            unnamed: None,
            bind_start: None,
            status: b'I',
            xct_written: false,
            wrote: false,
            nested_cursors: HashMap::default(),
            nested: Vec::new(),
            spare: Vec::new(),
            scratch: String::new(),
        }
    }

    /// A statement inside the client's begins, at nesting level `dep`:
    /// its cursor, parsed (a PARSING IN CURSOR with `dep`) the first time
    /// its text is seen.
    pub fn nested_begin(&mut self, sql: &str, dep: i64, now: At) -> u64 {
        let cursor = match self.nested_cursors.get(sql) {
            Some(&c) => c,
            None => {
                let c = NESTED_CURSORS + self.nested_cursors.len() as u64;
                if self.nested_cursors.len() < 10_000 {
                    self.nested_cursors.insert(sql.to_string(), c);
                }
                let mut t = times(now, now, 0);
                t.dep = dep;
                self.w.parse(c, sql, message::oct(sql), t);
                c
            }
        };
        self.nested.push(cursor);
        cursor
    }

    /// Its end: its EXEC line, before the client's statement's own.
    pub fn nested_end(&mut self, cursor: u64, dep: i64, start: At, now: At) {
        self.nested.pop();
        let mut t = times(start, now, 0);
        t.dep = dep;
        self.w.call("EXEC", cursor, t);
    }

    /// The backend is between the client's statements: none is nested
    /// (an error may have left the ones under way unended).
    pub fn nested_reset(&mut self) {
        self.nested.clear();
    }

    fn alloc(&mut self, name: &str) -> u64 {
        if name.is_empty() {
            return 1;
        }
        if let Some(&c) = self.stmts.get(name) {
            return c;
        }
        let c = self.free.pop().unwrap_or_else(|| {
            self.next_cursor += 1;
            self.next_cursor - 1
        });
        self.stmts.insert(name.to_string(), c);
        c
    }

    fn release_stmt(&mut self, name: &str) {
        self.last_bound = None;
        if let Some(c) = self.stmts.remove(name) {
            self.free.push(c);
            // Lowest free number first.
            self.free.sort_unstable_by(|a, b| b.cmp(a));
        }
    }

    /// The cursor of the statement a Bind names, and whether its text
    /// mentions a password.
    fn bound_stmt(&mut self, stmt: &[u8]) -> (u64, bool) {
        if let Some((name, cursor, secret)) = &self.last_bound {
            if name.as_slice() == stmt {
                return (*cursor, *secret);
            }
        }
        let cursor = self.stmt_cursor(&text(stmt));
        let secret = self.secret.contains(&cursor);
        let mut name = self.last_bound.take().map(|b| b.0).unwrap_or_default();
        name.clear();
        name.extend_from_slice(stmt);
        self.last_bound = Some((name, cursor, secret));
        (cursor, secret)
    }

    fn stmt_cursor(&self, name: &str) -> u64 {
        if name.is_empty() {
            1
        } else {
            self.stmts.get(name).copied().unwrap_or(0)
        }
    }

    /// Whether the client's session has begun (the first ReadyForQuery).
    pub fn started(&self) -> bool {
        self.started
    }

    /// The cursor a wait is written on: the call under way, else the last
    /// call's (as Oracle writes 'SQL*Net message from client' on the
    /// cursor of the call before it).
    pub fn wait_cursor(&self) -> u64 {
        if let Some(&c) = self.nested.last() {
            return c;
        }
        match self.ops.front() {
            Some(o)
                if matches!(
                    o.kind,
                    Kind::Parse | Kind::Execute | Kind::Query | Kind::CloseStmt
                ) =>
            {
                o.cursor
            }
            _ => self.last_cursor,
        }
    }

    /// A client message, at the point the backend's recv(2) returned it.
    pub fn client(&mut self, m: ClientRef<'_>, now: At) {
        if !self.started {
            return;
        }
        let mut first = false;
        let (kind, cursor, payload) = match m {
            ClientRef::Query(sql) => {
                let sql = text(sql);
                // The writer masks a statement that may carry a password.
                self.w
                    .parse(1, &sql, message::oct(&sql), times(now, now, 0));
                self.last_cursor = 1;
                (Kind::Query, 1, false)
            }
            ClientRef::Parse { name: n, sql } => {
                let name = text(n).into_owned();
                let sql = text(sql).into_owned();
                self.last_bound = None;
                let cursor = self.alloc(&name);
                if crate::secrets::mentions_password(&sql) {
                    self.secret.insert(cursor);
                } else {
                    self.secret.remove(&cursor);
                }
                self.texts.push_back((sql, name));
                (Kind::Parse, cursor, true)
            }
            ClientRef::Bind {
                portal,
                stmt,
                params,
            } => {
                let (cursor, secret) = self.bound_stmt(stmt);
                let values = if self.binds && !secret {
                    let mut lines = self.spare.pop().unwrap_or_default();
                    lines.clear();
                    let mut n = 0;
                    message::each_bind_value(params, &mut self.scratch, |v| {
                        crate::out::bind_line(&mut lines, n, v.map(str::as_bytes));
                        n += 1;
                    });
                    if n > 0 {
                        Some(lines)
                    } else {
                        self.spare.push(lines);
                        None
                    }
                } else {
                    None
                };
                let p = Portal {
                    cursor,
                    values,
                    executed: false,
                };
                let old = if portal.is_empty() {
                    self.unnamed.replace(p)
                } else {
                    self.portals.insert(text(portal).into_owned(), p)
                };
                self.recycle(old.and_then(|p| p.values));
                (Kind::Bind, 0, false)
            }
            ClientRef::Describe => (Kind::Describe, 0, false),
            ClientRef::Execute { portal } => match if portal.is_empty() {
                self.unnamed.as_mut()
            } else {
                self.portals.get_mut(&*text(portal))
            } {
                Some(p) => {
                    first = !p.executed;
                    p.executed = true;
                    let cursor = p.cursor;
                    match p.values.take() {
                        Some(v) => {
                            self.values.push_back(v);
                            (Kind::Execute, cursor, true)
                        }
                        None => (Kind::Execute, cursor, false),
                    }
                }
                None => {
                    first = true;
                    (Kind::Execute, 0, false)
                }
            },
            ClientRef::Close { statement, name: n } => {
                let n = text(n);
                if statement {
                    let cursor = self.stmt_cursor(&n);
                    self.texts.push_back((String::new(), n.into_owned()));
                    (Kind::CloseStmt, cursor, true)
                } else {
                    let old = if n.is_empty() {
                        self.unnamed.take()
                    } else {
                        self.portals.remove(&*n)
                    };
                    self.recycle(old.and_then(|p| p.values));
                    (Kind::ClosePortal, 0, false)
                }
            }
            ClientRef::Sync => (Kind::Sync, 0, false),
            ClientRef::FunctionCall => (Kind::Func, 0, false),
        };
        self.ops.push_back(Op {
            kind,
            first,
            payload,
            cursor,
            sent: now,
        });
    }

    /// A BINDS block's buffer, back for the next Bind.
    fn recycle(&mut self, lines: Option<Vec<u8>>) {
        if let Some(lines) = lines {
            if self.spare.len() < 4 {
                self.spare.push(lines);
            }
        }
    }

    /// The front operation, off the queue with its payloads: a Parse's
    /// or CloseStmt's text goes to `popped`, an Execute's BINDS block
    /// back to the spare buffers; the front execution's state is set
    /// back.
    #[inline]
    fn pop(&mut self) -> Option<Op> {
        let op = self.ops.pop_front()?;
        self.x = Exec::default();
        if op.payload {
            self.pop_payload(op.kind);
        }
        Some(op)
    }

    #[cold]
    fn pop_payload(&mut self, kind: Kind) {
        if kind == Kind::Execute {
            let v = self.values.pop_front();
            self.recycle(v);
        } else {
            self.popped = self.texts.pop_front();
        }
    }

    /// The front operation's kind.
    fn front_kind(&self) -> Option<Kind> {
        self.ops.front().map(|o| o.kind)
    }

    /// The front Execute's BINDS block, taken for its EXEC line.
    fn take_values(&mut self) -> Option<Vec<u8>> {
        let op = self.ops.front_mut()?;
        if op.kind == Kind::Execute && op.payload {
            op.payload = false;
            self.values.pop_front()
        } else {
            None
        }
    }

    /// When the front operation started at the server: when it was sent,
    /// or when the server finished the one before it.
    fn front_start(&self) -> At {
        self.ops
            .front()
            .map_or(self.last_done, |o| later(o.sent, self.last_done))
    }

    fn exec_line(&mut self, cursor: u64, values: Option<Vec<u8>>, start: At, now: At, r: i64) {
        if let Some(v) = values {
            self.w.binds(cursor, &v);
            self.recycle(Some(v));
        }
        self.w.call("EXEC", cursor, times(start, now, r));
        self.last_cursor = cursor;
        self.last_done = now;
    }

    /// Rows (DataRow, CopyData) for the front execution: the first one
    /// ends its EXEC.
    fn row(&mut self, now: At) {
        let start = self.front_start();
        let Some(op) = self.ops.front().copied() else {
            return;
        };
        let x = &mut self.x;
        let (exec_start, from_bind) = match op.kind {
            Kind::Execute => {
                let first = op.first;
                if x.exec_written {
                    x.rows += 1;
                    return;
                }
                x.exec_written = true;
                x.rows = 1;
                if !first {
                    // A later batch of a suspended portal: FETCH only.
                    x.fetch_start = start;
                    return;
                }
                x.fetch_start = now;
                (self.bind_start.unwrap_or(start), true)
            }
            Kind::Query => {
                if x.exec_written {
                    x.rows += 1;
                    return;
                }
                x.exec_written = true;
                x.rows = 1;
                x.fetch_start = now;
                (op.sent, false)
            }
            _ => return,
        };
        let values = if from_bind {
            self.bind_start = None;
            self.take_values()
        } else {
            None
        };
        self.exec_line(op.cursor, values, exec_start, now, 0);
    }

    /// The end of an execution: CommandComplete (`tag`), EmptyQuery,
    /// PortalSuspended (`suspended`) or an error (`error`).
    fn finish(&mut self, tag: &str, suspended: bool, error: Option<&str>, now: At) {
        let start = self.front_start();
        let Some(op) = self.ops.front().copied() else {
            return;
        };
        let cursor = op.cursor;
        let (first, exec_start) = match op.kind {
            Kind::Execute => {
                let first = op.first;
                let s = if first {
                    self.bind_start.unwrap_or(start)
                } else {
                    start
                };
                (first, s)
            }
            Kind::Query => (true, op.sent),
            _ => return,
        };
        let values = self.take_values();
        let x = std::mem::take(&mut self.x);
        if op.kind == Kind::Query {
            if let Some(o) = self.ops.front_mut() {
                o.sent = now;
            }
        }
        if first && !x.exec_written {
            self.bind_start = None;
        }
        // XCTEND comes before the COMMIT's EXEC, as Oracle writes it.
        // The tag's first word (a short loop, not a call to memchr).
        let word = tag
            .bytes()
            .position(|b| b == b' ')
            .map_or(tag, |i| &tag[..i]);
        if error.is_none() {
            if !read_only_tag(tag, word) {
                self.wrote = true;
            }
            if word == "COMMIT" || word == "ROLLBACK" {
                self.w.xctend(word == "ROLLBACK", !self.wrote, now.tim);
                self.xct_written = true;
                self.wrote = false;
            }
        }
        let returns_rows = x.exec_written || matches!(word, "SELECT" | "FETCH") || suspended;
        if returns_rows {
            let mut fetch_start = x.fetch_start;
            if !x.exec_written {
                if first {
                    self.exec_line(cursor, values, exec_start, now, 0);
                    fetch_start = now;
                } else {
                    fetch_start = exec_start;
                }
            }
            self.w
                .call("FETCH", cursor, times(fetch_start, now, x.rows));
            self.last_cursor = cursor;
            self.last_done = now;
        } else if first {
            self.exec_line(cursor, values, exec_start, now, tag_count(tag));
        }
        if let Some(code) = error {
            self.w.error(cursor, code, now.tim);
        }
    }

    /// The messages of one send(2) of the backend, at `now`. The
    /// server's time before them cannot be split among answers that
    /// arrive together: it goes to the execution (EXEC/FETCH) among them,
    /// and a PARSE or CLOSE answered in the same read gets e=0.
    pub fn server_chunk<'m>(
        &mut self,
        msgs: impl Iterator<Item = (u8, &'m [u8])> + Clone,
        now: At,
    ) {
        let mut rest = msgs;
        while let Some((t, b)) = rest.next() {
            // Only a ParseComplete or CloseComplete asks whether an
            // execution's answer comes later in the chunk, so the rest of
            // the chunk is looked at for those alone (an execution's
            // answers, the common case, are read once).
            let exec_follows = matches!(t, b'1' | b'3')
                && rest
                    .clone()
                    .any(|(t, _)| matches!(t, b'2' | b'D' | b'd' | b'C' | b's' | b'I' | b'E'));
            self.server(t, b, now, exec_follows);
        }
        self.last_done = now;
    }

    /// A server message, at the point the backend hands it to send(2); `exec_follows`
    /// when an execution's answer comes later in the same read.
    fn server(&mut self, t: u8, body: &[u8], now: At, exec_follows: bool) {
        if !self.started {
            match t {
                b'Z' => {
                    self.started = true;
                    self.last_done = now;
                }
                b'E' => {
                    let (code, _) = message::error_fields(body);
                    self.w.error(0, &code, now.tim);
                }
                _ => {}
            }
            return;
        }
        match t {
            b'1' => {
                let start = self.front_start();
                if self.front_kind() == Some(Kind::Parse) {
                    let cursor = self.pop().map_or(0, |o| o.cursor);
                    let (sql, _) = self.popped.take().unwrap_or_default();
                    let start = if exec_follows { now } else { start };
                    self.w
                        .parse(cursor, &sql, message::oct(&sql), times(start, now, 0));
                    self.last_cursor = cursor;
                    if !exec_follows {
                        self.last_done = now;
                    }
                }
            }
            b'2' if self.front_kind() == Some(Kind::Bind) => {
                self.bind_start = Some(self.front_start());
                self.pop();
            }
            b'3' => {
                let start = self.front_start();
                match self.front_kind() {
                    Some(Kind::CloseStmt) => {
                        let cursor = self.pop().map_or(0, |o| o.cursor);
                        let (_, name) = self.popped.take().unwrap_or_default();
                        let start = if exec_follows { now } else { start };
                        self.w.close(cursor, times(start, now, 0));
                        self.release_stmt(&name);
                        if !exec_follows {
                            self.last_done = now;
                        }
                    }
                    Some(Kind::ClosePortal) => {
                        self.pop();
                    }
                    _ => {}
                }
            }
            b'T' | b'n' if self.front_kind() == Some(Kind::Describe) => {
                self.pop();
            }
            b'D' | b'd' => self.row(now),
            b'C' | b'I' | b's' => {
                let tag = if t == b'C' {
                    message::command_tag(body)
                } else {
                    "".into()
                };
                self.finish(&tag, t == b's', None, now);
                if matches!(self.front_kind(), Some(Kind::Execute)) {
                    self.pop();
                }
            }
            b'V' if self.front_kind() == Some(Kind::Func) => {
                self.pop();
            }
            b'E' => self.server_error(body, now),
            b'Z' => {
                while let Some(op) = self.pop() {
                    if matches!(op.kind, Kind::Sync | Kind::Query) {
                        break;
                    }
                }
                let status = body.first().copied().unwrap_or(b'I');
                if status == b'I' && self.status != b'I' && !self.xct_written {
                    self.w.xctend(self.status == b'E', !self.wrote, now.tim);
                    self.wrote = false;
                }
                self.status = status;
                self.xct_written = false;
            }
            _ => {}
        }
    }

    fn server_error(&mut self, body: &[u8], now: At) {
        let (code, _) = message::error_fields(body);
        let start = self.front_start();
        let kind = self.front_kind().map(|k| match k {
            Kind::Parse => 0,
            Kind::Execute | Kind::Query => 1,
            Kind::Bind => 2,
            Kind::Sync => 3,
            _ => 4,
        });
        match kind {
            None | Some(3) => {
                let c = self.last_cursor;
                self.w.error(c, &code, now.tim);
                return;
            }
            Some(0) => {
                let cursor = self.pop().map_or(0, |o| o.cursor);
                let (sql, name) = self.popped.take().unwrap_or_default();
                self.w
                    .parse(cursor, &sql, message::oct(&sql), times(start, now, 0));
                self.w.error(cursor, &code, now.tim);
                self.release_stmt(&name);
            }
            Some(1) => {
                self.finish("", false, Some(&code), now);
                if matches!(self.front_kind(), Some(Kind::Execute)) {
                    self.pop();
                }
            }
            Some(2) => {
                // Bind failed: the EXEC that never ran is its call.
                let cursor = self.last_cursor;
                self.w.call("EXEC", cursor, times(start, now, 0));
                self.w.error(cursor, &code, now.tim);
                self.pop();
            }
            _ => {
                let c = self.last_cursor;
                self.w.error(c, &code, now.tim);
                self.pop();
            }
        }
        // Extended protocol: the server skips everything up to Sync.
        while let Some(k) = self.front_kind() {
            if matches!(k, Kind::Sync | Kind::Query) {
                break;
            }
            self.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(tim: i64, cpu: i64, waits: i64) -> At {
        At { tim, cpu, waits }
    }

    /// `c` + the waits inside a call never exceed its `e`: the CPU spent
    /// inside the waits (a read from the page cache) is theirs.
    #[test]
    fn the_waits_cpu_is_not_the_calls() {
        // 100 µs, 90 of them on CPU, 30 of which inside waits of 30 µs.
        let t = times(at(1000, 500, 7), at(1100, 590, 37), 1);
        assert_eq!((t.e, t.c, t.r, t.tim), (100, 70, 1, 1100));
        // Off CPU in the waits: c is the CPU.
        let t = times(at(1000, 500, 7), at(1100, 540, 57), 0);
        assert_eq!((t.e, t.c), (100, 40));
        // A CPU clock that ran ahead of the elapsed time.
        let t = times(at(1000, 500, 0), at(1010, 520, 0), 0);
        assert_eq!((t.e, t.c), (10, 10));
    }
}
