//! What the proxy is told: where to listen, where the server is, and the
//! link it emulates.

use std::path::PathBuf;
use std::time::Duration;

use crate::error::ProxyError;

/// Where the PostgreSQL server is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Upstream {
    /// `host:port` (TCP).
    Tcp(String),
    /// A unix socket file, e.g. `/tmp/pg/socket/.s.PGSQL.5432`.
    Unix(PathBuf),
}

impl Upstream {
    /// A path (anything with a `/`) is a unix socket; the rest is
    /// `host:port`.
    pub fn parse(s: &str) -> Result<Upstream, ProxyError> {
        if s.contains('/') {
            return Ok(Upstream::Unix(PathBuf::from(s)));
        }
        match s.rsplit_once(':') {
            Some((h, p)) if !h.is_empty() && p.parse::<u16>().is_ok() => Ok(Upstream::Tcp(s.into())),
            _ => Err(ProxyError::Config(format!(
                "--upstream {s:?}: expected HOST:PORT or the path of a unix socket file (…/.s.PGSQL.5432)"
            ))),
        }
    }
}

impl std::fmt::Display for Upstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Upstream::Tcp(a) => f.write_str(a),
            Upstream::Unix(p) => write!(f, "{}", p.display()),
        }
    }
}

/// Which way the delay goes. Whatever the direction, `--delay` is the
/// round-trip time added, as `tc netem delay` on one interface adds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Half of each drawn delay on requests, half on responses (a
    /// symmetric link).
    Both,
    /// All of it on client-to-server chunks (netem on the client's
    /// egress, the setup of the result-cache study).
    ToServer,
    /// All of it on server-to-client chunks.
    ToClient,
}

/// The shape of the jitter around the delay, as netem's `distribution`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distribution {
    /// Uniform on [delay − jitter, delay + jitter): netem's default.
    Uniform,
    /// delay + jitter·N(0,1).
    Normal,
    /// delay + jitter·(X − E X)/sd(X) with X Pareto(shape 3): mean delay,
    /// standard deviation jitter, a long right tail.
    Pareto,
}

/// What the proxy understands of the bytes it relays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// PostgreSQL's wire protocol: framed, traced, cancels routed, SSL
    /// refused.
    Postgres,
    /// Any TCP protocol (MariaDB's, say), relayed as bytes: the emulated
    /// link alone, nothing parsed, nothing traced.
    Tcp,
}

/// Everything the proxy does, fixed at start.
#[derive(Debug, Clone)]
pub struct Config {
    pub listen: String,
    pub upstream: Upstream,
    /// Round-trip time added per request/response exchange.
    pub delay: Duration,
    pub jitter: Duration,
    pub distribution: Distribution,
    pub direction: Direction,
    /// Bytes per second per direction per connection.
    pub bandwidth: Option<u64>,
    /// One 10046-format trace per client connection in this directory.
    pub trace_dir: Option<PathBuf>,
    /// Write bind values in traces.
    pub binds: bool,
    pub protocol: Protocol,
}

impl Config {
    pub fn new(listen: &str, upstream: Upstream) -> Config {
        Config {
            listen: listen.into(),
            upstream,
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            distribution: Distribution::Uniform,
            direction: Direction::Both,
            bandwidth: None,
            trace_dir: None,
            binds: true,
            protocol: Protocol::Postgres,
        }
    }

    /// True when chunks go straight through (no delay, no rate limit):
    /// then each direction is a plain read-write loop.
    pub fn shaped(&self) -> bool {
        !self.delay.is_zero() || !self.jitter.is_zero() || self.bandwidth.is_some()
    }
}

/// Parses a rate the way `tc` writes them: `kbit`, `mbit`, `gbit`, `bit`
/// are bits per second (decimal); `B`, `kB`/`KB`, `MB`, `GB` bytes per
/// second (decimal), `KiB`, `MiB`, `GiB` binary; `/s` may follow; a bare
/// number is bytes per second.
pub fn parse_rate(s: &str) -> Result<u64, ProxyError> {
    let bad = || {
        ProxyError::Config(format!(
            "--bandwidth {s:?}: expected a rate such as 10mbit, 512kbit, 1MB, 100KiB/s or a number of bytes per second"
        ))
    };
    let t = s.trim();
    let t = t.strip_suffix("/s").unwrap_or(t);
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num.parse().map_err(|_| bad())?;
    let factor = match unit.trim() {
        "" | "B" | "bps" => 1.0,
        "bit" => 1.0 / 8.0,
        "kbit" | "Kbit" => 1e3 / 8.0,
        "mbit" | "Mbit" => 1e6 / 8.0,
        "gbit" | "Gbit" => 1e9 / 8.0,
        "kB" | "KB" | "kbps" => 1e3,
        "MB" | "mbps" => 1e6,
        "GB" | "gbps" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(bad()),
    };
    let r = (n * factor).round();
    if !(1.0..1e15).contains(&r) {
        return Err(bad());
    }
    Ok(r as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates() {
        assert_eq!(parse_rate("10mbit").unwrap(), 1_250_000);
        assert_eq!(parse_rate("512kbit").unwrap(), 64_000);
        assert_eq!(parse_rate("1MB/s").unwrap(), 1_000_000);
        assert_eq!(parse_rate("100KiB").unwrap(), 102_400);
        assert_eq!(parse_rate("2000").unwrap(), 2000);
        assert!(parse_rate("fast").is_err());
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("10 parsecs").is_err());
    }

    #[test]
    fn upstreams() {
        assert_eq!(
            Upstream::parse("127.0.0.1:5432").unwrap(),
            Upstream::Tcp("127.0.0.1:5432".into())
        );
        assert_eq!(
            Upstream::parse("/tmp/s/.s.PGSQL.5432").unwrap(),
            Upstream::Unix("/tmp/s/.s.PGSQL.5432".into())
        );
        assert!(Upstream::parse("localhost").is_err());
        assert!(Upstream::parse(":5432").is_err());
    }
}
