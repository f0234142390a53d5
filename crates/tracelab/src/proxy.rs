//! `tracelab proxy`: a PostgreSQL wire-protocol proxy that adds network
//! latency and writes a server-side 10046 trace per client connection.

use crate::output::say;
use std::path::PathBuf;
use std::time::Duration;

use tracelab_proxy::{
    parse_rate, Config, Direction, Distribution, Protocol, Proxy, ProxyError, Upstream,
};

use crate::exit::{self, Failure};
use tracelab_run::duration;

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Dist {
    Uniform,
    Normal,
    Pareto,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Dir {
    Both,
    ToServer,
    ToClient,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum Proto {
    Postgres,
    Tcp,
}

#[derive(clap::Args, Debug)]
#[command(after_help = "\
DELAY: --delay is the round-trip time added to every request/response exchange, as
`tc netem delay` on one interface adds it. --direction says where it goes: `both`
(default) holds each chunk half of a drawn delay each way; `to-server` holds requests
by the whole delay (netem on the client's egress); `to-client` holds responses.
Each chunk (one read) draws its own delay from --distribution with mean --delay and
spread --jitter (uniform: delay±jitter, netem's default; normal: sd = jitter;
pareto: sd = jitter, long right tail); chunks never overtake each other (FIFO per
direction). A new connection also waits one round trip (the TCP handshake).

TLS: SSLRequest and GSSENCRequest are answered 'N'; clients with sslmode=prefer
(libpq's default) go on in clear, sslmode=require fails.")]
pub struct Args {
    /// Address to accept clients on, e.g. 127.0.0.1:6432 (port 0 picks
    /// one; the address is printed on stderr).
    #[arg(long, value_name = "ADDR")]
    listen: String,
    /// The PostgreSQL server: HOST:PORT, or a unix socket file
    /// (…/.s.PGSQL.5432).
    #[arg(long, value_name = "HOST:PORT|SOCKET")]
    upstream: String,
    /// What the proxy relays: PostgreSQL's protocol (traced, cancels
    /// routed), or any TCP protocol as bytes (MariaDB's, say: the emulated
    /// link only, no trace).
    #[arg(long, value_enum, default_value = "postgres")]
    protocol: Proto,
    /// Round-trip time added per exchange, e.g. 6ms, 500us (a bare
    /// number is seconds).
    #[arg(long, value_name = "TIME", default_value = "0ms",
          allow_hyphen_values = true, value_parser = duration::seconds)]
    delay: Duration,
    /// Spread of the delay around --delay (see --distribution), e.g. 1ms.
    #[arg(long, value_name = "TIME", default_value = "0ms",
          allow_hyphen_values = true, value_parser = duration::seconds)]
    jitter: Duration,
    /// Shape of the jitter.
    #[arg(long, value_enum, default_value = "uniform")]
    distribution: Dist,
    /// Which way the delay goes (the round trip grows by --delay in all
    /// cases).
    #[arg(long, value_enum, default_value = "both")]
    direction: Dir,
    /// Limit each direction of each connection to this rate: 10mbit,
    /// 512kbit, 1MB, 100KiB (per second), or bytes per second.
    #[arg(long, value_name = "RATE")]
    bandwidth: Option<String>,
    /// Write one 10046-format trace per client connection here
    /// (tracelab_proxy_N.trc), for `tracelab skew`.
    #[arg(long, value_name = "DIR")]
    trace: Option<PathBuf>,
    /// Leave bind values out of traces.
    #[arg(long)]
    no_binds: bool,
    /// Print the counters at exit as a JSON object on stdout.
    #[arg(long)]
    json: bool,
    /// Event loops, each a thread serving its share of the connections
    /// (default: twice the CPUs). The proxy competes for the CPU with the
    /// server and the clients; a loop per thread gets its fair share (one
    /// loop measured far slower under 20 clients; 2 and 4 alike).
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: Option<u16>,
}

impl From<ProxyError> for Failure {
    fn from(e: ProxyError) -> Failure {
        match e {
            ProxyError::Config(m) => Failure::Usage(m),
            ProxyError::TraceDir { .. } => Failure::Output {
                what: "traces".into(),
                source: std::io::Error::other(e.to_string()),
            },
            ProxyError::Listen { .. } => Failure::Proxy(e.to_string()),
        }
    }
}

pub fn run(a: Args) -> Result<i32, Failure> {
    let mut cfg = Config::new(&a.listen, Upstream::parse(&a.upstream)?);
    cfg.delay = a.delay;
    cfg.jitter = a.jitter;
    cfg.distribution = match a.distribution {
        Dist::Uniform => Distribution::Uniform,
        Dist::Normal => Distribution::Normal,
        Dist::Pareto => Distribution::Pareto,
    };
    cfg.direction = match a.direction {
        Dir::Both => Direction::Both,
        Dir::ToServer => Direction::ToServer,
        Dir::ToClient => Direction::ToClient,
    };
    cfg.bandwidth = a.bandwidth.as_deref().map(parse_rate).transpose()?;
    cfg.trace_dir = a.trace;
    cfg.binds = !a.no_binds;
    cfg.protocol = match a.protocol {
        Proto::Postgres => Protocol::Postgres,
        Proto::Tcp => Protocol::Tcp,
    };
    if let Err(e) = tracelab_proxy::raise_fd_limit() {
        say!("tracelab proxy: cannot raise the open-file limit ({e}); fewer connections fit");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Proxy(format!("cannot start the runtime: {e}")))?;
    let stats = rt.block_on(async {
        let proxy = Proxy::bind(cfg.clone()).await?;
        let addr = proxy
            .local_addr()
            .map_err(|e| Failure::Proxy(format!("listening socket: {e}")))?;
        say!(
            "tracelab proxy: listening on {addr}, upstream {}{}, delay {} jitter {} ({:?}, {:?}){}{}",
            cfg.upstream,
            if cfg.protocol == Protocol::Tcp {
                " (TCP, not read)"
            } else {
                ""
            },
            humantime::format_duration(cfg.delay),
            humantime::format_duration(cfg.jitter),
            cfg.distribution,
            cfg.direction,
            cfg.bandwidth
                .map(|b| format!(", bandwidth {b} B/s"))
                .unwrap_or_default(),
            cfg.trace_dir
                .as_ref()
                .map(|d| format!(", traces in {}", d.display()))
                .unwrap_or_default()
        );
        let stats = proxy.stats();
        let report = stats.clone();
        let shutdown = async move {
            use tokio::signal::unix::{signal, SignalKind};
            let (Ok(mut int), Ok(mut term), Ok(mut usr1)) = (
                signal(SignalKind::interrupt()),
                signal(SignalKind::terminate()),
                signal(SignalKind::user_defined1()),
            ) else {
                say!("tracelab proxy: cannot install signal handlers; stop me with SIGKILL");
                return std::future::pending().await;
            };
            loop {
                tokio::select! {
                    _ = int.recv() => break,
                    _ = term.recv() => break,
                    _ = usr1.recv() => say!("tracelab proxy: {}", report.snapshot()),
                }
            }
        };
        let threads = a
            .threads
            .map(usize::from)
            .unwrap_or_else(|| 2 * std::thread::available_parallelism().map_or(1, |n| n.get()));
        proxy.serve(threads, shutdown).await;
        Ok::<_, Failure>(stats)
    })?;
    rt.shutdown_timeout(Duration::from_secs(2));
    let c = stats.snapshot();
    say!("tracelab proxy: stopped; {c}");
    if a.json {
        let text = serde_json::to_string(&c).map_err(|e| Failure::Proxy(e.to_string()))?;
        crate::output::out(&format!("{text}\n"))?;
    }
    Ok(exit::OK)
}
