//! tracelab proxy in the path of a level's runs (`proxy = { delay =
//! "6ms", jitter = "1ms", direction = "to-server", trace = true }`):
//! started in this process before the measured run, the run's sessions
//! (and a result cache's invalidation channels) sent to it instead of the
//! server, stopped when the run has ended, which flushes its traces; the
//! traces are then profiled (`proxy_trace_*`) and their profile kept for
//! the report.
//!
//! The proxy reads PostgreSQL's protocol. On MariaDB it relays the bytes
//! (`tracelab proxy --protocol tcp`): the same emulated link, the same
//! delay, but no server-side trace; a level that asks for one gets a note
//! saying why there is none.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tracelab_engine::Engine;
pub use tracelab_proxy::Upstream;
use tracelab_proxy::{Counters, Proxy};

use crate::error::StudyError;
use crate::execute::profile;
use crate::model::proxy::{ProxyLevel, MEASUREMENTS};
use crate::model::spec::Level;
use crate::store::ProfileRow;

/// A proxy serving a run, on a free port of 127.0.0.1.
pub struct InPath {
    addr: SocketAddr,
    stats: std::sync::Arc<tracelab_proxy::Stats>,
    trace_dir: Option<PathBuf>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InPath {
    /// Starts a proxy in front of `upstream` for `engine`, writing its
    /// traces (PostgreSQL) to `trace_dir`.
    pub fn start(
        upstream: Upstream,
        level: &ProxyLevel,
        engine: Engine,
        trace_dir: Option<PathBuf>,
    ) -> Result<InPath, StudyError> {
        let cfg = level
            .config("127.0.0.1:0", upstream, engine, trace_dir)
            .map_err(StudyError::Usage)?;
        let trace_dir = cfg.trace_dir.clone();
        if let Some(d) = &trace_dir {
            let _ = std::fs::remove_dir_all(d);
        }
        let (addr_tx, addr_rx) = std::sync::mpsc::channel();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("tracelab-study-proxy".into())
            .spawn(move || {
                let rt = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(e) => {
                        let _ = addr_tx.send(Err(format!("cannot start its runtime: {e}")));
                        return;
                    }
                };
                rt.block_on(async move {
                    let proxy = match Proxy::bind(cfg).await {
                        Ok(p) => p,
                        Err(e) => {
                            let _ = addr_tx.send(Err(e.to_string()));
                            return;
                        }
                    };
                    let _ = addr_tx.send(
                        proxy
                            .local_addr()
                            .map(|a| (a, proxy.stats()))
                            .map_err(|e| e.to_string()),
                    );
                    // As `tracelab proxy` by default: twice the CPUs in
                    // event loops (one loop falls far behind 20 clients;
                    // see Proxy::serve).
                    let loops = 2 * std::thread::available_parallelism().map_or(1, |n| n.get());
                    proxy
                        .serve(loops, async move {
                            let _ = stop_rx.await;
                        })
                        .await;
                });
                rt.shutdown_timeout(Duration::from_secs(2));
            })
            .map_err(|e| StudyError::Usage(format!("cannot start tracelab proxy: {e}")))?;
        let (addr, stats) = addr_rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| "it did not start within 10 s".to_string())
            .and_then(|r| r)
            .map_err(|e| StudyError::Usage(format!("tracelab proxy: {e}")))?;
        Ok(InPath {
            addr,
            stats,
            trace_dir,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// `url` with the proxy's address in place of the server's.
    pub fn url(&self, url: &str) -> Result<String, StudyError> {
        reroute(url, &self.addr.to_string()).ok_or_else(|| {
            StudyError::Usage(format!(
                "a proxy level needs a URL with a TCP host and port (scheme://USER@HOST:PORT/DB), not {}",
                crate::model::engine::redact(url)
            ))
        })
    }

    /// Stops accepting, ends the connections left and waits until every
    /// trace is written; returns the counters.
    pub fn stop(mut self) -> Counters {
        self.shut();
        self.stats.snapshot()
    }

    fn shut(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl Drop for InPath {
    fn drop(&mut self) {
        self.shut();
    }
}

/// What a run's proxy leaves: measurements, the profile of its traces
/// for the report, notes.
pub struct Collected {
    pub measurements: BTreeMap<String, f64>,
    pub profile: Vec<ProfileRow>,
    pub notes: Vec<String>,
}

/// The proxy of a cell's levels, if one asks for it, started in front of
/// the engine at `url`; its traces (if the level asks for them) go to
/// `trace_dir` (`None`: no traces). Also returns whether it was asked to
/// trace.
pub fn start_for(
    levels: &[Level],
    engine: Engine,
    url: &str,
    trace_dir: Option<&Path>,
) -> Result<Option<(InPath, bool)>, StudyError> {
    let Some(level) = levels.iter().rev().find_map(|l| l.proxy.as_ref()) else {
        return Ok(None);
    };
    if engine == Engine::Sqlite {
        return Err(StudyError::Usage(
            "a proxy level on SQLite: it runs in process, there is no connection to put a proxy on"
                .into(),
        ));
    }
    let upstream = upstream_of(url).ok_or_else(|| {
        StudyError::Usage(format!(
            "a proxy level needs the server's URL with a TCP host and port, not {}",
            crate::model::engine::redact(url)
        ))
    })?;
    let dir = trace_dir.filter(|_| level.trace).map(Path::to_path_buf);
    let traced = dir.is_some();
    let px = InPath::start(upstream, level, engine, dir)?;
    Ok(Some((px, traced)))
}

/// Stops the proxy and collects what it leaves: its counters
/// (`proxy_connections`, `proxy_delay_ms`: the delay it added, both
/// directions, summed over chunks), the profile of its traces (all calls
/// as `proxy_trace_*`; the rows that pass `filter` for the report), and
/// the traces themselves moved to `keep` when given.
pub fn collect(px: InPath, traced: bool, filter: &str, keep: Option<&Path>) -> Collected {
    let dir = px.trace_dir.clone();
    let c = px.stop();
    let values = [
        c.connections as f64,
        (c.delay_to_server_us + c.delay_to_client_us) as f64 / 1000.0,
        c.upstream_errors as f64,
    ];
    let m: BTreeMap<String, f64> = MEASUREMENTS
        .iter()
        .map(|n| n.to_string())
        .zip(values)
        .collect();
    let mut out = Collected {
        measurements: m,
        profile: Vec::new(),
        notes: Vec::new(),
    };
    match (traced, dir) {
        (true, None) => out.notes.push(
            "no server-side trace through the proxy: it reads PostgreSQL's protocol only (on this engine it relays bytes)"
                .into(),
        ),
        (true, Some(dir)) => {
            out.measurements
                .insert("proxy_trace_bytes".into(), profile::dir_bytes(&dir) as f64);
            match profile::of_dir(&dir, "1") {
                Ok(rows) => out
                    .measurements
                    .extend(profile::measurements(&rows, "proxy_trace_")),
                Err(e) => out.notes.push(format!("proxy traces not profiled: {e}")),
            }
            match profile::of_dir(&dir, filter) {
                Ok(rows) => out.profile = profile::tagged(rows, "proxy"),
                Err(e) => out.notes.push(format!("proxy traces not profiled: {e}")),
            }
            profile::keep_or_remove(&dir, keep, &mut out.notes);
        }
        (false, _) => {}
    }
    out
}

/// Where a server named by a URL listens, for the proxy's upstream:
/// `HOST:PORT` (the scheme's usual port when the URL names none).
pub fn upstream_of(url: &str) -> Option<Upstream> {
    let (start, end) = authority(url)?;
    let host = &url[start..end];
    if host.is_empty() {
        return None;
    }
    let default_port = if url.starts_with("mysql:") || url.starts_with("mariadb:") {
        3306
    } else {
        5432
    };
    let hp = if host
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        host.to_string()
    } else {
        format!("{host}:{default_port}")
    };
    Upstream::parse(&hp).ok()
}

/// The byte range of a URL's host and port (after any `user@`).
fn authority(url: &str) -> Option<(usize, usize)> {
    let start = url.find("://")? + 3;
    let end = url[start..]
        .find(['/', '?'])
        .map_or(url.len(), |i| start + i);
    let at = url[start..end].rfind('@').map_or(start, |i| start + i + 1);
    Some((at, end))
}

/// `url` with its host and port replaced by `addr`.
fn reroute(url: &str, addr: &str) -> Option<String> {
    let (start, end) = authority(url)?;
    if start == end {
        return None;
    }
    Some(format!("{}{addr}{}", &url[..start], &url[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_go_through_the_proxy() {
        assert_eq!(
            reroute(
                "postgres://postgres@127.0.0.1:5555/postgres?options=x",
                "127.0.0.1:7"
            )
            .unwrap(),
            "postgres://postgres@127.0.0.1:7/postgres?options=x"
        );
        assert_eq!(
            reroute("postgres://u:p@w@db.example:5432", "127.0.0.1:7").unwrap(),
            "postgres://u:p@w@127.0.0.1:7"
        );
        assert_eq!(
            upstream_of("postgres://u@db:6000/x"),
            Some(Upstream::Tcp("db:6000".into()))
        );
        assert_eq!(
            upstream_of("mysql://root@127.0.0.1/tracelab"),
            Some(Upstream::Tcp("127.0.0.1:3306".into()))
        );
        assert_eq!(upstream_of("postgres:///x?host=/tmp"), None);
    }
}
