//! The clock a session reads for elapsed times and `tim` (the thread's
//! CPU clock for `c` is in thread_cpu.rs).

/// Which clock read stamps every call (the trace-overhead study varies
/// it, as Oracle's vsyscall64 setting did).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Timer {
    /// CLOCK_MONOTONIC through the vDSO: no system call.
    #[default]
    Vdso,
    /// CLOCK_MONOTONIC through a real system call each time.
    Syscall,
    /// CLOCK_MONOTONIC_COARSE: cheapest, a few milliseconds of resolution.
    Coarse,
}

impl Timer {
    pub fn name(self) -> &'static str {
        match self {
            Timer::Vdso => "vdso",
            Timer::Syscall => "syscall",
            Timer::Coarse => "coarse",
        }
    }

    fn read_micros(self) -> i64 {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: each call writes only into the timespec we own; the clock
        // ids are constants every Linux kernel supports.
        let rc = unsafe {
            match self {
                Timer::Vdso => libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts),
                Timer::Coarse => libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts),
                Timer::Syscall => libc::syscall(
                    libc::SYS_clock_gettime,
                    libc::CLOCK_MONOTONIC,
                    &mut ts as *mut _,
                ) as i32,
            }
        };
        if rc != 0 {
            return 0;
        }
        ts.tv_sec * 1_000_000 + ts.tv_nsec / 1_000
    }
}

/// A run's clock: microseconds since the run started, read with its timer.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    timer: Timer,
    base: i64,
}

impl Clock {
    pub fn start(timer: Timer) -> Clock {
        Clock {
            timer,
            base: timer.read_micros(),
        }
    }

    #[inline]
    pub fn now(&self) -> i64 {
        self.timer.read_micros() - self.base
    }

    pub fn timer(&self) -> Timer {
        self.timer
    }

    /// A time on this clock (µs since the run started) as an absolute
    /// CLOCK_MONOTONIC time in ns, for a kernel timer. (The coarse clock
    /// counts from the same origin as the fine one.)
    pub(crate) fn monotonic_ns(&self, t: i64) -> i64 {
        (self.base + t) * 1_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_timer_moves_forward_in_microseconds() {
        for t in [Timer::Vdso, Timer::Syscall, Timer::Coarse] {
            let c = Clock::start(t);
            std::thread::sleep(std::time::Duration::from_millis(30));
            let d = c.now();
            assert!((20_000..2_000_000).contains(&d), "{}: {d}", t.name());
        }
    }
}
