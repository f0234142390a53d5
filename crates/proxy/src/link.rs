//! The emulated link: when each chunk read from one side may be written to
//! the other (netem-like delay and jitter, first in first out, optional
//! bandwidth), and a timer precise enough to honour it.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::config::{Config, Direction, Distribution};

/// A TCP segment's payload on loopback-like links: netem delays each
/// segment of a large chunk independently, so the chunk is complete at the
/// latest of ⌈len/MSS⌉ draws.
const MSS: usize = 1448;

/// Which way a chunk goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Way {
    ToServer,
    ToClient,
}

/// Release times for the chunks of one direction of one connection.
pub struct Shaper {
    /// µs of the configured delay (round trip) and jitter.
    delay: f64,
    jitter: f64,
    dist: Distribution,
    /// The share of each drawn delay this direction carries: 1, ½ or 0.
    share: f64,
    rate: Option<u64>,
    rng: fastrand::Rng,
    last_release: Option<Instant>,
    next_free: Option<Instant>,
}

impl Shaper {
    /// The shaper of direction `way` of connection `serial` (its random
    /// stream is seeded by both, so runs are reproducible).
    pub fn new(cfg: &Config, way: Way, serial: u64) -> Shaper {
        let share = match (cfg.direction, way) {
            (Direction::Both, _) => 0.5,
            (Direction::ToServer, Way::ToServer) | (Direction::ToClient, Way::ToClient) => 1.0,
            _ => 0.0,
        };
        Shaper {
            delay: cfg.delay.as_secs_f64() * 1e6,
            jitter: cfg.jitter.as_secs_f64() * 1e6,
            dist: cfg.distribution,
            share,
            rate: cfg.bandwidth,
            rng: fastrand::Rng::with_seed(serial * 2 + (way == Way::ToClient) as u64),
            last_release: None,
            next_free: None,
        }
    }

    /// One draw of the round-trip delay, µs, never negative.
    fn draw(&mut self) -> f64 {
        if self.jitter == 0.0 {
            return self.delay;
        }
        let t = match self.dist {
            Distribution::Uniform => 2.0 * self.rng.f64() - 1.0,
            Distribution::Normal => {
                // Box–Muller.
                let u1 = 1.0 - self.rng.f64();
                let u2 = self.rng.f64();
                (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
            }
            Distribution::Pareto => {
                // Pareto(shape 3, scale 1): mean 1.5, sd √0.75;
                // standardised.
                let u = 1.0 - self.rng.f64();
                let x = u.powf(-1.0 / 3.0);
                (x - 1.5) / 0.75f64.sqrt()
            }
        };
        (self.delay + self.jitter * t).max(0.0)
    }

    /// The delay this direction adds to a chunk of `len` bytes.
    pub fn sample(&mut self, len: usize) -> Duration {
        if self.share == 0.0 {
            return Duration::ZERO;
        }
        let draws = if self.jitter == 0.0 {
            1
        } else {
            len.div_ceil(MSS).clamp(1, 64)
        };
        let d = (0..draws).map(|_| self.draw()).fold(0.0, f64::max);
        Duration::from_nanos((d * self.share * 1e3) as u64)
    }

    /// When a chunk of `len` bytes that arrived at `arrival` may be written:
    /// after its delay, never before the chunk ahead of it (FIFO, no
    /// reordering), and, with a bandwidth, after the link has carried it.
    pub fn release(&mut self, arrival: Instant, len: usize) -> Instant {
        let mut r = arrival + self.sample(len);
        if let Some(prev) = self.last_release {
            r = r.max(prev);
        }
        if let Some(rate) = self.rate {
            let start = self.next_free.map_or(r, |f| f.max(r));
            let end =
                start + Duration::from_nanos((len as u128 * 1_000_000_000 / rate as u128) as u64);
            self.next_free = Some(end);
            r = end;
        }
        self.last_release = Some(r);
        r
    }
}

struct Entry {
    at: Instant,
    seq: u64,
    done: tokio::sync::oneshot::Sender<()>,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// One thread that wakes chunk writers at their release times.
///
/// Hand-written because tokio's timer wheel has a 1 ms resolution: a 3 ms
/// half-delay would come out at 3–4 ms, an error of up to a third. This
/// thread sleeps on a futex with the timer slack lowered to 1 ns, so a
/// release is late by tens of µs, not by up to a millisecond (netem's own
/// design: one scheduler with a heap of release times, on the monotonic clock).
///
/// What remains is the wake-up chain (timer thread, then the task's worker
/// thread), 0.1–0.2 ms on a busy machine. The timer learns it: each
/// request is fired `lead` early, and `lead` follows the typical lateness
/// (each measured error, clipped to ±50 µs, moves it by an eighth, so it
/// settles near the median and rare scheduling spikes do not make later
/// releases early); FIFO order is kept by the writers regardless.
pub struct Timer {
    tx: mpsc::Sender<Entry>,
    seq: std::sync::atomic::AtomicU64,
    lead_ns: std::sync::atomic::AtomicI64,
}

/// The most the timer fires early to make up for wake-up latency.
const MAX_LEAD_NS: i64 = 1_000_000;

impl Timer {
    pub fn start() -> Timer {
        let (tx, rx) = mpsc::channel::<Entry>();
        let spawned = std::thread::Builder::new()
            .name("tracelab-proxy-timer".into())
            .spawn(move || {
                // SAFETY: prctl with PR_SET_TIMERSLACK only changes this
                // thread's timer slack.
                unsafe {
                    libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
                }
                let mut heap: BinaryHeap<Reverse<Entry>> = BinaryHeap::new();
                loop {
                    let now = Instant::now();
                    while heap.peek().is_some_and(|e| e.0.at <= now) {
                        if let Some(Reverse(e)) = heap.pop() {
                            let _ = e.done.send(());
                        }
                    }
                    let got = match heap.peek() {
                        Some(e) => rx.recv_timeout(e.0.at - now),
                        None => rx.recv().map_err(|_| mpsc::RecvTimeoutError::Disconnected),
                    };
                    match got {
                        Ok(e) => {
                            heap.push(Reverse(e));
                            while let Ok(e) = rx.try_recv() {
                                heap.push(Reverse(e));
                            }
                        }
                        Err(mpsc::RecvTimeoutError::Timeout) => {}
                        Err(mpsc::RecvTimeoutError::Disconnected) => return,
                    }
                }
            });
        if let Err(e) = spawned {
            // Without the thread, sends fail and sleeps fall back to tokio.
            eprintln!("tracelab proxy: no precise timer thread ({e}); using tokio's 1 ms timer");
        }
        Timer {
            tx,
            seq: Default::default(),
            lead_ns: Default::default(),
        }
    }

    /// Waits until `at`.
    pub async fn sleep_until(&self, at: Instant) {
        use std::sync::atomic::Ordering::Relaxed;
        let lead = Duration::from_nanos(self.lead_ns.load(Relaxed).max(0) as u64);
        let fire = at.checked_sub(lead).unwrap_or(at);
        if fire <= Instant::now() {
            return;
        }
        let (done, wait) = tokio::sync::oneshot::channel();
        let seq = self.seq.fetch_add(1, Relaxed);
        if self
            .tx
            .send(Entry {
                at: fire,
                seq,
                done,
            })
            .is_err()
            || wait.await.is_err()
        {
            tokio::time::sleep_until(at.into()).await;
            return;
        }
        let now = Instant::now();
        let err = if now >= at {
            now.duration_since(at).as_nanos() as i64
        } else {
            -(at.duration_since(now).as_nanos() as i64)
        };
        // Each error moves the lead by at most 6 µs: a scheduling spike of
        // a few ms (a busy machine) must not make later releases early.
        let _ = self.lead_ns.fetch_update(Relaxed, Relaxed, |l| {
            Some((l + err.clamp(-50_000, 50_000) / 8).clamp(0, MAX_LEAD_NS))
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(delay_ms: u64, jitter_ms: u64, dist: Distribution, dir: Direction) -> Config {
        let mut c = Config::new("127.0.0.1:0", crate::Upstream::Tcp("127.0.0.1:1".into()));
        c.delay = Duration::from_millis(delay_ms);
        c.jitter = Duration::from_millis(jitter_ms);
        c.distribution = dist;
        c.direction = dir;
        c
    }

    fn mean_sd(v: &[f64]) -> (f64, f64) {
        let m = v.iter().sum::<f64>() / v.len() as f64;
        let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64;
        (m, var.sqrt())
    }

    #[test]
    fn directions_split_the_round_trip() {
        for (dir, to_s, to_c) in [
            (Direction::Both, 3000, 3000),
            (Direction::ToServer, 6000, 0),
            (Direction::ToClient, 0, 6000),
        ] {
            let c = cfg(6, 0, Distribution::Uniform, dir);
            let mut s = Shaper::new(&c, Way::ToServer, 1);
            let mut k = Shaper::new(&c, Way::ToClient, 1);
            assert_eq!(s.sample(10).as_micros(), to_s, "{dir:?}");
            assert_eq!(k.sample(10).as_micros(), to_c, "{dir:?}");
        }
    }

    #[test]
    fn distributions_have_the_stated_mean_and_spread() {
        for dist in [
            Distribution::Uniform,
            Distribution::Normal,
            Distribution::Pareto,
        ] {
            let c = cfg(6, 1, dist, Direction::ToServer);
            let mut s = Shaper::new(&c, Way::ToServer, 7);
            let v: Vec<f64> = (0..40_000)
                .map(|_| s.sample(100).as_secs_f64() * 1e3)
                .collect();
            let (m, sd) = mean_sd(&v);
            assert!((m - 6.0).abs() < 0.05, "{dist:?} mean {m}");
            let want_sd = if dist == Distribution::Uniform {
                1.0 / 3f64.sqrt()
            } else {
                1.0
            };
            assert!(
                (sd - want_sd).abs() < 0.1 * want_sd + 0.05,
                "{dist:?} sd {sd}"
            );
            if dist == Distribution::Uniform {
                assert!(v.iter().all(|&x| (5.0..7.0).contains(&x)));
            }
        }
    }

    #[test]
    fn fifo_and_bandwidth() {
        let mut c = cfg(6, 5, Distribution::Uniform, Direction::ToServer);
        c.bandwidth = Some(1_000_000);
        let mut s = Shaper::new(&c, Way::ToServer, 3);
        let t0 = Instant::now();
        let mut last = t0;
        for i in 0..1000 {
            let r = s.release(t0 + Duration::from_micros(i * 10), 1000);
            assert!(r >= last, "chunk {i} overtook the one before it");
            last = r;
        }
        // 1000 chunks of 1000 bytes at 1 MB/s take at least a second.
        assert!(last - t0 >= Duration::from_secs(1));
    }

    #[test]
    fn timer_is_precise() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        let timer = Timer::start();
        rt.block_on(async {
            let mut late = Vec::new();
            for _ in 0..60 {
                let at = Instant::now() + Duration::from_micros(2500);
                timer.sleep_until(at).await;
                let now = Instant::now();
                late.push(if now >= at {
                    now.duration_since(at).as_micros() as i64
                } else {
                    -(at.duration_since(now).as_micros() as i64)
                });
            }
            // Once the lead is learnt, the wake-ups are on time on average,
            // well within tokio's 1 ms tick.
            let tail = &mut late[20..];
            tail.sort();
            let median = tail[tail.len() / 2];
            assert!(median.abs() < 300, "median error {median} µs: {tail:?}");
        });
    }
}
