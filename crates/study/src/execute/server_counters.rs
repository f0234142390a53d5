//! Counters of a whole server that need no ptrace, taken around a run:
//! context switches and read/write syscalls from /proc, the server's CPU,
//! the tasks it started, and `perf stat -e context-switches` where perf
//! works. Cheap enough for every run, unlike strace, which stops the
//! traced process at every syscall (a ptrace stop each: +15–40 % on a
//! syscall-heavy server).
//!
//! The server is what `strace -f -p PID` and `perf stat -p PID` follow:
//! every thread of mariadbd (and the threads it starts), or the postmaster
//! and the processes it starts during the run (the run's backends and
//! their parallel workers; not the background processes that were there
//! before). What /proc keeps of a task that ends differs by counter, so
//! each is read where it is exact:
//!
//! - `syscr`, `syscw` and CPU: the kernel adds an ended thread's to its
//!   process and a reaped child's to its parent (`/proc/PID/io` and the
//!   cutime/cstime of `/proc/PID/stat` of the parent). So: the change of
//!   the top process's whole-process figures, plus the figures of each
//!   child started during the run and still alive at the end (one that
//!   ended counts through its parent).
//! - context switches: `/proc/PID/task/TID/status` is per task and lost
//!   when the task ends, so every task is read every 50 ms and at the end,
//!   and a task counts from its first reading (from 0 when it started
//!   during the run). A task that ends between two readings loses what it
//!   did since the last one (a few switches of an exiting process).
//!   `perf stat` counts them all (counters are inherited).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::execute::perf::Perf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How often tasks are read during the run.
const EVERY: Duration = Duration::from_millis(50);

/// The shape of a server's processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Server {
    /// One process; its sessions are threads (mariadbd).
    Threads(i32),
    /// A process and its child processes (the postmaster).
    Children(i32),
}

impl Server {
    /// The process strace and perf attach to.
    pub fn top(self) -> i32 {
        match self {
            Server::Threads(p) | Server::Children(p) => p,
        }
    }
}

/// Context switches of one task.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Switches {
    voluntary: u64,
    involuntary: u64,
}

/// Whole-process figures that survive the end of threads and children.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Lasting {
    syscr: u64,
    syscw: u64,
    /// utime + stime (+ cutime + cstime with `children`), clock ticks.
    ticks: u64,
}

impl Lasting {
    fn read(pid: i32, children: bool) -> Option<Lasting> {
        let io = std::fs::read_to_string(format!("/proc/{pid}/io")).ok()?;
        let field = |name: &str| {
            io.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // After the command name (in parentheses, may hold spaces): field
        // 3 onwards; utime, stime, cutime, cstime are fields 14 to 17.
        let rest: Vec<&str> = stat[stat.rfind(')')? + 1..].split_whitespace().collect();
        let f = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
        let mut ticks = f(14)? + f(15)?;
        if children {
            ticks += f(16)? + f(17)?;
        }
        Some(Lasting {
            syscr: field("syscr:")?,
            syscw: field("syscw:")?,
            ticks,
        })
    }

    fn plus(self, o: Lasting) -> Lasting {
        Lasting {
            syscr: self.syscr + o.syscr,
            syscw: self.syscw + o.syscw,
            ticks: self.ticks + o.ticks,
        }
    }

    fn minus(self, o: Lasting) -> Lasting {
        Lasting {
            syscr: self.syscr.saturating_sub(o.syscr),
            syscw: self.syscw.saturating_sub(o.syscw),
            ticks: self.ticks.saturating_sub(o.ticks),
        }
    }
}

fn switches(status: &Path) -> Option<Switches> {
    let s = std::fs::read_to_string(status).ok()?;
    let field = |name: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse::<u64>().ok())
    };
    Some(Switches {
        voluntary: field("voluntary_ctxt_switches:")?,
        involuntary: field("nonvoluntary_ctxt_switches:")?,
    })
}

/// The child processes of `pid` (`/proc/PID/task/PID/children`).
fn children(pid: i32) -> Vec<i32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

/// The tasks whose switches are counted, by id, with their status file.
fn tasks(server: Server) -> Vec<(i32, PathBuf)> {
    match server {
        Server::Threads(p) => std::fs::read_dir(format!("/proc/{p}/task"))
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
                    .map(|t| (t, PathBuf::from(format!("/proc/{p}/task/{t}/status"))))
                    .collect()
            })
            .unwrap_or_default(),
        // PostgreSQL's processes have one thread each.
        Server::Children(p) => std::iter::once(p)
            .chain(children(p))
            .map(|c| (c, PathBuf::from(format!("/proc/{c}/status"))))
            .collect(),
    }
}

/// Every task's switches at its first and its last reading.
#[derive(Default)]
struct Seen {
    first: BTreeMap<i32, Switches>,
    last: BTreeMap<i32, Switches>,
    /// Tasks first seen after the start.
    born: BTreeSet<i32>,
    /// Child processes there at the start (not counted).
    before: BTreeSet<i32>,
}

impl Seen {
    fn look(&mut self, server: Server, at_start: bool) {
        for (t, path) in tasks(server) {
            if let Server::Children(top) = server {
                // Children that were there before the run are not its.
                if at_start && t != top {
                    self.before.insert(t);
                }
                if self.before.contains(&t) {
                    continue;
                }
            }
            if let Some(s) = switches(&path) {
                if let std::collections::btree_map::Entry::Vacant(v) = self.first.entry(t) {
                    // A task started during the run counts from 0.
                    v.insert(if at_start { s } else { Switches::default() });
                    if !at_start {
                        self.born.insert(t);
                    }
                }
                self.last.insert(t, s);
            }
        }
    }
}

/// The counters of a server over a run: start before, finish after.
pub struct ServerWatch {
    server: Server,
    start: Lasting,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
    perf: Result<Perf, String>,
}

impl ServerWatch {
    /// Starts counting; `None` when the server's /proc cannot be read
    /// (not on this machine, or not permitted).
    pub fn start(server: Server, scratch: &Path) -> Option<ServerWatch> {
        let top = server.top();
        let with_children = matches!(server, Server::Children(_));
        let start = Lasting::read(top, with_children)?;
        let mut seen = Seen::default();
        seen.look(server, true);
        let seen = Arc::new(Mutex::new(seen));
        let stop = Arc::new(AtomicBool::new(false));
        let handle = {
            let (seen, stop) = (seen.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(EVERY);
                    if let Ok(mut s) = seen.lock() {
                        s.look(server, false);
                    }
                }
            })
        };
        let perf = Perf::start(
            top,
            &["context-switches".to_string()],
            &scratch.join(format!("perf-{top}.csv")),
        );
        Some(ServerWatch {
            server,
            start,
            seen,
            stop,
            handle: Some(handle),
            perf,
        })
    }

    /// The counters since the start, as measurements, and a note when
    /// perf could not count.
    pub fn finish(mut self) -> (BTreeMap<String, f64>, Option<String>) {
        // perf first: it counts until it is stopped.
        let perf = std::mem::replace(&mut self.perf, Err(String::new())).map(Perf::finish);
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        let mut m = BTreeMap::new();
        let top = self.server.top();
        let with_children = matches!(self.server, Server::Children(_));
        let (sw, born) = match self.seen.lock() {
            Ok(mut s) => {
                s.look(self.server, false);
                let mut total = Switches::default();
                for (t, last) in &s.last {
                    let first = s.first.get(t).copied().unwrap_or_default();
                    total.voluntary += last.voluntary.saturating_sub(first.voluntary);
                    total.involuntary += last.involuntary.saturating_sub(first.involuntary);
                }
                (total, s.born.clone())
            }
            Err(_) => (Switches::default(), BTreeSet::new()),
        };
        m.insert("voluntary_ctxt_switches".into(), sw.voluntary as f64);
        m.insert("nonvoluntary_ctxt_switches".into(), sw.involuntary as f64);
        m.insert("tasks_started".into(), born.len() as f64);
        if let Some(end) = Lasting::read(top, with_children) {
            let mut d = end.minus(self.start);
            if with_children {
                // Children of the run not reaped yet: their whole life.
                for c in children(top).iter().filter(|c| born.contains(c)) {
                    if let Some(x) = Lasting::read(*c, false) {
                        d = d.plus(x);
                    }
                }
            }
            m.insert("syscr".into(), d.syscr as f64);
            m.insert("syscw".into(), d.syscw as f64);
            m.insert(
                "server_cpu_ms".into(),
                d.ticks as f64 * 1000.0 / clock_ticks() as f64,
            );
        }
        let note = match perf.and_then(|c| c) {
            Ok(c) => match crate::execute::perf::count_of(&c, "context-switches") {
                Some(n) => {
                    m.insert("perf_context_switches".into(), n as f64);
                    None
                }
                None => Some(
                    "perf context switches not counted: perf stat counted nothing (<not supported>)"
                        .into(),
                ),
            },
            Err(why) => Some(format!("perf context switches not counted: {why}")),
        };
        (m, note)
    }
}

impl Drop for ServerWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

fn clock_ticks() -> i64 {
    // SAFETY: sysconf reads a constant of the system.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t
    } else {
        100
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_this_process_threads_and_the_one_it_starts() {
        let me = std::process::id() as i32;
        let dir = tempfile::tempdir().unwrap();
        let w = ServerWatch::start(Server::Threads(me), dir.path()).unwrap();
        // A thread that reads a file and sleeps: read syscalls and
        // voluntary switches, and a task started during the watch.
        std::thread::spawn(|| {
            for _ in 0..20 {
                let _ = std::fs::read("/proc/self/stat");
                std::thread::sleep(Duration::from_millis(10));
            }
        })
        .join()
        .unwrap();
        let (m, _) = w.finish();
        assert!(m["syscr"] >= 20.0, "{m:?}");
        assert!(m["voluntary_ctxt_switches"] >= 10.0, "{m:?}");
        assert!(m["tasks_started"] >= 1.0, "{m:?}");
    }
}
