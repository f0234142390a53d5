//! The server trace of MariaDB (`mariadbd`; checked with 10.11 and 11.4): the same
//! library, preloaded into the server with `TRACELAB_SERVER_TRACE_DIR` set,
//! writes one 10046 trace per client connection, from the thread that
//! serves it: the connection's own (one thread per connection, the
//! server's default scheduler), or, under the thread pool, whichever of
//! the pool's threads takes up its next request (see `pool`):
//!
//! - the calls from the client protocol the thread receives (recv(2)) and
//!   sends (send(2)), decoded by `mysql_stream`: a COM_QUERY is a PARSE, an
//!   EXEC and (when it returns rows) a FETCH of its text's cursor; a
//!   COM_STMT_PREPARE a PARSE; a COM_STMT_EXECUTE an EXEC and a FETCH of the
//!   prepared statement's cursor; an error answer an ERROR line. `c` is the
//!   thread's CPU clock over the call.
//! - the waits, named as MariaDB names them: the server calls
//!   `thd_wait_begin(thd, type)` and `thd_wait_end(thd)` around every wait
//!   its thread pool must know of (a row lock, a metadata or table lock,
//!   a disk read, the group commit's redo flush, the client's next
//!   packet, `SLEEP()`, ...), with a `thd_wait_type`. Those two functions
//!   are exported, but called directly inside the executable, so a
//!   preloaded library cannot interpose them; what they do is call the
//!   scheduler's `thd_wait_begin`/`thd_wait_end` through function pointers
//!   of the connection's `scheduler_functions`, which the default
//!   scheduler leaves NULL and the thread pool sets to its own. The
//!   library points those two at its functions (which call the pool's,
//!   where it runs), so every such wait of
//!   a traced connection is timed from its begin to its end and named
//!   `thd_wait:TYPE` (`thd_wait:ROW_LOCK`, ...: the enum's names in
//!   MariaDB's include/mysql/service_thd_wait.h without their prefix).
//!   Where the server's machine code is not what the library expects (the
//!   pointers' offsets are read from the first instructions of the
//!   exported `thd_wait_begin`), no pointer is touched and those waits
//!   are not traced.
//! - the blocking file calls the thread makes outside such a wait
//!   (pread, pwrite, fsync, fdatasync: a page read the server does not
//!   announce, the redo log flush of a group commit's leader), named by
//!   the call and the file (`fdatasync ib_logfile0`): the server has no
//!   name of its own for them.
//! - under the thread pool, the time between a connection's requests,
//!   when no thread holds it: the wait for the client (`thd_wait:NET`, as
//!   the connection's own thread names it) until the pool's poll returns
//!   its socket readable, then the wait in the pool's queue (`thread pool
//!   queue`) until a thread reads the request.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};

use crate::mysql_stream::{Answer, Command, Conversation, Event};
use crate::out::{Lines, Params};
use crate::session::{times, At};
use crate::{
    clock_ns, clock_us, cpu, dlsym, env, KeepErrno, CLOCK_MONOTONIC, CLOCK_REALTIME, RTLD_DEFAULT,
};

/// Whether this process is a MariaDB server to trace: 0 not known yet, 1
/// no, 2 yes.
static MODE: AtomicU8 = AtomicU8::new(0);

/// Whether the wrapped calls of this process go here (a MariaDB server
/// with the trace directory set) rather than to PostgreSQL's tracer.
#[inline]
pub fn on() -> bool {
    match MODE.load(Relaxed) {
        1 => false,
        2 => true,
        _ => decide(),
    }
}

#[cold]
fn decide() -> bool {
    let yes = env("TRACELAB_SERVER_TRACE_DIR").is_some_and(|d| !d.is_empty())
        && !sym(c"thd_wait_begin").is_null()
        && !sym(c"_current_thd").is_null();
    MODE.store(if yes { 2 } else { 1 }, Relaxed);
    yes
}

fn sym(name: &CStr) -> *mut u8 {
    // SAFETY: dlsym with a NUL-terminated name.
    unsafe { dlsym(RTLD_DEFAULT, name.as_ptr()) as *mut u8 }
}

mod pool;

thread_local! {
    /// The connection this thread serves, or null: under the default
    /// scheduler a box the thread leaked, its own; under the thread pool
    /// one of `pool`'s.
    static CONN: Cell<*mut Conn> = const { Cell::new(std::ptr::null_mut()) };
    /// The thread is inside the library: what it calls meanwhile passes
    /// through.
    static INSIDE: Cell<bool> = const { Cell::new(false) };
    /// This thread's CPU clock (see `cpu`), opened at its first traced
    /// connection and closed with the thread: the clock is the thread's,
    /// and a pool's connection is served by many threads in turn.
    static CLOCK: RefCell<Option<cpu::ThreadClock>> = const { RefCell::new(None) };
}

/// Runs `f` on this thread's CPU clock; `None` while the thread ends.
fn with_clock<R>(f: impl FnOnce(&mut cpu::ThreadClock) -> R) -> Option<R> {
    CLOCK
        .try_with(|k| {
            let mut k = k.try_borrow_mut().ok()?;
            let k = k.get_or_insert_with(|| {
                cpu::ThreadClock::open(cpu::Want::from_setting(
                    env("TRACELAB_SERVER_TRACE_CPU").as_deref(),
                ))
            });
            Some(f(k))
        })
        .ok()
        .flatten()
}

/// The thread's CPU time at `now` (monotonic ns), ns.
fn thread_cpu(now: i64) -> i64 {
    with_clock(|k| k.read(now)).unwrap_or_else(cpu::kernel_thread_cpu_ns)
}

/// `cpu::ThreadClock::before_block` of this thread's clock.
fn before_block(now: i64) -> Option<i64> {
    with_clock(|k| k.before_block(now)).flatten()
}

/// `cpu::ThreadClock::after_block` of this thread's clock: the monotonic
/// clock after the call, ns.
fn after_block(carried: Option<i64>) -> i64 {
    with_clock(|k| k.after_block(carried)).unwrap_or_else(cpu::monotonic_ns)
}

/// Runs `f` on this thread's traced connection, unless the thread is
/// already inside the library (the library's own calls) or traces none.
#[inline]
fn with_conn<R>(f: impl FnOnce(&mut Conn) -> R) -> Option<R> {
    on_conn(|| None, |c, _| Some(f(c)))
}

/// Runs `f` with the library entered (what it calls meanwhile passes
/// through); `None` if the thread is inside already.
fn inside<R>(f: impl FnOnce() -> R) -> Option<R> {
    if INSIDE.with(|i| i.replace(true)) {
        return None;
    }
    let r = f();
    INSIDE.with(|i| i.set(false));
    Some(r)
}

/// The connection this thread serves. Only with the library entered
/// (`inside`), and not kept past it.
fn held<'a>() -> Option<&'a mut Conn> {
    if pool::on() {
        pool::refresh();
    }
    let p = CONN.with(|c| c.get());
    // SAFETY: the thread's own box (default scheduler), or the pool's
    // connection of the THD the thread serves now, which no other thread
    // serves meanwhile; INSIDE keeps a nested call (a signal handler's,
    // the library's own) from taking it twice.
    (!p.is_null()).then(|| unsafe { &mut *p })
}

/// `c`, a new login's, is the connection this thread serves from now on.
fn begin(c: Box<Conn>) {
    if pool::on() {
        pool::adopt(c);
        return;
    }
    let old = CONN.with(|p| p.replace(Box::into_raw(c)));
    if !old.is_null() {
        // The thread's connection before, whose close was not seen.
        // SAFETY: the box this thread leaked.
        drop(unsafe { Box::from_raw(old) });
    }
}

/// The monotonic clock, µs.
fn now_us() -> i64 {
    clock_us(CLOCK_MONOTONIC)
}

/// Lines are written out once this much is buffered, or `FLUSH_MS`
/// into a wait for the client's next packet (see `poll`), or when the
/// connection ends.
const BUFFER: usize = 32 << 10;
const FLUSH_MS: c_int = 50;

/// One traced connection.
struct Conn {
    fd: c_int,
    conv: Conversation,
    events: Vec<Event>,
    calls: Calls,
    out: Option<std::fs::File>,
    /// `tim` = monotonic µs + this.
    offset: i64,
    /// The connection's CPU time = the serving thread's + this, ns.
    cpu_off: i64,
    /// The connection's CPU time at its last reading, ns.
    cpu_last: i64,
    /// The thread that served it last (`cpu::thread_id`; the pool's).
    served_by: usize,
    /// No thread serves the connection (the pool's, between requests).
    parked: Option<pool::Idle>,
    /// The pool's thread left it mid-request (suspended), monotonic µs.
    left: Option<i64>,
    /// The elapsed time of the waits so far, µs.
    waits: i64,
    /// The wait under way: its type, start (µs) and the CPU clock carried
    /// to it.
    wait: Option<(c_int, i64, Option<i64>)>,
    /// How deep the server's `thd_wait_begin`s nest: the outermost wait
    /// is the one timed.
    depth: u32,
    connection_id: u32,
    /// The client has logged in: the trace has begun.
    logged_in: bool,
    /// Off: the client asked for compression, or for TLS where the
    /// server's TLS library cannot be read, or trace.conf left it out.
    off: bool,
    /// The connection took TLS: its bytes are read in the clear from
    /// `SSL_read` and `SSL_write` (see `crate::follows`).
    tls: crate::Tls,
    /// The wait names of the thread's blocking file calls, by call and
    /// descriptor (`fdatasync ib_logfile0`): the file's name read once,
    /// not at each call. Forgotten when this thread closes the
    /// descriptor; InnoDB keeps its files open, so a number another
    /// thread closes and reuses for another file is rare, and costs a
    /// wrong name, not a wrong time.
    files: HashMap<(&'static str, c_int), String>,
}

impl Conn {
    fn new(fd: c_int) -> Conn {
        Conn {
            fd,
            conv: Conversation::new(),
            events: Vec::new(),
            calls: Calls::default(),
            out: None,
            offset: clock_us(CLOCK_REALTIME) - now_us(),
            cpu_off: 0,
            cpu_last: 0,
            served_by: 0,
            parked: None,
            left: None,
            waits: 0,
            wait: None,
            depth: 0,
            connection_id: 0,
            logged_in: false,
            off: false,
            tls: crate::Tls::Off,
            files: HashMap::new(),
        }
    }

    /// A point of the session (see `session::At`).
    fn at(&mut self) -> At {
        let now = clock_ns(CLOCK_MONOTONIC);
        self.cpu_last = thread_cpu(now) + self.cpu_off;
        At {
            tim: now / 1000 + self.offset,
            cpu: self.cpu_last / 1000,
            waits: self.waits,
        }
    }

    fn server(&mut self, bytes: &[u8]) {
        if self.off {
            return;
        }
        let at = self.at();
        self.calls.answering(at, bytes.get(4).copied());
        let mut events = std::mem::take(&mut self.events);
        self.conv.server_bytes(bytes, &mut events);
        for e in events.drain(..) {
            self.event(e, at);
        }
        self.events = events;
        if self.calls.w.buf.len() >= BUFFER {
            self.write();
        }
    }

    fn client(&mut self, bytes: &[u8]) {
        if self.off {
            return;
        }
        let mut events = std::mem::take(&mut self.events);
        self.conv.client_bytes(bytes, &mut events);
        if events.is_empty() {
            // A packet's header read alone (the server reads the 4 bytes
            // first): nothing to time yet.
            self.events = events;
            return;
        }
        let at = self.at();
        for e in events.drain(..) {
            self.event(e, at);
        }
        self.events = events;
    }

    fn event(&mut self, e: Event, at: At) {
        match e {
            Event::Greeting { connection_id, .. } => self.connection_id = connection_id,
            Event::Login { user, database } => self.login(&user, &database),
            Event::Encrypted if crate::ssl_readable() => {
                // The login comes again inside TLS, read in the clear.
                self.tls = crate::Tls::Accepted;
            }
            Event::Encrypted | Event::Compressed => {
                self.off = true;
                crate::said::once(
                    crate::said::Once::Encrypted,
                    "a connection asked for compression, or for TLS where the server's TLS \
                     library is linked into it (MariaDB's own builds carry wolfSSL): its \
                     messages cannot be read, so it is not traced (nor is any such connection; \
                     this is said once per server): connect without them (the client's \
                     --skip-ssl, ssl-mode=DISABLED), or start the server with --skip-ssl",
                );
            }
            Event::Command(Command::Quit) => self.write(),
            Event::Command(c) if self.logged_in => self.calls.command(c, at),
            Event::Done(a) if self.logged_in => self.calls.done(a, at),
            _ => {}
        }
    }

    /// The client logged in as `user` on `database`: the trace begins,
    /// if `DIR/trace.conf` lets it.
    fn login(&mut self, user: &str, database: &str) {
        if self.logged_in {
            // COM_CHANGE_USER: the same connection, the same trace.
            let id = self.connection_id as i32;
            self.calls.w.session(id, database, user, "");
            return;
        }
        let Some(dir) = env("TRACELAB_SERVER_TRACE_DIR") else {
            self.off = true;
            return;
        };
        if !crate::wanted_by(&dir, database, user, "") {
            self.off = true;
            return;
        }
        let name = format!("tracelab_server_{}.trc", self.connection_id);
        self.out = crate::open_or_say(&format!("{dir}/{name}"));
        let started = crate::out::rfc3339(now_us() + self.offset);
        let w = &mut self.calls.w;
        w.header(
            &name,
            option_env!("CARGO_PKG_VERSION").unwrap_or("0"),
            "mariadb",
            &started,
        );
        w.session(self.connection_id as i32, database, user, "");
        self.logged_in = true;
    }

    /// `thd_wait_begin`: a wait of `ty` begins (an inner one nests in it).
    fn wait_begin(&mut self, ty: c_int) {
        self.depth += 1;
        if self.depth > 1 || self.off || !self.logged_in {
            return;
        }
        if self.calls.w.buf.len() >= BUFFER {
            self.write();
        }
        let now = clock_ns(CLOCK_MONOTONIC);
        self.wait = Some((ty, now / 1000, before_block(now)));
    }

    /// `thd_wait_end`: the wait begun last ends.
    fn wait_end(&mut self) {
        self.depth = self.depth.saturating_sub(1);
        if self.depth > 0 {
            return;
        }
        let Some((ty, start, carried)) = self.wait.take() else {
            return;
        };
        let end = after_block(carried) / 1000;
        let ela = (end - start).max(0);
        self.waits += ela;
        let cursor = self.calls.wait_cursor();
        self.calls.w.wait(
            cursor,
            wait_name(ty),
            ela,
            Params::Class { ty: ty as i64 },
            end + self.offset,
        );
    }

    /// A blocking file call outside the server's own waits: timed, and
    /// named by the call and the file. `io` is (offset, bytes) of a read or
    /// write.
    fn file_call<R>(
        &mut self,
        what: &'static str,
        fd: c_int,
        io: Option<(i64, i64)>,
        call: impl FnOnce() -> R,
    ) -> R {
        let (r, timed) = self.blocking(call);
        if let Some((ela, end, _errno)) = timed {
            let name = self.files.entry((what, fd)).or_insert_with(|| {
                let file = std::fs::read_link(format!("/proc/self/fd/{fd}"))
                    .ok()
                    .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
                    .unwrap_or_else(|| "?".into());
                format!("{what} {}", file_label(&file))
            });
            let params = match io {
                // InnoDB's pages are 16 KiB by default.
                Some((off, n)) => Params::Io {
                    file: fd as i64,
                    block: off / 16_384,
                    bytes: n,
                },
                None => Params::Flush { file: fd as i64 },
            };
            let cursor = self.calls.wait_cursor();
            self.calls
                .w
                .wait(cursor, name, ela, params, end + self.offset);
        }
        r
    }

    /// A wait for a lock the server does not announce (see `lock_wait`),
    /// outside the server's own waits: timed, named by `what` and the
    /// function at `caller`, its `address` the lock's.
    fn lock_call<R>(
        &mut self,
        what: &'static str,
        caller: usize,
        address: usize,
        call: impl FnOnce() -> R,
    ) -> R {
        let (r, timed) = self.blocking(call);
        if let Some((ela, end, _errno)) = timed {
            let what = crate::locks::named(what, caller);
            let cursor = self.calls.wait_cursor();
            let params = Params::Address {
                address: address as i64,
            };
            self.calls
                .w
                .wait(cursor, what, ela, params, end + self.offset);
        }
        r
    }

    /// Runs a call that may block and, unless the thread is inside one of
    /// the server's own waits (which times it) or its connection is not
    /// traced, times it: its elapsed µs and end on the monotonic clock,
    /// added to the session's waits, and the call's errno, put back when
    /// the caller is done with its line.
    fn blocking<R>(&mut self, call: impl FnOnce() -> R) -> (R, Option<(i64, i64, KeepErrno)>) {
        if self.depth > 0 || self.off || !self.logged_in {
            return (call(), None);
        }
        let now = clock_ns(CLOCK_MONOTONIC);
        let carried = before_block(now);
        let r = call();
        let errno = KeepErrno::now();
        let end = after_block(carried) / 1000;
        let ela = (end - now / 1000).max(0);
        self.waits += ela;
        (r, Some((ela, end, errno)))
    }

    fn write(&mut self) {
        self.calls.w.write_to(&mut self.out);
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.write();
    }
}

/// How a wait names the file it touched: by its name, but one name for
/// all temporary files (a sort's or a derived table's, which the server
/// makes and unlinks at once, so that the kernel links them as `#NUMBER
/// (deleted)`: a name each, which would split one kind of wait into as
/// many lines of a profile as there were files).
fn file_label(name: &str) -> &str {
    if name.ends_with(" (deleted)") {
        "(temporary file)"
    } else {
        name
    }
}

/// MariaDB's `thd_wait_type` (include/mysql/service_thd_wait.h).
const THD_WAIT_NET: c_int = 11;

/// A wait's name: `thd_wait:` and the name of its `thd_wait_type`.
pub fn wait_name(ty: c_int) -> &'static str {
    match ty {
        1 => "thd_wait:SLEEP",
        2 => "thd_wait:DISKIO",
        3 => "thd_wait:ROW_LOCK",
        4 => "thd_wait:GLOBAL_LOCK",
        5 => "thd_wait:META_DATA_LOCK",
        6 => "thd_wait:TABLE_LOCK",
        7 => "thd_wait:USER_LOCK",
        8 => "thd_wait:BINLOG",
        9 => "thd_wait:GROUP_COMMIT",
        10 => "thd_wait:SYNC",
        11 => "thd_wait:NET",
        _ => "thd_wait:OTHER",
    }
}

/// The calls of one connection, from its decoded commands and answers.
#[derive(Default)]
struct Calls {
    w: Lines,
    /// The commands received and not answered yet, oldest first: the one
    /// under way, and those a client sent ahead of its answers
    /// (pipelined), which the server takes in turn.
    calls: std::collections::VecDeque<Call>,
    /// When the last answer was complete.
    last_done: Option<At>,
    /// Cursors by statement text, and of prepared statements by id.
    texts: HashMap<String, u64>,
    stmts: HashMap<u32, u64>,
    /// What each cursor's statement does to its transaction.
    effects: HashMap<u64, Effect>,
    next_cursor: u64,
    last_cursor: u64,
    /// A statement since the last COMMIT or ROLLBACK may have changed
    /// something.
    wrote: bool,
    /// The text of the COM_STMT_PREPARE under way.
    pending_text: Option<String>,
}

struct Call {
    kind: Kind,
    cursor: u64,
    start: At,
    /// The first bytes of the answer were sent.
    answered: Option<At>,
    /// Its EXEC line is written (a result set began).
    exec_written: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Query,
    Prepare,
    Execute,
    /// COM_STMT_FETCH: the next rows of an execution's cursor.
    Fetch,
    Other,
}

impl Calls {
    fn cursor_for(&mut self, sql: &str) -> u64 {
        if let Some(&c) = self.texts.get(sql) {
            return c;
        }
        self.next_cursor += 1;
        let c = self.next_cursor;
        self.texts.insert(sql.to_string(), c);
        self.effects.insert(c, effect(sql));
        c
    }

    fn wait_cursor(&self) -> u64 {
        self.calls.front().map_or(self.last_cursor, |c| c.cursor)
    }

    /// The server sends the first bytes of the front command's answer,
    /// `first` the first byte of its first packet. A result set (a column
    /// count there, not an OK, an error or an end) ends the EXEC now: what
    /// the server does while it sends the rest (a wait for the client to
    /// take a large result, a procedure's next statements) goes to the
    /// FETCH, its WAIT lines after the EXEC line, as Oracle writes a
    /// fetch's waits.
    fn answering(&mut self, at: At, first: Option<u8>) {
        let last_done = self.last_done;
        let Some(c) = self.calls.front_mut() else {
            return;
        };
        if c.answered.is_some() {
            return;
        }
        c.answered = Some(at);
        // A command sent ahead of its turn starts when the server is done
        // with the one before.
        if let Some(d) = last_done.filter(|d| d.tim > c.start.tim) {
            c.start = d;
        }
        let result_set = matches!(first, Some(1..=0xfa | 0xfc | 0xfd));
        if result_set && matches!(c.kind, Kind::Query | Kind::Execute) {
            c.exec_written = true;
            let (cursor, start) = (c.cursor, c.start);
            self.w.call("EXEC", cursor, times(start, at, 0));
        }
    }

    fn command(&mut self, c: Command, at: At) {
        let (kind, cursor) = match c {
            Command::Query(sql) => {
                let sql = String::from_utf8_lossy(&sql).into_owned();
                let cursor = self.cursor_for(&sql);
                self.w.parse(cursor, &sql, oct(&sql), times(at, at, 0));
                (Kind::Query, cursor)
            }
            Command::Prepare(sql) => {
                let sql = String::from_utf8_lossy(&sql).into_owned();
                let cursor = self.cursor_for(&sql);
                self.pending_text = Some(sql);
                (Kind::Prepare, cursor)
            }
            Command::Execute { stmt_id } => (
                Kind::Execute,
                self.stmts.get(&stmt_id).copied().unwrap_or(0),
            ),
            Command::Close { stmt_id } => {
                self.stmts.remove(&stmt_id);
                return;
            }
            // Answered by nothing.
            Command::SendLongData { .. } => return,
            Command::Fetch { stmt_id, .. } => {
                (Kind::Fetch, self.stmts.get(&stmt_id).copied().unwrap_or(0))
            }
            _ => (Kind::Other, self.last_cursor),
        };
        self.calls.push_back(Call {
            kind,
            cursor,
            start: at,
            answered: None,
            exec_written: false,
        });
    }

    fn done(&mut self, a: Answer, at: At) {
        let Some(mut call) = self.calls.pop_front() else {
            return;
        };
        // A command sent ahead of its turn starts when the server is done
        // with the one before.
        if let Some(d) = self.last_done.filter(|d| d.tim > call.start.tim) {
            call.start = d;
        }
        self.last_done = Some(at);
        let cursor = call.cursor;
        self.last_cursor = cursor;
        let effect = self
            .effects
            .get(&cursor)
            .copied()
            .unwrap_or(Effect::ReadOnly);
        match (call.kind, a) {
            (Kind::Prepare, Answer::Prepared { statement_id, .. }) => {
                self.stmts.insert(statement_id, cursor);
                let sql = self.pending_text.take().unwrap_or_default();
                self.w
                    .parse(cursor, &sql, oct(&sql), times(call.start, at, 0));
            }
            (Kind::Prepare, Answer::Error { code, .. }) => {
                let sql = self.pending_text.take().unwrap_or_default();
                self.w
                    .parse(cursor, &sql, oct(&sql), times(call.start, at, 0));
                self.w.error(cursor, &code.to_string(), at.tim);
            }
            (Kind::Query | Kind::Execute, Answer::Rows { rows }) => {
                // The server buffers an answer until it is complete or its
                // buffer is full: the EXEC ended where the first bytes of it
                // went (see `answering`), the FETCH holds the rest.
                let first = call.answered.unwrap_or(at);
                if !call.exec_written {
                    self.w.call("EXEC", cursor, times(call.start, first, 0));
                }
                self.w.call("FETCH", cursor, times(first, at, rows as i64));
            }
            (Kind::Query | Kind::Execute, Answer::Ok { affected_rows }) => {
                match effect {
                    Effect::Commit | Effect::Rollback => {
                        // XCTEND comes before the COMMIT's EXEC, as Oracle
                        // writes it.
                        self.w
                            .xctend(effect == Effect::Rollback, !self.wrote, at.tim);
                        self.wrote = false;
                    }
                    Effect::Writes => self.wrote = true,
                    Effect::ReadOnly => {}
                }
                self.w
                    .call("EXEC", cursor, times(call.start, at, affected_rows as i64));
            }
            (Kind::Fetch, Answer::Rows { rows }) => {
                self.w
                    .call("FETCH", cursor, times(call.start, at, rows as i64));
            }
            (Kind::Query | Kind::Execute, Answer::Error { code, .. }) => {
                self.w.call("EXEC", cursor, times(call.start, at, 0));
                self.w.error(cursor, &code.to_string(), at.tim);
            }
            _ => {}
        }
    }
}

/// What a statement does to its transaction, from its first word, for
/// XCTEND and its read-only flag: read once per cursor, not per call.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Effect {
    Commit,
    Rollback,
    ReadOnly,
    Writes,
}

fn effect(sql: &str) -> Effect {
    let word = sql
        .trim_start()
        .split(|c: char| !c.is_ascii_alphabetic())
        .next()
        .unwrap_or("")
        .to_ascii_uppercase();
    match word.as_str() {
        "COMMIT" => Effect::Commit,
        "ROLLBACK" => Effect::Rollback,
        "SELECT" | "SHOW" | "SET" | "BEGIN" | "START" | "USE" | "DESCRIBE" | "DESC" | "EXPLAIN"
        | "DO" | "HELP" | "" => Effect::ReadOnly,
        _ => Effect::Writes,
    }
}

/// Oracle's command type of a statement (3 for a query).
fn oct(sql: &str) -> u32 {
    crate::message::oct(sql)
}

/// Bytes recv(2) returned on `fd` to this thread: the client's.
pub fn received(fd: c_int, bytes: &[u8]) {
    received_via(crate::Via::Socket(fd), bytes);
}

/// The client's bytes, from the socket or, with TLS, `SSL_read`.
pub fn received_via(via: crate::Via, bytes: &[u8]) {
    with_conn(|c| {
        if crate::follows(&mut c.tls, c.fd, via) {
            c.client(bytes)
        }
    });
}

/// Bytes send(2) took on `fd` from this thread: the server's. A server
/// greeting on a stream socket begins a connection's trace (and ends the
/// one this thread traced before, if its close was not seen).
pub fn sent(fd: c_int, bytes: &[u8]) {
    sent_via(crate::Via::Socket(fd), bytes);
}

/// The server's bytes, to the socket or, with TLS, `SSL_write`.
pub fn sent_via(via: crate::Via, bytes: &[u8]) {
    inside(|| {
        if let Some(c) = held() {
            let fd = c.fd;
            if crate::follows(&mut c.tls, fd, via) {
                c.server(bytes);
                return;
            }
            if matches!(via, crate::Via::Socket(s) if s == fd) {
                // Its own socket's bytes, ciphertext once TLS began.
                return;
            }
        }
        let crate::Via::Socket(fd) = via else { return };
        if is_greeting(bytes) && crate::stream_socket(fd) {
            install_hooks();
            let mut c = Box::new(Conn::new(fd));
            c.server(bytes);
            begin(c);
        }
    });
}

/// The server's first packet: sequence 0, protocol version 10.
fn is_greeting(b: &[u8]) -> bool {
    b.len() > 8
        && b[3] == 0
        && b[4] == 10
        && u32::from_le_bytes([b[0], b[1], b[2], 0]) as usize >= 4
}

/// close(2) of `fd` by this thread: the connection's trace ends with its
/// socket.
pub fn closing(fd: c_int) {
    inside(|| {
        if let Some(c) = held() {
            if c.fd != fd {
                c.files.retain(|&(_, f), _| f != fd);
            } else if !pool::on() {
                let p = CONN.with(|c| c.replace(std::ptr::null_mut()));
                // SAFETY: the box this thread leaked (default scheduler).
                drop(unsafe { Box::from_raw(p) });
                return;
            }
        }
        if pool::on() {
            pool::release(fd);
        }
    });
}

/// `epoll_ctl(2)` with `op` of socket `fd` and `ev`, before the call: the
/// thread pool hands a connection's socket to its poll (`EPOLL_CTL_ADD`
/// after the login, `EPOLL_CTL_MOD` after each request); see `pool`.
pub fn arming(op: c_int, fd: c_int, ev: *const crate::flush_timer::EpollEvent) {
    const EPOLL_CTL_ADD: c_int = 1;
    const EPOLL_CTL_MOD: c_int = 3;
    if !pool::on() || !matches!(op, EPOLL_CTL_ADD | EPOLL_CTL_MOD) || ev.is_null() {
        return;
    }
    inside(|| {
        if let Some(c) = held() {
            pool::arming(c, fd, ev);
        }
    });
}

/// Before `epoll_wait(2)`: a pool's thread that waits for its poll
/// serves no connection (see `pool::refresh`).
pub fn polling() {
    if pool::on() {
        inside(|| {
            held();
        });
    }
}

/// `epoll_wait(2)` returned `n` events at `ev` (see `pool::polled`).
///
/// # Safety
/// `ev` holds `n` events.
pub unsafe fn polled(ev: *const crate::flush_timer::EpollEvent, n: c_int) {
    if pool::on() && n > 0 {
        // SAFETY: as the caller's.
        inside(|| unsafe { pool::polled(ev, n) });
    }
}

/// A blocking file call `what` of this thread on `fd` (`io`: offset and
/// bytes of a read or write), timed if the thread traces a connection
/// and is not inside one of the server's own waits.
#[inline]
pub fn file_call<R>(
    what: &'static str,
    fd: c_int,
    io: Option<(i64, i64)>,
    call: impl FnOnce() -> R,
) -> R {
    on_conn(call, |c, call| c.file_call(what, fd, io, call))
}

/// A wait of this thread for a lock or a condition the server does not
/// announce with `thd_wait_begin` (see `locks`): `what` is the call,
/// `caller` the address it was called from (0: unknown), `address` the
/// lock's. Timed like `file_call`.
#[inline]
pub fn lock_wait<R>(
    what: &'static str,
    caller: usize,
    address: usize,
    call: impl FnOnce() -> R,
) -> R {
    on_conn(call, |c, call| c.lock_call(what, caller, address, call))
}

/// `traced(conn, call)` on this thread's traced connection, or `call()`
/// alone where there is none or the thread is inside the library.
#[inline]
fn on_conn<R, F: FnOnce() -> R>(call: F, traced: impl FnOnce(&mut Conn, F) -> R) -> R {
    if !tracing_thread() || INSIDE.with(|i| i.replace(true)) {
        return call();
    }
    let Some(c) = held() else {
        INSIDE.with(|i| i.set(false));
        return call();
    };
    let r = traced(c, call);
    INSIDE.with(|i| i.set(false));
    r
}

/// Whether this thread may serve a traced connection: the cheap test
/// before a lock is tried (see `pthread_mutex_lock`). Under the thread
/// pool any thread may, by its current THD (see `pool`).
#[inline]
pub fn tracing_thread() -> bool {
    pool::on() || !CONN.with(|c| c.get()).is_null()
}

/// 0: not tried yet; 1: done (or not possible).
static HOOKED: AtomicU8 = AtomicU8::new(0);
/// The thread pool's own `thd_wait_begin` and `thd_wait_end` (0: none,
/// the default scheduler), which the library's call after timing.
static POOL_BEGIN: AtomicUsize = AtomicUsize::new(0);
static POOL_END: AtomicUsize = AtomicUsize::new(0);

/// Where `thd_wait_begin`'s first instructions find the scheduler's
/// function pointer: the offset of `THD::scheduler` in the THD and of the
/// pointer in `scheduler_functions`, from x86-64 code that does, in this
/// order, `mov rax,[rdi+S]`, `mov rax,[rax+F]` and `jmp rax` (the tail
/// call through the pointer), with nothing between them but the few
/// instructions compilers put there: a frame's set-up and tear-down
/// (`endbr64`, `push rbp`, `mov rbp,rsp`, `sub rsp,N`, `leave`, `pop
/// rbp`), the null checks (`test rdi,rdi`, `test rax,rax`, and their
/// forward `je`s, not followed). MariaDB 10.11.19 as Debian 12 builds it
/// has no frame (`test rdi,rdi; je; mov rax,[rdi+0x580]; ...`); 11.4.5
/// as MariaDB's own release builds it has one (`push rbp; mov rbp,rsp;
/// sub rsp,0x10; ...`, the THD's scheduler at 0x578, and in
/// `thd_wait_end` the `test rdi,rdi` before the `mov rbp,rsp`). A hand
/// decoder of those few forms, as no crate decodes x86 without pulling
/// a disassembler into the server. Any other instruction: `None`, and
/// no hook.
fn offsets(code: *const u8) -> Option<(usize, usize)> {
    if code.is_null() || !cfg!(target_arch = "x86_64") {
        return None;
    }
    // SAFETY: the first bytes of an exported function's code (the
    // decoder stops at the tail jump, well inside the function).
    let b = unsafe { std::slice::from_raw_parts(code, CODE_READ) };
    tail_call_offsets(b)
}

/// How many bytes of a function `offsets` decodes at most.
const CODE_READ: usize = 64;

/// `offsets` on the code's bytes.
fn tail_call_offsets(b: &[u8]) -> Option<(usize, usize)> {
    let disp32 = |at: usize| -> Option<i32> {
        Some(i32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
    };
    let (mut sched, mut field) = (None, None);
    let mut i = 0;
    while i < b.len() {
        let rest = &b[i..];
        let len = match rest {
            [0xf3, 0x0f, 0x1e, 0xfa, ..] => 4,                    // endbr64
            [0x55, ..] | [0xc9, ..] | [0x5d, ..] => 1,            // push rbp, leave, pop rbp
            [0x48, 0x89, 0xe5, ..] => 3,                          // mov rbp,rsp
            [0x48, 0x83, 0xec, _, ..] => 4,                       // sub rsp,imm8
            [0x48, 0x85, 0xff, ..] | [0x48, 0x85, 0xc0, ..] => 3, // test rdi,rdi; test rax,rax
            [0x74, _, ..] => 2,                                   // je rel8
            [0x0f, 0x84, _, _, _, _, ..] => 6,                    // je rel32
            [0x48, 0x8b, 0x87, ..] if sched.is_none() => {
                sched = Some(disp32(i + 3)?);
                7
            }
            [0x48, 0x8b, 0x40, d, ..] if sched.is_some() && field.is_none() => {
                field = Some(*d as i8 as i32);
                4
            }
            [0x48, 0x8b, 0x80, ..] if sched.is_some() && field.is_none() => {
                field = Some(disp32(i + 3)?);
                7
            }
            [0xff, 0xe0, ..] => {
                let (s, f) = (sched?, field?);
                return (s > 0 && f >= 0).then_some((s as usize, f as usize));
            }
            _ => return None,
        };
        i += len;
    }
    None
}

/// Points the scheduler's `thd_wait_begin`/`thd_wait_end` at the
/// library's, once, from the first traced connection's thread (whose THD
/// leads to the scheduler all connections share); the thread pool's own,
/// where they are set already, are kept to be called in turn.
fn install_hooks() {
    if HOOKED.swap(1, Relaxed) == 1 {
        return;
    }
    let unknown = "the server's thd_wait_begin and thd_wait_end are not code this library \
                   knows: the waits the server announces (row locks, the group commit, the \
                   client) are not traced; the calls and the file, lock and condition waits are";
    let (Some((s, fb)), Some((s2, fe))) = (
        offsets(sym(c"thd_wait_begin")),
        offsets(sym(c"thd_wait_end")),
    ) else {
        crate::say(unknown);
        return;
    };
    if s != s2 {
        crate::say(unknown);
        return;
    }
    let current = sym(c"_current_thd");
    // SAFETY: `_current_thd` is the server's `THD *_current_thd(void)`.
    let thd =
        unsafe { std::mem::transmute::<*mut u8, unsafe extern "C" fn() -> *mut u8>(current)() };
    if thd.is_null() {
        // Not yet: the next connection tries again.
        HOOKED.store(0, Relaxed);
        return;
    }
    // SAFETY: the THD's scheduler pointer at the offset its own code
    // reads, and the two function pointers in the scheduler's table.
    unsafe {
        let sched = *(thd.add(s) as *const *mut u8);
        if sched.is_null() {
            return;
        }
        let pb = sched.add(fb) as *mut usize;
        let pe = sched.add(fe) as *mut usize;
        // The pool's functions are kept before the pointers change, so
        // that a thread that calls the library's already finds them.
        POOL_BEGIN.store(*pb, Relaxed);
        POOL_END.store(*pe, Relaxed);
        if *pb != 0 || *pe != 0 {
            pool::found();
        }
        *pb = wait_begin as *const () as usize;
        *pe = wait_end as *const () as usize;
    }
}

/// The scheduler's `thd_wait_begin(THD *, int)`: the wait is timed from
/// here, the thread pool's own (which may wake another of its threads
/// to serve other connections meanwhile) inside it.
extern "C" fn wait_begin(thd: *mut c_void, ty: c_int) {
    with_conn(|c| c.wait_begin(ty));
    let f = POOL_BEGIN.load(Relaxed);
    if f != 0 {
        // SAFETY: the pool's `void (*)(THD *, int)` from the scheduler's
        // table, with the arguments the server gave.
        unsafe { std::mem::transmute::<usize, extern "C" fn(*mut c_void, c_int)>(f)(thd, ty) };
    }
}

/// The scheduler's `thd_wait_end(THD *)`.
extern "C" fn wait_end(thd: *mut c_void) {
    let f = POOL_END.load(Relaxed);
    if f != 0 {
        // SAFETY: as in `wait_begin`, `void (*)(THD *)`.
        unsafe { std::mem::transmute::<usize, extern "C" fn(*mut c_void)>(f)(thd) };
    }
    with_conn(|c| c.wait_end());
}

/// The wait for the client's next packet is a poll(2) of its socket
/// inside `thd_wait_begin(THD_WAIT_NET)`: when lines are buffered, the
/// poll is cut at `FLUSH_MS`, the lines are written, and the poll goes
/// on for the rest of its timeout. So a session that goes idle has its
/// lines on disk within `FLUSH_MS` (as PostgreSQL's sessions have, see
/// `flush_timer`), and a busy one writes only once `BUFFER` is full.
///
/// # Safety
/// As libc's `poll`; `f` is libc's.
pub unsafe fn poll(
    f: unsafe extern "C" fn(*mut c_void, u64, c_int) -> c_int,
    fds: *mut c_void,
    n: u64,
    timeout: c_int,
) -> c_int {
    let idle = with_conn(|c| {
        c.wait.is_some_and(|(ty, _, _)| ty == THD_WAIT_NET) && !c.calls.w.buf.is_empty()
    });
    if idle != Some(true) || (0..=FLUSH_MS).contains(&timeout) {
        return f(fds, n, timeout);
    }
    let r = f(fds, n, FLUSH_MS);
    if r != 0 {
        return r;
    }
    with_conn(|c| c.write());
    let left = if timeout < 0 {
        timeout
    } else {
        timeout - FLUSH_MS
    };
    f(fds, n, left)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mysql_stream::Sql;

    fn at(tim: i64, cpu: i64) -> At {
        At { tim, cpu, waits: 0 }
    }

    fn sql(s: &str) -> Sql {
        Sql {
            text: s.as_bytes().to_vec(),
            truncated: false,
        }
    }

    fn text(c: &Calls) -> String {
        String::from_utf8(c.w.buf.clone()).unwrap()
    }

    /// The first instructions of `thd_wait_begin` and `thd_wait_end` in
    /// MariaDB 10.11.19 (Debian 12's mariadbd) and 11.4.5 (MariaDB's own
    /// release build, with frame pointers), as gdb's `x/48xb` prints
    /// them: the THD's scheduler at 0x580 and 0x578, its two hooks at
    /// 0x28 and 0x30.
    #[test]
    fn the_hooks_offsets_are_read_from_the_servers_code() {
        let debian_10_11_begin: &[u8] = &[
            0x48, 0x85, 0xff, 0x74, 0x23, 0x48, 0x8b, 0x87, 0x80, 0x05, 0x00, 0x00, 0x48, 0x85,
            0xc0, 0x74, 0x0f, 0x48, 0x8b, 0x40, 0x28, 0x48, 0x85, 0xc0, 0x74, 0x06, 0xff, 0xe0,
            0x0f, 0x1f, 0x40, 0x00, 0xc3,
        ];
        assert_eq!(tail_call_offsets(debian_10_11_begin), Some((0x580, 0x28)));
        let mut end = debian_10_11_begin.to_vec();
        end[20] = 0x30;
        assert_eq!(tail_call_offsets(&end), Some((0x580, 0x30)));
        let release_11_4_begin: &[u8] = &[
            0x55, 0x48, 0x89, 0xe5, 0x48, 0x83, 0xec, 0x10, 0x48, 0x85, 0xff, 0x74, 0x1b, 0x48,
            0x8b, 0x87, 0x78, 0x05, 0x00, 0x00, 0x48, 0x85, 0xc0, 0x74, 0x27, 0x48, 0x8b, 0x40,
            0x28, 0x48, 0x85, 0xc0, 0x74, 0x1e, 0xc9, 0xff, 0xe0, 0x0f, 0x1f, 0x00, 0x89, 0x75,
        ];
        assert_eq!(tail_call_offsets(release_11_4_begin), Some((0x578, 0x28)));
        let release_11_4_end: &[u8] = &[
            0x55, 0x48, 0x85, 0xff, 0x48, 0x89, 0xe5, 0x74, 0x1f, 0x48, 0x8b, 0x87, 0x78, 0x05,
            0x00, 0x00, 0x48, 0x85, 0xc0, 0x74, 0x23, 0x48, 0x8b, 0x40, 0x30, 0x48, 0x85, 0xc0,
            0x74, 0x1a, 0x5d, 0xff, 0xe0, 0x0f, 0x1f, 0x80,
        ];
        assert_eq!(tail_call_offsets(release_11_4_end), Some((0x578, 0x30)));
        // Another compiler's code: no hook rather than a wrong one.
        let mut other = debian_10_11_begin.to_vec();
        other[5] = 0x49; // mov rax,[r15+...]
        assert_eq!(tail_call_offsets(&other), None);
        // The pointer loaded but not jumped through (a call and more
        // work after it): not this shape.
        let mut called = debian_10_11_begin.to_vec();
        called[26..28].copy_from_slice(&[0xff, 0xd0]);
        assert_eq!(tail_call_offsets(&called), None);
        // Cut short, or the field before the scheduler: nothing.
        assert_eq!(tail_call_offsets(&debian_10_11_begin[..20]), None);
        assert_eq!(
            tail_call_offsets(&[0x48, 0x8b, 0x40, 0x28, 0xff, 0xe0]),
            None
        );
        assert_eq!(offsets(std::ptr::null()), None);
    }

    /// Temporary files, unlinked as soon as made, are one name in the
    /// waits; other files keep theirs.
    #[test]
    fn temporary_files_are_one_name() {
        assert_eq!(file_label("#10544531 (deleted)"), "(temporary file)");
        assert_eq!(file_label("ib_logfile0"), "ib_logfile0");
    }

    /// A prepared statement: its PARSE when the server answered the
    /// prepare, each execution an EXEC until the answer's first bytes and
    /// a FETCH of its rows; an error an EXEC and an ERROR with MariaDB's
    /// error number.
    #[test]
    fn prepared_statements_are_parse_exec_fetch_and_errors_are_error_lines() {
        let mut c = Calls::default();
        c.command(
            Command::Prepare(sql("select v from t where id = ?")),
            at(1000, 10),
        );
        c.done(
            Answer::Prepared {
                statement_id: 7,
                params: 1,
                columns: 1,
            },
            at(1100, 60),
        );
        c.command(Command::Execute { stmt_id: 7 }, at(2000, 100));
        // A result set's first bytes (a column count of 1), then a wait
        // while the rest goes out: the EXEC line before the wait's.
        c.answering(at(2300, 250), Some(1));
        let cursor = c.wait_cursor();
        c.w.wait(
            cursor,
            wait_name(THD_WAIT_NET),
            40,
            Params::Class { ty: 11 },
            2350,
        );
        c.done(Answer::Rows { rows: 3 }, at(2400, 300));
        c.command(Command::Execute { stmt_id: 7 }, at(3000, 400));
        c.done(
            Answer::Error {
                code: 1205,
                sqlstate: "HY000".into(),
                message: "Lock wait timeout exceeded".into(),
            },
            at(3500, 420),
        );
        let t = text(&c);
        assert!(
            t.contains("PARSING IN CURSOR #1 len=28 dep=0 uid=0 oct=3"),
            "{t}"
        );
        assert!(
            t.contains("\nselect v from t where id = ?\nEND OF STMT\n"),
            "{t}"
        );
        assert!(t.contains("PARSE #1:c=50,e=100,p=0"), "{t}");
        assert!(
            t.contains(
                "EXEC #1:c=150,e=300,p=0,cr=0,cu=0,mis=0,r=0,dep=0,og=1,plh=0,tim=2300\n\
                 WAIT #1: nam='thd_wait:NET' ela= 40 type=11 p2=0 p3=0 obj#=-1 tim=2350\n\
                 FETCH #1:c=50,e=100,p=0,cr=0,cu=0,mis=0,r=3,dep=0,og=1,plh=0,tim=2400\n"
            ),
            "{t}"
        );
        assert!(t.contains("EXEC #1:c=20,e=500,"), "{t}");
        assert!(t.contains("ERROR #1:err=1205 tim=3500\n"), "{t}");
    }

    /// Commands a client sent ahead of its answers start when the server
    /// is done with the one before; a COMMIT after a change is an XCTEND
    /// before its EXEC, one after reads only is read-only.
    #[test]
    fn pipelined_commands_start_in_turn_and_commits_end_transactions() {
        let mut c = Calls::default();
        c.command(Command::Query(sql("update t set v = 1")), at(1000, 0));
        c.command(Command::Query(sql("commit")), at(1001, 0));
        c.done(Answer::Ok { affected_rows: 1 }, at(1500, 100));
        c.done(Answer::Ok { affected_rows: 0 }, at(1900, 150));
        c.command(Command::Query(sql("select 1")), at(5000, 200));
        c.done(Answer::Rows { rows: 1 }, at(5100, 250));
        c.command(Command::Query(sql("COMMIT")), at(6000, 300));
        c.done(Answer::Ok { affected_rows: 0 }, at(6050, 310));
        let t = text(&c);
        assert!(
            t.contains("EXEC #1:c=100,e=500,p=0,cr=0,cu=0,mis=0,r=1,"),
            "{t}"
        );
        // The commit waited for the update: its EXEC starts at 1500.
        assert!(
            t.contains("XCTEND rlbk=0, rd_only=0, tim=1900\nEXEC #2:c=50,e=400,"),
            "{t}"
        );
        assert!(t.contains("XCTEND rlbk=0, rd_only=1, tim=6050\n"), "{t}");
    }
}
