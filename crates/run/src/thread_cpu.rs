//! The calling thread's CPU time, read for each call's `c`: the clock of
//! crates/threadclock (read for real only after the thread was switched
//! out, carried by the monotonic clock in between), one per thread.
//! `TRACELAB_TRACE_CPU=perf` or `=syscall` in the environment picks a
//! detector of the switches other than the first that works (to compare
//! them, or where one misbehaves).

use std::cell::RefCell;

use tracelab_threadclock::{monotonic_ns, ThreadClock, Want};

/// CPU time of the calling thread in nanoseconds; never less than the
/// previous value read on this thread.
pub fn thread_cpu_nanos() -> i64 {
    CLOCK.with(|c| c.borrow_mut().read(monotonic_ns()))
}

static WANT: std::sync::LazyLock<Want> = std::sync::LazyLock::new(|| {
    Want::from_setting(std::env::var("TRACELAB_TRACE_CPU").ok().as_deref())
});

thread_local! {
    static CLOCK: RefCell<ThreadClock> = RefCell::new(ThreadClock::open(*WANT));
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each thread has its own clock: a thread that only slept reads
    /// (almost) no CPU, while this one spun.
    #[test]
    fn each_thread_reads_its_own_cpu() {
        let a = thread_cpu_nanos();
        let t = std::time::Instant::now();
        while t.elapsed() < std::time::Duration::from_millis(20) {
            std::hint::black_box(0);
        }
        let sleeper = std::thread::spawn(|| {
            let a = thread_cpu_nanos();
            std::thread::sleep(std::time::Duration::from_millis(20));
            thread_cpu_nanos() - a
        })
        .join()
        .unwrap();
        let spun = thread_cpu_nanos() - a;
        assert!(spun >= 15_000_000, "spun {spun} ns");
        assert!(sleeper < 5_000_000, "slept {sleeper} ns");
    }
}
