//! The live progress line of a run: transactions per second, latency
//! percentiles and errors of the last second, redrawn on a terminal.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// Counters every session adds to, read once a second.
pub struct Live {
    /// Sessions that reached the tsunami barrier (or ended before it).
    pub arrived: AtomicUsize,
    /// Sessions done and waiting, connected, to be released.
    pub paused: AtomicUsize,
    /// Set when paused sessions may disconnect.
    pub released: AtomicBool,
    pub transactions: AtomicU64,
    pub errors: AtomicU64,
    /// Latencies of the current interval, one histogram per worker thread
    /// so that sessions of different threads never wait for each other.
    interval: Vec<Mutex<Histogram<u64>>>,
}

impl Live {
    /// `workers` interval histograms; none (and no locking per call) when
    /// no progress line is shown.
    pub fn new(workers: usize) -> Live {
        Live {
            arrived: AtomicUsize::new(0),
            paused: AtomicUsize::new(0),
            released: AtomicBool::new(false),
            transactions: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            interval: (0..workers)
                .map(|_| Mutex::new(Histogram::new(3).expect("3 significant digits is valid")))
                .collect(),
        }
    }

    /// Records one call's latency from worker thread `worker`.
    pub fn record(&self, worker: usize, micros: u64) {
        if let Some(h) = self.interval.get(worker) {
            if let Ok(mut h) = h.lock() {
                let _ = h.record(micros.max(1));
            }
        }
    }

    /// The latencies since the last call, merged, and reset.
    fn take_interval(&self) -> Histogram<u64> {
        let mut all = Histogram::<u64>::new(3).expect("3 significant digits is valid");
        for h in &self.interval {
            if let Ok(mut h) = h.lock() {
                let _ = all.add(&*h);
                h.reset();
            }
        }
        all
    }
}

/// Releases paused sessions: once every session is paused, when `file`
/// exists (or when Enter is pressed, when no file is named). Returns when
/// released or when the run is `done` without pausing. The note saying
/// how to release them is for people: `quiet` (a program embedding the
/// run, which creates the file itself) leaves it out.
pub fn release_when(
    live: &Live,
    sessions: usize,
    file: Option<&std::path::Path>,
    done: &AtomicBool,
    quiet: bool,
) {
    loop {
        if done.load(Ordering::Relaxed) {
            return;
        }
        if live.paused.load(Ordering::Acquire) >= sessions {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    match file {
        Some(f) => {
            if !quiet {
                // Written without eprintln!, which panics when standard
                // error is a closed pipe.
                let _ = writeln!(
                    std::io::stderr(),
                    "tracelab: all {sessions} sessions done and still connected; create {} to let them go",
                    f.display()
                );
            }
            while !f.exists() && !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        None => {
            let _ = writeln!(
                std::io::stderr(),
                "tracelab: all {sessions} sessions done and still connected; press Enter to let them go"
            );
            // The read blocks: it waits on a thread of its own, so that an
            // interrupted run (its sessions leave the pause) ends too.
            let entered = std::sync::Arc::new(AtomicBool::new(false));
            {
                let entered = entered.clone();
                std::thread::spawn(move || {
                    let mut line = String::new();
                    let _ = std::io::stdin().read_line(&mut line);
                    entered.store(true, Ordering::Relaxed);
                });
            }
            while !entered.load(Ordering::Relaxed) && !done.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
    live.released.store(true, Ordering::Release);
}

/// One progress line.
pub fn line(elapsed: Duration, tps: f64, interval: &Histogram<u64>, errors: u64) -> String {
    let (p50, p99) = if interval.is_empty() {
        (0, 0)
    } else {
        (
            interval.value_at_quantile(0.5),
            interval.value_at_quantile(0.99),
        )
    };
    format!(
        "{:>6.1} s  tps {:>9.1}  p50 {:>6} µs  p99 {:>7} µs  errors {}",
        elapsed.as_secs_f64(),
        tps,
        p50,
        p99,
        errors
    )
}

/// Once a second until `done`: takes the interval's latencies, redraws the
/// progress line on stderr when `draw` is set and stderr is a terminal, and
/// keeps the second in the timeline it returns when `keep` is set (for
/// `run --report`). The last, partial second is kept too when it lasted
/// half a second or more, its rate counted over its own length.
pub fn watch(
    live: &Live,
    start: Instant,
    done: &AtomicBool,
    draw: bool,
    keep: bool,
) -> Vec<Second> {
    let draw = draw && std::io::stderr().is_terminal();
    if !draw && !keep {
        return Vec::new();
    }
    let mut timeline = Vec::new();
    let (mut last_tx, mut last_err) = (0, 0);
    let mut last = Instant::now();
    loop {
        let ending = done.load(Ordering::Relaxed);
        if !ending {
            std::thread::sleep(Duration::from_millis(200));
            if last.elapsed() < Duration::from_secs(1) {
                continue;
            }
        }
        let tx = live.transactions.load(Ordering::Relaxed);
        let errors = live.errors.load(Ordering::Relaxed);
        let secs = last.elapsed().as_secs_f64();
        let interval = live.take_interval();
        let tps = if secs > 0.0 {
            (tx - last_tx) as f64 / secs
        } else {
            0.0
        };
        // A last interval much shorter than a second is the sessions'
        // wind-down: its rate would read as a collapse.
        if keep && (!ending || secs >= 0.5) {
            timeline.push(Second::of(
                start.elapsed(),
                tps,
                &interval,
                errors - last_err,
            ));
        }
        if ending {
            break;
        }
        if draw {
            let l = line(start.elapsed(), tps, &interval, errors);
            let mut e = std::io::stderr();
            let _ = write!(e, "\r{l}");
            let _ = e.flush();
        }
        last_tx = tx;
        last_err = errors;
        last = Instant::now();
    }
    if draw {
        let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(72));
    }
    timeline
}

/// One second of a run (the interval ending `t_s` seconds after its
/// start): throughput, latency percentiles and errors.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Second {
    pub t_s: f64,
    pub tps: f64,
    pub p50_us: u64,
    pub p90_us: u64,
    pub p99_us: u64,
    pub max_us: u64,
    pub errors: u64,
}

impl Second {
    fn of(at: Duration, tps: f64, h: &Histogram<u64>, errors: u64) -> Second {
        let q = |q: f64| {
            if h.is_empty() {
                0
            } else {
                h.value_at_quantile(q)
            }
        };
        Second {
            t_s: (at.as_secs_f64() * 1000.0).round() / 1000.0,
            tps,
            p50_us: q(0.5),
            p90_us: q(0.9),
            p99_us: q(0.99),
            max_us: if h.is_empty() { 0 } else { h.max() },
            errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_percentiles_reset_each_second() {
        let live = Live::new(2);
        for v in [100, 200, 300, 400] {
            live.record(0, v);
        }
        live.record(1, 10_000);
        let h = live.take_interval();
        assert_eq!(h.len(), 5);
        let l = line(Duration::from_secs(3), 1234.5, &h, 2);
        assert!(l.contains("tps    1234.5"), "{l}");
        assert!(
            l.contains("p50    300 µs") || l.contains("p50    299 µs"),
            "{l}"
        );
        assert!(l.ends_with("errors 2"), "{l}");
        assert!(live.take_interval().is_empty(), "reset after reading");
    }

    #[test]
    fn the_timeline_keeps_each_second_and_the_last_partial_one() {
        let live = Live::new(1);
        let done = AtomicBool::new(false);
        let start = Instant::now();
        let timeline = std::thread::scope(|s| {
            let w = s.spawn(|| watch(&live, start, &done, false, true));
            // Two calls in the first second, one after it; then the end.
            live.record(0, 100);
            live.record(0, 300);
            live.transactions.fetch_add(2, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(1500));
            live.record(0, 5_000);
            live.transactions.fetch_add(1, Ordering::Relaxed);
            live.errors.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(Duration::from_millis(300));
            done.store(true, Ordering::Relaxed);
            w.join().unwrap()
        });
        assert!(timeline.len() >= 2, "{timeline:?}");
        let (first, last) = (timeline[0], timeline[timeline.len() - 1]);
        assert!(
            first.t_s >= 1.0 && first.p50_us >= 99 && first.p50_us <= 301,
            "{first:?}"
        );
        assert_eq!(first.errors, 0);
        let calls: f64 = timeline.iter().map(|s| s.tps).sum();
        assert!(calls > 0.0);
        assert_eq!(
            last.max_us.max(timeline[1].max_us) / 10,
            500,
            "{timeline:?}"
        );
        assert_eq!(timeline.iter().map(|s| s.errors).sum::<u64>(), 1);
        assert!(watch(&live, start, &done, false, false).is_empty());
    }
}
