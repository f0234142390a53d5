//! Measurements taken around a run: server process CPU from /proc, syscall
//! counts from strace, the growth of the server's logs, the libraries
//! mapped in its processes, and the facts of the machine.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::model::names::{RUN_FIGURES, TX_FIGURES};
use crate::store::Syscall;

/// CPU a process has used, ns (`/proc/PID/schedstat`, field 1: time on
/// CPU, precise, unlike the 10 ms ticks of /proc/PID/stat).
pub fn process_cpu_ns(pid: i32) -> Option<u64> {
    schedstat_ns(Path::new(&format!("/proc/{pid}/schedstat")))
}

/// Field 1 of a schedstat file (of a process or of one of its threads,
/// /proc/PID/task/TID/schedstat): ns on CPU.
fn schedstat_ns(path: &Path) -> Option<u64> {
    let s = std::fs::read_to_string(path).ok()?;
    s.split_whitespace().next()?.parse().ok()
}

/// This process's CPU (user + system), ns: the engine's CPU when the
/// engine runs in-process (SQLite).
pub fn self_cpu_ns() -> u64 {
    // SAFETY: getrusage writes into the struct we pass and nothing else.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) } != 0 {
        return 0;
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// One of the run's sessions as the server lists it.
struct Seen {
    /// PostgreSQL backend pid, MariaDB connection id.
    id: i64,
    idle: bool,
    /// Unchanged while the session stays idle (PostgreSQL's state_change).
    marker: String,
    /// Where its CPU is read; `None` when the server does not say.
    schedstat: Option<PathBuf>,
}

/// A look at the server's session list: `None` when the watcher's
/// connection is lost.
type Look = Box<dyn FnMut() -> Option<Vec<Seen>> + Send>;

/// The CPU of the run's server sessions, read at the end of their work.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    pub ns: u64,
    /// The sessions read (backend pids, MariaDB connection ids), sorted:
    /// checked against the run's own `backend_pid`s.
    pub ids: Vec<i64>,
}

/// Watches the run's server sessions and, once all are done and held
/// connected by the run's pause, reads their CPU and lets them go by
/// creating the release file.
///
/// "Done" is seen from the server: the session idle, unchanged over two
/// looks 100 ms apart — a session running flat out is never idle that
/// long. The reading is taken while the session still exists, so nothing
/// of its work is lost.
pub struct CpuWatch {
    handle: Option<std::thread::JoinHandle<(Result<Reading, String>, Instant)>>,
    stop: Arc<AtomicBool>,
}

impl CpuWatch {
    /// PostgreSQL: the backends whose application_name is `tag`, each a
    /// process of its own.
    pub fn start(url: &str, tag: &str, sessions: usize, release: PathBuf) -> Option<CpuWatch> {
        let mut c = tracelab_engine::admin::connect(url).ok()?;
        let sql = format!(
            "SELECT pid, state, state_change::text FROM pg_stat_activity WHERE application_name = {} ORDER BY pid",
            tracelab_engine::sql::quote_literal(tag)
        );
        let look: Look = Box::new(move || {
            let rows = c.query(&sql).ok()?;
            Some(
                rows.iter()
                    .filter_map(|r| {
                        let pid = r.number(0)? as i64;
                        Some(Seen {
                            id: pid,
                            idle: r.get(1) == Some("idle"),
                            marker: r.get(2).unwrap_or_default().to_string(),
                            schedstat: Some(PathBuf::from(format!("/proc/{pid}/schedstat"))),
                        })
                    })
                    .collect(),
            )
        });
        Some(Self::watch(look, sessions, release))
    }

    /// MariaDB: the sessions are threads of one mariadbd (`server_pid`),
    /// so each is read at /proc/PID/task/TID/schedstat, TID from
    /// performance_schema.threads (the server must run with
    /// performance_schema=ON, and with thread_cache_size=0: a cached
    /// thread would bring the CPU of the connection it served before).
    ///
    /// MariaDB has no application_name; the run's sessions are told by
    /// their connection ids, which the server hands out in increasing
    /// order: every connection made after the watcher's own is the run's
    /// (the study makes none meanwhile on its private server). The ids
    /// read are checked against the run's own afterwards.
    pub fn start_mariadb(
        url: &str,
        server_pid: i32,
        sessions: usize,
        release: PathBuf,
    ) -> Option<CpuWatch> {
        let mut c = tracelab_engine::admin::connect(url).ok()?;
        let me = c.session_id()?;
        let sql = format!(
            "SELECT p.ID, p.COMMAND = 'Sleep' AND p.TIME_MS >= 100, t.THREAD_OS_ID \
             FROM information_schema.PROCESSLIST p \
             LEFT JOIN performance_schema.threads t ON t.PROCESSLIST_ID = p.ID \
             WHERE p.ID > {me} AND p.COMMAND <> 'Daemon' ORDER BY p.ID"
        );
        let look: Look = Box::new(move || {
            let rows = c.query(&sql).ok()?;
            Some(
                rows.iter()
                    .filter_map(|r| Some((r.number(0)? as u64, r.number(1)?, r.number(2))))
                    .map(|(id, idle, tid)| Seen {
                        id: id as i64,
                        // Idle for 100 ms at each of two looks 100 ms
                        // apart: no statement in between.
                        idle: idle != 0.0,
                        marker: String::new(),
                        schedstat: tid.map(|t| t as u64).map(|t| {
                            PathBuf::from(format!("/proc/{server_pid}/task/{t}/schedstat"))
                        }),
                    })
                    .collect(),
            )
        });
        Some(Self::watch(look, sessions, release))
    }

    fn watch(mut look: Look, sessions: usize, release: PathBuf) -> CpuWatch {
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut last: Option<Vec<(i64, String)>> = None;
            let mut result = Err("its sessions were not seen done and idle".to_string());
            let started = Instant::now();
            let mut seen = false;
            while !stop2.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(50));
                let Some(now) = look() else { break };
                // Never to hold a run forever: when its sessions do not
                // show up (they failed to connect), or went away, let go.
                seen |= !now.is_empty();
                if (!seen && started.elapsed() > Duration::from_secs(10))
                    || (seen && now.is_empty())
                {
                    break;
                }
                let idle: Vec<(i64, String)> = now
                    .iter()
                    .filter(|r| r.idle)
                    .map(|r| (r.id, r.marker.clone()))
                    .collect();
                if now.len() == sessions && idle.len() == sessions {
                    if last.as_ref() == Some(&idle) {
                        result = read_all(&now);
                        break;
                    }
                    last = Some(idle);
                    std::thread::sleep(Duration::from_millis(50));
                } else {
                    last = None;
                }
            }
            let _ = std::fs::write(&release, b"");
            (result, Instant::now())
        });
        CpuWatch {
            handle: Some(handle),
            stop,
        }
    }

    /// The sessions' CPU, if it was read at the end of their work, or why
    /// not. Call when the run has returned: a run that went on for more
    /// than a second after the reading (the sessions only paused, say,
    /// because the client was starved) had work left, and its reading is
    /// dropped.
    pub fn finish(mut self) -> Result<Reading, String> {
        self.stop.store(true, Ordering::Relaxed);
        let (cpu, released) = self
            .handle
            .take()
            .and_then(|h| h.join().ok())
            .ok_or_else(|| "the watcher failed".to_string())?;
        if released.elapsed() >= Duration::from_secs(1) {
            return Err("its sessions were not seen done and idle".into());
        }
        cpu
    }
}

/// The CPU of every session seen, summed.
fn read_all(seen: &[Seen]) -> Result<Reading, String> {
    let mut ns = 0;
    for s in seen {
        let path = s.schedstat.as_ref().ok_or_else(|| {
            format!(
                "the server does not name the thread of session {} (performance_schema off?)",
                s.id
            )
        })?;
        ns += schedstat_ns(path).ok_or_else(|| format!("cannot read {}", path.display()))?;
    }
    let mut ids: Vec<i64> = seen.iter().map(|s| s.id).collect();
    ids.sort_unstable();
    Ok(Reading { ns, ids })
}

impl Drop for CpuWatch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// The CPU of a fresh backend after connecting and setting the session's
/// settings: what the run's backends spent before their work, subtracted
/// from their total.
pub fn connect_cost_ns(url: &str, settings: &[(String, String)]) -> Option<u64> {
    let mut c = tracelab_engine::admin::connect_with(url, settings).ok()?;
    let pid = c
        .query("select pg_backend_pid()")
        .ok()?
        .first()?
        .number(0)?;
    process_cpu_ns(pid as i32)
}

/// The same for a MariaDB session thread of `server_pid`: connected, the
/// run's `SET SESSION`s done.
pub fn mariadb_connect_cost_ns(
    url: &str,
    server_pid: i32,
    settings: &[(String, String)],
) -> Option<u64> {
    let mut c = tracelab_engine::admin::connect(url).ok()?;
    for (k, v) in settings {
        c.execute(&format!("SET SESSION {k} = {v}")).ok()?;
    }
    let rows = c
        .query(
            "SELECT THREAD_OS_ID FROM performance_schema.threads WHERE PROCESSLIST_ID = CONNECTION_ID()",
        )
        .ok()?;
    let tid = rows.first()?.number(0)? as u64;
    schedstat_ns(Path::new(&format!(
        "/proc/{server_pid}/task/{tid}/schedstat"
    )))
}

/// The process id in a server's pid file.
pub fn pid_from_file(path: &Path) -> Option<i32> {
    std::fs::read_to_string(path)
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

/// `strace -c -f` attached to a process and its threads and new children:
/// the server's postmaster (the backends forked during the run), mariadbd
/// (its threads), or tracelab itself (the driver's threads).
pub struct Strace {
    child: Child,
    out: PathBuf,
}

/// A whole `strace -c` table: its rows and its `total` line.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StraceTable {
    pub rows: Vec<Syscall>,
    /// The `total` line; `None` when the table has none (strace did not
    /// finish writing it).
    pub total: Option<Syscall>,
}

impl StraceTable {
    /// As measurements: `syscalls` (the total's calls), `syscall_NAME`
    /// (calls), `syscall_errors`, `syscall_seconds`.
    pub fn measurements(&self) -> BTreeMap<String, f64> {
        let mut out = BTreeMap::new();
        for r in &self.rows {
            out.insert(format!("syscall_{}", r.name), r.calls as f64);
        }
        if let Some(t) = &self.total {
            out.insert("syscalls".to_string(), t.calls as f64);
            out.insert("syscall_errors".to_string(), t.errors as f64);
            out.insert("syscall_seconds".to_string(), t.seconds);
        }
        out
    }
}

impl Strace {
    pub fn available() -> bool {
        Command::new("strace")
            .arg("-V")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }

    /// Attached to `pid` and all its threads (`-f` with `-p` attaches
    /// every thread of the process), and to every process or thread it
    /// starts while attached: every thread of mariadbd, or the postmaster
    /// and the backends and workers it forks.
    pub fn attach(pid: i32, out: &Path) -> Option<Strace> {
        let child = Command::new("strace")
            .args(["-c", "-f", "-o"])
            .arg(out)
            .args(["-p", &pid.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        // The run starts once strace holds every thread of the process
        // (its children forked later are followed): each thread's status
        // names its tracer.
        let tracer = child.id() as i32;
        let deadline = Instant::now() + Duration::from_secs(5);
        while !traced_by(pid, tracer) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        Some(Strace {
            child,
            out: out.to_path_buf(),
        })
    }

    /// Detaches and returns the whole table.
    pub fn finish_table(self) -> StraceTable {
        parse_strace_table(&self.detach())
    }

    /// Stops strace (SIGINT: it detaches and writes its table) and
    /// returns what it wrote.
    fn detach(mut self) -> String {
        interrupt(&mut self.child);
        let text = std::fs::read_to_string(&self.out).unwrap_or_default();
        let _ = std::fs::remove_file(&self.out);
        text
    }
}

/// Whether every thread of `pid` is traced by `tracer` (TracerPid in
/// /proc/PID/task/TID/status).
fn traced_by(pid: i32, tracer: i32) -> bool {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return false;
    };
    let want = tracer.to_string();
    let mut any = false;
    for t in tasks.filter_map(|e| e.ok()) {
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        let by = status
            .lines()
            .find_map(|l| l.strip_prefix("TracerPid:"))
            .map(str::trim);
        if by != Some(want.as_str()) {
            return false;
        }
        any = true;
    }
    any
}

/// The values of [`RUN_FIGURES`] for one run, in that order: elapsed
/// (the longest session, first call to end of last) and the run's time
/// with connecting, in ms; statements; transactions; tps; p50 and p99
/// latency in µs; then those of [`TX_FIGURES`] the run had calls for:
/// its transactions' and its COMMITs' p50, p99 and mean latency, µs.
pub fn run_figures(summary: &tracelab_run::Summary) -> Vec<(&'static str, f64)> {
    let elapsed_us = summary
        .per_session
        .iter()
        .map(|s| s.elapsed_us)
        .max()
        .unwrap_or(0);
    let values = [
        elapsed_us as f64 / 1000.0,
        summary.runtime_s * 1000.0,
        summary.executions as f64,
        summary.transactions as f64,
        summary.tps,
        summary.latency_us.p50 as f64,
        summary.latency_us.p99 as f64,
    ];
    let mut out: Vec<(&'static str, f64)> = RUN_FIGURES.into_iter().zip(values).collect();
    for (names, c) in TX_FIGURES
        .chunks(3)
        .zip([&summary.transaction_latency_us, &summary.commit_latency_us])
    {
        // None of the calls: no figure (a report shows —), not a 0.
        if c.count > 0 {
            let values = [c.latency.p50 as f64, c.latency.p99 as f64, c.mean];
            out.extend(names.iter().copied().zip(values));
        }
    }
    out
}

/// The `strace -c` table: `% time seconds usecs/call calls [errors]
/// syscall`, the errors column blank where a call never failed. Lines of
/// any other shape (headers, rules, strace's own messages) are skipped.
pub fn parse_strace_table(text: &str) -> StraceTable {
    let mut out = StraceTable::default();
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if !(5..=6).contains(&f.len()) || f[0].parse::<f64>().is_err() {
            continue;
        }
        let (Ok(seconds), Ok(calls)) = (f[1].parse::<f64>(), f[3].parse::<u64>()) else {
            continue;
        };
        let errors = if f.len() == 6 {
            match f[4].parse::<u64>() {
                Ok(e) => e,
                Err(_) => continue,
            }
        } else {
            0
        };
        let row = Syscall {
            name: f[f.len() - 1].to_string(),
            calls,
            errors,
            seconds,
        };
        if row.name == "total" {
            out.total = Some(row);
        } else {
            out.rows.push(row);
        }
    }
    out
}

/// The parent of a process (the postmaster of a backend).
pub fn parent_pid(pid: i32) -> Option<i32> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may hold spaces.
    let rest = &s[s.rfind(')')? + 1..];
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// CPU, cores, kernel, clocksource and a quick fsync rate of `dir`.
pub fn machine_facts(dir: &Path) -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    if let Some(m) = cpuinfo
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
    {
        f.insert("cpu".into(), m.1.trim().to_string());
    }
    f.insert(
        "cores".into(),
        std::thread::available_parallelism()
            .map_or(0, |n| n.get())
            .to_string(),
    );
    if let Ok(k) = std::fs::read_to_string("/proc/sys/kernel/osrelease") {
        f.insert("kernel".into(), k.trim().to_string());
    }
    if let Ok(c) =
        std::fs::read_to_string("/sys/devices/system/clocksource/clocksource0/current_clocksource")
    {
        f.insert("clocksource".into(), c.trim().to_string());
    }
    if let Ok(m) = std::fs::read_to_string("/proc/meminfo") {
        if let Some(l) = m.lines().find(|l| l.starts_with("MemTotal")) {
            f.insert(
                "memory".into(),
                l.trim_start_matches("MemTotal:").trim().to_string(),
            );
        }
    }
    if let Some(r) = fsync_rate(dir) {
        f.insert("fsync_per_s".into(), format!("{r:.0}"));
    }
    f
}

/// fdatasync calls per second on an 8 kB rewrite for about half a second,
/// in `dir` (where the private server's WAL lives): the cost of a commit
/// on this disk.
fn fsync_rate(dir: &Path) -> Option<f64> {
    use std::io::{Seek, Write};
    let path = dir.join("fsync-test.tmp");
    let mut file = std::fs::File::create(&path).ok()?;
    let block = [0u8; 8192];
    let start = Instant::now();
    let mut n = 0u32;
    while start.elapsed() < Duration::from_millis(500) {
        file.seek(std::io::SeekFrom::Start(0)).ok()?;
        file.write_all(&block).ok()?;
        file.sync_data().ok()?;
        n += 1;
    }
    let rate = f64::from(n) / start.elapsed().as_secs_f64();
    drop(file);
    let _ = std::fs::remove_file(&path);
    Some(rate)
}

/// The growth of a server's log files during a run: their sizes at the
/// start, read again at the end.
pub struct LogWatch {
    files: Vec<(PathBuf, u64)>,
}

impl LogWatch {
    pub fn start(files: Vec<PathBuf>) -> LogWatch {
        let files = files
            .into_iter()
            .map(|f| {
                let n = std::fs::metadata(&f).map_or(0, |m| m.len());
                (f, n)
            })
            .collect();
        LogWatch { files }
    }

    /// `server_log_bytes` (bytes added to the logs), `server_log_lines`,
    /// and `log_NAME` for each (NAME, text) of `count`: the lines added
    /// that hold the text.
    pub fn finish(&self, count: &BTreeMap<String, String>) -> BTreeMap<String, f64> {
        use std::io::{Read, Seek};
        let mut bytes = 0u64;
        let mut lines = 0u64;
        let mut found: BTreeMap<&str, u64> = count.keys().map(|k| (k.as_str(), 0)).collect();
        for (f, start) in &self.files {
            let Ok(mut file) = std::fs::File::open(f) else {
                continue;
            };
            let len = file.metadata().map_or(0, |m| m.len());
            // A log that shrank was rotated or truncated: all of it is new.
            let from = if len < *start { 0 } else { *start };
            bytes += len - from;
            if file.seek(std::io::SeekFrom::Start(from)).is_err() {
                continue;
            }
            let mut text = Vec::new();
            let _ = file.take(len - from).read_to_end(&mut text);
            for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                lines += 1;
                for (name, want) in count {
                    if memchr::memmem::find(line, want.as_bytes()).is_some() {
                        *found.entry(name.as_str()).or_default() += 1;
                    }
                }
            }
        }
        let mut m = BTreeMap::new();
        m.insert("server_log_bytes".to_string(), bytes as f64);
        m.insert("server_log_lines".to_string(), lines as f64);
        for (k, v) in found {
            m.insert(format!("log_{k}"), v as f64);
        }
        m
    }
}

/// A process and all its descendants alive now (a postmaster and its
/// backends and background processes), from /proc.
pub fn process_tree(root: i32) -> Vec<i32> {
    let mut parent: Vec<(i32, i32)> = Vec::new();
    if let Ok(rd) = std::fs::read_dir("/proc") {
        for e in rd.filter_map(|e| e.ok()) {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            if let Some(pp) = parent_pid(pid) {
                parent.push((pid, pp));
            }
        }
    }
    let mut out = vec![root];
    let mut i = 0;
    while i < out.len() {
        let p = out[i];
        out.extend(parent.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    out
}

/// Whether a process has a file mapped (a preloaded library): its path in
/// /proc/PID/maps.
pub fn maps_file(pid: i32, path: &Path) -> bool {
    let want = path.to_string_lossy();
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .is_ok_and(|m| m.lines().any(|l| l.ends_with(want.as_ref())))
}

/// The profile of a run's traces by call name, as `tracelab skew` prints
/// it by default (mrskew's accounted-for time: a call's CPU and every
/// wait, the client's waits for the database inside calls included), as
/// measurements: `trace_NAME_s`,
/// `trace_NAME_calls`, `trace_total_s`.
pub fn trace_profile(dir: &Path) -> Result<BTreeMap<String, f64>, String> {
    let rows = crate::execute::profile::of_dir(dir, "1")?;
    Ok(crate::execute::profile::measurements(&rows, "trace_"))
}

/// Stops a tool we started (strace, perf) as a user at a terminal would:
/// SIGINT, on which it detaches and writes what it counted; after 10 s
/// without an exit, killed.
pub(crate) fn interrupt(child: &mut std::process::Child) {
    // SAFETY: sending SIGINT to our own child, whose pid we hold.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGINT);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_strace_table() {
        let t = "% time     seconds  usecs/call     calls    errors syscall\n\
                 ------ ----------- ----------- --------- --------- ----------------\n\
                  60.00    0.000600          10        60           fdatasync\n\
                  40.00    0.000400           2       200        3 recvfrom\n\
                 ------ ----------- ----------- --------- --------- ----------------\n\
                 100.00    0.001000           3       260        3 total\n";
        let m = parse_strace_table(t).measurements();
        assert_eq!(m["syscalls"], 260.0);
        assert_eq!(m["syscall_fdatasync"], 60.0);
        assert_eq!(m["syscall_recvfrom"], 200.0);
        assert_eq!(m["syscall_errors"], 3.0);
    }

    #[test]
    fn the_log_growth_is_counted_from_where_it_stood() {
        let d = tempfile::tempdir().unwrap();
        let f = d.path().join("server.log");
        std::fs::write(&f, "old line with Query Text: before\n").unwrap();
        let w = LogWatch::start(vec![f.clone(), d.path().join("slow.log")]);
        use std::io::Write;
        let mut h = std::fs::OpenOptions::new().append(true).open(&f).unwrap();
        h.write_all(b"LOG:  duration: 1 ms\nQuery Text: select 1\n")
            .unwrap();
        std::fs::write(d.path().join("slow.log"), "# Query_time: 0.1\n").unwrap();
        let count: BTreeMap<String, String> = [("plans", "Query Text:"), ("slow", "# Query_time")]
            .into_iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect();
        let m = w.finish(&count);
        assert_eq!(m["server_log_bytes"], 60.0);
        assert_eq!(m["server_log_lines"], 3.0);
        assert_eq!(m["log_plans"], 1.0, "the line from before is not counted");
        assert_eq!(m["log_slow"], 1.0);
    }

    #[test]
    fn reads_strace_6_output_with_errors_seconds_and_its_own_messages() {
        // strace 6.1 `-c -f -p`, as written here for mariadbd (cut).
        let t = "strace: Process 31644 attached with 20 threads\n\
                 % time     seconds  usecs/call     calls    errors syscall\n\
                 ------ ----------- ----------- --------- --------- ------------------\n\
                  70.17    0.776564        5177       150        36 futex\n\
                  23.58    0.260945       23722        11           epoll_wait\n\
                   6.25    0.069194          12      5600           write\n\
                 ------ ----------- ----------- --------- --------- ------------------\n\
                 100.00    1.106703         191      5761        36 total\n\
                 strace: Process 31645 detached\n";
        let t = parse_strace_table(t);
        assert_eq!(t.rows.len(), 3);
        assert_eq!(
            t.rows[0],
            Syscall {
                name: "futex".into(),
                calls: 150,
                errors: 36,
                seconds: 0.776564
            }
        );
        assert_eq!(t.rows[1].errors, 0);
        let total = t.total.unwrap();
        assert_eq!(total.calls, t.rows.iter().map(|r| r.calls).sum::<u64>());
        assert_eq!(total.errors, 36);
        assert!(parse_strace_table("no table at all\n").total.is_none());
    }

    #[test]
    fn our_own_process_has_a_parent_and_cpu() {
        let me = std::process::id() as i32;
        assert!(parent_pid(me).is_some());
        assert!(process_cpu_ns(me).unwrap() > 0);
        assert!(process_tree(parent_pid(me).unwrap()).contains(&me));
        let exe = std::fs::read_link("/proc/self/exe").unwrap();
        assert!(maps_file(me, &exe));
        assert!(!maps_file(me, Path::new("/no/such/lib.so")));
        assert!(self_cpu_ns() > 0);
    }
}
