//! The clocks a session reads: the monotonic clock for elapsed times and
//! `tim`, and the thread's CPU clock for `c`.

use std::time::Instant;

/// Microseconds since `start`, on the monotonic clock (read through the
/// vDSO on Linux).
#[inline]
pub fn micros_since(start: Instant) -> i64 {
    start.elapsed().as_micros() as i64
}

/// CPU time of the calling thread in microseconds.
///
/// Why libc: the standard library has no per-thread CPU clock, and reading
/// /proc per call would cost more than the calls it measures.
pub fn thread_cpu_micros() -> i64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; the clock id
    // is a constant the kernel always supports.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return 0;
    }
    ts.tv_sec * 1_000_000 + ts.tv_nsec / 1_000
}
