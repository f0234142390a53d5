//! What a run measured: per session and in all, as text and JSON.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Latency {
    pub p50: u64,
    pub p90: u64,
    pub p99: u64,
    pub p99_9: u64,
    pub max: u64,
}

impl Latency {
    fn of(h: &Histogram<u64>) -> Latency {
        if h.is_empty() {
            return Latency::default();
        }
        Latency {
            p50: h.value_at_quantile(0.50),
            p90: h.value_at_quantile(0.90),
            p99: h.value_at_quantile(0.99),
            p99_9: h.value_at_quantile(0.999),
            max: h.max(),
        }
    }
}

/// The latency of the calls of one kind (whole transactions, COMMITs):
/// how many there were, their mean and percentiles, µs.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Counted {
    pub count: u64,
    pub mean: f64,
    #[serde(flatten)]
    pub latency: Latency,
}

impl Counted {
    fn of(h: &Histogram<u64>) -> Counted {
        Counted {
            count: h.len(),
            mean: if h.is_empty() { 0.0 } else { h.mean() },
            latency: Latency::of(h),
        }
    }
}

/// One session's counts.
#[derive(Debug, Clone, Serialize)]
pub struct SessionSummary {
    pub session: usize,
    /// Committed (or rolled back) transactions; in autocommit, statements.
    pub transactions: u64,
    /// Statements executed without error.
    pub executions: u64,
    /// Statement errors whose SQLSTATE was listed in `--ignore-errors`.
    pub ignored: u64,
    pub errors: u64,
    /// Statements prepared again after the server said their plan went
    /// stale (a column's type altered during the run: PostgreSQL's 0A000
    /// "cached plan must not change result type"), as JDBC does.
    pub reprepares: u64,
    /// The server process that served the session.
    pub backend_pid: Option<i32>,
    /// From the session's first call to the end of its last, µs.
    pub elapsed_us: i64,
    /// Why the session ended early, if it did.
    pub failure: Option<String>,
    /// CLIENT_RESULT_CACHE_STATS$ of the session's own cache, with a cache
    /// per session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_cache: Option<crate::cache::CacheStats>,
    /// Its trace could not be written completely: the file and why.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_error: Option<String>,
    #[serde(skip)]
    pub latency: Histogram<u64>,
    /// Each transaction counted in `transactions`, from the start of its
    /// BEGIN to the end of its COMMIT (pgbench's latency); in autocommit,
    /// its one statement's latency.
    #[serde(skip)]
    pub tx_latency: Histogram<u64>,
    /// The call that ended each transaction counted in `transactions`
    /// (COMMIT, or ROLLBACK with `--rollback`), alone.
    #[serde(skip)]
    pub commit_latency: Histogram<u64>,
    /// With `--rate`: how late each call started after it was due, µs.
    #[serde(skip)]
    pub lag: Histogram<u64>,
    #[serde(skip)]
    pub errors_by_code: BTreeMap<String, (u64, String)>,
    /// Per workload statement: executions, errors and latencies.
    #[serde(skip)]
    pub statements: Vec<StatementCounts>,
}

/// One statement's counts in one session.
#[derive(Debug, Clone)]
pub struct StatementCounts {
    pub executions: u64,
    pub errors: u64,
    pub latency: Histogram<u64>,
}

impl StatementCounts {
    pub(crate) fn new() -> StatementCounts {
        StatementCounts {
            executions: 0,
            errors: 0,
            latency: Histogram::new(3).expect("3 significant digits is valid"),
        }
    }
}

/// One statement of the workload over the whole run.
#[derive(Debug, Clone, Serialize)]
pub struct StatementSummary {
    /// Its trace cursor number (position in the workload, from 1).
    pub cursor: usize,
    pub sql: String,
    pub executions: u64,
    pub errors: u64,
    pub latency_us: Latency,
}

impl SessionSummary {
    pub(crate) fn new(session: usize) -> SessionSummary {
        SessionSummary {
            session,
            transactions: 0,
            executions: 0,
            ignored: 0,
            errors: 0,
            reprepares: 0,
            backend_pid: None,
            elapsed_us: 0,
            failure: None,
            result_cache: None,
            trace_error: None,
            latency: Histogram::new(3).expect("3 significant digits is valid"),
            tx_latency: Histogram::new(3).expect("3 significant digits is valid"),
            commit_latency: Histogram::new(3).expect("3 significant digits is valid"),
            lag: Histogram::new(3).expect("3 significant digits is valid"),
            errors_by_code: BTreeMap::new(),
            statements: Vec::new(),
        }
    }

    pub(crate) fn failed(session: usize, why: &str) -> SessionSummary {
        let mut s = SessionSummary::new(session);
        s.fail(why.to_string());
        s
    }

    pub(crate) fn fail(&mut self, why: String) {
        self.failure = Some(why);
    }

    /// The session ended early because a step before its work failed
    /// (connecting, a setting, preparing): that counts as an error too.
    pub(crate) fn fail_with(&mut self, code: &str, why: String) {
        self.error(code, why.clone());
        self.fail(why);
    }

    /// Counts an error of SQLSTATE `code`, keeping its first message.
    pub(crate) fn error(&mut self, code: &str, message: String) {
        self.errors += 1;
        self.errors_by_code
            .entry(code.to_string())
            .or_insert((0, message))
            .0 += 1;
    }
}

/// The whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    pub sessions: usize,
    pub runtime_s: f64,
    pub transactions: u64,
    pub executions: u64,
    pub tps: f64,
    /// Each statement's execution (BEGIN and COMMIT, sent by the session
    /// around a batch, are not in it).
    pub latency_us: Latency,
    /// Each transaction counted in `transactions`, from the start of its
    /// BEGIN to the end of its COMMIT, as pgbench times a transaction; in
    /// autocommit a transaction is one statement, and this is its latency.
    pub transaction_latency_us: Counted,
    /// The COMMIT (or `--rollback`'s ROLLBACK) that ended each of those
    /// transactions, alone; none in autocommit, where the commit is inside
    /// the statement.
    pub commit_latency_us: Counted,
    /// With `--rate`: how late calls started after they were due
    /// (pgbench's schedule lag), µs; their latency counts from the due
    /// time, so it includes this.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_lag_us: Option<Latency>,
    pub errors: u64,
    /// Errors of the SQLSTATEs the run was told to ignore.
    pub ignored_errors: u64,
    /// Statements prepared again because their plan went stale (see
    /// `SessionSummary::reprepares`).
    pub reprepares: u64,
    /// Errors by SQLSTATE: count and the first message.
    pub errors_by_code: BTreeMap<String, (u64, String)>,
    /// Per statement of the workload (HDR histograms merged over sessions).
    pub per_statement: Vec<StatementSummary>,
    pub per_session: Vec<SessionSummary>,
    /// CLIENT_RESULT_CACHE_STATS$ of the run's cache, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result_cache: Option<crate::cache::CacheStats>,
    /// Every second of the run (`run --report`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub timeline: Vec<crate::live::Second>,
    /// Calls by latency, in 1-2-5 buckets (`run --report`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub latency_histogram: Vec<Bucket>,
}

/// Calls whose latency was at least `lo_us` and less than `hi_us`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Bucket {
    pub lo_us: u64,
    pub hi_us: u64,
    pub calls: u64,
}

/// The calls of `h` in buckets with edges 1, 2, 5, 10, 20, 50 … µs, from
/// the one holding the fastest call to the one holding the slowest: the
/// shape of a latency distribution on a log axis, with round edges a
/// reader can quote.
pub(crate) fn buckets(h: &Histogram<u64>) -> Vec<Bucket> {
    if h.is_empty() {
        return Vec::new();
    }
    let mut edges = vec![0u64, 1];
    let mut p = 1u64;
    while *edges.last().unwrap_or(&0) <= h.max() {
        for m in [2, 5, 10] {
            edges.push(p.saturating_mul(m));
        }
        p = p.saturating_mul(10);
    }
    let mut out: Vec<Bucket> = edges
        .windows(2)
        .map(|w| Bucket {
            lo_us: w[0],
            hi_us: w[1],
            calls: 0,
        })
        .collect();
    // Each recorded value (the histogram's own, 3 significant digits: the
    // middle of its range of equal values) goes whole into the bucket
    // holding it, so the buckets add up to the calls; a value within 0.1 %
    // of an edge may land on either side of it.
    for v in h.iter_recorded() {
        let at = h.median_equivalent(v.value_iterated_to());
        let k = edges.partition_point(|&e| e <= at).saturating_sub(1);
        if let Some(b) = out.get_mut(k.min(edges.len() - 2)) {
            b.calls += v.count_at_value();
        }
    }
    let first = out.iter().position(|b| b.calls > 0).unwrap_or(0);
    let last = out.iter().rposition(|b| b.calls > 0).unwrap_or(0);
    out[first..=last].to_vec()
}

impl Summary {
    pub(crate) fn new(
        per_session: Vec<SessionSummary>,
        runtime: Duration,
        sql: &[&str],
    ) -> Summary {
        let mut per_statement: Vec<StatementCounts> =
            sql.iter().map(|_| StatementCounts::new()).collect();
        for s in &per_session {
            for (all, one) in per_statement.iter_mut().zip(&s.statements) {
                all.executions += one.executions;
                all.errors += one.errors;
                let _ = all.latency.add(&one.latency);
            }
        }
        let per_statement = per_statement
            .iter()
            .zip(sql)
            .enumerate()
            .map(|(k, (c, sql))| StatementSummary {
                cursor: k + 1,
                sql: tracelab_trace::redact_sql(sql).into_owned(),
                executions: c.executions,
                errors: c.errors,
                latency_us: Latency::of(&c.latency),
            })
            .collect();
        let mut all = Histogram::<u64>::new(3).expect("3 significant digits is valid");
        let mut lag = Histogram::<u64>::new(3).expect("3 significant digits is valid");
        let mut tx = Histogram::<u64>::new(3).expect("3 significant digits is valid");
        let mut commit = Histogram::<u64>::new(3).expect("3 significant digits is valid");
        let mut by_code: BTreeMap<String, (u64, String)> = BTreeMap::new();
        for s in &per_session {
            let _ = all.add(&s.latency);
            let _ = lag.add(&s.lag);
            let _ = tx.add(&s.tx_latency);
            let _ = commit.add(&s.commit_latency);
            for (k, (n, m)) in &s.errors_by_code {
                by_code.entry(k.clone()).or_insert((0, m.clone())).0 += n;
            }
        }
        let transactions = per_session.iter().map(|s| s.transactions).sum();
        let runtime_s = runtime.as_secs_f64();
        Summary {
            sessions: per_session.len(),
            runtime_s,
            transactions,
            executions: per_session.iter().map(|s| s.executions).sum(),
            tps: if runtime_s > 0.0 {
                transactions as f64 / runtime_s
            } else {
                0.0
            },
            latency_us: Latency::of(&all),
            transaction_latency_us: Counted::of(&tx),
            commit_latency_us: Counted::of(&commit),
            schedule_lag_us: (!lag.is_empty()).then(|| Latency::of(&lag)),
            errors: per_session.iter().map(|s| s.errors).sum(),
            ignored_errors: per_session.iter().map(|s| s.ignored).sum(),
            reprepares: per_session.iter().map(|s| s.reprepares).sum(),
            errors_by_code: by_code,
            per_statement,
            per_session,
            result_cache: None,
            timeline: Vec::new(),
            latency_histogram: buckets(&all),
        }
    }

    /// Whether any session ended early (lost connection, no connection).
    pub fn failed(&self) -> bool {
        self.per_session.iter().any(|s| s.failure.is_some())
    }

    /// Traces that could not be written completely: the file and why.
    pub fn trace_errors(&self) -> Vec<&str> {
        self.per_session
            .iter()
            .filter_map(|s| s.trace_error.as_deref())
            .collect()
    }

    /// Whether every session ended early without executing anything (it
    /// could not connect, set up or prepare): the figures are all zero
    /// and only the reasons say something.
    pub fn ran_nothing(&self) -> bool {
        self.executions == 0
            && self.ignored_errors == 0
            && !self.per_session.is_empty()
            && self.per_session.iter().all(|s| s.failure.is_some())
    }

    /// Why sessions ended early: one line per cause, naming the sessions
    /// ("all 20 sessions", "sessions 3, 7"), not one line per session.
    pub fn failures(&self) -> Vec<String> {
        let mut causes: Vec<(&str, Vec<usize>)> = Vec::new();
        for s in &self.per_session {
            let Some(why) = s.failure.as_deref() else {
                continue;
            };
            match causes.iter_mut().find(|(w, _)| *w == why) {
                Some((_, who)) => who.push(s.session),
                None => causes.push((why, vec![s.session])),
            }
        }
        causes
            .into_iter()
            .map(|(why, who)| {
                let sessions = match who.len() {
                    1 if self.sessions == 1 => "the session".to_string(),
                    n if n == self.sessions => format!("all {n} sessions"),
                    1 => format!("session {}", who[0]),
                    _ => format!(
                        "sessions {}",
                        who.iter()
                            .map(usize::to_string)
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                };
                format!("{sessions} ended early: {why}")
            })
            .collect()
    }

    pub fn json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_default() + "\n"
    }

    pub fn text(&self) -> String {
        let l = &self.latency_us;
        let mut t = format!(
            "sessions: {}\nruntime: {:.3} s\ntransactions: {}\nexecutions: {}\ntps: {:.1}\nlatency (µs): p50 {}  p90 {}  p99 {}  p99.9 {}  max {}\n",
            self.sessions, self.runtime_s, self.transactions, self.executions, self.tps, l.p50, l.p90, l.p99, l.p99_9, l.max
        );
        // Transactions of several calls (BEGIN ... COMMIT): their own
        // latency and their COMMIT's, which the statements' leaves out.
        if self.commit_latency_us.count > 0 {
            for (what, c, unit) in [
                ("transaction", &self.transaction_latency_us, "transactions"),
                ("commit", &self.commit_latency_us, "commits"),
            ] {
                let l = &c.latency;
                t.push_str(&format!(
                    "{what} latency (µs): p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  ({} {unit})\n",
                    l.p50, l.p90, l.p99, l.p99_9, l.max, c.count
                ));
            }
        }
        t.push_str(&format!("errors: {}\n", self.errors));
        if let Some(l) = &self.schedule_lag_us {
            t.push_str(&format!(
                "schedule lag (µs): p50 {}  p90 {}  p99 {}  p99.9 {}  max {}\n",
                l.p50, l.p90, l.p99, l.p99_9, l.max
            ));
        }
        if self.ignored_errors > 0 {
            t.push_str(&format!("ignored errors: {}\n", self.ignored_errors));
        }
        if self.reprepares > 0 {
            t.push_str(&format!(
                "re-prepares: {} (a plan went stale after DDL)\n",
                self.reprepares
            ));
        }
        for (code, (n, msg)) in &self.errors_by_code {
            t.push_str(&format!("  {n} × {code}: {msg}\n"));
        }
        if self.per_statement.len() > 1 {
            t.push_str("per statement (latency µs):\n");
            for st in &self.per_statement {
                let l = &st.latency_us;
                let first_line = st.sql.lines().next().unwrap_or("");
                let sql: String = first_line.chars().take(48).collect();
                t.push_str(&format!(
                    "  #{:<3} {:>9} exec {:>6} err  p50 {:>7}  p99 {:>7}  max {:>8}  {}\n",
                    st.cursor, st.executions, st.errors, l.p50, l.p99, l.max, sql
                ));
            }
        }
        if let Some(c) = &self.result_cache {
            t.push_str("result cache (CLIENT_RESULT_CACHE_STATS$):\n");
            for (name, v) in c.rows() {
                t.push_str(&format!("  {name:<30} {v}\n"));
            }
            if let Some(e) = &c.channel_error {
                t.push_str(&format!(
                    "  invalidation channel failed {} time(s), last: {e}\n",
                    c.channel_failures
                ));
            }
            for (cursor, why) in &c.not_cached {
                t.push_str(&format!("  not cached: statement {cursor}: {why}\n"));
            }
        }
        for line in self.failures() {
            t.push_str(&line);
            t.push('\n');
        }
        for e in self.trace_errors() {
            t.push_str(&format!("trace not written completely: {e}\n"));
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_buckets_have_round_edges_and_add_up_to_the_calls() {
        let mut h = Histogram::<u64>::new(3).unwrap();
        for v in [3, 4, 4, 9, 10, 180, 199_000, 200_000] {
            h.record(v).unwrap();
        }
        let b = buckets(&h);
        let edges: Vec<(u64, u64)> = b.iter().map(|b| (b.lo_us, b.hi_us)).collect();
        assert_eq!(edges.first(), Some(&(2, 5)), "{b:?}");
        assert_eq!(edges.last(), Some(&(200_000, 500_000)), "{b:?}");
        let calls = |lo| b.iter().find(|b| b.lo_us == lo).unwrap().calls;
        assert_eq!(calls(2), 3);
        assert_eq!(calls(5), 1);
        assert_eq!(calls(10), 1);
        assert_eq!(calls(100), 1);
        assert_eq!(calls(100_000), 1, "199,000 µs is under 200,000: {b:?}");
        assert_eq!(b.iter().map(|b| b.calls).sum::<u64>(), 8);
        assert!(buckets(&Histogram::<u64>::new(3).unwrap()).is_empty());
    }
}
