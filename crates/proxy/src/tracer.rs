//! The server-side trace of one client connection, in the 10046 format.
//!
//! The tracer sees the conversation as the server does: a client message
//! counts from the moment the proxy has written it to the server, a server
//! message from the moment the proxy has read it. So a call's `e` is the
//! server's time (plus loopback), and everything else — the client's own
//! time and the injected link delay both ways — falls in the 'SQL*Net
//! message from client' wait before the next call, as in an Oracle trace
//! taken on the server.
//!
//! Calls, per the extended protocol (pipelined messages are answered in
//! order, so a queue of pending operations pairs each answer with its
//! request):
//! - Parse → PARSING IN CURSOR + PARSE, ending at ParseComplete;
//! - Bind (+ Describe) + Execute → BINDS, EXEC ending at the first row (or
//!   at CommandComplete for a statement that returns none, `r` = the
//!   tag's count), FETCH from there to CommandComplete or PortalSuspended
//!   with the rows of that batch (one FETCH per batch);
//! - Close of a statement → CLOSE;
//! - a simple Query → PARSING IN CURSOR + PARSE (e=0: the server parses
//!   inside the one round trip), then EXEC/FETCH per statement as above;
//! - COMMIT/ROLLBACK tags, or a ReadyForQuery that leaves a transaction
//!   without one → XCTEND; ErrorResponse → the call line, then ERROR with
//!   the SQLSTATE.
//!
//! Cursor numbers: the unnamed statement (and simple queries, which
//! replace it) is #1; each named statement gets the lowest free number
//! from #2 while it exists, as Oracle reuses cursor slots.

use std::collections::{HashMap, VecDeque};
use std::fs::File;

use tracelab_trace::{CallTimes, TraceWriter};

use crate::message::{self, ClientMsg};

/// Timing state of an execution (Execute or one statement of a Query).
#[derive(Debug, Default)]
struct Exec {
    /// EXEC line written (rows are being fetched).
    exec_written: bool,
    /// Start of the EXEC (or of the next FETCH once EXEC is written).
    fetch_start: i64,
    rows: i64,
}

#[derive(Debug)]
enum OpKind {
    Parse {
        cursor: u64,
        sql: String,
        name: String,
    },
    Bind,
    Describe,
    Execute {
        cursor: u64,
        first: bool,
        values: Option<Vec<Option<String>>>,
        x: Exec,
    },
    CloseStmt {
        cursor: u64,
        name: String,
    },
    ClosePortal,
    Sync,
    Query {
        cursor: u64,
        x: Exec,
        /// Start of the current statement of the query string.
        start: i64,
    },
    Func,
}

#[derive(Debug)]
struct Op {
    kind: OpKind,
    sent: i64,
}

struct Portal {
    cursor: u64,
    values: Option<Vec<Option<String>>>,
    executed: bool,
}

/// Where a connection's trace goes, and the state that pairs the two
/// directions' messages into calls.
pub struct Tracer {
    w: TraceWriter<File>,
    binds: bool,
    started: bool,
    ops: VecDeque<Op>,
    /// `tim` of the last server message seen.
    last_done: i64,
    /// `tim` at which the server last became idle (ReadyForQuery with
    /// nothing pending): the start of 'SQL*Net message from client'.
    idle_since: Option<i64>,
    /// µs the proxy took to write the last response to the client.
    to_client_us: i64,
    last_cursor: u64,
    stmts: HashMap<String, u64>,
    /// Cursors whose text mentions a password: no binds are written.
    secret: std::collections::HashSet<u64>,
    free: Vec<u64>,
    next_cursor: u64,
    portals: HashMap<String, Portal>,
    bind_start: Option<i64>,
    status: u8,
    xct_written: bool,
    wrote: bool,
    failed: bool,
}

fn times(start: i64, end: i64, r: i64) -> CallTimes {
    let e = (end - start).max(0);
    // The proxy cannot see the server's CPU; c = e keeps the server's time
    // in profiles (mrskew counts c for database calls).
    CallTimes {
        c: e,
        e,
        r,
        dep: 0,
        tim: end,
    }
}

/// The count at the end of a CommandComplete tag (`INSERT 0 5` → 5).
fn tag_count(tag: &str) -> i64 {
    tag.rsplit(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// Tags of statements that change nothing (for XCTEND's rd_only).
fn read_only_tag(tag: &str) -> bool {
    let w = tag.split(' ').next().unwrap_or("");
    matches!(
        w,
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
    ) || (w == "COPY" && tag_count(tag) == 0)
}

const DRIVER: (&str, i64) = ("driver id", 1_413_697_536);

impl Tracer {
    pub fn new(w: TraceWriter<File>, binds: bool) -> Tracer {
        Tracer {
            w,
            binds,
            started: false,
            ops: VecDeque::new(),
            last_done: 0,
            idle_since: None,
            to_client_us: 0,
            last_cursor: 0,
            stmts: HashMap::new(),
            secret: Default::default(),
            free: Vec::new(),
            next_cursor: 2,
            portals: HashMap::new(),
            bind_start: None,
            status: b'I',
            xct_written: false,
            wrote: false,
            failed: false,
        }
    }

    fn io(&mut self, r: std::io::Result<()>) {
        if let Err(e) = r {
            if !self.failed {
                eprintln!("tracelab proxy: trace write failed ({e}); later lines of this trace may be missing");
                self.failed = true;
            }
        }
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
        if let Some(c) = self.stmts.remove(name) {
            self.free.push(c);
            // Lowest free number first.
            self.free.sort_unstable_by(|a, b| b.cmp(a));
        }
    }

    fn stmt_cursor(&self, name: &str) -> u64 {
        if name.is_empty() {
            1
        } else {
            self.stmts.get(name).copied().unwrap_or(0)
        }
    }

    /// The proxy wrote a response chunk to the client in `us` µs.
    pub fn wrote_to_client(&mut self, us: i64) {
        self.to_client_us = us;
    }

    /// A client message, at the `tim` it was written to the server.
    pub fn client(&mut self, m: ClientMsg, now: i64) {
        if !self.started {
            return;
        }
        if self.ops.is_empty() {
            if let Some(since) = self.idle_since.take() {
                let to = self.to_client_us.min(now - since).max(0);
                let cur = self.last_cursor;
                let r = self.w.wait(
                    cur,
                    "SQL*Net message to client",
                    to,
                    [DRIVER, ("#bytes", 1), ("p3", 0)],
                    since + to,
                );
                self.io(r);
                let r = self.w.wait(
                    cur,
                    "SQL*Net message from client",
                    (now - since - to).max(0),
                    [DRIVER, ("#bytes", 1), ("p3", 0)],
                    now,
                );
                self.io(r);
            }
        }
        let kind = match m {
            ClientMsg::Query(sql) => {
                // The writer masks a statement that may carry a password.
                let r = self
                    .w
                    .parse(1, &sql, message::oct(&sql), times(now, now, 0));
                self.io(r);
                self.last_cursor = 1;
                OpKind::Query {
                    cursor: 1,
                    x: Exec::default(),
                    start: now,
                }
            }
            ClientMsg::Parse { name, sql } => {
                let cursor = self.alloc(&name);
                if tracelab_trace::mentions_password(&sql) {
                    self.secret.insert(cursor);
                } else {
                    self.secret.remove(&cursor);
                }
                OpKind::Parse { cursor, sql, name }
            }
            ClientMsg::Bind {
                portal,
                stmt,
                values,
            } => {
                let cursor = self.stmt_cursor(&stmt);
                let values = (self.binds && !values.is_empty() && !self.secret.contains(&cursor))
                    .then_some(values);
                self.portals.insert(
                    portal,
                    Portal {
                        cursor,
                        values,
                        executed: false,
                    },
                );
                OpKind::Bind
            }
            ClientMsg::Describe => OpKind::Describe,
            ClientMsg::Execute { portal } => match self.portals.get_mut(&portal) {
                Some(p) => {
                    let first = !p.executed;
                    p.executed = true;
                    OpKind::Execute {
                        cursor: p.cursor,
                        first,
                        values: p.values.take(),
                        x: Exec::default(),
                    }
                }
                None => OpKind::Execute {
                    cursor: 0,
                    first: true,
                    values: None,
                    x: Exec::default(),
                },
            },
            ClientMsg::Close { statement, name } => {
                if statement {
                    OpKind::CloseStmt {
                        cursor: self.stmt_cursor(&name),
                        name,
                    }
                } else {
                    self.portals.remove(&name);
                    OpKind::ClosePortal
                }
            }
            ClientMsg::Sync => OpKind::Sync,
            ClientMsg::FunctionCall => OpKind::Func,
        };
        self.ops.push_back(Op { kind, sent: now });
    }

    /// When the front operation started at the server: when it was sent,
    /// or when the server finished the one before it.
    fn front_start(&self) -> i64 {
        self.ops
            .front()
            .map_or(self.last_done, |o| o.sent.max(self.last_done))
    }

    fn exec_line(
        &mut self,
        cursor: u64,
        values: Option<Vec<Option<String>>>,
        start: i64,
        now: i64,
        r: i64,
    ) {
        if let Some(v) = values {
            let refs: Vec<Option<&str>> = v.iter().map(|x| x.as_deref()).collect();
            let res = self.w.binds(cursor, &refs);
            self.io(res);
        }
        let res = self.w.exec(cursor, times(start, now, r));
        self.io(res);
        self.last_cursor = cursor;
        self.last_done = now;
    }

    /// Rows (DataRow, CopyData) for the front execution: the first one
    /// ends its EXEC.
    fn row(&mut self, now: i64) {
        let start = self.front_start();
        let bind_start = self.bind_start;
        let Some(op) = self.ops.front_mut() else {
            return;
        };
        let (cursor, values, exec_start, from_bind) = match &mut op.kind {
            OpKind::Execute {
                cursor,
                first,
                values,
                x,
            } => {
                if x.exec_written {
                    x.rows += 1;
                    return;
                }
                x.exec_written = true;
                x.rows = 1;
                if !*first {
                    // A later batch of a suspended portal: FETCH only.
                    x.fetch_start = start;
                    return;
                }
                x.fetch_start = now;
                (*cursor, values.take(), bind_start.unwrap_or(start), true)
            }
            OpKind::Query {
                cursor,
                x,
                start: s,
            } => {
                if x.exec_written {
                    x.rows += 1;
                    return;
                }
                x.exec_written = true;
                x.rows = 1;
                x.fetch_start = now;
                (*cursor, None, *s, false)
            }
            _ => return,
        };
        if from_bind {
            self.bind_start = None;
        }
        self.exec_line(cursor, values, exec_start, now, 0);
    }

    /// The end of an execution: CommandComplete (`tag`), EmptyQuery,
    /// PortalSuspended (`suspended`) or an error (`error`).
    fn finish(&mut self, tag: &str, suspended: bool, error: Option<&str>, now: i64) {
        let start = self.front_start();
        let bind_start = self.bind_start;
        let Some(op) = self.ops.front_mut() else {
            return;
        };
        let (cursor, first, values, x, exec_start) = match &mut op.kind {
            OpKind::Execute {
                cursor,
                first,
                values,
                x,
            } => {
                let s = if *first {
                    bind_start.unwrap_or(start)
                } else {
                    start
                };
                (*cursor, *first, values.take(), std::mem::take(x), s)
            }
            OpKind::Query {
                cursor, x, start, ..
            } => (*cursor, true, None, std::mem::take(x), *start),
            _ => return,
        };
        if let OpKind::Query { start, .. } = &mut op.kind {
            *start = now;
        }
        if first && !x.exec_written {
            self.bind_start = None;
        }
        // XCTEND comes before the COMMIT's EXEC, as Oracle writes it.
        let word = tag.split(' ').next().unwrap_or("");
        if error.is_none() {
            if !read_only_tag(tag) {
                self.wrote = true;
            }
            if word == "COMMIT" || word == "ROLLBACK" {
                let r = self.w.xctend(word == "ROLLBACK", !self.wrote, now);
                self.io(r);
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
            let r = self.w.fetch(cursor, times(fetch_start, now, x.rows));
            self.io(r);
            self.last_cursor = cursor;
            self.last_done = now;
        } else if first {
            self.exec_line(cursor, values, exec_start, now, tag_count(tag));
        }
        if let Some(code) = error {
            let r = self.w.error(cursor, code, now);
            self.io(r);
        }
    }

    /// The messages of one read from the server, read at `now`. The
    /// server's time before them cannot be split among answers that
    /// arrive together: it goes to the execution (EXEC/FETCH) among them,
    /// and a PARSE or CLOSE answered in the same read gets e=0.
    pub fn server_chunk(&mut self, msgs: &[(u8, Vec<u8>)], now: i64) {
        let last_exec = msgs
            .iter()
            .rposition(|(t, _)| matches!(t, b'2' | b'D' | b'd' | b'C' | b's' | b'I' | b'E'));
        for (i, (t, b)) in msgs.iter().enumerate() {
            self.server(*t, b, now, last_exec.is_some_and(|j| j > i));
        }
        self.last_done = now;
    }

    /// A server message, at the `tim` the proxy read it; `exec_follows`
    /// when an execution's answer comes later in the same read.
    fn server(&mut self, t: u8, body: &[u8], now: i64, exec_follows: bool) {
        if !self.started {
            match t {
                b'Z' => {
                    self.started = true;
                    self.idle_since = Some(now);
                    self.last_done = now;
                }
                b'E' => {
                    let (code, _) = message::error_fields(body);
                    let r = self.w.error(0, &code, now);
                    self.io(r);
                }
                _ => {}
            }
            return;
        }
        match t {
            b'1' => {
                let start = self.front_start();
                if let Some(Op {
                    kind: OpKind::Parse { cursor, sql, .. },
                    ..
                }) = self.ops.front()
                {
                    let (cursor, sql) = (*cursor, sql.clone());
                    let start = if exec_follows { now } else { start };
                    let r = self
                        .w
                        .parse(cursor, &sql, message::oct(&sql), times(start, now, 0));
                    self.io(r);
                    self.last_cursor = cursor;
                    self.ops.pop_front();
                    if !exec_follows {
                        self.last_done = now;
                    }
                }
            }
            b'2' => {
                if matches!(
                    self.ops.front(),
                    Some(Op {
                        kind: OpKind::Bind,
                        ..
                    })
                ) {
                    self.bind_start = Some(self.front_start());
                    self.ops.pop_front();
                }
            }
            b'3' => {
                let start = self.front_start();
                match self.ops.pop_front() {
                    Some(Op {
                        kind: OpKind::CloseStmt { cursor, name },
                        ..
                    }) => {
                        let start = if exec_follows { now } else { start };
                        let r = self.w.close(cursor, times(start, now, 0));
                        self.io(r);
                        self.release_stmt(&name);
                        if !exec_follows {
                            self.last_done = now;
                        }
                    }
                    Some(Op {
                        kind: OpKind::ClosePortal,
                        ..
                    }) => {}
                    Some(other) => self.ops.push_front(other),
                    None => {}
                }
            }
            b'T' | b'n' => {
                if matches!(
                    self.ops.front(),
                    Some(Op {
                        kind: OpKind::Describe,
                        ..
                    })
                ) {
                    self.ops.pop_front();
                }
            }
            b'D' | b'd' => self.row(now),
            b'C' | b'I' | b's' => {
                let tag = if t == b'C' {
                    message::command_tag(body)
                } else {
                    "".into()
                };
                self.finish(&tag, t == b's', None, now);
                if matches!(
                    self.ops.front(),
                    Some(Op {
                        kind: OpKind::Execute { .. },
                        ..
                    })
                ) {
                    self.ops.pop_front();
                }
            }
            b'V' => {
                if matches!(
                    self.ops.front(),
                    Some(Op {
                        kind: OpKind::Func,
                        ..
                    })
                ) {
                    self.ops.pop_front();
                }
            }
            b'E' => self.server_error(body, now),
            b'Z' => {
                while let Some(op) = self.ops.pop_front() {
                    if matches!(op.kind, OpKind::Sync | OpKind::Query { .. }) {
                        break;
                    }
                }
                let status = body.first().copied().unwrap_or(b'I');
                if status == b'I' && self.status != b'I' && !self.xct_written {
                    let r = self.w.xctend(self.status == b'E', !self.wrote, now);
                    self.io(r);
                    self.wrote = false;
                }
                self.status = status;
                self.xct_written = false;
                if self.ops.is_empty() {
                    self.idle_since = Some(now);
                }
            }
            _ => {}
        }
    }

    fn server_error(&mut self, body: &[u8], now: i64) {
        let (code, _) = message::error_fields(body);
        let start = self.front_start();
        let kind = self.ops.front().map(|o| match &o.kind {
            OpKind::Parse { .. } => 0,
            OpKind::Execute { .. } | OpKind::Query { .. } => 1,
            OpKind::Bind => 2,
            OpKind::Sync => 3,
            _ => 4,
        });
        match kind {
            None | Some(3) => {
                let c = self.last_cursor;
                let r = self.w.error(c, &code, now);
                self.io(r);
                return;
            }
            Some(0) => {
                if let Some(Op {
                    kind: OpKind::Parse { cursor, sql, name },
                    ..
                }) = self.ops.pop_front()
                {
                    let r = self
                        .w
                        .parse(cursor, &sql, message::oct(&sql), times(start, now, 0));
                    self.io(r);
                    let r = self.w.error(cursor, &code, now);
                    self.io(r);
                    self.release_stmt(&name);
                }
            }
            Some(1) => {
                self.finish("", false, Some(&code), now);
                if matches!(
                    self.ops.front(),
                    Some(Op {
                        kind: OpKind::Execute { .. },
                        ..
                    })
                ) {
                    self.ops.pop_front();
                }
            }
            Some(2) => {
                // Bind failed: the EXEC that never ran is its call.
                let cursor = self.last_cursor;
                let r = self.w.exec(cursor, times(start, now, 0));
                self.io(r);
                let r = self.w.error(cursor, &code, now);
                self.io(r);
                self.ops.pop_front();
            }
            _ => {
                let c = self.last_cursor;
                let r = self.w.error(c, &code, now);
                self.io(r);
                self.ops.pop_front();
            }
        }
        // Extended protocol: the server skips everything up to Sync.
        while let Some(op) = self.ops.front() {
            if matches!(op.kind, OpKind::Sync | OpKind::Query { .. }) {
                break;
            }
            self.ops.pop_front();
        }
    }

    pub fn flush(&mut self) {
        let r = self.w.flush();
        self.io(r);
    }
}
