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

/// Redraws the progress line on stderr once a second until `done`; prints
/// nothing when stderr is not a terminal.
pub fn show(live: &Live, start: Instant, done: &AtomicBool) {
    if !std::io::stderr().is_terminal() {
        return;
    }
    let mut last_tx = 0;
    let mut last = Instant::now();
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(200));
        if last.elapsed() < Duration::from_secs(1) {
            continue;
        }
        let tx = live.transactions.load(Ordering::Relaxed);
        let secs = last.elapsed().as_secs_f64();
        let l = line(
            start.elapsed(),
            (tx - last_tx) as f64 / secs,
            &live.take_interval(),
            live.errors.load(Ordering::Relaxed),
        );
        let mut e = std::io::stderr();
        let _ = write!(e, "\r{l}");
        let _ = e.flush();
        last_tx = tx;
        last = Instant::now();
    }
    let _ = write!(std::io::stderr(), "\r{}\r", " ".repeat(72));
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
}
