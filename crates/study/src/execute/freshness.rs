//! The freshness check: after the plan, one run per engine in a cached
//! cell while a writer session changes a cached table every few seconds;
//! every result every session receives is checked against the changes
//! committed so far. The report states the largest staleness seen against
//! the cache's lag, which it must never exceed, and how long each session
//! took to see each change.
//!
//! A change is numbered (`{version}` in its SQL, from 1) and shows in the
//! results: a row whose `column` holds `value` with the number in it. A
//! result with no such row is version 0 (before the first change). A
//! result of version v in a session's hands at time t is stale if change
//! v + 1 had committed before t (its COMMIT had returned to the writer):
//! by t minus that moment.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use tracelab_run::{ResultHook, Rows, Stop};

use crate::error::StudyError;
use crate::execute::{prepare, ready, with_tag, Context, Engine};
use crate::model::freshness::FreshnessSpec;
use crate::model::spec::value_text;
use crate::plan::cell::sql_of;
use crate::plan::{chosen_levels, Cell, Choice};

/// Which change a result shows: the number in the first row whose column
/// holds `prefix NUMBER suffix`; 0 when none does.
fn version(rows: &Rows, column: usize, prefix: &str, suffix: &str) -> u64 {
    rows.iter()
        .filter_map(|r| r.get(column).and_then(|v| v.as_deref()))
        .filter_map(|v| std::str::from_utf8(v).ok())
        .filter_map(|v| v.strip_prefix(prefix)?.strip_suffix(suffix)?.parse().ok())
        .max()
        .unwrap_or(0)
}

/// What one session saw.
#[derive(Debug, Default)]
struct Seen {
    reads: u64,
    cached: u64,
    /// Results from the cache, and from the server, older than the change
    /// after them by the most, µs.
    stale_cached_us: u64,
    stale_server_us: u64,
    /// When the session first had a result of change k or later (index
    /// k − 1).
    first: Vec<Instant>,
    /// The highest change seen, and results that showed an older one
    /// than the session had had for the same bind values (a session
    /// going back in time). Across bind values an older result is no
    /// fault: each value's entry was cached when it was fetched, and any
    /// may lag by up to the lag, as in Oracle's cache.
    highest: u64,
    highest_by_binds: std::collections::HashMap<Vec<Option<String>>, u64>,
    backwards: u64,
    last: Option<Instant>,
}

/// Every result of every session, checked as it arrives.
struct Checker {
    column: usize,
    prefix: String,
    suffix: String,
    /// When change k's COMMIT returned (index k − 1).
    commits: RwLock<Vec<Instant>>,
    sessions: Vec<Mutex<Seen>>,
}

impl Checker {
    fn see(&self, session: usize, binds: &[Option<&str>], rows: &Rows, cached: bool, at: Instant) {
        let v = version(rows, self.column, &self.prefix, &self.suffix);
        let stale = self
            .commits
            .read()
            .ok()
            .and_then(|c| c.get(v as usize).copied())
            .filter(|next| at > *next)
            .map_or(0, |next| (at - next).as_micros() as u64);
        let Some(mut s) = self.sessions.get(session).and_then(|s| s.lock().ok()) else {
            return;
        };
        s.reads += 1;
        if cached {
            s.cached += 1;
            s.stale_cached_us = s.stale_cached_us.max(stale);
        } else {
            s.stale_server_us = s.stale_server_us.max(stale);
        }
        while (s.first.len() as u64) < v {
            s.first.push(at);
        }
        let key: Vec<Option<String>> = binds.iter().map(|b| b.map(str::to_string)).collect();
        let before = s.highest_by_binds.entry(key).or_default();
        let back = v < *before;
        *before = (*before).max(v);
        if back {
            s.backwards += 1;
        }
        s.highest = s.highest.max(v);
        s.last = Some(at);
    }
}

/// A connection that makes the changes, straight to the server.
struct Writer(Box<dyn tracelab_engine::Admin>);

impl Writer {
    fn connect(engine: tracelab_engine::Engine, url: &str) -> Result<Writer, String> {
        match engine {
            tracelab_engine::Engine::Sqlite => {
                Err(format!("no freshness check on {}", engine.name()))
            }
            _ => tracelab_engine::admin::connect(url)
                .map(Writer)
                .map_err(|e| e.to_string()),
        }
    }

    /// Runs `sql` in a transaction of its own; returns when it committed.
    fn write(&mut self, sql: &str) -> Result<(), String> {
        self.0.execute(sql).map_err(|e| e.to_string())
    }
}

/// Runs the check on `eng` and returns its values: of the whole run
/// (session −1) and of each session.
pub(crate) fn run(
    ctx: &Context<'_>,
    choice: &Choice,
    fr: &FreshnessSpec,
    eng: &mut Engine,
) -> Result<Vec<(i64, String, f64)>, StudyError> {
    let l = ctx.l;
    // The cell: the levels named, this engine, the first level of the rest.
    let factors: Vec<(String, String)> = chosen_levels(l, choice)?
        .into_iter()
        .filter_map(|(f, levels)| {
            let level = if f == "engine" {
                Some(eng.name.clone())
            } else {
                fr.levels
                    .get(&f)
                    .cloned()
                    .or_else(|| levels.first().map(|x| x.name.clone()))
            };
            level.map(|lv| (f, lv))
        })
        .collect();
    // The check's vars over the cell's.
    let mut cell = Cell::resolve(l, &factors, false, &ctx.vars);
    for (k, v) in &fr.vars {
        cell.vars.insert(k.clone(), value_text(v));
    }
    let e = cell.engine.clone();
    ctx.obs
        .note(&format!("freshness check on {e}: {}", cell.key()));
    ready(ctx, &cell, eng)?;
    let prep = prepare(l, &cell, eng, ctx.scratch)?;
    let runtime = cell.num(l, "freshness.runtime", &fr.runtime)?.max(1.0);
    let every =
        Duration::from_secs_f64(cell.num(l, "freshness.every_ms", &fr.every_ms)?.max(1.0) / 1000.0);
    let lag = prep
        .base
        .result_cache
        .as_ref()
        .map(|c| c.lag)
        .ok_or_else(|| l.error("freshness.levels", "the cell has no result cache"))?;
    let (prefix, suffix) = fr.value.split_once("{version}").unwrap_or((&fr.value, ""));
    let checker = Arc::new(Checker {
        column: fr.column - 1,
        prefix: prefix.to_string(),
        suffix: suffix.to_string(),
        commits: RwLock::new(Vec::new()),
        sessions: (0..prep.sessions).map(|_| Mutex::default()).collect(),
    });
    let mut opts = prep.base.clone();
    opts.stop = Stop::Runtime(Duration::from_secs_f64(runtime));
    if eng.kind == tracelab_engine::Engine::Postgres {
        opts.url = with_tag(&eng.url, "tracelab-study-freshness");
    }
    let in_path = crate::execute::proxy::start_for(&cell.levels, eng.kind, &eng.url, None)?;
    if let Some((px, _)) = &in_path {
        opts.url = px.url(&opts.url)?;
        opts.shown_url = Some(px.url(&eng.url)?);
    }
    {
        let c = checker.clone();
        opts.on_result = Some(ResultHook(Arc::new(move |s: &tracelab_run::Seen<'_>| {
            c.see(s.session, s.binds, s.rows, s.cached, s.at)
        })));
    }
    let mut writer = Writer::connect(eng.kind, &eng.url)
        .map_err(|why| StudyError::Database(format!("freshness check: the writer: {why}")))?;
    let write_sql = |k: u64| -> Result<Option<String>, StudyError> {
        let mut v = cell.vars.clone();
        v.insert("version".into(), k.to_string());
        sql_of(l, "freshness.write", &fr.write, &e, &v)
    };
    if write_sql(1)?.is_none() {
        return Err(l.error("freshness.write", format!("no SQL for engine {e}")));
    }
    let summary = std::thread::scope(|s| -> Result<tracelab_run::Summary, StudyError> {
        let h = s.spawn(|| tracelab_run::run(&opts, &prep.workload));
        // Changes start once every session has had a result, and stop a
        // lag and a period before the end, so that each had time to be
        // seen.
        let waited = Instant::now();
        while checker
            .sessions
            .iter()
            .any(|x| x.lock().map_or(true, |x| x.reads == 0))
            && waited.elapsed() < Duration::from_secs(30)
            && !h.is_finished()
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        let started = Instant::now();
        let until = started + Duration::from_secs_f64(runtime).saturating_sub(lag + every);
        let mut k = 0u64;
        let mut failed = None;
        while (k == 0 || Instant::now() < until) && !h.is_finished() {
            k += 1;
            let sql = write_sql(k)?.unwrap_or_default();
            if let Err(why) = writer.write(&sql) {
                failed = Some(why);
                break;
            }
            if let Ok(mut c) = checker.commits.write() {
                c.push(Instant::now());
            }
            std::thread::sleep(every);
        }
        let summary = h
            .join()
            .map_err(|_| StudyError::Database("freshness check: the run panicked".into()))?
            .map_err(|e| StudyError::Database(format!("freshness check: {e}")))?;
        if let Some(why) = failed {
            return Err(StudyError::Database(format!(
                "freshness check: the writer's change {k} failed: {why}"
            )));
        }
        Ok(summary)
    })?;
    let ended = Instant::now();
    if let Some((px, _)) = in_path {
        px.stop();
    }
    if let Some(f) = summary.per_session.iter().find_map(|s| s.failure.clone()) {
        return Err(StudyError::Database(format!(
            "freshness check: a session failed: {f}"
        )));
    }
    // A reader whose query fails reads nothing more: no stale result is
    // seen because none is read (a change that broke the query, an ALTER
    // ... TYPE, passed the check). Any error of the readers fails it.
    if summary.errors > 0 {
        let said: Vec<String> = summary
            .errors_by_code
            .iter()
            .map(|(code, (n, first))| format!("{n} x {code}: {first}"))
            .collect();
        return Err(StudyError::Database(format!(
            "freshness check on {e}: the readers' statements failed {} times during {} change{} by the writer, so staleness could not be checked: {}",
            summary.errors,
            k_done(&checker),
            if k_done(&checker) == 1 { "" } else { "s" },
            said.join("; ")
        )));
    }
    Ok(values(&checker, lag, every, runtime, ended, &summary))
}

/// How many changes the writer committed.
fn k_done(c: &Checker) -> usize {
    c.commits.read().map_or(0, |c| c.len())
}

/// The check's values: the whole run's (session −1) and each session's.
/// `ended`: when the sessions' run ended.
fn values(
    c: &Checker,
    lag: Duration,
    every: Duration,
    runtime: f64,
    ended: Instant,
    summary: &tracelab_run::Summary,
) -> Vec<(i64, String, f64)> {
    let commits = c.commits.read().map(|c| c.clone()).unwrap_or_default();
    let ms = |us: u64| us as f64 / 1000.0;
    let mut out = Vec::new();
    let mut all = BTreeMap::<&str, f64>::new();
    let mut push_all = |name: &'static str, v: f64, max: bool| {
        let e = all.entry(name).or_insert(if max { f64::MIN } else { 0.0 });
        if max {
            *e = e.max(v);
        } else {
            *e += v;
        }
    };
    for (i, s) in c.sessions.iter().enumerate() {
        let Ok(s) = s.lock() else { continue };
        // How long the session took to see each change; a change it never
        // saw though it went on reading for a lag after it is a failure,
        // and so is one it never saw because its reads stopped before the
        // change while the run went on for a lag after it.
        let mut visible_us = 0u64;
        let mut unseen = 0u64;
        for (k, at) in commits.iter().enumerate() {
            let read_on = s.last.is_some_and(|last| last > *at + lag);
            let stopped = s.last.is_none_or(|last| last < *at) && ended > *at + lag;
            match s.first.get(k) {
                Some(seen) => {
                    visible_us =
                        visible_us.max(seen.saturating_duration_since(*at).as_micros() as u64)
                }
                None if read_on || stopped => unseen += 1,
                None => {}
            }
        }
        let row = [
            ("reads", s.reads as f64),
            ("cached_reads", s.cached as f64),
            ("highest_change", s.highest as f64),
            ("max_staleness_cached_ms", ms(s.stale_cached_us)),
            ("max_staleness_server_ms", ms(s.stale_server_us)),
            ("max_visible_ms", ms(visible_us)),
            ("unseen", unseen as f64),
            ("backwards", s.backwards as f64),
        ];
        for (n, v) in row {
            out.push((i as i64, n.to_string(), v));
            let max = n.starts_with("max_") || n == "highest_change";
            push_all(n, v, max);
        }
    }
    let mut whole = vec![
        ("lag_ms", lag.as_secs_f64() * 1000.0),
        ("every_ms", every.as_secs_f64() * 1000.0),
        ("runtime_s", runtime),
        ("sessions", c.sessions.len() as f64),
        ("changes", commits.len() as f64),
        (
            "channel_failures",
            summary
                .result_cache
                .as_ref()
                .map_or(0.0, |r| r.channel_failures as f64),
        ),
    ];
    whole.extend(all);
    out.extend(whole.into_iter().map(|(n, v)| (-1, n.to_string(), v)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(vals: &[&str]) -> Rows {
        vals.iter()
            .map(|v| vec![Some(b"x".to_vec()), Some(v.as_bytes().to_vec())])
            .collect()
    }

    #[test]
    fn a_result_shows_the_change_it_holds() {
        assert_eq!(version(&rows(&[]), 1, "fresh ", ""), 0);
        assert_eq!(version(&rows(&["DDL II"]), 1, "fresh ", ""), 0);
        assert_eq!(version(&rows(&["other", "fresh 12"]), 1, "fresh ", ""), 12);
        assert_eq!(version(&rows(&["fresh 3"]), 0, "fresh ", ""), 0);
    }

    #[test]
    fn staleness_counts_from_the_next_change_s_commit() {
        let c = Checker {
            column: 1,
            prefix: "fresh ".into(),
            suffix: String::new(),
            commits: RwLock::new(Vec::new()),
            sessions: vec![Mutex::default()],
        };
        let t0 = Instant::now();
        let (a, b) = ([Some("a")], [Some("b")]);
        c.see(0, &a, &rows(&[]), true, t0);
        c.commits
            .write()
            .unwrap()
            .push(t0 + Duration::from_millis(10));
        // Version 0 read 25 ms after change 1 committed: 25 ms stale.
        c.see(0, &a, &rows(&[]), true, t0 + Duration::from_millis(35));
        c.see(
            0,
            &a,
            &rows(&["fresh 1"]),
            false,
            t0 + Duration::from_millis(40),
        );
        // Version 0 for other binds, cached before: no going back.
        c.see(0, &b, &rows(&[]), true, t0 + Duration::from_millis(41));
        // Back to version 0 for the same binds: a session going back.
        c.see(0, &a, &rows(&[]), true, t0 + Duration::from_millis(42));
        let s = c.sessions[0].lock().unwrap();
        assert_eq!(s.stale_cached_us, 32_000);
        assert_eq!(s.stale_server_us, 0);
        assert_eq!(s.first, vec![t0 + Duration::from_millis(40)]);
        assert_eq!((s.reads, s.cached, s.highest, s.backwards), (5, 4, 1, 1));
    }
}
