//! tracelab's server tracer, `libtracelab_servertrace.so`: set as
//! `LD_PRELOAD` of a PostgreSQL server (14 to 18) with
//! `TRACELAB_SERVER_TRACE_DIR=DIR` in its environment, it writes one
//! 10046-format trace per client backend, `DIR/tracelab_server_PID.trc`,
//! from inside the backend:
//!
//! - the calls (PARSE, EXEC, FETCH, CLOSE, XCTEND, ERROR) from the protocol
//!   messages the backend receives (recv(2) on its client socket, or
//!   OpenSSL's SSL_read on a connection that took SSL) and sends (send(2),
//!   or SSL_write), derived as the proxy derives them, so that the
//!   statement ids and the call order are those of the client's and the
//!   proxy's traces (`session.rs`); `c` is the backend's CPU clock over
//!   the call;
//! - every wait: the blocking libc calls a backend makes (epoll_wait for
//!   latches, locks and the client; sem_wait for LWLocks; pread/pwrite on
//!   data and WAL files; fsync/fdatasync; select for spin delays) are
//!   timed on the monotonic clock, and named with the wait event the
//!   backend had set (`IO:WALSync`, `Lock:transactionid`,
//!   `Client:ClientRead`, ...), read through the symbols the server
//!   exports: `my_wait_event_info`, `pgstat_get_wait_event_type`,
//!   `pgstat_get_wait_event`. A call made with no wait event set does not
//!   block (a non-blocking socket read) and is not a wait.
//!
//! A MariaDB server (`mariadbd`: it exports `thd_wait_begin` and
//! `_current_thd`) with the directory set is traced per connection thread
//! instead, by `mariadb.rs` (its waits named with MariaDB's own
//! `thd_wait_type`), and the wrapped calls below go there first.
//!
//! Processes without those symbols (anything but PostgreSQL), without the
//! directory in their environment, and the server's own processes
//! (checkpointer, WAL writer, ...) pass every call straight through: only a
//! process whose first read from a stream socket is a client's startup
//! packet is traced. `DIR/trace.conf`, when present, says which new
//! connections are traced (see docs/server-trace.md).
//!
//! Built by the workspace, never at run time: cargo builds this crate as
//! `libtracelab_servertrace.so` (for servers of your own), and the
//! tracelab crate's build script compiles this same file with rustc and
//! embeds the result, so that the tracelab binary carries it (`db start
//! --server-trace`, `run --server-trace` write it out). That second build
//! is why the library has no dependencies: the libc items it needs are
//! declared below, MD5 is written out (`md5.rs`), and the protocol decoder,
//! the password redaction and the CPU clock are the proxy's, the trace
//! crate's and the threadclock crate's own files, which use nothing but
//! std.

use std::cell::UnsafeCell;
use std::ffi::{c_char, c_int, c_long, c_uint, c_void, CStr};

use names::WaitNames;
use std::sync::atomic::{
    compiler_fence, AtomicBool, AtomicUsize,
    Ordering::{Acquire, Relaxed, Release, SeqCst},
};

/// The CPU clock, shared with the client trace (`run --trace`).
#[path = "../../threadclock/src/lib.rs"]
#[allow(dead_code)]
mod cpu;
mod executor;
mod flush_timer;
mod mariadb;
mod md5;
#[path = "../../proxy/src/message.rs"]
#[allow(dead_code)]
mod message;
mod mysql_stream;
mod names;
mod out;
mod pending;
mod said;
#[path = "../../trace/src/secrets.rs"]
#[allow(dead_code)]
mod secrets;
mod session;
mod stream;
mod symtab;

pub use md5::sqlid;

#[allow(non_camel_case_types)]
type ssize_t = isize;
#[allow(non_camel_case_types)]
type off_t = i64;

#[repr(C)]
struct Timespec {
    tv_sec: c_long,
    tv_nsec: c_long,
}

extern "C" {
    fn getenv(name: *const c_char) -> *const c_char;
    fn __errno_location() -> *mut c_int;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn dlvsym(handle: *mut c_void, name: *const c_char, version: *const c_char) -> *mut c_void;
    fn clock_gettime(clk: c_int, ts: *mut Timespec) -> c_int;
    fn getsockopt(fd: c_int, level: c_int, name: c_int, val: *mut c_void, len: *mut u32) -> c_int;
    fn getpid() -> c_int;
    fn atexit(f: extern "C" fn()) -> c_int;
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> c_int;
}

/// glibc's RTLD_NEXT and RTLD_DEFAULT.
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;
const RTLD_DEFAULT: *mut c_void = std::ptr::null_mut();
const CLOCK_REALTIME: c_int = 0;
const CLOCK_MONOTONIC: c_int = 1;
const SOL_SOCKET: c_int = 1;
const SO_TYPE: c_int = 3;
const SOCK_STREAM: c_int = 1;

fn clock_us(clk: c_int) -> i64 {
    clock_ns(clk) / 1000
}

fn clock_ns(clk: c_int) -> i64 {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec.
    unsafe { clock_gettime(clk, &mut ts) };
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// One line on the server's standard error (its log: MariaDB's error
/// log, PostgreSQL's stderr log), for what a DBA must know of the tracer
/// and would not see in the traces: why there are none, or fewer waits.
fn say(what: &str) {
    let line = format!("tracelab server trace: {what}\n");
    extern "C" {
        fn write(fd: c_int, buf: *const c_void, n: usize) -> ssize_t;
    }
    let _errno = KeepErrno::now();
    // SAFETY: a valid buffer of its length; a failed write is no matter.
    unsafe { write(2, line.as_ptr() as *const c_void, line.len()) };
}

/// A new trace file at `path` (mode 0600), or `None` after a line in the
/// server's log that says why: a directory the server's user cannot
/// write would otherwise leave a DBA with no trace and no word.
fn open_or_say(path: &str) -> Option<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
    {
        Ok(f) => Some(f),
        Err(e) => {
            say(&format!(
                "cannot write {path} ({e}): this session is not traced"
            ));
            None
        }
    }
}

/// errno as a wrapped call left it, put back when dropped: the library's
/// own work after the call (a trace write that fails on a full disk, a
/// readlink) must not change what the server reads of the call's
/// failure. PostgreSQL reads EAGAIN after a recv on its non-blocking
/// socket and EINTR after an epoll_wait; a write's ENOSPC in their place
/// would end the session.
struct KeepErrno(c_int);

impl KeepErrno {
    #[inline]
    fn now() -> KeepErrno {
        // SAFETY: glibc's errno of this thread.
        KeepErrno(unsafe { *__errno_location() })
    }
}

impl Drop for KeepErrno {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: as in `now`.
        unsafe { *__errno_location() = self.0 };
    }
}

/// The next definition of `name` (libc's), at `version` if given, cached
/// in `slot`.
///
/// # Safety
/// `name` must name a function of type `F`.
unsafe fn next<F: Copy>(slot: &AtomicUsize, name: &CStr, version: Option<&CStr>) -> F {
    let mut p = slot.load(Relaxed);
    if p == 0 {
        if let Some(v) = version {
            p = dlvsym(RTLD_NEXT, name.as_ptr(), v.as_ptr()) as usize;
        }
        if p == 0 {
            p = dlsym(RTLD_NEXT, name.as_ptr()) as usize;
        }
        if p == 0 {
            // No libc definition: nothing sensible can be done.
            std::process::abort();
        }
        slot.store(p, Relaxed);
    }
    // SAFETY: a non-null address dlsym returned for this name, which the
    // caller vouches has type F (a function pointer, the size of usize).
    std::mem::transmute_copy::<usize, F>(&p)
}

/// Per process: the server's symbols, whether tracing is asked for, and
/// the session being traced. A backend is one thread; the library's state
/// is touched by the thread that began the session only (others pass
/// through; a process the backend forks stops tracing, see `forked`), and
/// `enter` keeps the library's own calls from re-entering it.
struct Proc {
    looked: bool,
    dir: Option<String>,
    phase: Phase,
    names: WaitNames,
    /// An id of the file behind each descriptor (see `file_id`), +1; 0 is
    /// not known yet.
    files: Vec<i64>,
}

enum Phase {
    /// No startup packet seen yet.
    Undecided,
    /// Not traced (not a client backend, switched off, or encrypted).
    Off,
    Tracing(Box<Traced>),
}

struct Traced {
    fd: c_int,
    /// The thread that traces (see `thread`; gettid, a system call, cost
    /// ~6 system calls per query when read at every wrapped call).
    thread: usize,
    stream: stream::Streams,
    tracer: session::Tracer,
    out: Option<std::fs::File>,
    /// `tim` = monotonic µs + this (the wall clock at the start).
    offset: i64,
    /// The elapsed time of the waits so far, µs: a call's `c` is bounded
    /// by its `e` less the waits inside it (see `session::times`).
    waits: i64,
    cpu: cpu::ThreadClock,
    /// What the session did since its lines were last made (see
    /// `pending`).
    pending: pending::Pending,
    /// The connection took SSL (see `Tls`).
    tls: Tls,
}

/// Whether the client's bytes are read from the socket or, once the
/// connection took SSL, from OpenSSL's `SSL_read` and `SSL_write` (the
/// socket's bytes are then ciphertext, and are left alone).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tls {
    Off,
    /// SSL accepted; the client's `SSL *` not yet seen: it is the one of
    /// the first `SSL_read` (the startup packet), before the backend can
    /// open another SSL connection of its own (postgres_fdw's, dblink's).
    Accepted,
    /// The client's connection, by its `SSL *`.
    On(usize),
}

/// Where bytes the backend read or wrote came from.
#[derive(Clone, Copy)]
pub(crate) enum Via {
    Socket(c_int),
    /// OpenSSL, with the connection's `SSL *`.
    Ssl(usize),
}

impl Traced {
    /// Whether bytes that came `via` are the client's conversation.
    fn conversation(&mut self, via: Via) -> bool {
        follows(&mut self.tls, self.fd, via)
    }
}

/// Whether bytes that came `via` belong to the conversation on socket
/// `fd` whose TLS state is `tls` (the first `SSL *` read from after TLS
/// was accepted becomes the conversation's).
pub(crate) fn follows(tls: &mut Tls, fd: c_int, via: Via) -> bool {
    match (via, *tls) {
        (Via::Socket(s), Tls::Off) => s == fd,
        (Via::Ssl(ssl), Tls::Accepted) => {
            *tls = Tls::On(ssl);
            true
        }
        (Via::Ssl(ssl), Tls::On(ours)) => ssl == ours,
        _ => false,
    }
}

/// Whether the server's TLS goes through a shared libssl, whose
/// `SSL_read` and `SSL_write` the library stands in front of: one is
/// loaded after the library, and the server carries no wolfSSL of its
/// own (MariaDB's own builds link it into the executable, where the
/// calls are direct and the symbols are `wolfSSL_read`).
pub(crate) fn ssl_readable() -> bool {
    // SAFETY: symbols looked up by name, not called.
    unsafe {
        !dlsym(RTLD_NEXT, c"SSL_read".as_ptr()).is_null()
            && dlsym(RTLD_DEFAULT, c"wolfSSL_read".as_ptr()).is_null()
    }
}

struct Global(UnsafeCell<Proc>);
// SAFETY: the state is touched only under a `Guard` (see `enter`).
unsafe impl Sync for Global {}

static STATE: Global = Global(UnsafeCell::new(Proc {
    looked: false,
    dir: None,
    phase: Phase::Undecided,
    names: WaitNames::none(),
    files: Vec::new(),
}));
/// Held by whichever thread touches the state, until a session is traced.
static BUSY: AtomicBool = AtomicBool::new(false);
/// The thread that traces a session (see `thread`), once one is; 0
/// before. Set under `BUSY` and never changed after: from then on the
/// state is that thread's alone (others pass through), and it needs no
/// lock, only `INSIDE`.
static OWNER: AtomicUsize = AtomicUsize::new(0);
/// The owner is inside the library: a call made meanwhile on its thread
/// (a signal handler's, the library's own) passes through. Touched by the
/// owner only, so a plain load and store: the atomic swap `BUSY` takes
/// was ~0.4 % of the machine's time at saturation (perf, select-only,
/// 2026-11-28), a locked instruction at each of the ~6 wrapped calls of
/// a query, after the backend's own stores.
static INSIDE: AtomicBool = AtomicBool::new(false);

/// The process state, if no one else holds it; released when dropped.
struct Guard(&'static mut Proc, Held);

/// Which of the two a guard holds.
enum Held {
    Busy,
    Inside,
}

impl Drop for Guard {
    #[inline]
    fn drop(&mut self) {
        match self.1 {
            Held::Busy => BUSY.store(false, Release),
            Held::Inside => {
                // The state's last use stays before the store.
                compiler_fence(SeqCst);
                INSIDE.store(false, Relaxed);
            }
        }
    }
}

#[inline]
fn enter() -> Option<Guard> {
    let owner = OWNER.load(Acquire);
    if owner != 0 {
        if owner != thread() || INSIDE.load(Relaxed) {
            return None;
        }
        INSIDE.store(true, Relaxed);
        // The store stays before the state's first use: a signal handler
        // that runs from here on sees it.
        compiler_fence(SeqCst);
        // SAFETY: the owner's, and it is not inside (see `OWNER`).
        return Some(Guard(unsafe { &mut *STATE.0.get() }, Held::Inside));
    }
    enter_busy()
}

/// `enter` before a session is traced.
#[cold]
fn enter_busy() -> Option<Guard> {
    if BUSY.swap(true, Acquire) {
        return None;
    }
    if OWNER.load(Acquire) != 0 {
        // A session began on another thread since `enter` looked.
        BUSY.store(false, Release);
        return None;
    }
    // SAFETY: BUSY is ours until the guard drops, and no thread owns the
    // state.
    let p = unsafe { &mut *STATE.0.get() };
    if !p.looked {
        look(p);
    }
    Some(Guard(p, Held::Busy))
}

/// The process's first call: whether tracing is asked for, and the
/// server's symbols.
#[cold]
fn look(p: &mut Proc) {
    p.looked = true;
    p.dir = env("TRACELAB_SERVER_TRACE_DIR").filter(|d| !d.is_empty());
    if p.dir.is_none() || !p.names.look_up() {
        p.phase = Phase::Off;
        if p.dir.is_some() && old_postgres() {
            say(
                "this PostgreSQL does not export my_wait_event_info (PostgreSQL 13 or older): \
                 nothing is traced; the tracer needs PostgreSQL 14 or newer",
            );
        }
    }
}

/// Whether this process is a PostgreSQL server older than 14: it has
/// the wait events' names but not the backend's wait-event word.
fn old_postgres() -> bool {
    // SAFETY: symbols looked up by name, not used.
    unsafe {
        !dlsym(RTLD_DEFAULT, c"pgstat_get_wait_event".as_ptr()).is_null()
            && dlsym(RTLD_DEFAULT, c"my_wait_event_info".as_ptr()).is_null()
    }
}

fn env(name: &str) -> Option<String> {
    let name = std::ffi::CString::new(name).ok()?;
    // SAFETY: getenv returns NULL or a NUL-terminated string, read at once.
    unsafe {
        let v = getenv(name.as_ptr());
        (!v.is_null()).then(|| CStr::from_ptr(v).to_string_lossy().into_owned())
    }
}

/// The calling thread's id: its thread pointer, read inline (no call to
/// libc's `pthread_self` at each wrapped call; gettid would be a system
/// call).
#[inline]
fn thread() -> usize {
    cpu::thread_id()
}

/// In the child of a fork (a backend's `COPY ... TO PROGRAM`, say): the
/// child is not the backend, and its thread has the backend's
/// thread pointer; it passes every call through. Its lines not yet written
/// are the backend's, which writes them.
extern "C" fn forked() {
    let Some(g) = enter() else { return };
    if matches!(g.0.phase, Phase::Tracing(_)) {
        // Left as it is, not dropped: no free(3) or close(2) in a child
        // that may be about to exec (the trace's descriptor is
        // close-on-exec).
        std::mem::forget(std::mem::replace(&mut g.0.phase, Phase::Off));
    }
}

impl Proc {
    /// The session being traced, if this thread traces one, its pending
    /// events turned into lines (see `pending`): for what is done at once.
    fn synced(&mut self) -> Option<&mut Traced> {
        let t = traced(&mut self.phase)?;
        t.sync(&mut self.names);
        Some(t)
    }

    /// A number for the file behind `fd`: the relfilenode of a data file
    /// (`base/DB/NODE[.SEG]`), the segment number of a WAL file (the last 8
    /// hex digits of its name), else -1. Read once per descriptor from
    /// /proc/self/fd (forgotten when the descriptor is closed).
    fn file_id(&mut self, fd: c_int) -> i64 {
        let i = fd as usize;
        if i >= 65_536 {
            return -1;
        }
        if self.files.len() <= i {
            self.files.resize(i + 1, 0);
        }
        if self.files[i] == 0 {
            let path = std::fs::read_link(format!("/proc/self/fd/{fd}")).unwrap_or_default();
            let name = path
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let in_wal = path
                .parent()
                .is_some_and(|p| p.ends_with("pg_wal") || p.ends_with("pg_xlog"));
            let id = if in_wal && name.len() == 24 {
                i64::from_str_radix(&name[16..], 16).unwrap_or(-1)
            } else {
                name.split(['.', '_'])
                    .next()
                    .and_then(|n| n.parse::<i64>().ok())
                    .unwrap_or(-1)
            };
            self.files[i] = id + 2;
        }
        self.files[i] - 2
    }
}

/// The session being traced, if this thread traces one.
fn traced(phase: &mut Phase) -> Option<&mut Traced> {
    match phase {
        Phase::Tracing(t) if t.thread == thread() => Some(t),
        _ => None,
    }
}

impl Traced {
    /// A point of the session: the start or end of a call. The CPU clock
    /// is read here only, twice per round trip (not at the waits), and a
    /// system call only after the backend was preempted (see `cpu`).
    fn at(&mut self) -> session::At {
        let now = clock_ns(CLOCK_MONOTONIC);
        session::At {
            tim: now / 1000 + self.offset,
            cpu: self.cpu.read(now) / 1000,
            waits: self.waits,
        }
    }

    /// Lines are buffered or events pending.
    fn has_lines(&self) -> bool {
        !self.pending.is_empty() || !self.tracer.w.buf.is_empty()
    }

    /// Turns the pending events into lines (see `pending`); writes the
    /// lines out if the client said Terminate among them.
    fn sync(&mut self, names: &mut WaitNames) {
        if !self.pending.is_empty()
            && self
                .pending
                .replay(&mut self.stream, &mut self.tracer, names)
        {
            self.write();
        }
    }

    /// Writes the lines out, the pending events' too.
    fn flush(&mut self, names: &mut WaitNames) {
        self.sync(names);
        self.write();
    }

    /// Writes the buffered lines (one write(2)).
    fn write(&mut self) {
        self.tracer.w.write_to(&mut self.out);
    }
}

/// Lines are written out once this much is buffered (or a batch of
/// pending events is full, see `pending`), or `FLUSH_US` after the
/// backend began to wait for its client with lines buffered or events
/// pending (the flush timer), whichever comes first.
const BUFFER: usize = 32 << 10;
const FLUSH_US: i64 = 50_000;

extern "C" fn at_exit() {
    flush_now();
}

/// Whether `fd` is a stream socket (a client's connection).
fn stream_socket(fd: c_int) -> bool {
    let mut ty: c_int = 0;
    let mut len = std::mem::size_of::<c_int>() as u32;
    // SAFETY: ty and len are valid for getsockopt to write.
    let rc = unsafe {
        getsockopt(
            fd,
            SOL_SOCKET,
            SO_TYPE,
            &mut ty as *mut c_int as *mut c_void,
            &mut len,
        )
    };
    rc == 0 && ty == SOCK_STREAM
}

/// Bytes the backend received from `fd`: the startup packet decides
/// whether the session is traced; later bytes are its client messages.
fn received(via: Via, bytes: &[u8]) {
    let Some(g) = enter() else { return };
    let p = &mut *g.0;
    if matches!(p.phase, Phase::Undecided) {
        let Via::Socket(fd) = via else { return };
        if !stream_socket(fd) {
            return;
        }
        p.phase = begin(p, fd, bytes).map_or(Phase::Off, Phase::Tracing);
        if matches!(p.phase, Phase::Tracing(_)) {
            // Under BUSY, which this guard releases after it.
            OWNER.store(thread(), Release);
        }
        return;
    }
    let Some(t) = traced(&mut p.phase) else {
        return;
    };
    if !t.conversation(via) {
        return;
    }
    let at = t.at();
    executor::idle();
    // Kept for later once the session has begun (a Terminate, alone in
    // its read, is not: its lines go out at once).
    if t.tracer.started() && bytes.len() <= pending::COPY_MAX && bytes.first() != Some(&b'X') {
        t.pending.client(at, bytes);
        if t.pending.full() {
            t.flush(&mut p.names);
        }
        return;
    }
    t.sync(&mut p.names);
    let r = pending::client(&mut t.stream, &mut t.tracer, at, bytes);
    if let Some(params) = r.startup {
        // After a refused SSL request (no message comes with it).
        let dir = p.dir.as_deref().unwrap_or_default();
        if !wanted(dir, &params) {
            p.phase = Phase::Off;
            return;
        }
        open_trace(t, dir, &params);
    }
    if r.terminate || t.tracer.w.buf.len() >= BUFFER {
        t.write();
    }
}

/// The first bytes of a connection: a traced session if they are a
/// startup packet (or an SSL/GSS request, answered before it) that
/// `trace.conf` lets through.
fn begin(p: &mut Proc, fd: c_int, bytes: &[u8]) -> Option<Box<Traced>> {
    let mut streams = stream::Streams::default();
    let first = streams.startup(bytes)?;
    let dir = p.dir.clone()?;
    let mut traced = Box::new(Traced {
        fd,
        thread: thread(),
        stream: streams,
        tracer: session::Tracer::new(out::Lines::default(), binds_wanted()),
        out: None,
        offset: clock_us(CLOCK_REALTIME) - clock_us(CLOCK_MONOTONIC),
        waits: 0,
        pending: pending::Pending::default(),
        cpu: cpu::ThreadClock::open(cpu::Want::from_setting(
            env("TRACELAB_SERVER_TRACE_CPU").as_deref(),
        )),
        tls: Tls::Off,
    });
    if let Some(params) = first {
        if !wanted(&dir, &params) {
            return None;
        }
        open_trace(&mut traced, &dir, &params);
    }
    executor::install();
    Some(traced)
}

fn binds_wanted() -> bool {
    !matches!(
        env("TRACELAB_SERVER_TRACE_BINDS").as_deref(),
        Some("0" | "off" | "no" | "false")
    )
}

/// Whether `DIR/trace.conf` lets this connection be traced: absent, every
/// connection is; else one rule per line, `all`, `none`, `database=NAME`,
/// `user=NAME`, `application_name=NAME` (a trailing `*` matches a
/// prefix), `#` comments; a connection any rule matches is traced.
fn wanted(dir: &str, params: &stream::Startup) -> bool {
    wanted_by(dir, &params.database, &params.user, &params.application)
}

/// `wanted` for a connection's database, user and application name (the
/// MariaDB tracer's too).
fn wanted_by(dir: &str, database: &str, user: &str, application: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(format!("{dir}/trace.conf")) else {
        return true;
    };
    text.lines().any(|l| {
        let l = l.split('#').next().unwrap_or("").trim();
        let matches = |want: &str, have: &str| match want.strip_suffix('*') {
            Some(prefix) => have.starts_with(prefix),
            None => have == want,
        };
        match l.split_once('=') {
            Some(("database", v)) => matches(v.trim(), database),
            Some(("user", v)) => matches(v.trim(), user),
            Some(("application_name", v)) => matches(v.trim(), application),
            _ => l == "all",
        }
    })
}

fn open_trace(t: &mut Traced, dir: &str, params: &stream::Startup) {
    // SAFETY: getpid cannot fail.
    let pid = unsafe { getpid() };
    let name = format!("tracelab_server_{pid}.trc");
    let path = format!("{dir}/{name}");
    t.out = open_or_say(&path);
    let started = out::rfc3339(clock_us(CLOCK_MONOTONIC) + t.offset);
    t.tracer.w.header(
        &name,
        option_env!("CARGO_PKG_VERSION").unwrap_or("0"),
        "postgres",
        &started,
    );
    t.tracer
        .w
        .session(pid, &params.database, &params.user, &params.application);
    // SAFETY: registering plain functions.
    unsafe {
        atexit(at_exit);
        pthread_atfork(None, None, Some(forked));
    }
}

/// Bytes the backend hands to send(2) on its socket or, with SSL, to
/// `SSL_write`.
fn sending(via: Via, bytes: &[u8]) {
    let Some(g) = enter() else { return };
    let p = &mut *g.0;
    let Some(t) = traced(&mut p.phase) else {
        return;
    };
    if !t.conversation(via) {
        return;
    }
    let at = t.at();
    if t.tracer.started() && bytes.len() <= pending::COPY_MAX {
        t.pending.server(at, bytes);
        if t.pending.full() {
            t.flush(&mut p.names);
        }
        return;
    }
    t.sync(&mut p.names);
    if !pending::server(&mut t.stream, &mut t.tracer, at, bytes) {
        if bytes.first() == Some(&b'S') {
            // SSL accepted: the conversation goes on through OpenSSL,
            // whose SSL_read and SSL_write the library wraps too.
            t.tls = Tls::Accepted;
            return;
        }
        // GSS encryption accepted: the conversation cannot be read.
        t.write();
        p.phase = Phase::Off;
        said::once(
            said::Once::Encrypted,
            "a connection took GSS encryption: its messages cannot be read, so it is not \
             traced (nor is any such connection; this is said once per server): connect \
             without it (libpq's gssencmode=disable)",
        );
        return;
    }
    if t.tracer.w.buf.len() >= BUFFER {
        t.write();
    }
}

/// A blocking call about to be made by the tracing thread with a wait
/// event set.
struct Wait {
    info: u32,
    /// Its start, µs on the monotonic clock (in the vDSO: no system call).
    start: i64,
    /// The CPU clock carried to its start (see `cpu::before_block`).
    cpu: Option<i64>,
}

/// After the blocking call `w` returned: its WAIT line, kept for later
/// (see `pending`). `io` is (fd, offset, bytes) for a file's read or
/// write, (fd, -1, 0) for a flush.
fn waited(w: Wait, io: Option<(c_int, i64, i64)>, extra: [i64; 2]) {
    let _errno = KeepErrno::now();
    let Some(g) = enter() else { return };
    let p = &mut *g.0;
    let end = match traced(&mut p.phase) {
        Some(t) => t.cpu.after_block(w.cpu) / 1000,
        None => return,
    };
    let params = match io {
        Some((fd, off, n)) if off >= 0 => out::Params::Io {
            file: p.file_id(fd),
            block: off / 8192,
            bytes: n,
        },
        Some((fd, _, _)) => out::Params::Flush {
            file: p.file_id(fd),
        },
        None => out::Params::Latch {
            timeout: extra[0],
            events: extra[1],
        },
    };
    let Some(t) = traced(&mut p.phase) else {
        return;
    };
    let ela = end - w.start;
    t.waits += ela;
    // Before the start nothing is pending, so the tracer's state is the
    // session's now.
    if !t.tracer.started() {
        return;
    }
    t.pending.wait(w.info, ela, end + t.offset, params);
    if t.pending.full() {
        t.flush(&mut p.names);
    }
}

/// The blocking call about to be made, if this thread's session is
/// traced and the backend has set a wait event (a call made without one
/// does not block: a non-blocking socket read).
///
/// `set` is the epoll set of an `epoll_wait`: when that is the wait for
/// the client and lines are buffered, the flush timer is armed first (see
/// `flush_timer`), so that they are written within `FLUSH_US` if the
/// client does not come back; where no timer can be had, they are
/// written now, before the wait starts.
#[inline]
fn traced_event(set: Option<c_int>) -> Option<Wait> {
    let g = enter()?;
    let p = &mut *g.0;
    let info = p.names.event();
    if info == 0 {
        return None;
    }
    let client_set = set.filter(|_| p.names.is_client_read(info));
    let t = traced(&mut p.phase)?;
    if let Some(epfd) = client_set {
        if t.has_lines() && !flush_timer::arm(epfd, FLUSH_US) {
            t.flush(&mut p.names);
        }
    }
    let now = clock_ns(CLOCK_MONOTONIC);
    Some(Wait {
        info,
        start: now / 1000,
        cpu: t.cpu.before_block(now),
    })
}

/// Writes the session's lines out, the pending events' too.
fn flush_now() {
    if let Some(g) = enter() {
        let p = &mut *g.0;
        if let Some(t) = traced(&mut p.phase) {
            t.flush(&mut p.names);
        }
    }
}

fn forget_fd(fd: c_int) {
    if let Some(g) = enter() {
        if let Some(slot) = g.0.files.get_mut(fd.max(0) as usize) {
            *slot = 0;
        }
    }
}

/// The monotonic clock, µs (in the vDSO: no system call).
fn now() -> i64 {
    clock_us(CLOCK_MONOTONIC)
}

/// Times `call` if a wait event is set, and writes its WAIT line.
#[inline]
fn timed<R>(io: Option<(c_int, i64, i64)>, call: impl FnOnce() -> R) -> R {
    let Some(w) = traced_event(None) else {
        return call();
    };
    let r = call();
    waited(w, io, [0, 0]);
    r
}

macro_rules! real {
    ($slot:ident, $name:literal, $ty:ty) => {{
        static $slot: AtomicUsize = AtomicUsize::new(0);
        // SAFETY: libc's function of that name has this type.
        unsafe { $crate::next::<$ty>(&$slot, $name, None) }
    }};
    ($slot:ident, $name:literal @ $version:expr, $ty:ty) => {{
        static $slot: AtomicUsize = AtomicUsize::new(0);
        // SAFETY: libc's function of that name and version has this type.
        unsafe { $crate::next::<$ty>(&$slot, $name, Some($version)) }
    }};
}

mod locks;

/// # Safety
/// As libc's `recv`.
#[no_mangle]
pub unsafe extern "C" fn recv(fd: c_int, buf: *mut c_void, n: usize, flags: c_int) -> ssize_t {
    let f = real!(
        R,
        c"recv",
        unsafe extern "C" fn(c_int, *mut c_void, usize, c_int) -> ssize_t
    );
    if mariadb::on() {
        let r = f(fd, buf, n, flags);
        if r > 0 && flags & 2 == 0 {
            mariadb::received(fd, std::slice::from_raw_parts(buf as *const u8, r as usize));
        }
        return r;
    }
    let w = traced_event(None);
    let r = f(fd, buf, n, flags);
    if let Some(w) = w {
        waited(w, None, [0, r as i64]);
    }
    if r > 0 && flags & 2 == 0 {
        // Not MSG_PEEK: the bytes are consumed.
        received(
            Via::Socket(fd),
            std::slice::from_raw_parts(buf as *const u8, r as usize),
        );
    }
    r
}

/// # Safety
/// As libc's `send`.
#[no_mangle]
pub unsafe extern "C" fn send(fd: c_int, buf: *const c_void, n: usize, flags: c_int) -> ssize_t {
    let f = real!(
        S,
        c"send",
        unsafe extern "C" fn(c_int, *const c_void, usize, c_int) -> ssize_t
    );
    if mariadb::on() {
        let r = f(fd, buf, n, flags);
        if r > 0 {
            mariadb::sent(fd, std::slice::from_raw_parts(buf as *const u8, r as usize));
        }
        return r;
    }
    let w = traced_event(None);
    let r = f(fd, buf, n, flags);
    if let Some(w) = w {
        waited(w, None, [0, r as i64]);
    }
    if r > 0 {
        sending(
            Via::Socket(fd),
            std::slice::from_raw_parts(buf as *const u8, r as usize),
        );
    }
    r
}

/// OpenSSL's `SSL_read`: the client's bytes of a connection that took
/// SSL, in the clear. (The backend reads the socket without blocking and
/// waits for it in epoll_wait, timed there.) The real one is found
/// after the library, where the server's own libssl is (PostgreSQL links
/// it, so it is in the process's global scope); a process that called
/// SSL_read with no libssl there, one loaded privately by a module,
/// would stop at its first call, as for a missing libc function.
///
/// # Safety
/// As OpenSSL's `SSL_read`.
#[no_mangle]
pub unsafe extern "C" fn SSL_read(ssl: *mut c_void, buf: *mut c_void, n: c_int) -> c_int {
    let f = real!(
        SR,
        c"SSL_read",
        unsafe extern "C" fn(*mut c_void, *mut c_void, c_int) -> c_int
    );
    let r = f(ssl, buf, n);
    if r > 0 {
        let bytes = std::slice::from_raw_parts(buf as *const u8, r as usize);
        if mariadb::on() {
            mariadb::received_via(Via::Ssl(ssl as usize), bytes);
        } else {
            received(Via::Ssl(ssl as usize), bytes);
        }
    }
    r
}

/// OpenSSL's `SSL_write`: the server's bytes of a connection that took
/// SSL, in the clear.
///
/// # Safety
/// As OpenSSL's `SSL_write`.
#[no_mangle]
pub unsafe extern "C" fn SSL_write(ssl: *mut c_void, buf: *const c_void, n: c_int) -> c_int {
    let f = real!(
        SW,
        c"SSL_write",
        unsafe extern "C" fn(*mut c_void, *const c_void, c_int) -> c_int
    );
    let r = f(ssl, buf, n);
    if r > 0 {
        let bytes = std::slice::from_raw_parts(buf as *const u8, r as usize);
        if mariadb::on() {
            mariadb::sent_via(Via::Ssl(ssl as usize), bytes);
        } else {
            sending(Via::Ssl(ssl as usize), bytes);
        }
    }
    r
}

/// The wait for latches, locks, timeouts and the client.
///
/// # Safety
/// As libc's `epoll_wait`.
#[no_mangle]
pub unsafe extern "C" fn epoll_wait(
    epfd: c_int,
    ev: *mut c_void,
    max: c_int,
    timeout: c_int,
) -> c_int {
    let f = real!(
        E,
        c"epoll_wait",
        unsafe extern "C" fn(c_int, *mut c_void, c_int, c_int) -> c_int
    );
    if mariadb::on() {
        mariadb::polling();
        let r = f(epfd, ev, max, timeout);
        mariadb::polled(ev as *const flush_timer::EpollEvent, r);
        return r;
    }
    let Some(w) = traced_event(Some(epfd)) else {
        return wait_stripped(f, epfd, ev, max, timeout);
    };
    let r = wait_stripped(f, epfd, ev, max, timeout);
    waited(w, None, [timeout as i64, r as i64]);
    r
}

/// `epoll_wait` on the set, with the flush timer's event taken out of what
/// it returns (the server must never see it); a wait left with no event
/// goes on for the rest of its timeout.
///
/// # Safety
/// As libc's `epoll_wait`.
#[inline]
unsafe fn wait_stripped(
    f: unsafe extern "C" fn(c_int, *mut c_void, c_int, c_int) -> c_int,
    epfd: c_int,
    ev: *mut c_void,
    max: c_int,
    timeout: c_int,
) -> c_int {
    if !flush_timer::in_set(epfd) {
        return f(epfd, ev, max, timeout);
    }
    let start = if timeout > 0 { now() } else { 0 };
    let mut left = timeout;
    loop {
        let r = f(epfd, ev, max, left);
        if r <= 0 {
            return r;
        }
        let (kept, fired) = flush_timer::strip(ev, r);
        if fired {
            flush_now();
        }
        if kept > 0 || timeout == 0 {
            return kept;
        }
        if timeout > 0 {
            left = (timeout as i64 - (now() - start) / 1000) as c_int;
            if left <= 0 {
                return 0;
            }
        }
    }
}

/// MariaDB's thread pool hands a connection's socket back to its poll
/// (see `mariadb::arming`); passed through elsewhere.
///
/// # Safety
/// As libc's `epoll_ctl`.
#[no_mangle]
pub unsafe extern "C" fn epoll_ctl(
    epfd: c_int,
    op: c_int,
    fd: c_int,
    ev: *mut flush_timer::EpollEvent,
) -> c_int {
    let f = real!(
        EC,
        c"epoll_ctl",
        unsafe extern "C" fn(c_int, c_int, c_int, *mut flush_timer::EpollEvent) -> c_int
    );
    if mariadb::on() {
        mariadb::arming(op, fd, ev);
    }
    f(epfd, op, fd, ev)
}

/// MariaDB's wait for its client (see `mariadb::poll`); passed through
/// elsewhere.
///
/// # Safety
/// As libc's `poll`.
#[no_mangle]
pub unsafe extern "C" fn poll(fds: *mut c_void, n: u64, timeout: c_int) -> c_int {
    let f = real!(
        PL,
        c"poll",
        unsafe extern "C" fn(*mut c_void, u64, c_int) -> c_int
    );
    if mariadb::on() {
        return mariadb::poll(f, fds, n, timeout);
    }
    f(fds, n, timeout)
}

/// # Safety
/// As libc's `select` (spin delays of older servers).
#[no_mangle]
pub unsafe extern "C" fn select(
    n: c_int,
    r: *mut c_void,
    w: *mut c_void,
    e: *mut c_void,
    t: *mut c_void,
) -> c_int {
    let f = real!(
        SEL,
        c"select",
        unsafe extern "C" fn(c_int, *mut c_void, *mut c_void, *mut c_void, *mut c_void) -> c_int
    );
    if mariadb::on() {
        return f(n, r, w, e, t);
    }
    timed(None, || f(n, r, w, e, t))
}

/// An LWLock's semaphore.
///
/// # Safety
/// As libc's `sem_wait`.
#[no_mangle]
pub unsafe extern "C" fn sem_wait(sem: *mut c_void) -> c_int {
    let f = real!(SEM, c"sem_wait", unsafe extern "C" fn(*mut c_void) -> c_int);
    if mariadb::on() {
        return f(sem);
    }
    timed(None, || f(sem))
}

/// # Safety
/// As libc's `nanosleep`.
#[no_mangle]
pub unsafe extern "C" fn nanosleep(req: *const c_void, rem: *mut c_void) -> c_int {
    let f = real!(
        NS,
        c"nanosleep",
        unsafe extern "C" fn(*const c_void, *mut c_void) -> c_int
    );
    if mariadb::on() {
        return f(req, rem);
    }
    timed(None, || f(req, rem))
}

macro_rules! positional {
    ($(#[$doc:meta])* $name:ident, $slot:ident, $sym:literal, $what:literal, $buf:ty) => {
        $(#[$doc])*
        /// # Safety
        /// As libc's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(fd: c_int, buf: $buf, n: usize, off: off_t) -> ssize_t {
            let f = real!($slot, $sym, unsafe extern "C" fn(c_int, $buf, usize, off_t) -> ssize_t);
            if mariadb::on() {
                return mariadb::file_call($what, fd, Some((off, n as i64)), || f(fd, buf, n, off));
            }
            timed(Some((fd, off, n as i64)), || f(fd, buf, n, off))
        }
    };
}

positional!(
    /// Data and WAL file reads.
    pread, PREAD, c"pread", "pread", *mut c_void
);
positional!(pread64, PREAD64, c"pread64", "pread", *mut c_void);
positional!(
    /// Data and WAL file writes.
    pwrite, PWRITE, c"pwrite", "pwrite", *const c_void
);
positional!(pwrite64, PWRITE64, c"pwrite64", "pwrite", *const c_void);

/// Vectored reads and writes (`iovcnt` buffers; the bytes are the
/// result).
macro_rules! vectored {
    ($name:ident, $slot:ident, $sym:literal) => {
        /// # Safety
        /// As libc's function of this name.
        #[no_mangle]
        pub unsafe extern "C" fn $name(
            fd: c_int,
            iov: *const c_void,
            cnt: c_int,
            off: off_t,
        ) -> ssize_t {
            let f = real!(
                $slot,
                $sym,
                unsafe extern "C" fn(c_int, *const c_void, c_int, off_t) -> ssize_t
            );
            if mariadb::on() {
                return f(fd, iov, cnt, off);
            }
            let Some(w) = traced_event(None) else {
                return f(fd, iov, cnt, off);
            };
            let r = f(fd, iov, cnt, off);
            waited(w, Some((fd, off, r.max(0) as i64)), [0, 0]);
            r
        }
    };
}

vectored!(preadv, PREADV, c"preadv");
vectored!(pwritev, PWRITEV, c"pwritev");

/// # Safety
/// As libc's `fdatasync` (WAL and data-file flushes).
#[no_mangle]
pub unsafe extern "C" fn fdatasync(fd: c_int) -> c_int {
    let f = real!(FDS, c"fdatasync", unsafe extern "C" fn(c_int) -> c_int);
    if mariadb::on() {
        return mariadb::file_call("fdatasync", fd, None, || f(fd));
    }
    timed(Some((fd, -1, 0)), || f(fd))
}

/// # Safety
/// As libc's `fsync`.
#[no_mangle]
pub unsafe extern "C" fn fsync(fd: c_int) -> c_int {
    let f = real!(FS, c"fsync", unsafe extern "C" fn(c_int) -> c_int);
    if mariadb::on() {
        return mariadb::file_call("fsync", fd, None, || f(fd));
    }
    timed(Some((fd, -1, 0)), || f(fd))
}

/// # Safety
/// As libc's `sync_file_range` (writeback of data files).
#[no_mangle]
pub unsafe extern "C" fn sync_file_range(fd: c_int, off: off_t, n: off_t, flags: c_uint) -> c_int {
    let f = real!(
        SFR,
        c"sync_file_range",
        unsafe extern "C" fn(c_int, off_t, off_t, c_uint) -> c_int
    );
    if mariadb::on() {
        return f(fd, off, n, flags);
    }
    timed(Some((fd, off, n)), || f(fd, off, n, flags))
}

/// A closed descriptor's file is forgotten (the number is reused).
///
/// # Safety
/// As libc's `close`.
#[no_mangle]
pub unsafe extern "C" fn close(fd: c_int) -> c_int {
    let f = real!(CL, c"close", unsafe extern "C" fn(c_int) -> c_int);
    if mariadb::on() {
        mariadb::closing(fd);
        return f(fd);
    }
    forget_fd(fd);
    flush_timer::closed(fd);
    f(fd)
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("the server tracer knows the system call numbers of x86_64 and aarch64 only");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wrapped_calls_errno_outlives_the_librarys_own_work() {
        const EAGAIN: c_int = 11;
        // SAFETY: this thread's errno.
        let errno = || unsafe { *__errno_location() };
        unsafe { *__errno_location() = EAGAIN };
        {
            let _kept = KeepErrno::now();
            // The library's own work fails meanwhile: a write to a bad
            // descriptor (EBADF).
            extern "C" {
                fn write(fd: c_int, buf: *const c_void, n: usize) -> ssize_t;
            }
            assert_eq!(unsafe { write(-1, b"x".as_ptr() as *const c_void, 1) }, -1);
            assert_ne!(errno(), EAGAIN);
        }
        assert_eq!(errno(), EAGAIN);
    }
}
