//! MariaDB's thread pool (`thread_handling=pool-of-threads`): its threads
//! serve many connections by turns, so a connection's trace cannot live
//! with one thread as it does under the default scheduler.
//!
//! A pool's thread serves a connection's request (reads it, runs it,
//! answers it), hands the socket back to the pool's poll (`epoll_ctl`
//! with `EPOLLONESHOT`) and goes on to another connection's; the next
//! request is served by whichever thread takes it from the pool's queue.
//! A request may also move mid-way: MariaDB 10.6 and later suspend a
//! COMMIT while its redo is flushed, and another thread resumes it and
//! sends its answer. What does not change while a thread serves a
//! connection is the connection's THD, attached to that thread
//! (`_current_thd()`, exported by the server, returns it). So under the
//! pool the connections live here by their THD, and a thread serves the
//! one of its current THD: each wrapped call compares the thread's
//! current THD with the one it saw last (a call and a compare) and looks
//! the connection up again only when it changed.
//!
//! Between requests a connection is parked: from the `epoll_ctl` that
//! hands its socket back (`arming`) to the next thread taking it up, the
//! time is the wait for the client (`thd_wait:NET`, as a connection's own
//! thread names that wait) until the pool's poll returns the socket
//! readable (`polled`), then the wait in the pool's queue
//! (`POOL_QUEUE`) until a thread takes the request up.

use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use super::{sym, thread_cpu, wait_name, Conn, Params, CONN, FLUSH_MS, THD_WAIT_NET};
use crate::flush_timer::EpollEvent;
use crate::{clock_ns, CLOCK_MONOTONIC};

/// The wait of a thread-pool connection's request between the poll that
/// found its socket readable and a thread of the pool taking it up: what
/// MariaDB's `information_schema.THREAD_POOL_QUEUES` calls its queueing
/// time.
pub const POOL_QUEUE: &str = "thread pool queue";

/// The wait of a COMMIT the pool suspended (MariaDB 10.6 and later: its
/// thread goes on to other connections while another thread writes and
/// flushes the redo, and a thread of the pool resumes it when that is
/// done): what a connection's own thread waits for in `pthread_cond_wait
/// net_real_write`, Oracle's `log file sync`.
pub const SUSPENDED: &str = "suspended for redo flush";

/// The server runs the thread pool (its own `thd_wait_begin` was found
/// in the scheduler's table): connections live in `REGISTRY`.
static ON: AtomicBool = AtomicBool::new(false);

/// Whether the thread pool runs.
#[inline]
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Called once the scheduler's table shows the pool's functions.
pub fn found() {
    ON.store(true, Ordering::Relaxed);
}

#[derive(Default)]
struct Registry {
    /// The connections, by the address of their THD.
    conns: HashMap<usize, Box<Conn>>,
    /// Their THDs by the data the pool registered their sockets with in
    /// its epoll set (the pool's connection's address): what `polled`
    /// sees.
    sockets: HashMap<u64, usize>,
    /// Their THDs by socket (the latest connection's, where a number was
    /// reused before a close was seen): what a close looks up, whatever
    /// the thread that closes.
    by_fd: HashMap<c_int, usize>,
}

static REGISTRY: Mutex<Option<Registry>> = Mutex::new(None);

/// Bumped each time a connection is added or freed: every thread's
/// remembered connection (or none) is looked up again after it, so that a
/// THD allocated at a freed one's address is never taken for it, nor a
/// THD a thread once saw without a connection for one that has none.
static CHANGED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The THD `CONN` was looked up for, and `CHANGED` then.
    static SEEN: Cell<(usize, u64)> = const { Cell::new((0, u64::MAX)) };
    /// The thread's id, for `Conn::served_by`.
    static ME: Cell<usize> = const { Cell::new(0) };
}

fn registry() -> MutexGuard<'static, Option<Registry>> {
    // A panic aborts the server (panic=abort): never poisoned.
    REGISTRY.lock().unwrap_or_else(|e| e.into_inner())
}

/// The THD attached to this thread (0: none).
fn current_thd() -> usize {
    static F: AtomicUsize = AtomicUsize::new(0);
    let mut f = F.load(Ordering::Relaxed);
    if f == 0 {
        f = sym(c"_current_thd") as usize;
        F.store(f, Ordering::Relaxed);
    }
    if f == 0 {
        return 0;
    }
    // SAFETY: the server's `THD *_current_thd(void)` (its presence is
    // what `super::decide` checked).
    unsafe { std::mem::transmute::<usize, unsafe extern "C" fn() -> usize>(f)() }
}

/// Points `CONN` at the connection this thread serves now (its current
/// THD's), taking it up if another thread served it last or it was
/// parked (by this thread too: a thread may take the connection it
/// parked up again, with no call of the library's in between). Called
/// with the library entered.
#[inline]
pub fn refresh() {
    let thd = current_thd();
    let (seen, generation) = SEEN.with(|s| s.get());
    if thd == seen && generation == CHANGED.load(Ordering::Acquire) {
        let p = CONN.with(|c| c.get());
        // SAFETY: the connection of the THD this thread serves now: no
        // other thread serves it meanwhile.
        if p.is_null() || unsafe { (*p).parked.is_none() && (*p).served_by == me() } {
            return;
        }
    }
    look_up(thd);
}

#[cold]
fn look_up(thd: usize) {
    let generation = CHANGED.load(Ordering::Acquire);
    let seen = SEEN.with(|s| s.get().0);
    let mut p: *mut Conn = std::ptr::null_mut();
    {
        let mut g = registry();
        let Some(r) = g.as_mut() else {
            CONN.with(|c| c.set(p));
            SEEN.with(|s| s.set((thd, generation)));
            return;
        };
        if seen != thd && seen != 0 {
            // The thread no longer serves the THD it served: if it left
            // that connection mid-request (a suspended COMMIT) and no
            // other thread took it up meanwhile, its CPU and the moment
            // are noted now (under the lock, as `take_up` runs).
            if let Some(c) = r.conns.get_mut(&seen) {
                c.leave(me());
            }
        }
        if let Some(c) = r.conns.get_mut(&thd) {
            // Taken up under the lock: the flusher and `polled` touch a
            // parked connection under it too.
            c.take_up(me());
            p = &mut **c;
        }
    }
    CONN.with(|c| c.set(p));
    SEEN.with(|s| s.set((thd, generation)));
}

fn me() -> usize {
    ME.with(|m| {
        if m.get() == 0 {
            m.set(crate::cpu::thread_id());
        }
        m.get()
    })
}

/// Keeps `c`, begun by this thread for its current THD (the login's).
/// Without a THD the connection cannot be followed, and is dropped.
pub fn adopt(mut c: Box<Conn>) {
    let thd = current_thd();
    if thd == 0 {
        return;
    }
    c.served_by = me();
    let p: *mut Conn = &mut *c;
    let (old, stale) = {
        let mut g = registry();
        let r = g.get_or_insert_with(Registry::default);
        // The connection that had the socket's number before, if its
        // close was not seen and no thread serves it: ended.
        let stale = match r.by_fd.insert(c.fd, thd) {
            Some(t) if t != thd => {
                let free = r
                    .conns
                    .get(&t)
                    .is_some_and(|o| o.fd == c.fd && (o.parked.is_some() || o.left.is_some()));
                if free {
                    r.sockets.retain(|_, s| *s != t);
                }
                free.then(|| r.conns.remove(&t)).flatten()
            }
            _ => None,
        };
        (r.conns.insert(thd, c), stale)
    };
    CHANGED.fetch_add(1, Ordering::Release);
    CONN.with(|c| c.set(p));
    SEEN.with(|s| s.set((thd, CHANGED.load(Ordering::Acquire))));
    // Connections whose close was not seen: their lines are written,
    // outside the lock.
    drop((old, stale));
    start_flusher();
}

/// The connection of socket `fd` ends: its lines are written and it is
/// freed. Unless another thread may be serving it (a socket closed by a
/// thread that does not serve its connection, which MariaDB leaves to
/// the serving thread): then it is left alone rather than freed under
/// that thread.
pub fn release(fd: c_int) {
    let me = me();
    let gone = {
        let mut g = registry();
        let Some(r) = g.as_mut() else { return };
        let Some(&thd) = r.by_fd.get(&fd) else { return };
        let free = r.conns.get(&thd).is_some_and(|c| {
            c.fd == fd && (c.served_by == me || c.parked.is_some() || c.left.is_some())
        });
        if !free {
            return;
        }
        r.by_fd.remove(&fd);
        r.sockets.retain(|_, t| *t != thd);
        r.conns.remove(&thd)
    };
    CHANGED.fetch_add(1, Ordering::Release);
    CONN.with(|c| c.set(std::ptr::null_mut()));
    SEEN.with(|s| s.set((0, u64::MAX)));
    drop(gone);
}

/// `epoll_ctl(2)` hands socket `fd` to a poll with `ev`: the thread that
/// serves its connection parks it (before the call, so that the thread
/// the poll wakes finds it parked; under the lock, as a connection
/// changes hands only under it, and the flusher reads it there).
pub fn arming(c: &mut Conn, fd: c_int, ev: *const EpollEvent) {
    if c.fd != fd {
        return;
    }
    // SAFETY: the caller's event, valid for the call.
    let data = unsafe { std::ptr::read_unaligned(ev) }.data();
    let thd = SEEN.with(|s| s.get().0);
    let mut g = registry();
    c.park();
    if let Some(r) = g.as_mut() {
        r.sockets.insert(data, thd);
    }
}

/// `epoll_wait(2)` returned `n` events at `ev`: the parked connections
/// among them have their socket readable now, the end of their wait for
/// the client and the start of their wait in the pool's queue.
///
/// # Safety
/// `ev` holds `n` events.
pub unsafe fn polled(ev: *const EpollEvent, n: c_int) {
    let now = clock_ns(CLOCK_MONOTONIC) / 1000;
    let mut g = registry();
    let Some(r) = g.as_mut() else { return };
    for i in 0..n as usize {
        // SAFETY: one of the `n` events the kernel wrote.
        let data = unsafe { std::ptr::read_unaligned(ev.add(i)) }.data();
        let Some(thd) = r.sockets.get(&data) else {
            continue;
        };
        if let Some(idle) = r.conns.get_mut(thd).and_then(|c| c.parked.as_mut()) {
            idle.ready.get_or_insert(now);
        }
    }
}

/// Starts, once, the thread that writes the lines of connections parked
/// for `FLUSH_MS` or more: an idle pool connection is served by no
/// thread, so no wait of its own writes them (as the poll for the client
/// does for a connection's own thread), and a write at every request
/// would cost a system call each.
fn start_flusher() {
    static STARTED: AtomicU8 = AtomicU8::new(0);
    if STARTED.swap(1, Ordering::Relaxed) == 1 {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("tracelab-flush".into())
        .spawn(|| loop {
            std::thread::sleep(std::time::Duration::from_millis(FLUSH_MS as u64));
            super::inside(|| {
                let now = clock_ns(CLOCK_MONOTONIC) / 1000;
                let mut g = registry();
                let Some(r) = g.as_mut() else { return };
                for c in r.conns.values_mut() {
                    let idle = c.parked.as_ref().map_or(0, |i| now - i.since);
                    if idle >= FLUSH_MS as i64 * 1000 && !c.calls.w.buf.is_empty() {
                        c.write();
                    }
                }
            });
        });
    if spawned.is_err() {
        crate::say(
            "no thread could be started to write idle thread-pool connections' lines: they \
             are written when 32 KiB are buffered and when the connection ends",
        );
    }
}

/// A parked connection: when its thread let it go, and its CPU time then.
pub struct Idle {
    /// Monotonic µs.
    since: i64,
    /// When the pool's poll returned its socket readable (`polled`),
    /// monotonic µs.
    ready: Option<i64>,
    /// The connection's CPU time, ns.
    cpu: i64,
}

impl Conn {
    /// Its thread hands the connection's socket to the pool's poll.
    fn park(&mut self) {
        self.left = None;
        let now = clock_ns(CLOCK_MONOTONIC);
        let cpu = thread_cpu(now) + self.cpu_off;
        self.cpu_last = cpu;
        self.parked = Some(Idle {
            since: now / 1000,
            ready: None,
            cpu,
        });
    }

    /// Thread `me`, which served the connection, serves another THD now
    /// (or none): if the connection is neither parked nor taken up by
    /// another thread, its request was suspended here, now.
    fn leave(&mut self, me: usize) {
        if self.served_by != me || self.parked.is_some() || self.left.is_some() {
            return;
        }
        let now = clock_ns(CLOCK_MONOTONIC);
        self.cpu_last = thread_cpu(now) + self.cpu_off;
        self.left = Some(now / 1000);
    }

    /// Thread `me` serves the connection now. Its CPU clock goes on from
    /// the thread's: from when it was parked or left suspended, or from
    /// its last reading on the thread that served it before (a request
    /// resumed before that thread was seen to leave it: what it spent
    /// after the reading is not counted). The time it was parked is
    /// written as the wait for the client until the poll found its
    /// socket readable, then the wait in the pool's queue (where the poll
    /// was not seen, all of it is the client's); the time a request was
    /// suspended, as `SUSPENDED`.
    fn take_up(&mut self, me: usize) {
        let now = clock_ns(CLOCK_MONOTONIC);
        let Some(idle) = self.parked.take() else {
            if self.served_by == me && self.left.is_none() {
                return;
            }
            self.served_by = me;
            self.cpu_off = self.cpu_last - thread_cpu(now);
            if let Some(left) = self.left.take() {
                if !self.off && self.logged_in {
                    let now = now / 1000;
                    let cursor = self.calls.wait_cursor();
                    let params = Params::Queue {
                        socket: self.fd as i64,
                    };
                    let tim = now + self.offset;
                    self.calls
                        .w
                        .wait(cursor, SUSPENDED, now - left, params, tim);
                    self.waits += now - left;
                }
            }
            return;
        };
        self.served_by = me;
        self.cpu_off = idle.cpu - thread_cpu(now);
        if self.off || !self.logged_in {
            return;
        }
        let now = now / 1000;
        let ready = idle.ready.unwrap_or(now).clamp(idle.since, now);
        let cursor = self.calls.wait_cursor();
        let net = Params::Class {
            ty: THD_WAIT_NET as i64,
        };
        let tim = ready + self.offset;
        let name = wait_name(THD_WAIT_NET);
        self.calls
            .w
            .wait(cursor, name, ready - idle.since, net, tim);
        if idle.ready.is_some() {
            let queue = Params::Queue {
                socket: self.fd as i64,
            };
            let tim = now + self.offset;
            self.calls
                .w
                .wait(cursor, POOL_QUEUE, now - ready, queue, tim);
        }
        self.waits += now - idle.since;
    }
}
