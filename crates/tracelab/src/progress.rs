//! A progress bar on stderr for long reads: shown only on a terminal and
//! only when the input is big enough to take a while.

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};

/// Inputs below this many bytes finish before a bar is worth drawing.
const MIN_BYTES: u64 = 64 << 20;

pub struct Progress {
    pub counter: Arc<AtomicU64>,
    done: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts a bar for `total` raw bytes, or a silent counter when stderr
    /// is not a terminal or the input is small.
    pub fn start(total: u64) -> Progress {
        let counter = Arc::new(AtomicU64::new(0));
        let done = Arc::new(AtomicBool::new(false));
        let thread = (std::io::stderr().is_terminal() && total >= MIN_BYTES).then(|| {
            let (counter, done) = (counter.clone(), done.clone());
            std::thread::spawn(move || {
                let bar = ProgressBar::new(total);
                bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar()),
                );
                while !done.load(Ordering::Relaxed) {
                    bar.set_position(counter.load(Ordering::Relaxed));
                    std::thread::sleep(Duration::from_millis(100));
                }
                bar.finish_and_clear();
            })
        });
        Progress {
            counter,
            done,
            thread,
        }
    }

    pub fn finish(mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
