//! The backend's CPU clock, read at each call's two ends for its `c`.
//!
//! Linux's per-thread CPU clock has no vDSO fast path: each read is a
//! system call (it takes the run queue's lock; on the project's VM the
//! reads were ~6 % of a traced backend's CPU samples at saturation when
//! the tracer read it at every wait too). But while a thread is not
//! switched out its CPU time advances with the wall clock, so the clock is
//! read for real once after a switch and carried forward by the monotonic
//! clock (vDSO, no system call) until the next one: the method of `run
//! --trace`'s clock (crates/run/src/thread_cpu.rs), written again here
//! because the preload library has no dependencies.
//!
//! A switch is seen from user space through a perf event opened on the
//! thread: the kernel bumps the sequence word of the event's mmapped page
//! each time it schedules the thread in or out. Most switches of a backend
//! are its own sleeps in the blocking calls the library wraps (the wait for
//! its client between round trips, a WAL flush, a lock): across those the
//! clock is carried over without a reading (`before_block`,
//! `after_block`), since a sleeping thread spends no CPU and what the
//! kernel spends on the call belongs to the wait, which a call's `c`
//! leaves out anyway. Only a switch elsewhere (a preemption) makes the next
//! read a system call: ~0.03 a query at saturation, against 1.05 when the
//! clock was read for real after every wait for the client. What the
//! carried clock counts that the kernel's does not (time the hypervisor
//! took the virtual CPU away, interrupts) lasts only until the next
//! switch, and the value never goes backwards. Where perf events are
//! refused (a `perf_event_paranoid` of 3, a seccomp filter), or a sleep
//! does not show in the page, every read is a system call.

use std::ffi::{c_int, c_long, c_void};
use std::sync::atomic::{AtomicU32, Ordering};

use crate::{clock_ns, CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID};

extern "C" {
    fn syscall(n: c_long, ...) -> c_long;
    fn mmap(
        addr: *mut c_void,
        len: usize,
        prot: c_int,
        flags: c_int,
        fd: c_int,
        off: i64,
    ) -> *mut c_void;
    fn munmap(addr: *mut c_void, len: usize) -> c_int;
    fn sysconf(name: c_int) -> c_long;
}

#[cfg(target_arch = "x86_64")]
const SYS_PERF_EVENT_OPEN: c_long = 298;
#[cfg(target_arch = "aarch64")]
const SYS_PERF_EVENT_OPEN: c_long = 241;
const PROT_READ: c_int = 1;
const MAP_SHARED: c_int = 1;
const MAP_FAILED: *mut c_void = !0usize as *mut c_void;
const SC_PAGESIZE: c_int = 30;

/// One thread's CPU clock: the switch detector and the last real reading.
pub struct ThreadClock {
    /// The event's page (null: every read is a system call).
    page: *const c_void,
    /// The switch sequence when `cpu` was read; `None` before a reading.
    seq: Option<u32>,
    /// The last real reading of the thread's CPU clock, ns.
    cpu: i64,
    /// The monotonic clock just after that reading, ns.
    wall: i64,
    /// The last value handed out, so that values never go backwards.
    last: i64,
}

/// `struct perf_event_attr` up to PERF_ATTR_SIZE_VER0 (linux/perf_event.h;
/// the kernel accepts this first, stable version of the layout).
#[repr(C)]
#[derive(Default)]
struct PerfEventAttr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    bp_addr: u64,
}

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_TASK_CLOCK: u64 = 1;
/// `exclude_kernel` and `exclude_hv`: what an unprivileged process may ask
/// for under the default `perf_event_paranoid` of 2; the count itself is
/// never used.
const EXCLUDE_KERNEL_HV: u64 = (1 << 5) | (1 << 6);
/// Offset of `lock`, the sequence word, in `struct perf_event_mmap_page`
/// (after `version` and `compat_version`).
const LOCK_OFFSET: usize = 8;
const PERF_FLAG_FD_CLOEXEC: c_long = 8;

impl ThreadClock {
    /// The calling thread's clock. `direct` (the environment asks for
    /// it): every read a system call.
    pub fn open(direct: bool) -> ThreadClock {
        ThreadClock {
            page: if direct {
                std::ptr::null()
            } else {
                switch_page()
            },
            seq: None,
            cpu: 0,
            wall: 0,
            last: 0,
        }
    }

    fn sequence(&self) -> u32 {
        // SAFETY: the page stays mapped for the process's life; the kernel
        // writes the word concurrently, so it is read as an atomic,
        // 4-aligned at offset 8 of a page-aligned mapping.
        let word = unsafe { &*(self.page.cast::<u8>().add(LOCK_OFFSET) as *const AtomicU32) };
        word.load(Ordering::Acquire)
    }

    /// The thread's CPU time, ns, at `now` (the monotonic clock, ns, read
    /// just before: the caller reads it once for both clocks); never less
    /// than the previous value.
    pub fn read(&mut self, now: i64) -> i64 {
        let v = if self.page.is_null() {
            clock_ns(CLOCK_THREAD_CPUTIME_ID)
        } else {
            // The sequence is read after `now`: a switch before `now`
            // shows as a new sequence, and then the clock is read again.
            let seq = self.sequence();
            if self.seq == Some(seq) {
                self.cpu + (now - self.wall)
            } else {
                // The sequence is read before the clock: a switch after
                // this point shows as a new sequence at the next read,
                // which then reads the clock again.
                self.cpu = clock_ns(CLOCK_THREAD_CPUTIME_ID);
                self.wall = clock_ns(CLOCK_MONOTONIC);
                self.seq = Some(seq);
                self.cpu
            }
        };
        self.last = self.last.max(v);
        self.last
    }
    /// Before a blocking call, at `now` (monotonic ns): the carried CPU
    /// clock, if the thread was not switched out since its last reading.
    pub fn before_block(&self, now: i64) -> Option<i64> {
        if self.page.is_null() {
            return None;
        }
        // As in `read`: the sequence after `now`.
        let seq = self.sequence();
        (self.seq == Some(seq)).then(|| self.last.max(self.cpu + (now - self.wall)))
    }

    /// After the blocking call returned: if the thread was switched out
    /// inside it (it slept), the clock goes on from `before` with no
    /// system call. Asleep it spent no CPU, and what the kernel spent on
    /// the call is the wait's (a call's `c` leaves its waits' CPU out, see
    /// session.rs), so the call's start after the wait for the client
    /// needs no real reading. A switch anywhere else (a preemption) still
    /// shows as a new sequence at the next `read`, which reads the clock.
    /// Returns the monotonic clock, ns, read after the sequence.
    pub fn after_block(&mut self, before: Option<i64>) -> i64 {
        let Some(cpu) = before else {
            return clock_ns(CLOCK_MONOTONIC);
        };
        // The sequence before the clock: a switch after this point shows
        // as a new sequence at the next read.
        let seq = self.sequence();
        let now = clock_ns(CLOCK_MONOTONIC);
        if self.seq != Some(seq) {
            self.cpu = cpu;
            self.wall = now;
            self.seq = Some(seq);
        }
        now
    }
}

/// A perf event counting the thread's own task clock, mmapped only for
/// the sequence word of its page; null if refused, or if a sleep does not
/// show in it. The event and its page stay for the process's life (the
/// descriptor is close-on-exec).
fn switch_page() -> *const c_void {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: std::mem::size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_TASK_CLOCK,
        flags: EXCLUDE_KERNEL_HV,
        ..PerfEventAttr::default()
    };
    // SAFETY: perf_event_open reads the attr we own; pid 0 / cpu -1 is
    // this thread on any CPU; no group, no flags but close-on-exec.
    let fd = unsafe {
        syscall(
            SYS_PERF_EVENT_OPEN,
            &attr as *const PerfEventAttr,
            0 as c_int,
            -1 as c_int,
            -1 as c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return std::ptr::null();
    }
    let fd = fd as c_int;
    // SAFETY: sysconf has no preconditions.
    let size = match unsafe { sysconf(SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    };
    // SAFETY: a fresh read-only shared mapping of the event's first page
    // (the metadata page; no ring buffer follows it).
    let page = unsafe { mmap(std::ptr::null_mut(), size, PROT_READ, MAP_SHARED, fd, 0) };
    if page == MAP_FAILED {
        // SAFETY: the fd is ours and closed once.
        unsafe { crate::close(fd) };
        return std::ptr::null();
    }
    let clock = ThreadClock {
        page,
        seq: None,
        cpu: 0,
        wall: 0,
        last: 0,
    };
    // The carried clock is only right if the kernel marks every switch:
    // check that a sleep, which switches the thread out, shows.
    let before = clock.sequence();
    let us = crate::Timespec {
        tv_sec: 0,
        tv_nsec: 1000,
    };
    // SAFETY: a valid timespec (the library's nanosleep passes it to
    // libc's: the state is held, so it times nothing).
    unsafe {
        crate::nanosleep(
            &us as *const crate::Timespec as *const c_void,
            std::ptr::null_mut(),
        )
    };
    if clock.sequence() == before {
        // SAFETY: the mapping and fd were made above and are released once.
        unsafe {
            munmap(page, size);
            crate::close(fd);
        }
        return std::ptr::null();
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(d: std::time::Duration) {
        let t = std::time::Instant::now();
        while t.elapsed() < d {
            std::hint::black_box(0);
        }
    }

    /// The carried clock agrees with the kernel's over busy stretches and
    /// sleeps: a sleep must not count as CPU, spinning must.
    #[test]
    fn the_carried_clock_follows_the_kernels() {
        let mut clock = ThreadClock::open(false);
        let w0 = clock_ns(CLOCK_MONOTONIC);
        let k0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        let c0 = clock.read(clock_ns(CLOCK_MONOTONIC));
        for i in 0..200 {
            spin(std::time::Duration::from_micros(200));
            if i % 10 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            assert!(clock.read(clock_ns(CLOCK_MONOTONIC)) >= c0);
        }
        let k = clock_ns(CLOCK_THREAD_CPUTIME_ID) - k0;
        let c = clock.read(clock_ns(CLOCK_MONOTONIC)) - c0;
        let wall = clock_ns(CLOCK_MONOTONIC) - w0;
        // 40 ms of spinning and 40 ms asleep: the carried clock must not
        // have counted the sleeps nor missed the spinning.
        assert!(c <= wall - 30_000_000, "carried {c} ns of {wall} ns");
        let ratio = c as f64 / k as f64;
        assert!((0.9..1.1).contains(&ratio), "carried {c} ns, kernel {k} ns");
    }

    /// A sleep between `before_block` and `after_block` is carried over
    /// without counting: the clock after it agrees with the kernel's.
    #[test]
    fn a_sleep_carried_over_is_not_cpu() {
        let mut clock = ThreadClock::open(false);
        if clock.page.is_null() {
            // perf events refused here: every read is the kernel's.
            return;
        }
        let k0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
        let c0 = clock.read(clock_ns(CLOCK_MONOTONIC));
        let w0 = clock_ns(CLOCK_MONOTONIC);
        let mut carried_over = 0;
        for _ in 0..40 {
            // A call (read at its start and end, as the tracer does),
            // then a sleep between calls.
            clock.read(clock_ns(CLOCK_MONOTONIC));
            spin(std::time::Duration::from_micros(250));
            clock.read(clock_ns(CLOCK_MONOTONIC));
            let before = clock.before_block(clock_ns(CLOCK_MONOTONIC));
            carried_over += before.is_some() as usize;
            std::thread::sleep(std::time::Duration::from_millis(1));
            clock.after_block(before);
        }
        // A call preempted before its end leaves its sleep to a real
        // reading; on a busy machine that is many of them, not all.
        assert!(carried_over >= 1, "no sleep of 40 carried over");
        let c = clock.read(clock_ns(CLOCK_MONOTONIC)) - c0;
        let k = clock_ns(CLOCK_THREAD_CPUTIME_ID) - k0;
        let wall = clock_ns(CLOCK_MONOTONIC) - w0;
        // 10 ms spinning, 40 ms asleep: the sleeps are not CPU, and the
        // clock carried over them stays near the kernel's (it leaves out
        // the kernel's CPU inside each sleep's system call).
        assert!(c <= wall - 30_000_000, "carried {c} ns of {wall} ns");
        let ratio = c as f64 / k as f64;
        assert!((0.7..1.1).contains(&ratio), "carried {c} ns, kernel {k} ns");
    }

    #[test]
    fn a_direct_clock_reads_the_kernels() {
        let mut clock = ThreadClock::open(true);
        assert!(clock.page.is_null());
        let a = clock.read(clock_ns(CLOCK_MONOTONIC));
        spin(std::time::Duration::from_millis(2));
        let b = clock.read(clock_ns(CLOCK_MONOTONIC));
        assert!(b - a >= 1_000_000, "{a} {b}");
    }
}
