//! `tracelab proxy`: a PostgreSQL wire-protocol proxy that emulates a
//! network link (netem-like delay, jitter, bandwidth) and writes a
//! 10046-format trace of each client connection as the server sees it.
//!
//! Bytes go through unaltered; the proxy parses a copy of the message
//! framing only, to trace, to count, to learn cancel keys and to refuse
//! broken streams. SSLRequest and GSSENCRequest are answered 'N' (no
//! encryption between client and proxy); authentication passes through
//! and is never decoded or written anywhere.

mod clock;
mod config;
mod counters;
mod error;
mod frame;
mod link;
mod message;
mod session;
mod tracer;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::task::JoinSet;

pub use config::{parse_rate, Config, Direction, Distribution, Protocol, Upstream};
pub use counters::{Counters, Stats};
pub use error::ProxyError;

use session::Shared;

/// A proxy bound to its listening address, not yet serving.
pub struct Proxy {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Proxy {
    /// Binds the listening socket and prepares the trace directory.
    pub async fn bind(cfg: Config) -> Result<Proxy, ProxyError> {
        if cfg.protocol == config::Protocol::Tcp && cfg.trace_dir.is_some() {
            return Err(ProxyError::Config(
                "--trace: the proxy traces PostgreSQL's protocol; with --protocol tcp it relays \
                 bytes it does not read"
                    .into(),
            ));
        }
        if let Some(dir) = &cfg.trace_dir {
            std::fs::create_dir_all(dir).map_err(|source| ProxyError::TraceDir {
                path: dir.clone(),
                source,
            })?;
        }
        let listener = TcpListener::bind(cfg.listen.as_str())
            .await
            .map_err(|source| ProxyError::Listen {
                addr: cfg.listen.clone(),
                source,
            })?;
        Ok(Proxy {
            listener,
            shared: Arc::new(Shared {
                cfg,
                stats: Arc::new(Stats::default()),
                keys: Default::default(),
                timer: link::Timer::start(),
                serial: Default::default(),
            }),
        })
    }

    /// The address clients connect to (useful with port 0).
    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// The live counters.
    pub fn stats(&self) -> Arc<Stats> {
        self.shared.stats.clone()
    }

    /// Serves clients until `shutdown` completes; then stops accepting,
    /// ends the open connections (their traces are flushed) and returns.
    ///
    /// `threads` event loops share the connections, handed out in turn:
    /// this one (the caller's runtime) and `threads − 1` threads with a
    /// single-threaded runtime each. Several loops rather than one
    /// work-stealing pool because the proxy competes for the CPU with the
    /// server's backends and the clients: each loop is one more thread for
    /// the scheduler's fair share, without cross-thread wake-ups.
    ///
    /// The callers' default is twice the CPUs. Measured with pgbench -S
    /// -M prepared -c 20 on 2 CPUs, in 3 s runs alternating with direct
    /// ones on a quiet machine: one loop left the machine 16–25 % idle (the
    /// loop waits for its share of one CPU behind the backends while the
    /// other CPU has nothing to do) and got 0.34–0.45 of direct
    /// throughput; two and four loops were alike (0.58–0.70). With other
    /// work on the machine four kept more of the CPU than two (0.66
    /// against 0.61) and eight did worse. Pinning loops to CPUs,
    /// SCHED_BATCH, a shorter or longer EEVDF slice and a yield before each
    /// park showed no clear gain: about 90 % of the proxy's CPU
    /// is the kernel's (sends, receives, the wake-ups they cause and the
    /// context switches after them), which the loop count moves only a
    /// little.
    pub async fn serve(self, threads: usize, shutdown: impl Future<Output = ()>) {
        let mut workers = Vec::new();
        for i in 1..threads.max(1) {
            match spawn_loop(self.shared.clone(), i) {
                Ok(w) => workers.push(w),
                Err(e) => {
                    eprintln!("tracelab proxy: cannot start event loop {i}: {e}");
                    break;
                }
            }
        }
        let mut conns = JoinSet::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                acc = self.listener.accept() => match acc {
                    Ok((sock, peer)) => {
                        let serial = self.shared.serial.fetch_add(1, Relaxed) + 1;
                        let k = (serial as usize) % (workers.len() + 1);
                        if k == 0 {
                            conns.spawn(session::serve(self.shared.clone(), sock, peer, serial));
                        } else if let Ok(std) = sock.into_std() {
                            let _ = workers[k - 1].0.send((std, peer, serial));
                        }
                    }
                    Err(e) => {
                        // Out of descriptors or similar: say so, breathe,
                        // go on serving.
                        eprintln!("tracelab proxy: accept failed: {e}");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = conns.join_next(), if !conns.is_empty() => {}
            }
        }
        drop(self.listener);
        let handles: Vec<_> = workers
            .into_iter()
            .map(|(tx, h)| {
                drop(tx);
                h
            })
            .collect();
        conns.shutdown().await;
        for h in handles {
            let _ = h.join();
        }
    }
}

type Handoff = (std::net::TcpStream, SocketAddr, u64);

/// An event loop of its own on a thread of its own: serves the connections
/// sent to it until the sender is dropped, then ends them.
fn spawn_loop(
    shared: Arc<Shared>,
    i: usize,
) -> std::io::Result<(
    tokio::sync::mpsc::UnboundedSender<Handoff>,
    std::thread::JoinHandle<()>,
)> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Handoff>();
    let h = std::thread::Builder::new()
        .name(format!("tracelab-proxy-{i}"))
        .spawn(move || {
            rt.block_on(async move {
                let mut conns = JoinSet::new();
                loop {
                    tokio::select! {
                        m = rx.recv() => match m {
                            Some((sock, peer, serial)) => match tokio::net::TcpStream::from_std(sock) {
                                Ok(s) => {
                                    conns.spawn(session::serve(shared.clone(), s, peer, serial));
                                }
                                Err(e) => eprintln!("tracelab proxy: connection {serial} from {peer}: {e}"),
                            },
                            None => break,
                        },
                        Some(_) = conns.join_next(), if !conns.is_empty() => {}
                    }
                }
                conns.shutdown().await;
            })
        })?;
    Ok((tx, h))
}

/// Raises the soft limit on open files to the hard limit (each client
/// connection costs two descriptors). Returns the new soft limit.
pub fn raise_fd_limit() -> std::io::Result<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit fill and read a plain struct we own.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
    }
    #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 everywhere
    Ok(r.rlim_cur as u64)
}
