//! Waiting for a paced call's due time (`--rate`) to the microsecond.
//!
//! tokio's timer wheel has a resolution of one millisecond and rounds
//! every deadline up to the next tick, so a call due at 10.3 ms starts at
//! 11 ms or later: with `--rate` that lateness, up to a millisecond, was
//! counted in every call's latency (a `select 1` paced at 1,000 tps showed
//! p50 1,001 µs where pgbench -R shows 0.2 ms). pgbench waits in
//! `select`/`poll` with a microsecond timeout; here the session's own
//! timerfd (an absolute CLOCK_MONOTONIC deadline, a kernel hrtimer with no
//! slack) wakes the runtime's epoll when the call is due, so a call starts
//! late only by the machine's own wake-up latency, which is what the
//! schedule lag then measures.
//!
//! Hand-written because no well-kept crate exposes an absolute-deadline
//! timerfd to tokio (tokio-timerfd offers relative ones); it is three
//! system calls.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use tokio::io::unix::AsyncFd;

use crate::clock::Clock;

/// A session's precise sleeper; falls back to tokio's timer where a
/// timerfd cannot be made.
pub(crate) struct Pacer {
    fd: Option<AsyncFd<OwnedFd>>,
}

impl Pacer {
    pub(crate) fn new() -> Pacer {
        // SAFETY: timerfd_create takes no pointers; a non-negative result
        // is a new descriptor we own.
        let raw = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        let fd = (raw >= 0)
            // SAFETY: `raw` is a new descriptor nobody else owns.
            .then(|| unsafe { OwnedFd::from_raw_fd(raw) })
            // SAFETY: an OwnedFd keeps its descriptor open and unchanged
            // for as long as the AsyncFd holds it. Called on a session's
            // runtime, which has a reactor.
            .and_then(|fd| unsafe {
                AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE).ok()
            });
        Pacer { fd }
    }

    /// Returns at `due` (µs on the run's clock), or at once if it has
    /// passed.
    pub(crate) async fn sleep_until(&mut self, clock: &Clock, due: i64) {
        let now = clock.now();
        if due <= now {
            return;
        }
        let Some(fd) = self.fd.as_ref() else {
            tokio::time::sleep(std::time::Duration::from_micros((due - now) as u64)).await;
            return;
        };
        let at_ns = clock.monotonic_ns(due);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: at_ns / 1_000_000_000,
                tv_nsec: at_ns % 1_000_000_000,
            },
        };
        // SAFETY: the descriptor is ours and open; `spec` lives across the
        // call; the old value is not asked for.
        let armed = unsafe {
            libc::timerfd_settime(
                fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        if armed != 0 {
            tokio::time::sleep(std::time::Duration::from_micros((due - now) as u64)).await;
            return;
        }
        loop {
            let Ok(mut ready) = fd.readable().await else {
                return;
            };
            let mut expirations = [0u8; 8];
            // SAFETY: reads at most 8 bytes into the buffer we own.
            let n = unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    expirations.as_mut_ptr().cast(),
                    expirations.len(),
                )
            };
            if n == 8 {
                return;
            }
            // Not expired yet (EAGAIN): wait for the next readiness.
            ready.clear_ready();
            if clock.now() >= due {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Timer;

    /// Never early, never a tick late when the machine lets it run: the
    /// precision itself is tested from the command line
    /// (run_cli::a_paced_call_is_not_late_by_a_timer_tick), where the
    /// driver can be given a real-time priority.
    #[test]
    fn wakes_at_the_due_time_and_never_before() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let clock = Clock::start(Timer::Vdso);
        let late = rt.block_on(async {
            let mut p = Pacer::new();
            assert!(p.fd.is_some(), "a timerfd is available on Linux");
            let mut late = Vec::new();
            for i in 1..=20 {
                // Due times 2.3 ms apart: never on a millisecond tick.
                let due = clock.now() + 2_300 + i;
                p.sleep_until(&clock, due).await;
                late.push(clock.now() - due);
            }
            // A due time that has passed returns at once.
            let t0 = clock.now();
            p.sleep_until(&clock, t0 - 5_000).await;
            late.push(clock.now() - t0);
            late
        });
        assert!(late.iter().all(|&l| l >= 0), "woke early: {late:?}");
        assert!(late.iter().all(|&l| l < 1_000_000), "{late:?}");
    }
}
