//! The timer that writes an idle session's lines: a `timerfd` added to
//! the backend's own epoll set for its client (PostgreSQL's `FeBeWaitSet`),
//! armed once when lines are buffered (or events pending, see `pending`)
//! and the backend waits for its client, so that they are written within
//! `FLUSH_US` even if the client does not come back.
//!
//! Why not a timeout on the wait itself: a wait with a timeout makes the
//! kernel start and cancel a high-resolution timer each time, and a
//! backend at saturation waits for its client once a query (a socketpair
//! ping-pong pinned to one CPU: 3.28–3.35 µs a round trip untimed,
//! 3.47–3.62 µs timed; perf at saturation: 0.99 `hrtimer_start` a query
//! with the timeout, 0.011 with this timer, 0.008 untraced). This timer
//! is armed once per write of the buffer instead (every 30–60 ms per
//! backend at saturation) and fires at most once per arming.
//!
//! The timer's events never reach the server: `strip` takes them out of
//! what `epoll_wait` returns on that set, whatever the wait (PostgreSQL
//! reads each returned event's data as a pointer to its own `WaitEvent`).
//! The set is known by its descriptor; `closed` forgets it when the server
//! closes it (the kernel drops the registration with it).

use std::ffi::{c_int, c_long, c_void};
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering::Relaxed};

extern "C" {
    fn timerfd_create(clock: c_int, flags: c_int) -> c_int;
    fn timerfd_settime(fd: c_int, flags: c_int, new: *const Itimerspec, old: *mut c_void) -> c_int;
    fn epoll_ctl(epfd: c_int, op: c_int, fd: c_int, ev: *mut EpollEvent) -> c_int;
    fn read(fd: c_int, buf: *mut c_void, n: usize) -> isize;
}

const CLOCK_MONOTONIC: c_int = 1;
/// TFD_NONBLOCK and TFD_CLOEXEC: O_NONBLOCK and O_CLOEXEC, the same on
/// x86_64 and aarch64.
const TFD_FLAGS: c_int = 0o4000 | 0o2000000;
const EPOLL_CTL_ADD: c_int = 1;
const EPOLLIN: u32 = 1;

#[repr(C)]
struct Timespec {
    tv_sec: c_long,
    tv_nsec: c_long,
}

#[repr(C)]
struct Itimerspec {
    interval: Timespec,
    value: Timespec,
}

/// `struct epoll_event`: packed on x86_64 (12 bytes), naturally aligned
/// elsewhere (16), as sys/epoll.h declares it.
#[cfg_attr(target_arch = "x86_64", repr(C, packed))]
#[cfg_attr(not(target_arch = "x86_64"), repr(C))]
#[derive(Clone, Copy)]
pub struct EpollEvent {
    events: u32,
    data: u64,
}

impl EpollEvent {
    /// The data the server registered the descriptor with (MariaDB's
    /// thread pool: its connection's address).
    pub fn data(&self) -> u64 {
        self.data
    }
}

/// The timer's events carry this static's address as their data: no
/// pointer of the server's can be equal to it.
static TAG: u8 = 0;

fn tag() -> u64 {
    &TAG as *const u8 as u64
}

/// The timer's descriptor (-1: not made yet).
static FD: AtomicI32 = AtomicI32::new(-1);
/// The epoll set it is in (-1: none).
static SET: AtomicI32 = AtomicI32::new(-1);
/// Armed and not yet seen to fire.
static ARMED: AtomicBool = AtomicBool::new(false);
/// No timer can be had here: the caller writes its lines at each wait.
static FAILED: AtomicBool = AtomicBool::new(false);

/// Before a wait for the client on the set `epfd` with lines buffered:
/// the timer in that set, armed to fire in `us` µs unless it is armed
/// already. `false` where that cannot be done (no timerfd, the timer
/// already in another set that is still open): the caller then writes
/// its lines now.
pub fn arm(epfd: c_int, us: i64) -> bool {
    if FAILED.load(Relaxed) {
        return false;
    }
    let mut fd = FD.load(Relaxed);
    if fd < 0 {
        // SAFETY: plain system call wrappers.
        fd = unsafe { timerfd_create(CLOCK_MONOTONIC, TFD_FLAGS) };
        if fd < 0 {
            FAILED.store(true, Relaxed);
            return false;
        }
        FD.store(fd, Relaxed);
    }
    let set = SET.load(Relaxed);
    if set != epfd {
        if set >= 0 {
            return false;
        }
        let mut ev = EpollEvent {
            events: EPOLLIN,
            data: tag(),
        };
        // SAFETY: ev is a valid epoll_event; a failure leaves nothing.
        if unsafe { epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &mut ev) } != 0 {
            return false;
        }
        SET.store(epfd, Relaxed);
    }
    if !ARMED.load(Relaxed) {
        let t = Itimerspec {
            interval: Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            value: Timespec {
                tv_sec: (us / 1_000_000) as c_long,
                tv_nsec: (us % 1_000_000 * 1000) as c_long,
            },
        };
        // SAFETY: t is a valid itimerspec; the old value is not asked for.
        if unsafe { timerfd_settime(fd, 0, &t, std::ptr::null_mut()) } != 0 {
            return false;
        }
        ARMED.store(true, Relaxed);
    }
    true
}

/// Whether `epfd` is the set the timer is in (then what `epoll_wait`
/// returns on it goes through `strip`).
#[inline]
pub fn in_set(epfd: c_int) -> bool {
    epfd >= 0 && SET.load(Relaxed) == epfd
}

/// Takes the timer's event out of the `n` events epoll_wait wrote at
/// `ev`: returns how many are left, in their order, and whether the timer
/// fired (it is then read, so that it is not ready again until armed).
///
/// # Safety
/// `ev` must hold `n` events written by epoll_wait.
pub unsafe fn strip(ev: *mut c_void, n: c_int) -> (c_int, bool) {
    let ev = ev as *mut EpollEvent;
    let mut kept = 0;
    let mut fired = false;
    for i in 0..n.max(0) as usize {
        let e = ev.add(i).read_unaligned();
        if e.data == tag() {
            fired = true;
            continue;
        }
        if kept != i {
            ev.add(kept).write_unaligned(e);
        }
        kept += 1;
    }
    if fired {
        let mut expirations = 0u64;
        read(
            FD.load(Relaxed),
            &mut expirations as *mut u64 as *mut c_void,
            8,
        );
        ARMED.store(false, Relaxed);
    }
    (kept as c_int, fired)
}

/// The server closed `fd`: if it was the timer's set, the registration
/// went with it.
pub fn closed(fd: c_int) {
    if fd >= 0 && SET.load(Relaxed) == fd {
        SET.store(-1, Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    extern "C" {
        fn epoll_create1(flags: c_int) -> c_int;
        fn pipe(fds: *mut c_int) -> c_int;
        fn write(fd: c_int, buf: *const c_void, n: usize) -> isize;
    }

    /// Through the library's `epoll_wait`, as the server calls it: the
    /// timer fires in its set once per arming, its event never comes out,
    /// a wait's timeout is kept in full, and the set's own events come out
    /// as they are; a closed set is forgotten.
    #[test]
    fn the_timers_event_never_reaches_the_server() {
        let wait = |epfd, out: &mut [EpollEvent; 4], ms| unsafe {
            crate::epoll_wait(epfd, out.as_mut_ptr() as *mut c_void, 4, ms)
        };
        unsafe {
            let epfd = epoll_create1(0o2000000);
            assert!(epfd >= 0);
            let mut p = [0; 2];
            assert_eq!(pipe(p.as_mut_ptr()), 0);
            let mut ev = EpollEvent {
                events: EPOLLIN,
                data: 77,
            };
            assert_eq!(epoll_ctl(epfd, EPOLL_CTL_ADD, p[0], &mut ev), 0);
            assert!(arm(epfd, 20_000));
            assert!(in_set(epfd));
            assert!(!arm(epfd + 1000, 20_000), "one set only");
            let mut out = [EpollEvent { events: 0, data: 0 }; 4];
            // The timer fires after 20 ms, inside a 200 ms wait: taken out,
            // and the wait goes on to its end.
            let t = std::time::Instant::now();
            assert_eq!(wait(epfd, &mut out, 200), 0);
            assert!(t.elapsed() >= std::time::Duration::from_millis(190));
            assert!(!ARMED.load(Relaxed), "seen to fire");
            // Armed again and fired while nobody waited: the next wait
            // returns the pipe's event only.
            assert!(arm(epfd, 1_000));
            std::thread::sleep(std::time::Duration::from_millis(20));
            assert_eq!(write(p[1], b"x".as_ptr() as *const c_void, 1), 1);
            assert_eq!(wait(epfd, &mut out, 1_000), 1);
            assert_eq!({ out[0].data }, 77);
            assert!(!ARMED.load(Relaxed));
            // Not ready again until armed again: a zero wait still sees the
            // pipe only.
            assert_eq!(wait(epfd, &mut out, 0), 1);
            assert_eq!({ out[0].data }, 77);
            crate::close(epfd);
            assert!(!in_set(epfd));
            crate::close(p[0]);
            crate::close(p[1]);
        }
    }
}
