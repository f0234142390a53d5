//! What the proxy did, counted as it runs (printed at exit and on
//! SIGUSR1).

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

/// Live counters, shared by all connections.
#[derive(Debug, Default)]
pub struct Stats {
    pub connections: AtomicU64,
    pub active: AtomicU64,
    pub cancels: AtomicU64,
    pub cancels_unknown: AtomicU64,
    pub ssl_refused: AtomicU64,
    pub upstream_errors: AtomicU64,
    pub malformed: AtomicU64,
    pub messages_to_server: AtomicU64,
    pub messages_to_client: AtomicU64,
    pub bytes_to_server: AtomicU64,
    pub bytes_to_client: AtomicU64,
    pub chunks_delayed: AtomicU64,
    pub delay_to_server_us: AtomicU64,
    pub delay_to_client_us: AtomicU64,
    pub traces: AtomicU64,
}

/// A snapshot of the counters.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct Counters {
    /// Client connections accepted (including cancel and refused-SSL ones).
    pub connections: u64,
    /// Connections open now.
    pub active: u64,
    /// CancelRequests routed to the server, and those for a key no
    /// connection through this proxy has (dropped).
    pub cancels: u64,
    pub cancels_unknown: u64,
    /// SSLRequest/GSSENCRequest answered 'N'.
    pub ssl_refused: u64,
    /// Connections the server could not be reached for, or lost.
    pub upstream_errors: u64,
    /// Connections closed for a malformed message.
    pub malformed: u64,
    pub messages_to_server: u64,
    pub messages_to_client: u64,
    pub bytes_to_server: u64,
    pub bytes_to_client: u64,
    /// Chunks held back by the link emulation, and the time they were
    /// held, µs, per direction (arrival at the proxy to being written on).
    pub chunks_delayed: u64,
    pub delay_to_server_us: u64,
    pub delay_to_client_us: u64,
    /// Trace files written.
    pub traces: u64,
}

impl Stats {
    pub fn snapshot(&self) -> Counters {
        Counters {
            connections: self.connections.load(Relaxed),
            active: self.active.load(Relaxed),
            cancels: self.cancels.load(Relaxed),
            cancels_unknown: self.cancels_unknown.load(Relaxed),
            ssl_refused: self.ssl_refused.load(Relaxed),
            upstream_errors: self.upstream_errors.load(Relaxed),
            malformed: self.malformed.load(Relaxed),
            messages_to_server: self.messages_to_server.load(Relaxed),
            messages_to_client: self.messages_to_client.load(Relaxed),
            bytes_to_server: self.bytes_to_server.load(Relaxed),
            bytes_to_client: self.bytes_to_client.load(Relaxed),
            chunks_delayed: self.chunks_delayed.load(Relaxed),
            delay_to_server_us: self.delay_to_server_us.load(Relaxed),
            delay_to_client_us: self.delay_to_client_us.load(Relaxed),
            traces: self.traces.load(Relaxed),
        }
    }
}

impl std::fmt::Display for Counters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let avg = |us: u64| {
            if self.chunks_delayed == 0 {
                0.0
            } else {
                us as f64 / self.chunks_delayed as f64 / 1000.0
            }
        };
        writeln!(
            f,
            "connections {} (open {}), cancels {} (unknown key {}), SSL/GSS refused {}, upstream errors {}, malformed {}, traces {}",
            self.connections,
            self.active,
            self.cancels,
            self.cancels_unknown,
            self.ssl_refused,
            self.upstream_errors,
            self.malformed,
            self.traces
        )?;
        writeln!(
            f,
            "to server: {} messages, {} bytes, delay added {:.3} s; to client: {} messages, {} bytes, delay added {:.3} s",
            self.messages_to_server,
            self.bytes_to_server,
            self.delay_to_server_us as f64 / 1e6,
            self.messages_to_client,
            self.bytes_to_client,
            self.delay_to_client_us as f64 / 1e6
        )?;
        write!(
            f,
            "chunks delayed {} (mean hold to server+client {:.3} ms)",
            self.chunks_delayed,
            avg(self.delay_to_server_us + self.delay_to_client_us)
        )
    }
}
