//! One client connection: the startup packet (SSL/GSS refused, cancel
//! routed), the upstream connection, then the two directions relayed byte
//! for byte, shaped and traced.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};

use crate::clock;
use crate::config::{Config, Protocol, Upstream};
use crate::counters::Stats;
use crate::frame::Framer;
use crate::link::{Shaper, Timer, Way};
use crate::message::{self, ClientMsg};
use crate::tracer::Tracer;

/// Bytes read at once. With at most `QUEUE` chunks waiting per direction,
/// a shaped connection holds at most 1 MiB per direction (backpressure:
/// the proxy stops reading when its queue is full, as netem drops above
/// its `limit`, and TCP flow control does the rest).
const CHUNK: usize = 32 << 10;
const QUEUE: usize = 32;
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// What all connections share.
pub struct Shared {
    pub cfg: Config,
    pub stats: Arc<Stats>,
    /// BackendKeyData of each open connection: a CancelRequest (which
    /// arrives on a new connection) is routed to the upstream of the
    /// connection that owns the key.
    pub keys: Mutex<HashMap<(i32, i32), Upstream>>,
    pub timer: Timer,
    pub serial: AtomicU64,
}

/// A log line about one connection (never with message contents).
fn log(serial: u64, peer: &SocketAddr, what: &str) {
    eprintln!("tracelab proxy: connection {serial} from {peer}: {what}");
}

/// Reads a startup-phase packet (length-prefixed, no type byte).
async fn read_startup(c: &mut TcpStream) -> Result<Option<Vec<u8>>, String> {
    let mut len = [0u8; 4];
    match c.read_exact(&mut len).await {
        Ok(_) => {}
        Err(_) => return Ok(None),
    }
    let n = u32::from_be_bytes(len);
    if !(8..=message::MAX_STARTUP).contains(&n) {
        return Err(format!(
            "malformed startup packet: length {n}, expected 8 to {}",
            message::MAX_STARTUP
        ));
    }
    let mut p = vec![0u8; n as usize];
    p[..4].copy_from_slice(&len);
    match c.read_exact(&mut p[4..]).await {
        Ok(_) => Ok(Some(p)),
        Err(_) => Ok(None),
    }
}

enum Up {
    Tcp(TcpStream),
    Unix(UnixStream),
}

async fn connect(up: &Upstream) -> std::io::Result<Up> {
    let t = Duration::from_secs(10);
    let timed_out = || std::io::Error::new(std::io::ErrorKind::TimedOut, "timed out after 10 s");
    Ok(match up {
        Upstream::Tcp(a) => {
            let s = tokio::time::timeout(t, TcpStream::connect(a.as_str()))
                .await
                .map_err(|_| timed_out())??;
            s.set_nodelay(true)?;
            Up::Tcp(s)
        }
        Upstream::Unix(p) => Up::Unix(
            tokio::time::timeout(t, UnixStream::connect(p))
                .await
                .map_err(|_| timed_out())??,
        ),
    })
}

/// Decrements the open-connection count and forgets the connection's
/// cancel key, however the connection ends.
struct Guard<'a> {
    shared: &'a Shared,
    key: Mutex<Option<(i32, i32)>>,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        self.shared.stats.active.fetch_sub(1, Relaxed);
        if let Some(k) = self.key.lock().ok().and_then(|mut k| k.take()) {
            if let Ok(mut m) = self.shared.keys.lock() {
                m.remove(&k);
            }
        }
    }
}

/// Serves one accepted client connection to its end.
pub async fn serve(shared: Arc<Shared>, mut client: TcpStream, peer: SocketAddr, serial: u64) {
    let stats = &shared.stats;
    stats.connections.fetch_add(1, Relaxed);
    stats.active.fetch_add(1, Relaxed);
    let guard = Guard {
        shared: &shared,
        key: Mutex::new(None),
    };
    let _ = client.set_nodelay(true);
    let mut refused = 0;
    // Any other protocol is relayed as it comes: the server may speak
    // first (MariaDB's handshake).
    let startup = if shared.cfg.protocol == Protocol::Tcp {
        Vec::new()
    } else {
        loop {
            // As the server's authentication_timeout: a client that opens a
            // connection and says nothing does not hold it for ever.
            let read = tokio::time::timeout(STARTUP_TIMEOUT, read_startup(&mut client)).await;
            let p = match read {
                Ok(Ok(Some(p))) => p,
                Ok(Ok(None)) => return,
                Err(_) => {
                    log(serial, &peer, "no startup packet within 60 s; closed");
                    return;
                }
                Ok(Err(e)) => {
                    stats.malformed.fetch_add(1, Relaxed);
                    log(serial, &peer, &format!("{e}; closed"));
                    return;
                }
            };
            let code = u32::from_be_bytes([p[4], p[5], p[6], p[7]]);
            match code {
                message::SSL_REQUEST | message::GSSENC_REQUEST if refused < 2 => {
                    // No TLS or GSS encryption between client and proxy: 'N'
                    // tells the client to go on in clear (sslmode=prefer does).
                    refused += 1;
                    stats.ssl_refused.fetch_add(1, Relaxed);
                    if client.write_all(b"N").await.is_err() {
                        return;
                    }
                }
                message::CANCEL_REQUEST => {
                    cancel(&shared, &p, serial, &peer).await;
                    return;
                }
                c if c >> 16 == 3 => break p,
                c => {
                    stats.malformed.fetch_add(1, Relaxed);
                    log(
                        serial,
                        &peer,
                        &format!("unsupported startup request code {c}; closed"),
                    );
                    let m = message::error_response(
                        "08P01",
                        &format!(
                            "tracelab proxy: unsupported protocol {}.{}",
                            c >> 16,
                            c & 0xffff
                        ),
                    );
                    let _ = client.write_all(&m).await;
                    return;
                }
            }
        }
    };
    let cfg = &shared.cfg;
    let mut to_server = Shaper::new(cfg, Way::ToServer, serial);
    let mut to_client = Shaper::new(cfg, Way::ToClient, serial);
    if cfg.shaped() {
        // The TCP handshake with the server would cost one round trip on
        // the emulated link; the proxy's accept did not.
        let rtt = to_server.sample(0) + to_client.sample(0);
        shared.timer.sleep_until(Instant::now() + rtt).await;
    }
    let up = match connect(&cfg.upstream).await {
        Ok(u) => u,
        Err(e) => {
            stats.upstream_errors.fetch_add(1, Relaxed);
            let what = format!(
                "tracelab proxy: cannot connect to upstream {}: {e}",
                cfg.upstream
            );
            log(serial, &peer, &what);
            let _ = client
                .write_all(&message::error_response("08001", &what))
                .await;
            let _ = client.shutdown().await;
            return;
        }
    };
    let tracer = cfg.trace_dir.as_ref().and_then(|dir| {
        let path = dir.join(format!("tracelab_proxy_{serial}.trc"));
        let name = path.display().to_string();
        let started = humantime::format_rfc3339_micros(std::time::SystemTime::now()).to_string();
        let opened = std::fs::File::create(&path).and_then(|f| {
            tracelab_trace::TraceWriter::new(
                f,
                &tracelab_trace::Header {
                    name: &name,
                    engine: "postgres",
                    side: "server (proxy)",
                    timer: "monotonic",
                    started: &started,
                },
            )
        });
        match opened {
            Ok(w) => {
                stats.traces.fetch_add(1, Relaxed);
                Some(Tracer::new(w, cfg.binds))
            }
            Err(e) => {
                log(
                    serial,
                    &peer,
                    &format!("cannot write trace {name}: {e}; not traced"),
                );
                None
            }
        }
    });
    let conn = Conn {
        shared: &shared,
        guard: &guard,
        serial,
        peer,
        tracer: Mutex::new(tracer),
        client_done: AtomicBool::new(false),
    };
    let (cr, cw) = client.split();
    match up {
        Up::Tcp(mut s) => {
            let (ur, uw) = s.split();
            conn.relay(&startup, cr, cw, ur, uw, to_server, to_client)
                .await
        }
        Up::Unix(mut s) => {
            let (ur, uw) = s.split();
            conn.relay(&startup, cr, cw, ur, uw, to_server, to_client)
                .await
        }
    }
    let tracer = conn.tracer.into_inner().ok().flatten();
    if let Some(mut t) = tracer {
        t.flush();
    }
}

/// Routes a CancelRequest to the upstream of the connection that holds
/// the key, through the emulated link; drops one for an unknown key (the
/// server would ignore it too).
async fn cancel(shared: &Shared, packet: &[u8], serial: u64, peer: &SocketAddr) {
    let Some(key) = message::cancel_key(packet) else {
        return;
    };
    let up = shared.keys.lock().ok().and_then(|m| m.get(&key).cloned());
    let Some(up) = up else {
        shared.stats.cancels_unknown.fetch_add(1, Relaxed);
        log(
            serial,
            peer,
            "cancel request for a backend key no connection through this proxy has; dropped",
        );
        return;
    };
    shared.stats.cancels.fetch_add(1, Relaxed);
    let mut s = Shaper::new(&shared.cfg, Way::ToServer, serial);
    shared
        .timer
        .sleep_until(Instant::now() + s.sample(packet.len()))
        .await;
    let r = async {
        match connect(&up).await? {
            Up::Tcp(mut c) => {
                c.write_all(packet).await?;
                let _ = c.read(&mut [0u8; 16]).await;
            }
            Up::Unix(mut c) => {
                c.write_all(packet).await?;
                let _ = c.read(&mut [0u8; 16]).await;
            }
        }
        Ok::<(), std::io::Error>(())
    };
    if let Err(e) = r.await {
        log(
            serial,
            peer,
            &format!("cannot pass a cancel request to {up}: {e}"),
        );
    }
}

/// How a direction ended.
#[derive(Debug, PartialEq, Eq)]
enum End {
    /// The reading side closed or failed.
    ReadEnded,
    /// The writing side failed.
    WriteFailed,
    Malformed,
}

struct Chunk {
    data: Vec<u8>,
    arrival: Instant,
    release: Instant,
    msgs: Vec<ClientMsg>,
}

struct Conn<'a> {
    shared: &'a Shared,
    guard: &'a Guard<'a>,
    serial: u64,
    peer: SocketAddr,
    tracer: Mutex<Option<Tracer>>,
    client_done: AtomicBool,
}

impl Conn<'_> {
    fn tracing(&self) -> bool {
        self.shared.cfg.trace_dir.is_some()
    }

    /// Bytes of a protocol the proxy does not read (`Protocol::Tcp`).
    fn raw(&self) -> bool {
        self.shared.cfg.protocol == Protocol::Tcp
    }

    #[allow(clippy::too_many_arguments)]
    async fn relay<CR, CW, UR, UW>(
        &self,
        startup: &[u8],
        cr: CR,
        cw: CW,
        ur: UR,
        mut uw: UW,
        to_server: Shaper,
        to_client: Shaper,
    ) where
        CR: AsyncRead + Unpin,
        CW: AsyncWrite + Unpin,
        UR: AsyncRead + Unpin,
        UW: AsyncWrite + Unpin,
    {
        self.shared
            .stats
            .bytes_to_server
            .fetch_add(startup.len() as u64, Relaxed);
        if uw.write_all(startup).await.is_err() {
            return;
        }
        let up = self.c2s(cr, uw, to_server);
        let down = self.s2c(ur, cw, to_client);
        tokio::pin!(up, down);
        tokio::select! {
            _ = &mut down => {}
            end = &mut up => {
                if end != End::Malformed {
                    // The server closes once it has seen the client's end;
                    // whatever it still sends goes to the client.
                    let _ = tokio::time::timeout(Duration::from_secs(30), down).await;
                }
            }
        }
    }

    /// Looks at a chunk from the client: counts its messages, decodes
    /// those the tracer follows, notes a Terminate.
    fn inspect_client(&self, framer: &mut Framer, data: &[u8]) -> Result<Vec<ClientMsg>, End> {
        if self.raw() {
            self.shared
                .stats
                .bytes_to_server
                .fetch_add(data.len() as u64, Relaxed);
            return Ok(Vec::new());
        }
        let tracing = self.tracing();
        let binds = self.shared.cfg.binds;
        let mut msgs = Vec::new();
        let mut terminate = false;
        let fed = framer.feed(
            data,
            |t| tracing && message::client_traced(t),
            |t, b| {
                terminate |= t == b'X';
                if tracing {
                    if let Some(m) = message::decode_client(t, b, binds) {
                        msgs.push(m);
                    }
                }
            },
        );
        let stats = &self.shared.stats;
        match fed {
            Ok(count) => stats.messages_to_server.fetch_add(count, Relaxed),
            Err(m) => {
                stats.malformed.fetch_add(1, Relaxed);
                log(
                    self.serial,
                    &self.peer,
                    &format!("malformed message from the client ({m}); closed"),
                );
                return Err(End::Malformed);
            }
        };
        stats.bytes_to_server.fetch_add(data.len() as u64, Relaxed);
        if terminate {
            self.client_done.store(true, Relaxed);
        }
        Ok(msgs)
    }

    /// Client to server.
    async fn c2s<R, W>(&self, mut r: R, mut w: W, mut shaper: Shaper) -> End
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let mut framer = Framer::default();
        let mut buf = vec![0u8; CHUNK];
        if !self.shared.cfg.shaped() {
            let end = loop {
                let n = match r.read(&mut buf).await {
                    Ok(0) | Err(_) => break End::ReadEnded,
                    Ok(n) => n,
                };
                let msgs = match self.inspect_client(&mut framer, &buf[..n]) {
                    Ok(m) => m,
                    Err(e) => return e,
                };
                if w.write_all(&buf[..n]).await.is_err() {
                    break End::WriteFailed;
                }
                if !msgs.is_empty() {
                    self.traced_client(msgs);
                }
            };
            self.client_done.store(true, Relaxed);
            let _ = w.shutdown().await;
            return end;
        }
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Chunk>(QUEUE);
        let reader = async {
            let end = loop {
                let n = match r.read(&mut buf).await {
                    Ok(0) | Err(_) => break End::ReadEnded,
                    Ok(n) => n,
                };
                let arrival = Instant::now();
                let msgs = match self.inspect_client(&mut framer, &buf[..n]) {
                    Ok(m) => m,
                    Err(e) => return e,
                };
                let c = Chunk {
                    data: buf[..n].to_vec(),
                    arrival,
                    release: shaper.release(arrival, n),
                    msgs,
                };
                if tx.send(c).await.is_err() {
                    break End::WriteFailed;
                }
            };
            self.client_done.store(true, Relaxed);
            drop(tx);
            end
        };
        let stats = &self.shared.stats;
        let writer = async {
            while let Some(c) = rx.recv().await {
                self.shared.timer.sleep_until(c.release).await;
                let held = c.arrival.elapsed();
                if w.write_all(&c.data).await.is_err() {
                    return;
                }
                stats.chunks_delayed.fetch_add(1, Relaxed);
                stats
                    .delay_to_server_us
                    .fetch_add(held.as_micros() as u64, Relaxed);
                if !c.msgs.is_empty() {
                    self.traced_client(c.msgs);
                }
            }
            let _ = w.shutdown().await;
        };
        let (end, ()) = tokio::join!(reader, writer);
        end
    }

    fn traced_client(&self, msgs: Vec<ClientMsg>) {
        let now = clock::now();
        if let Ok(mut t) = self.tracer.lock() {
            if let Some(t) = t.as_mut() {
                for m in msgs {
                    t.client(m, now);
                }
            }
        }
    }

    /// Looks at a chunk from the server, read at `arrival`: counts its
    /// messages, learns the cancel key, feeds the tracer; notes whether
    /// the last message was an ErrorResponse.
    fn inspect_server(
        &self,
        framer: &mut Framer,
        data: &[u8],
        arrival: Instant,
        last_error: &mut bool,
    ) {
        if self.raw() {
            self.shared
                .stats
                .bytes_to_client
                .fetch_add(data.len() as u64, Relaxed);
            return;
        }
        let tracing = self.tracing();
        let mut key = None;
        let mut msgs: Vec<(u8, Vec<u8>)> = Vec::new();
        let fed = framer.feed(
            data,
            |t| t == b'K' || (tracing && message::server_traced(t)),
            |t, b| {
                *last_error = t == b'E';
                if t == b'K' {
                    key = message::backend_key(b);
                }
                if tracing {
                    msgs.push((
                        t,
                        if message::server_traced(t) {
                            b.to_vec()
                        } else {
                            Vec::new()
                        },
                    ));
                }
            },
        );
        if tracing {
            if let Ok(mut g) = self.tracer.lock() {
                if let Some(tr) = g.as_mut() {
                    tr.server_chunk(&msgs, clock::tim(arrival));
                }
            }
        }
        if let Some(k) = key {
            if let Ok(mut m) = self.shared.keys.lock() {
                m.insert(k, self.shared.cfg.upstream.clone());
            }
            if let Ok(mut g) = self.guard.key.lock() {
                *g = Some(k);
            }
        }
        let stats = &self.shared.stats;
        // The server does not send malformed messages; if it did, the
        // bytes would still go through and only the count would stop.
        if let Ok(count) = fed {
            stats.messages_to_client.fetch_add(count, Relaxed);
        }
        stats.bytes_to_client.fetch_add(data.len() as u64, Relaxed);
    }

    /// Server to client.
    async fn s2c<R, W>(&self, mut r: R, mut w: W, mut shaper: Shaper) -> End
    where
        R: AsyncRead + Unpin,
        W: AsyncWrite + Unpin,
    {
        let stats = &self.shared.stats;
        let mut framer = Framer::default();
        let mut last_error = false;
        let mut buf = vec![0u8; CHUNK];
        let end = if !self.shared.cfg.shaped() {
            loop {
                let n = match r.read(&mut buf).await {
                    Ok(0) | Err(_) => break End::ReadEnded,
                    Ok(n) => n,
                };
                let arrival = Instant::now();
                self.inspect_server(&mut framer, &buf[..n], arrival, &mut last_error);
                if w.write_all(&buf[..n]).await.is_err() {
                    break End::WriteFailed;
                }
                self.wrote_to_client(arrival);
            }
        } else {
            let (tx, mut rx) = tokio::sync::mpsc::channel::<Chunk>(QUEUE);
            let reader = async {
                let end = loop {
                    let n = match r.read(&mut buf).await {
                        Ok(0) | Err(_) => break End::ReadEnded,
                        Ok(n) => n,
                    };
                    let arrival = Instant::now();
                    self.inspect_server(&mut framer, &buf[..n], arrival, &mut last_error);
                    let c = Chunk {
                        data: buf[..n].to_vec(),
                        arrival,
                        release: shaper.release(arrival, n),
                        msgs: Vec::new(),
                    };
                    if tx.send(c).await.is_err() {
                        break End::WriteFailed;
                    }
                };
                drop(tx);
                end
            };
            let writer = async {
                while let Some(c) = rx.recv().await {
                    self.shared.timer.sleep_until(c.release).await;
                    let t0 = Instant::now();
                    let held = c.arrival.elapsed();
                    if w.write_all(&c.data).await.is_err() {
                        return;
                    }
                    self.wrote_to_client(t0);
                    stats.chunks_delayed.fetch_add(1, Relaxed);
                    stats
                        .delay_to_client_us
                        .fetch_add(held.as_micros() as u64, Relaxed);
                }
            };
            let (end, ()) = tokio::join!(reader, writer);
            end
        };
        if end == End::ReadEnded && !self.client_done.load(Relaxed) && !last_error && !self.raw() {
            // The server went away while the client still talks to it, and
            // did not say why (a FATAL error of its own would have): say
            // so in the protocol, between messages only.
            stats.upstream_errors.fetch_add(1, Relaxed);
            let what = format!(
                "tracelab proxy: connection to upstream {} lost",
                self.shared.cfg.upstream
            );
            log(self.serial, &self.peer, &what);
            if framer.at_boundary() {
                let _ = w.write_all(&message::error_response("08006", &what)).await;
            }
        }
        let _ = w.shutdown().await;
        end
    }

    fn wrote_to_client(&self, t0: Instant) {
        if self.tracing() {
            let us = t0.elapsed().as_micros() as i64;
            if let Ok(mut t) = self.tracer.lock() {
                if let Some(t) = t.as_mut() {
                    t.wrote_to_client(us);
                }
            }
        }
    }
}
