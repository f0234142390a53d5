//! tracelab's timer shim, `libtracelab_clock.so`: set as `LD_PRELOAD` of a
//! server (the trace-overhead study restarts its private server so), it
//! takes the place of libc's `clock_gettime` and `gettimeofday` in every
//! process of the server and reads the clock the way `TRACELAB_CLOCK`
//! says, the analog of Oracle's `vsyscall64` on Linux:
//!
//! - `vdso` (or unset): passed through to libc, which reads the clock in
//!   user space through the vDSO (vsyscall64 = 1). The library is still
//!   mapped, so that the levels differ in the clock only.
//! - `syscall`: a real system call for every read (vsyscall64 = 0), as
//!   when the clocksource cannot be read from user space; `strace -c`
//!   counts each one.
//! - `coarse`: the `_COARSE` clocks through the vDSO, of a few
//!   milliseconds' resolution (vsyscall64 = 2, "vDSO at ms resolution").
//!
//! A library rather than a clocksource switch: this machine's clocksources
//! (tsc, kvm-clock) are both read through the vDSO, and switching them
//! needs root and changes the whole machine.
//!
//! Built by the workspace, never at run time: cargo builds this crate as
//! `libtracelab_clock.so` (for servers of your own), and the study crate's
//! build script compiles this same file with rustc and embeds the result,
//! so that the tracelab binary carries it (it writes it out when a study
//! needs it). That second build is why the file has no dependencies: the
//! few libc items it needs are declared below.

use std::ffi::{c_char, c_int, c_long, c_void};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering::Relaxed};

#[allow(non_camel_case_types)]
type clockid_t = c_int;

#[repr(C)]
pub struct timespec {
    tv_sec: c_long,
    tv_nsec: c_long,
}

#[repr(C)]
pub struct timeval {
    tv_sec: c_long,
    tv_usec: c_long,
}

extern "C" {
    fn getenv(name: *const c_char) -> *const c_char;
    fn dlsym(handle: *mut c_void, name: *const c_char) -> *mut c_void;
    fn syscall(number: c_long, ...) -> c_long;
}

/// glibc's RTLD_NEXT: the next object after this one in search order.
const RTLD_NEXT: *mut c_void = -1isize as *mut c_void;
const CLOCK_REALTIME: clockid_t = 0;
const CLOCK_MONOTONIC: clockid_t = 1;
const CLOCK_MONOTONIC_RAW: clockid_t = 4;
const CLOCK_REALTIME_COARSE: clockid_t = 5;
const CLOCK_MONOTONIC_COARSE: clockid_t = 6;
const CLOCK_BOOTTIME: clockid_t = 7;
#[cfg(target_arch = "x86_64")]
const SYS_CLOCK_GETTIME: c_long = 228;
#[cfg(target_arch = "x86_64")]
const SYS_GETTIMEOFDAY: c_long = 96;
#[cfg(target_arch = "aarch64")]
const SYS_CLOCK_GETTIME: c_long = 113;
#[cfg(target_arch = "aarch64")]
const SYS_GETTIMEOFDAY: c_long = 169;

const UNKNOWN: u8 = 0;
const VDSO: u8 = 1;
const SYSCALL: u8 = 2;
const COARSE: u8 = 3;

/// The mode, read from the environment at the first clock read.
static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);
/// libc's own functions (the next definitions after this library).
static REAL_CLOCK_GETTIME: AtomicUsize = AtomicUsize::new(0);
static REAL_GETTIMEOFDAY: AtomicUsize = AtomicUsize::new(0);

type ClockGettime = unsafe extern "C" fn(clockid_t, *mut timespec) -> c_int;
type Gettimeofday = unsafe extern "C" fn(*mut timeval, *mut c_void) -> c_int;

fn mode() -> u8 {
    let m = MODE.load(Relaxed);
    if m != UNKNOWN {
        return m;
    }
    // SAFETY: getenv returns NULL or a NUL-terminated string that lives as
    // long as the environment is not changed; it is read at once.
    let m = unsafe {
        let p = getenv(c"TRACELAB_CLOCK".as_ptr());
        if p.is_null() {
            VDSO
        } else {
            match std::ffi::CStr::from_ptr(p).to_bytes() {
                b"syscall" => SYSCALL,
                b"coarse" => COARSE,
                _ => VDSO,
            }
        }
    };
    MODE.store(m, Relaxed);
    m
}

/// The next definition of `name` (libc's), cached in `slot`.
///
/// # Safety
/// `name` must name a function of type `F`.
unsafe fn next<F: Copy>(slot: &AtomicUsize, name: &std::ffi::CStr) -> Option<F> {
    let mut p = slot.load(Relaxed);
    if p == 0 {
        p = dlsym(RTLD_NEXT, name.as_ptr()) as usize;
        slot.store(p, Relaxed);
    }
    // SAFETY: a non-null address dlsym returned for this name, which the
    // caller vouches has type F (a function pointer, the size of usize).
    (p != 0).then(|| std::mem::transmute_copy::<usize, F>(&p))
}

/// The clock `clk` reads in coarse mode: the coarse clock of its kind.
fn coarse(clk: clockid_t) -> clockid_t {
    match clk {
        CLOCK_MONOTONIC | CLOCK_MONOTONIC_RAW | CLOCK_BOOTTIME => CLOCK_MONOTONIC_COARSE,
        CLOCK_REALTIME => CLOCK_REALTIME_COARSE,
        other => other,
    }
}

/// # Safety
/// As libc's `clock_gettime`: `ts` must point to a writable timespec.
#[no_mangle]
pub unsafe extern "C" fn clock_gettime(clk: clockid_t, ts: *mut timespec) -> c_int {
    match mode() {
        SYSCALL => syscall(SYS_CLOCK_GETTIME, clk, ts) as c_int,
        m => {
            let clk = if m == COARSE { coarse(clk) } else { clk };
            match next::<ClockGettime>(&REAL_CLOCK_GETTIME, c"clock_gettime") {
                Some(f) => f(clk, ts),
                None => syscall(SYS_CLOCK_GETTIME, clk, ts) as c_int,
            }
        }
    }
}

/// # Safety
/// As libc's `gettimeofday`: `tv` must be null or point to a writable
/// timeval.
#[no_mangle]
pub unsafe extern "C" fn gettimeofday(tv: *mut timeval, tz: *mut c_void) -> c_int {
    match mode() {
        SYSCALL => syscall(SYS_GETTIMEOFDAY, tv, tz) as c_int,
        COARSE => {
            let mut ts = timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            let rc = clock_gettime(CLOCK_REALTIME_COARSE, &mut ts);
            if rc == 0 && !tv.is_null() {
                (*tv).tv_sec = ts.tv_sec;
                (*tv).tv_usec = ts.tv_nsec / 1000;
            }
            rc
        }
        _ => match next::<Gettimeofday>(&REAL_GETTIMEOFDAY, c"gettimeofday") {
            Some(f) => f(tv, tz),
            None => syscall(SYS_GETTIMEOFDAY, tv, tz) as c_int,
        },
    }
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
compile_error!("the clock shim knows the system call numbers of x86_64 and aarch64 only");
