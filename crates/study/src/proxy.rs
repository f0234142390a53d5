//! tracelab proxy in the path of a level's runs (`proxy = { trace = true,
//! delay = "3ms" }`): started in this process before the run, its
//! sessions sent to it instead of the server, stopped (its traces
//! flushed) when the run has ended.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use tracelab_proxy::{Config, Proxy, Upstream};

use crate::error::StudyError;
use crate::spec::ProxyLevel;

pub struct InPath {
    addr: SocketAddr,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl InPath {
    /// Starts a proxy on a free port of 127.0.0.1 in front of `upstream`,
    /// writing its traces to `trace_dir`.
    pub fn start(
        upstream: Upstream,
        level: &ProxyLevel,
        trace_dir: Option<PathBuf>,
    ) -> Result<InPath, StudyError> {
        let mut cfg = Config::new("127.0.0.1:0", upstream);
        if let Some(d) = &level.delay {
            // Checked when the study file was read.
            cfg.delay = humantime::parse_duration(d).unwrap_or_default();
        }
        cfg.trace_dir = trace_dir;
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
                    let _ = addr_tx.send(proxy.local_addr().map_err(|e| e.to_string()));
                    // One event loop: the proxy serves the run's few sessions
                    // beside them on this machine.
                    proxy
                        .serve(1, async move {
                            let _ = stop_rx.await;
                        })
                        .await;
                });
                rt.shutdown_timeout(Duration::from_secs(2));
            })
            .map_err(|e| StudyError::Usage(format!("cannot start the proxy: {e}")))?;
        let addr = addr_rx
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| "it did not start within 10 s".to_string())
            .and_then(|r| r)
            .map_err(|e| StudyError::Usage(format!("tracelab proxy: {e}")))?;
        Ok(InPath {
            addr,
            stop: Some(stop_tx),
            thread: Some(thread),
        })
    }

    /// `url` with the proxy's address in place of the server's.
    pub fn url(&self, url: &str) -> Result<String, StudyError> {
        reroute(url, &self.addr.to_string()).ok_or_else(|| {
            StudyError::Usage(
                "a proxy level needs a postgres://USER@HOST:PORT/DB URL to send its sessions through the proxy"
                    .into(),
            )
        })
    }

    /// Stops accepting, ends the connections left and waits until every
    /// trace is written.
    pub fn stop(mut self) {
        self.shut();
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

/// Where a server named by a `postgres://` URL listens, for the proxy's
/// upstream: `HOST:PORT` (5432 when the URL names none).
pub fn upstream_of(url: &str) -> Option<Upstream> {
    let (start, end) = authority(url)?;
    let auth = &url[start..end];
    let host = auth.rsplit_once('@').map_or(auth, |(_, h)| h);
    if host.is_empty() {
        return None;
    }
    let hp = if host
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        host.to_string()
    } else {
        format!("{host}:5432")
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
            upstream_of("postgresql://u@10.0.0.1/x"),
            Some(Upstream::Tcp("10.0.0.1:5432".into()))
        );
        assert_eq!(upstream_of("postgres:///x?host=/tmp"), None);
    }
}
