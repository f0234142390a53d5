//! A thread's CPU clock, read for each call's `c` by the client trace
//! (`run --trace`) and by the server tracer (the preload library).
//!
//! Linux's per-thread CPU clock has no vDSO fast path: each read is a
//! system call that takes the run queue's lock (≈0.2 µs in a tight loop,
//! ≈0.7 µs per call in a traced run on a VM). But while a thread is not
//! switched out its CPU time advances with the wall clock, so the clock is
//! read for real once after a switch and carried forward by the monotonic
//! clock (vDSO, no system call) until the next one. What the carried clock
//! counts that the kernel's does not (time the hypervisor took the virtual
//! CPU away, interrupts) lasts only until the next switch, and the value
//! never goes backwards.
//!
//! The method needs to see, from user space and without a system call,
//! that the thread was switched out since the last real reading. Two
//! detectors, the first that works on the thread is used:
//!
//! - **rseq** (restartable sequences, Linux 4.18; glibc 2.35 and later
//!   register every thread's area). The uapi header (linux/rseq.h) says of
//!   the area's `rseq_cs` field that it is "set to NULL by the kernel when
//!   it restarts an assembly instruction sequence block, as well as when
//!   the kernel detects that it is preempting or delivering a signal
//!   outside of the range targeted by the rseq_cs". So the clock points
//!   `rseq_cs` at a descriptor whose range is empty (no instruction is
//!   ever inside it) when it reads the clock for real, and a switch shows
//!   as the field cleared. The kernel does this work at every switch of a
//!   thread with an rseq area anyway, so the detector costs nothing per
//!   switch. Before it is used on a thread, three sleeps, with the thread
//!   pinned to its CPU, must each clear the field: a kernel that marks
//!   only preemption in user mode, or only a change of CPU, fails the
//!   check and the next detector is used.
//! - **a perf event** counting the thread's task clock, mmapped only for
//!   its page's sequence word, which the kernel bumps each time it
//!   schedules the thread in or out. It costs ~250 ns of kernel time per
//!   switch on the project's VM (a pipe ping-pong pinned to one CPU: 2.0
//!   µs a round trip without it, 2.5 µs with it on both ends), which is
//!   why rseq comes first.
//!
//! Where neither works (no rseq area, `perf_event_paranoid` of 3, a seccomp
//! filter), every read is a system call.
//!
//! Most switches of a server backend are its own sleeps in calls the
//! server tracer wraps (the wait for its client, a WAL flush, a lock):
//! across those the clock is carried over without a reading
//! (`before_block`, `after_block`), since a sleeping thread spends no CPU
//! and what the kernel spends on the call belongs to the wait. The
//! detector is off during such a call, so those switches cost the kernel
//! nothing for it either.
//!
//! Why by hand: the perf crates open sampling buffers and counters and none
//! exposes the page's sequence word; no crate exposes rseq's `rseq_cs` for
//! this; and the server tracer, loaded into PostgreSQL's processes, takes
//! no dependencies. System calls the tracer wraps (`nanosleep`, `close`)
//! are made here with `syscall`, so that the tracer does not time them.

use std::ffi::{c_char, c_int, c_long, c_void};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

extern "C" {
    fn syscall(n: c_long, ...) -> c_long;
    fn clock_gettime(clk: c_int, ts: *mut Timespec) -> c_int;
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
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn __errno_location() -> *mut c_int;
}

#[repr(C)]
struct Timespec {
    tv_sec: c_long,
    tv_nsec: c_long,
}

const CLOCK_MONOTONIC: c_int = 1;
const CLOCK_THREAD_CPUTIME_ID: c_int = 3;

/// System call numbers and rseq's signature, per architecture (the
/// kernel's unistd.h; glibc's RSEQ_SIG, which glibc registers each
/// thread's area with and the kernel checks before a descriptor's abort
/// address).
#[cfg(target_arch = "x86_64")]
mod arch {
    use std::ffi::c_long;
    pub const SUPPORTED: bool = true;
    pub const CLOSE: c_long = 3;
    pub const NANOSLEEP: c_long = 35;
    pub const SCHED_SETAFFINITY: c_long = 203;
    pub const SCHED_GETAFFINITY: c_long = 204;
    pub const PERF_EVENT_OPEN: c_long = 298;
    pub const GETCPU: c_long = 309;
    pub const RSEQ: c_long = 334;
    pub const RSEQ_SIG: u32 = 0x5305_3053;

    /// The thread pointer glibc's `__rseq_offset` is relative to.
    #[inline]
    pub fn thread_pointer() -> *mut u8 {
        let tp: *mut u8;
        // SAFETY: on x86-64 Linux %fs:0 holds the thread control block's
        // own address (the TLS ABI); reading it has no side effects.
        unsafe {
            std::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp, options(nostack, readonly, preserves_flags))
        };
        tp
    }
}

#[cfg(target_arch = "aarch64")]
mod arch {
    use std::ffi::c_long;
    pub const SUPPORTED: bool = true;
    pub const CLOSE: c_long = 57;
    pub const NANOSLEEP: c_long = 101;
    pub const SCHED_SETAFFINITY: c_long = 122;
    pub const SCHED_GETAFFINITY: c_long = 123;
    pub const PERF_EVENT_OPEN: c_long = 241;
    pub const GETCPU: c_long = 168;
    pub const RSEQ: c_long = 293;
    pub const RSEQ_SIG: u32 = 0xd428_bc00;

    #[inline]
    pub fn thread_pointer() -> *mut u8 {
        let tp: *mut u8;
        // SAFETY: reading TPIDR_EL0, the thread pointer, has no side effects.
        unsafe {
            std::arch::asm!("mrs {}, tpidr_el0", out(reg) tp, options(nomem, nostack, preserves_flags))
        };
        tp
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
mod arch {
    use std::ffi::c_long;
    pub const SUPPORTED: bool = false;
    pub const CLOSE: c_long = -1;
    pub const NANOSLEEP: c_long = -1;
    pub const SCHED_SETAFFINITY: c_long = -1;
    pub const SCHED_GETAFFINITY: c_long = -1;
    pub const PERF_EVENT_OPEN: c_long = -1;
    pub const GETCPU: c_long = -1;
    pub const RSEQ: c_long = -1;
    pub const RSEQ_SIG: u32 = 0;

    pub fn thread_pointer() -> *mut u8 {
        std::ptr::null_mut()
    }
}

/// An id of the calling thread, read without a call: its thread pointer,
/// distinct among a process's live threads (0 on an architecture this
/// crate does not know).
#[inline]
pub fn thread_id() -> usize {
    arch::thread_pointer() as usize
}

/// The monotonic clock, ns (the vDSO: no system call).
pub fn monotonic_ns() -> i64 {
    read_clock(CLOCK_MONOTONIC)
}

/// The kernel's CPU clock of the calling thread, ns: a system call.
pub fn kernel_thread_cpu_ns() -> i64 {
    read_clock(CLOCK_THREAD_CPUTIME_ID)
}

fn read_clock(clk: c_int) -> i64 {
    let mut ts = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid, writable timespec; the clock ids are
    // constants every Linux kernel supports.
    if unsafe { clock_gettime(clk, &mut ts) } != 0 {
        return 0;
    }
    ts.tv_sec * 1_000_000_000 + ts.tv_nsec
}

/// Which detectors a clock may use (the server tracer's
/// `TRACELAB_SERVER_TRACE_CPU`: `syscall`, `perf` or unset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// rseq, else the perf event, else system calls.
    Auto,
    /// The perf event, else system calls (to compare the detectors).
    Perf,
    /// Every read a system call.
    Syscall,
}

impl Want {
    /// `syscall`, `perf`, anything else (or nothing): `Auto`.
    pub fn from_setting(v: Option<&str>) -> Want {
        match v {
            Some("syscall") => Want::Syscall,
            Some("perf") => Want::Perf,
            _ => Want::Auto,
        }
    }
}

/// How a clock sees its thread's switches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detector {
    Rseq,
    Perf,
    /// None: every read is a system call.
    Syscall,
}

enum Switches {
    /// The thread's `rseq_cs` field (in its rseq area, which lives as
    /// long as the thread; a clock is not `Send`).
    Rseq(*const AtomicU64),
    /// The perf event's descriptor and page.
    Perf {
        fd: c_int,
        page: *mut c_void,
    },
    None,
}

/// One thread's CPU clock: the switch detector and the last real reading.
/// Not `Send`: it reads the thread's own clock and rseq area.
pub struct ThreadClock {
    switches: Switches,
    /// The detector's token when `cpu` was read; `None` before a reading.
    armed: Option<u64>,
    /// The last real reading of the thread's CPU clock, ns.
    cpu: i64,
    /// The monotonic clock just after that reading, ns.
    wall: i64,
    /// The last value handed out, so that values never go backwards.
    last: i64,
}

impl ThreadClock {
    /// The calling thread's clock, with the first detector of `want`
    /// that works on this thread.
    pub fn open(want: Want) -> ThreadClock {
        let switches = match want {
            Want::Syscall => Switches::None,
            Want::Perf => perf_page().unwrap_or(Switches::None),
            Want::Auto => rseq_field().or_else(perf_page).unwrap_or(Switches::None),
        };
        ThreadClock {
            switches,
            armed: None,
            cpu: 0,
            wall: 0,
            last: 0,
        }
    }

    pub fn detector(&self) -> Detector {
        match self.switches {
            Switches::Rseq(_) => Detector::Rseq,
            Switches::Perf { .. } => Detector::Perf,
            Switches::None => Detector::Syscall,
        }
    }

    /// The detector's current token: unchanged since `arm` while the
    /// thread was not switched out.
    #[inline]
    fn token(&self) -> Option<u64> {
        match self.switches {
            // SAFETY: the field is in the thread's own rseq area, valid
            // while the thread lives; the kernel writes it only when the
            // thread enters user space again, so an atomic load suffices.
            Switches::Rseq(cs) => Some(unsafe { &*cs }.load(Ordering::Acquire)),
            Switches::Perf { page, .. } => Some(u64::from(page_sequence(page))),
            Switches::None => None,
        }
    }

    /// Starts watching for the next switch; returns the token to compare.
    #[inline]
    fn arm(&self) -> Option<u64> {
        match self.switches {
            Switches::Rseq(cs) => {
                let d = descriptor();
                // SAFETY: as in `token`; the descriptor is a static, valid
                // for the kernel to read at any later switch.
                unsafe { &*cs }.store(d, Ordering::Release);
                Some(d)
            }
            _ => self.token(),
        }
    }

    /// True when the thread was not switched out since the last real
    /// reading.
    #[inline]
    fn steady(&self) -> bool {
        self.armed.is_some() && self.token() == self.armed
    }

    /// The thread's CPU time, ns, at `now` (the monotonic clock, ns, read
    /// just before: a caller that needs both clocks reads it once); never
    /// less than the previous value.
    pub fn read(&mut self, now: i64) -> i64 {
        // The token is read after `now`: a switch before `now` shows, and
        // then the clock is read again.
        let v = if matches!(self.switches, Switches::None) {
            kernel_thread_cpu_ns()
        } else if self.steady() {
            self.cpu + (now - self.wall)
        } else {
            // Armed before the clock is read: a switch after this point
            // shows at the next read, which then reads the clock again.
            self.armed = self.arm();
            self.cpu = kernel_thread_cpu_ns();
            self.wall = monotonic_ns();
            self.cpu
        };
        self.last = self.last.max(v);
        self.last
    }

    /// Before a blocking call, at `now` (monotonic ns): the carried CPU
    /// clock, if the thread was not switched out since its last reading.
    ///
    /// The detector is switched off for the call: `after_block` starts
    /// the clock again from the value returned whatever happened inside
    /// the call, so a switch there needs no mark. An rseq field left
    /// pointing at the descriptor would make the kernel read the
    /// descriptor and clear the field at the sleep's switch; a cleared
    /// field costs it one load (traced lookups at saturation, perf: the
    /// kernel's rseq work ~0.13 µs a query with the field left armed).
    pub fn before_block(&mut self, now: i64) -> Option<i64> {
        if !self.steady() {
            return None;
        }
        let carried = self.last.max(self.cpu + (now - self.wall));
        if let Switches::Rseq(cs) = self.switches {
            // SAFETY: as in `token`.
            unsafe { &*cs }.store(0, Ordering::Relaxed);
        }
        self.armed = None;
        Some(carried)
    }

    /// After the blocking call returned: the clock goes on from `before`
    /// with no system call. A thread asleep spends no CPU, and what the
    /// kernel spent on the call (asleep or not: a read from the page
    /// cache) is the wait's, which a call's `c` leaves out anyway. A
    /// switch anywhere else (a preemption) still shows at the next
    /// `read`, which reads the clock. Returns the monotonic clock, ns,
    /// read after the detector was armed again.
    pub fn after_block(&mut self, before: Option<i64>) -> i64 {
        let Some(cpu) = before else {
            return monotonic_ns();
        };
        // Armed before the clock: a switch after this point shows at the
        // next read.
        self.armed = self.arm();
        let now = monotonic_ns();
        self.cpu = cpu;
        self.wall = now;
        now
    }
}

impl Drop for ThreadClock {
    fn drop(&mut self) {
        match self.switches {
            Switches::Rseq(cs) => {
                // Not left pointing at the descriptor (a static, so it
                // would be harmless; but the field is glibc's to share).
                // SAFETY: as in `token`.
                let _ = unsafe { &*cs }.compare_exchange(
                    descriptor(),
                    0,
                    Ordering::AcqRel,
                    Ordering::Relaxed,
                );
            }
            Switches::Perf { fd, page } => {
                // SAFETY: mapping and fd were made by `perf_page` and are
                // released once, here.
                unsafe {
                    munmap(page, page_size());
                    syscall(arch::CLOSE, c_long::from(fd));
                }
            }
            Switches::None => {}
        }
    }
}

/// `struct rseq_cs` (linux/rseq.h): version 0, no flags, an empty range
/// at address 0 (`post_commit_offset` 0: no instruction is ever inside
/// it, so the kernel never moves the thread to `abort_ip`, only clears the
/// field), and an abort address whose four bytes before it hold the
/// signature, as the kernel checks.
#[repr(C, align(32))]
struct RseqCs {
    version: u32,
    flags: u32,
    start_ip: u64,
    post_commit_offset: u64,
    abort_ip: AtomicU64,
}

static DESCRIPTOR: RseqCs = RseqCs {
    version: 0,
    flags: 0,
    start_ip: 0,
    post_commit_offset: 0,
    abort_ip: AtomicU64::new(0),
};

/// The signature, then the word `abort_ip` points at.
#[repr(C, align(8))]
struct Signature([u32; 2]);
static SIGNATURE: Signature = Signature([arch::RSEQ_SIG, 0]);

/// The descriptor's address, its abort address set (the same value from
/// every thread).
#[inline]
fn descriptor() -> u64 {
    &DESCRIPTOR as *const RseqCs as u64
}

/// The calling thread's `rseq_cs` field, if glibc registered an rseq area
/// for the thread with the signature this crate writes, and the kernel
/// clears the field at every sleep.
fn rseq_field() -> Option<Switches> {
    if !arch::SUPPORTED {
        return None;
    }
    // SAFETY: dlsym with RTLD_DEFAULT (null) and a NUL-terminated name.
    let offset = unsafe { dlsym(std::ptr::null_mut(), c"__rseq_offset".as_ptr()) };
    // SAFETY: as above.
    let size = unsafe { dlsym(std::ptr::null_mut(), c"__rseq_size".as_ptr()) };
    if offset.is_null() || size.is_null() {
        return None; // a glibc before 2.35, or another libc
    }
    // SAFETY: glibc's `const ptrdiff_t __rseq_offset` and `const unsigned
    // int __rseq_size`, set before any thread runs.
    let (offset, size) = unsafe { (*(offset as *const isize), *(size as *const u32)) };
    // `rseq_cs` is the 8 bytes at offset 8 of `struct rseq`.
    if size < 16 {
        return None; // rseq not registered (a tunable, a sandbox, valgrind)
    }
    let area = arch::thread_pointer().wrapping_offset(offset);
    // `cpu_id`, at offset 4, is negative while the thread has no area
    // registered (glibc's -1 before, -2 after a failed registration): the
    // check below would then register one behind glibc's back.
    // SAFETY: the area is the thread's own (glibc's TLS block), 32-aligned.
    let cpu_id = unsafe { std::ptr::read_volatile(area.wrapping_add(4) as *const i32) };
    if cpu_id < 0 || !registered_with_our_signature(area, size) {
        return None;
    }
    DESCRIPTOR
        .abort_ip
        .store(SIGNATURE.0.as_ptr() as u64 + 4, Ordering::Release);
    let cs = area.wrapping_add(8) as *const AtomicU64;
    // SAFETY: the field is the thread's own, 8-aligned (the area is
    // 32-aligned).
    let field = unsafe { &*cs };
    let pinned = pin_to_this_cpu();
    let marked = (0..3).all(|_| {
        field.store(descriptor(), Ordering::Release);
        sleep_a_microsecond();
        field.load(Ordering::Acquire) != descriptor()
    });
    if let Some(mask) = pinned {
        set_affinity(&mask);
    }
    if !marked {
        let _ = field.compare_exchange(descriptor(), 0, Ordering::AcqRel, Ordering::Relaxed);
        return None;
    }
    Some(Switches::Rseq(cs))
}

/// Registering the same area again is refused with EBUSY when it is
/// registered with the same length and signature (EPERM for another
/// signature, EINVAL for another area or length): a check that changes
/// nothing. glibc registers 32 bytes, or its feature size rounded up to 32.
fn registered_with_our_signature(area: *mut u8, size: u32) -> bool {
    const EBUSY: c_int = 16;
    const RSEQ_FLAG_UNREGISTER: c_long = 1;
    let rseq = |len: u32, flags: c_long| {
        // SAFETY: rseq(2) on the thread's own area with glibc's signature:
        // it registers only a thread that has no area (ruled out by the
        // caller, and undone below), and writes nothing when it refuses.
        unsafe {
            syscall(
                arch::RSEQ,
                area as c_long,
                c_long::from(len),
                flags,
                c_long::from(arch::RSEQ_SIG as i32),
            )
        }
    };
    [32, size.div_ceil(32) * 32].iter().any(|&len| {
        let rc = rseq(len, 0);
        if rc == 0 {
            // It had no area after all and now has ours: take it back.
            rseq(len, RSEQ_FLAG_UNREGISTER);
            return false;
        }
        // SAFETY: errno is the calling thread's.
        rc == -1 && unsafe { *__errno_location() } == EBUSY
    })
}

/// CPU masks of up to 1,024 CPUs.
type CpuMask = [u64; 16];

/// Pins the thread to the CPU it is on; the mask it had, to put back.
/// (So that a sleep in the check cannot move it to another CPU: a kernel
/// that clears the field only when the CPU changes must fail the check.)
fn pin_to_this_cpu() -> Option<CpuMask> {
    let mut mask: CpuMask = [0; 16];
    // SAFETY: the kernel writes at most the buffer's size into it.
    let n = unsafe {
        syscall(
            arch::SCHED_GETAFFINITY,
            0 as c_long,
            std::mem::size_of::<CpuMask>() as c_long,
            mask.as_mut_ptr(),
        )
    };
    let mut cpu: u32 = 0;
    // SAFETY: getcpu writes the CPU number into `cpu`; node and cache unused.
    let rc = unsafe {
        syscall(
            arch::GETCPU,
            &mut cpu as *mut u32,
            std::ptr::null_mut::<u32>(),
            std::ptr::null_mut::<c_void>(),
        )
    };
    if n <= 0 || rc != 0 || cpu >= 1024 {
        return None;
    }
    let mut one: CpuMask = [0; 16];
    one[cpu as usize / 64] = 1 << (cpu % 64);
    set_affinity(&one).then_some(mask)
}

fn set_affinity(mask: &CpuMask) -> bool {
    // SAFETY: the kernel reads the mask we own.
    unsafe {
        syscall(
            arch::SCHED_SETAFFINITY,
            0 as c_long,
            std::mem::size_of::<CpuMask>() as c_long,
            mask.as_ptr(),
        ) == 0
    }
}

fn sleep_a_microsecond() {
    let ts = Timespec {
        tv_sec: 0,
        tv_nsec: 1000,
    };
    // SAFETY: a valid timespec; no remainder wanted.
    unsafe {
        syscall(
            arch::NANOSLEEP,
            &ts as *const Timespec,
            std::ptr::null_mut::<Timespec>(),
        )
    };
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
const PROT_READ: c_int = 1;
const MAP_SHARED: c_int = 1;
const MAP_FAILED: *mut c_void = !0usize as *mut c_void;
const SC_PAGESIZE: c_int = 30;

/// A perf event counting the thread's own task clock, mmapped only for the
/// sequence word of its page; `None` if refused, or if a sleep does not
/// show in it.
fn perf_page() -> Option<Switches> {
    if !arch::SUPPORTED {
        return None;
    }
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
            arch::PERF_EVENT_OPEN,
            &attr as *const PerfEventAttr,
            0 as c_long,
            -1 as c_long,
            -1 as c_long,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return None;
    }
    let fd = fd as c_int;
    // SAFETY: a fresh read-only shared mapping of the event's first page
    // (the metadata page; no ring buffer follows it).
    let page = unsafe {
        mmap(
            std::ptr::null_mut(),
            page_size(),
            PROT_READ,
            MAP_SHARED,
            fd,
            0,
        )
    };
    if page == MAP_FAILED {
        // SAFETY: the fd is ours and closed once.
        unsafe { syscall(arch::CLOSE, c_long::from(fd)) };
        return None;
    }
    let switches = Switches::Perf { fd, page };
    // The carried clock is only right if the kernel marks every switch:
    // check that a sleep, which switches the thread out, shows.
    let before = page_sequence(page);
    sleep_a_microsecond();
    if page_sequence(page) == before {
        drop(ThreadClock {
            switches,
            armed: None,
            cpu: 0,
            wall: 0,
            last: 0,
        });
        return None;
    }
    Some(switches)
}

#[inline]
fn page_sequence(page: *mut c_void) -> u32 {
    // SAFETY: the page stays mapped while its clock lives; the kernel
    // writes the word concurrently, so it is read as an atomic, 4-aligned
    // at offset 8 of a page-aligned mapping.
    let word = unsafe { &*(page.cast::<u8>().add(LOCK_OFFSET) as *const AtomicU32) };
    word.load(Ordering::Acquire)
}

fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    match unsafe { sysconf(SC_PAGESIZE) } {
        n if n > 0 => n as usize,
        _ => 4096,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn spin(d: Duration) {
        let t = std::time::Instant::now();
        while t.elapsed() < d {
            std::hint::black_box(0);
        }
    }

    const WANTS: [Want; 3] = [Want::Auto, Want::Perf, Want::Syscall];

    /// The carried clock agrees with the kernel's over busy stretches and
    /// sleeps, with each detector: a sleep must not count as CPU, spinning
    /// must.
    #[test]
    fn the_carried_clock_follows_the_kernels() {
        for want in WANTS {
            let mut clock = ThreadClock::open(want);
            let w0 = monotonic_ns();
            let k0 = kernel_thread_cpu_ns();
            let c0 = clock.read(monotonic_ns());
            for i in 0..200 {
                spin(Duration::from_micros(200));
                if i % 10 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
                assert!(clock.read(monotonic_ns()) >= c0);
            }
            let k = kernel_thread_cpu_ns() - k0;
            let c = clock.read(monotonic_ns()) - c0;
            let wall = monotonic_ns() - w0;
            // 40 ms of spinning and 40 ms asleep: the carried clock must
            // not have counted the sleeps nor missed the spinning.
            let d = clock.detector();
            assert!(c <= wall - 30_000_000, "{d:?}: carried {c} ns of {wall} ns");
            let ratio = c as f64 / k as f64;
            assert!(
                (0.9..1.1).contains(&ratio),
                "{d:?}: carried {c} ns, kernel {k} ns"
            );
        }
    }

    /// A sleep between `before_block` and `after_block` is carried over
    /// without counting: the clock after it agrees with the kernel's.
    #[test]
    fn a_sleep_carried_over_is_not_cpu() {
        for want in [Want::Auto, Want::Perf] {
            let mut clock = ThreadClock::open(want);
            if clock.detector() == Detector::Syscall {
                continue; // no detector here: every read is the kernel's
            }
            let k0 = kernel_thread_cpu_ns();
            let c0 = clock.read(monotonic_ns());
            let w0 = monotonic_ns();
            let mut carried_over = 0;
            for _ in 0..40 {
                // A call (read at its start and end, as the tracer does),
                // then a sleep between calls.
                clock.read(monotonic_ns());
                spin(Duration::from_micros(250));
                clock.read(monotonic_ns());
                let before = clock.before_block(monotonic_ns());
                carried_over += before.is_some() as usize;
                std::thread::sleep(Duration::from_millis(1));
                clock.after_block(before);
            }
            let d = clock.detector();
            // A call preempted before its end leaves its sleep to a real
            // reading; on a busy machine that is many of them, not all.
            assert!(carried_over >= 1, "{d:?}: no sleep of 40 carried over");
            let c = clock.read(monotonic_ns()) - c0;
            let k = kernel_thread_cpu_ns() - k0;
            let wall = monotonic_ns() - w0;
            // 10 ms spinning, 40 ms asleep: the sleeps are not CPU, and
            // the clock carried over them stays near the kernel's (it
            // leaves out the kernel's CPU inside each sleep's call).
            assert!(c <= wall - 30_000_000, "{d:?}: carried {c} ns of {wall} ns");
            let ratio = c as f64 / k as f64;
            assert!(
                (0.7..1.1).contains(&ratio),
                "{d:?}: carried {c} ns, kernel {k} ns"
            );
        }
    }

    /// A preemption (another thread made runnable on the same CPU while
    /// this one spins in user space, never sleeping) shows to the
    /// detector, and the time spent off the CPU is not counted as CPU.
    #[test]
    fn a_preemption_shows_and_is_not_cpu() {
        let mut clock = ThreadClock::open(Want::Auto);
        let Some(mask) = pin_to_this_cpu() else {
            return; // affinity refused here (a cpuset): nothing to pin to
        };
        let ours: CpuMask = {
            let mut m: CpuMask = [0; 16];
            // SAFETY: as in pin_to_this_cpu.
            unsafe {
                syscall(
                    arch::SCHED_GETAFFINITY,
                    0 as c_long,
                    std::mem::size_of::<CpuMask>() as c_long,
                    m.as_mut_ptr(),
                )
            };
            m
        };
        // A hog on the same CPU for 300 ms: the two share it.
        let hog = std::thread::spawn(move || {
            set_affinity(&ours);
            spin(Duration::from_millis(300));
        });
        let w0 = monotonic_ns();
        let k0 = kernel_thread_cpu_ns();
        let c0 = clock.read(monotonic_ns());
        while monotonic_ns() - w0 < 200_000_000 {
            spin(Duration::from_micros(100));
            clock.read(monotonic_ns());
        }
        let c = clock.read(monotonic_ns()) - c0;
        let k = kernel_thread_cpu_ns() - k0;
        hog.join().unwrap();
        set_affinity(&mask);
        let d = clock.detector();
        // Sharing one CPU, this thread ran about half of the 200 ms: had
        // the preemptions gone unseen, the carried clock would say ~200.
        assert!(
            k < 170_000_000,
            "{d:?}: the hog did not share the CPU ({k} ns)"
        );
        let ratio = c as f64 / k as f64;
        assert!(
            (0.9..1.1).contains(&ratio),
            "{d:?}: carried {c} ns, kernel {k} ns"
        );
    }

    /// On a Linux with glibc 2.35 or later (this project's machines), the
    /// rseq detector is the one chosen, and a sleep clears its field.
    #[test]
    fn rseq_is_used_where_glibc_registers_it() {
        let clock = ThreadClock::open(Want::Auto);
        // SAFETY: dlsym with RTLD_DEFAULT and a NUL-terminated name.
        let size = unsafe { dlsym(std::ptr::null_mut(), c"__rseq_size".as_ptr()) };
        // SAFETY: glibc's `const unsigned int __rseq_size`.
        if !size.is_null() && unsafe { *(size as *const u32) } >= 16 {
            assert_eq!(clock.detector(), Detector::Rseq);
            let armed = clock.arm();
            std::thread::sleep(Duration::from_millis(1));
            assert_ne!(clock.token(), armed, "a sleep clears rseq_cs");
        }
    }
}
