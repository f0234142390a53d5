//! The calling thread's CPU time, read for each call's `c`.
//!
//! Linux's per-thread CPU clock has no vDSO fast path: each read is a
//! system call (≈0.2 µs in a tight loop; ≈0.7 µs per call in a traced run
//! on a VM, where it takes the run queue's lock). But while a thread is not
//! switched out its CPU time advances with the wall clock, so the clock is
//! read for real once after each switch and carried forward by the
//! monotonic clock (vDSO, no system call) until the next one.
//!
//! A switch is seen from user space through a perf event opened on the
//! thread: the kernel updates the event's mmapped page, and bumps its
//! sequence word, each time it schedules the thread in or out. In a
//! traced run at 20 sessions 0.3–0.5 system calls per transaction remain,
//! where each read was one. What the carried
//! clock counts that the kernel's does not (time the hypervisor took the
//! virtual CPU away, interrupts) lasts only until the next switch, and the
//! value never goes backwards. Where perf events are refused (a
//! `perf_event_paranoid` of 3, a seccomp filter), or a sleep does not show
//! in the page when the thread starts, every read is a system call, as
//! before.
//!
//! Why by hand: the perf crates open sampling buffers and counters; none
//! exposes the page's sequence word, and this needs only an open, an mmap
//! and an atomic load.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU32, Ordering};

/// CPU time of the calling thread in nanoseconds; never less than the
/// previous value read on this thread.
pub fn thread_cpu_nanos() -> i64 {
    CLOCK.with(|c| c.borrow_mut().read())
}

thread_local! {
    static CLOCK: RefCell<ThreadClock> = RefCell::new(ThreadClock::open());
}

/// One thread's CPU clock: the switch detector and the last real reading.
struct ThreadClock {
    switches: Option<SwitchPage>,
    /// The switch sequence when `cpu` was read; `None` before a reading.
    seq: Option<u32>,
    /// The last real reading of the thread's CPU clock, ns.
    cpu: i64,
    /// The monotonic clock just after that reading, ns.
    wall: i64,
    /// The last value handed out, so that values never go backwards.
    last: i64,
}

impl ThreadClock {
    fn open() -> ThreadClock {
        ThreadClock {
            switches: SwitchPage::open(),
            seq: None,
            cpu: 0,
            wall: 0,
            last: 0,
        }
    }

    fn read(&mut self) -> i64 {
        let v = match &self.switches {
            None => kernel_thread_cpu(),
            Some(page) => {
                let seq = page.sequence();
                let carried = if self.seq == Some(seq) {
                    let now = monotonic_nanos();
                    // A switch between the two loads would put time off
                    // the CPU into the carried value: read the word again.
                    (page.sequence() == seq).then(|| self.cpu + (now - self.wall))
                } else {
                    None
                };
                match carried {
                    Some(v) => v,
                    None => {
                        // The sequence is read before the clock: a switch
                        // after this point shows as a new sequence at the
                        // next read, which then reads the clock again.
                        let seq = page.sequence();
                        self.cpu = kernel_thread_cpu();
                        self.wall = monotonic_nanos();
                        self.seq = Some(seq);
                        self.cpu
                    }
                }
            }
        };
        self.last = self.last.max(v);
        self.last
    }
}

/// A perf event counting the thread's own task clock, mmapped only for
/// the sequence word of its page.
struct SwitchPage {
    fd: libc::c_int,
    page: *mut libc::c_void,
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

impl SwitchPage {
    fn open() -> Option<SwitchPage> {
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
            libc::syscall(
                libc::SYS_perf_event_open,
                &attr as *const PerfEventAttr,
                0,
                -1,
                -1,
                libc::c_ulong::from(0x8u8), // PERF_FLAG_FD_CLOEXEC
            )
        };
        if fd < 0 {
            return None;
        }
        let fd = fd as libc::c_int;
        // SAFETY: a fresh read-only shared mapping of the event's first page
        // (the metadata page; no ring buffer follows it).
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                page_size(),
                libc::PROT_READ,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            // SAFETY: the fd is ours and closed once.
            unsafe { libc::close(fd) };
            return None;
        }
        let switches = SwitchPage { fd, page };
        // The carried clock is only right if the kernel marks every switch:
        // check that a sleep, which switches the thread out, shows.
        let before = switches.sequence();
        std::thread::sleep(std::time::Duration::from_micros(1));
        (switches.sequence() != before).then_some(switches)
    }

    #[inline]
    fn sequence(&self) -> u32 {
        // SAFETY: the page stays mapped while self lives; the kernel writes
        // the word concurrently, so it is read as an atomic, 4-aligned at
        // offset 8 of a page-aligned mapping.
        let word = unsafe { &*(self.page.cast::<u8>().add(LOCK_OFFSET) as *const AtomicU32) };
        word.load(Ordering::Acquire)
    }
}

impl Drop for SwitchPage {
    fn drop(&mut self) {
        // SAFETY: mapping and fd were created by open() and are released
        // once, here.
        unsafe {
            libc::munmap(self.page, page_size());
            libc::close(self.fd);
        }
    }
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// The kernel's CPU clock of the calling thread: a system call.
///
/// Why libc: the standard library has no per-thread CPU clock, and reading
/// /proc per call would cost more than the calls it measures.
fn kernel_thread_cpu() -> i64 {
    read_clock(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// CLOCK_MONOTONIC through the vDSO, ns.
fn monotonic_nanos() -> i64 {
    read_clock(libc::CLOCK_MONOTONIC)
}

fn read_clock(id: libc::clockid_t) -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; the clock ids
    // are constants every Linux kernel supports.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
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
        let w0 = monotonic_nanos();
        let k0 = kernel_thread_cpu();
        let c0 = thread_cpu_nanos();
        for i in 0..200 {
            spin(std::time::Duration::from_micros(200));
            if i % 10 == 0 {
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            let a = thread_cpu_nanos();
            assert!(a >= c0);
        }
        let k = kernel_thread_cpu() - k0;
        let c = thread_cpu_nanos() - c0;
        let wall = monotonic_nanos() - w0;
        // 40 ms of spinning and 40 ms asleep: the carried clock must not
        // have counted the sleeps nor missed the spinning.
        assert!(c <= wall - 30_000_000, "carried {c} ns of {wall} ns");
        let ratio = c as f64 / k as f64;
        assert!((0.9..1.1).contains(&ratio), "carried {c} ns, kernel {k} ns");
    }

    #[test]
    fn perf_events_are_available_here_or_reads_fall_back() {
        let clock = ThreadClock::open();
        if let Some(page) = &clock.switches {
            let before = page.sequence();
            std::thread::sleep(std::time::Duration::from_millis(1));
            assert_ne!(page.sequence(), before, "a sleep switches the thread out");
        }
        assert!(thread_cpu_nanos() > 0);
    }
}
