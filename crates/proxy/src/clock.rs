//! The trace clock: microseconds on a monotonic clock, anchored once to
//! the wall clock so that a trace's `***` line maps `tim` to real time.

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

struct Anchor {
    at: Instant,
    wall_us: i64,
}

fn anchor() -> &'static Anchor {
    static A: OnceLock<Anchor> = OnceLock::new();
    A.get_or_init(|| Anchor {
        at: Instant::now(),
        wall_us: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as i64)
            .unwrap_or(0),
    })
}

/// `tim` of an instant: µs since the Unix epoch, read on the monotonic
/// clock (never steps back when the wall clock is set).
pub fn tim(at: Instant) -> i64 {
    let a = anchor();
    match at.checked_duration_since(a.at) {
        Some(d) => a.wall_us + d.as_micros() as i64,
        None => a.wall_us - a.at.duration_since(at).as_micros() as i64,
    }
}

/// `tim` now.
pub fn now() -> i64 {
    tim(Instant::now())
}
