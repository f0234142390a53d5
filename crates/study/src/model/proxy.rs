//! A level's `proxy = { ... }`: what tracelab proxy emulates in the path of
//! its runs, as `tracelab proxy`'s options say it (run by
//! `execute::proxy`).

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;
use tracelab_engine::Engine;
use tracelab_proxy::{parse_rate, Config, Direction, Distribution, Protocol, Upstream};

/// What a level's proxy emulates, as `tracelab proxy`'s options say it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProxyLevel {
    /// Its server-side 10046 trace of every connection (PostgreSQL),
    /// profiled as `proxy_trace_NAME_s`, `proxy_trace_NAME_calls` and
    /// `proxy_trace_total_s`, its size as `proxy_trace_bytes`.
    #[serde(default)]
    pub trace: bool,
    /// Round-trip time added (`proxy --delay`: `6ms`, `250us`).
    pub delay: Option<String>,
    /// Spread of the delay (`proxy --jitter`).
    pub jitter: Option<String>,
    /// `uniform` (netem's default), `normal` or `pareto`.
    pub distribution: Option<String>,
    /// `both`, `to-server` (netem on the client's egress) or `to-client`.
    pub direction: Option<String>,
    /// Per direction per connection: `10mbit`, `1MB`, ...
    pub bandwidth: Option<String>,
    /// Bind values in its traces (default on).
    pub binds: Option<bool>,
}

fn duration(key: &str, v: &Option<String>) -> Result<Duration, String> {
    match v {
        None => Ok(Duration::ZERO),
        Some(s) => humantime::parse_duration(s.trim()).map_err(|e| {
            format!("{key} = \"{s}\": expected a duration such as 6ms or 500us ({e})")
        }),
    }
}

impl ProxyLevel {
    /// Everything the file says, checked before anything runs.
    pub fn check(&self) -> Result<(), String> {
        self.config(
            "127.0.0.1:0",
            Upstream::Tcp("127.0.0.1:1".into()),
            Engine::Postgres,
            None,
        )
        .map(|_| ())
    }

    /// The proxy's configuration in front of `upstream` for `engine`.
    pub fn config(
        &self,
        listen: &str,
        upstream: Upstream,
        engine: Engine,
        trace_dir: Option<PathBuf>,
    ) -> Result<Config, String> {
        let mut cfg = Config::new(listen, upstream);
        cfg.delay = duration("delay", &self.delay)?;
        cfg.jitter = duration("jitter", &self.jitter)?;
        cfg.distribution = match self.distribution.as_deref() {
            None | Some("uniform") => Distribution::Uniform,
            Some("normal") => Distribution::Normal,
            Some("pareto") => Distribution::Pareto,
            Some(o) => {
                return Err(format!(
                    "distribution = \"{o}\": expected uniform, normal or pareto"
                ))
            }
        };
        cfg.direction = match self.direction.as_deref() {
            None | Some("both") => Direction::Both,
            Some("to-server") => Direction::ToServer,
            Some("to-client") => Direction::ToClient,
            Some(o) => {
                return Err(format!(
                    "direction = \"{o}\": expected both, to-server or to-client"
                ))
            }
        };
        cfg.bandwidth = self
            .bandwidth
            .as_deref()
            .map(parse_rate)
            .transpose()
            .map_err(|e| e.to_string())?;
        cfg.binds = self.binds.unwrap_or(true);
        cfg.protocol = if engine == Engine::Postgres {
            Protocol::Postgres
        } else {
            Protocol::Tcp
        };
        cfg.trace_dir = trace_dir.filter(|_| cfg.protocol == Protocol::Postgres);
        Ok(cfg)
    }
}

/// The counters `execute::proxy::collect` measures of every proxy (its traces' profile
/// adds `proxy_trace_*`).
pub const MEASUREMENTS: [&str; 3] = [
    "proxy_connections",
    "proxy_delay_ms",
    "proxy_upstream_errors",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_checked_as_the_proxy_reads_its_options() {
        let ok = ProxyLevel {
            delay: Some("6ms".into()),
            jitter: Some("1ms".into()),
            direction: Some("to-server".into()),
            ..ProxyLevel::default()
        };
        assert!(ok.check().is_ok());
        let cfg = ok
            .config(
                "127.0.0.1:0",
                Upstream::Tcp("h:1".into()),
                Engine::Mysql,
                Some("/t".into()),
            )
            .unwrap();
        assert_eq!(cfg.delay, Duration::from_millis(6));
        assert_eq!(cfg.direction, Direction::ToServer);
        assert_eq!(cfg.protocol, Protocol::Tcp);
        assert_eq!(cfg.trace_dir, None, "MariaDB's bytes are not traced");
        let bad = ProxyLevel {
            delay: Some("6 parsecs".into()),
            ..ProxyLevel::default()
        };
        assert!(bad.check().unwrap_err().contains("delay = \"6 parsecs\""));
        let bad = ProxyLevel {
            direction: Some("up".into()),
            ..ProxyLevel::default()
        };
        assert!(bad.check().unwrap_err().contains("to-server"));
    }
}
