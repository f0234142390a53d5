//! A client result cache with Oracle Client Result Cache semantics: one
//! cache per process, shared by the run's sessions; results keyed by SQL
//! text, bind values and session settings; only read-only queries on
//! annotated tables; bounded in bytes, least recently used out; entries
//! invalidated when a table they read changes, and never served when the
//! cache cannot vouch for having heard of every change older than the lag.
//!
//! Freshness works like this. An invalidation channel (a LISTEN connection
//! on PostgreSQL, a change-counter poll on MariaDB: see `crate::invalidate`)
//! confirms now and then that it has seen every change committed before a
//! moment S; it then sets `fresh_until = S + lag`. Sessions serve from the
//! cache only before `fresh_until`, so a served result is never older than
//! the lag after a change committed. When the channel fails, `fresh_until`
//! stops moving and the cache stops serving within the lag.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

/// Oracle's client cache block: sizes and counts are given in these.
pub const BLOCK_SIZE: usize = 256;

/// How a table takes part in caching (Oracle's table annotation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheMode {
    /// Every query on the table is cached.
    Force,
    /// Only queries with a `/*+ result_cache */` hint.
    Manual,
}

/// `--result-cache` and its settings.
#[derive(Debug, Clone)]
pub struct CacheOptions {
    /// The most the cache holds, in bytes.
    pub size: usize,
    /// The longest a served result may lag a committed change.
    pub lag: Duration,
    /// Annotated tables, lower case.
    pub tables: Vec<(String, CacheMode)>,
    /// Install the invalidation triggers before the run.
    pub setup: bool,
}

/// Rows as the engine returned them: each value's bytes, `None` for NULL.
pub type Rows = Vec<Vec<Option<Vec<u8>>>>;

/// CLIENT_RESULT_CACHE_STATS$, one row per name, as Oracle names them.
#[derive(Debug, Clone, Default, Serialize, PartialEq, Eq)]
pub struct CacheStats {
    pub block_size: u64,
    pub block_count_max: u64,
    pub block_count_current: u64,
    /// The most blocks in use at any time of the run.
    pub block_count_current_max: u64,
    pub create_count_success: u64,
    pub create_count_failure: u64,
    pub find_count: u64,
    pub invalidation_count: u64,
    pub delete_count_invalid: u64,
    pub delete_count_valid: u64,
    /// Times the invalidation channel failed (the cache stopped serving
    /// until it was back), and why the last time.
    pub channel_failures: u64,
    pub channel_error: Option<String>,
}

impl CacheStats {
    /// The rows of CLIENT_RESULT_CACHE_STATS$ with Oracle's names.
    pub fn rows(&self) -> [(&'static str, u64); 10] {
        [
            ("Block Size", self.block_size),
            ("Block Count Max", self.block_count_max),
            ("Block Count Current", self.block_count_current),
            (
                "Block Count Current (highest)",
                self.block_count_current_max,
            ),
            ("Create Count Success", self.create_count_success),
            ("Create Count Failure", self.create_count_failure),
            ("Find Count", self.find_count),
            ("Invalidation Count", self.invalidation_count),
            ("Delete Count Invalid", self.delete_count_invalid),
            ("Delete Count Valid", self.delete_count_valid),
        ]
    }
}

struct Entry {
    rows: Arc<Rows>,
    blocks: u64,
    /// Indexes of the annotated tables the query reads.
    tables: Vec<usize>,
}

struct Inner {
    entries: lru::LruCache<Vec<u8>, Entry>,
    blocks: u64,
}

/// The process's cache, shared by every session of the run.
pub struct ResultCache {
    pub(crate) opts: CacheOptions,
    inner: Mutex<Inner>,
    /// Per annotated table: bumped at every change heard of.
    generations: Vec<AtomicU64>,
    /// µs on the run's clock before which entries may be served.
    fresh_until: AtomicI64,
    stats: Mutex<CacheStats>,
}

impl ResultCache {
    pub fn new(opts: CacheOptions) -> ResultCache {
        let n = opts.tables.len();
        let stats = CacheStats {
            block_size: BLOCK_SIZE as u64,
            block_count_max: (opts.size / BLOCK_SIZE) as u64,
            ..CacheStats::default()
        };
        ResultCache {
            opts,
            inner: Mutex::new(Inner {
                entries: lru::LruCache::unbounded(),
                blocks: 0,
            }),
            generations: (0..n).map(|_| AtomicU64::new(0)).collect(),
            fresh_until: AtomicI64::new(0),
            stats: Mutex::new(stats),
        }
    }

    /// The index of an annotated table, by name (any case).
    pub fn table(&self, name: &str) -> Option<usize> {
        self.opts
            .tables
            .iter()
            .position(|(t, _)| t.eq_ignore_ascii_case(name))
    }

    /// Whether entries may be served at `now` (µs on the run's clock).
    pub fn serving(&self, now: i64) -> bool {
        now < self.fresh_until.load(Ordering::Acquire)
    }

    /// The channel has heard of every change committed before `seen`
    /// (µs on the run's clock).
    pub fn confirm(&self, seen: i64) {
        let until = seen + self.opts.lag.as_micros() as i64;
        self.fresh_until.fetch_max(until, Ordering::AcqRel);
    }

    /// The channel failed: serve nothing more, and drop everything (changes
    /// may be missed until it is back).
    pub fn lose_channel(&self) {
        self.fresh_until.store(0, Ordering::Release);
        self.flush();
    }

    /// The channel failed for `why`: as [`Self::lose_channel`], counted.
    pub fn channel_lost(&self, why: &str) {
        self.lose_channel();
        if let Ok(mut s) = self.stats.lock() {
            s.channel_failures += 1;
            s.channel_error = Some(why.to_string());
        }
    }

    /// A (re)connected channel: nothing heard before it can be trusted.
    pub fn flush(&self) {
        for g in &self.generations {
            g.fetch_add(1, Ordering::AcqRel);
        }
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let n = inner.entries.len() as u64;
        inner.entries.clear();
        inner.blocks = 0;
        drop(inner);
        if let Ok(mut s) = self.stats.lock() {
            s.invalidation_count += n;
            s.delete_count_invalid += n;
            s.block_count_current = 0;
        }
    }

    /// The generations of `tables`, read before a query runs: a result is
    /// stored only if none moved while it ran (a change may have
    /// committed in between).
    pub fn generations(&self, tables: &[usize]) -> Vec<u64> {
        tables
            .iter()
            .map(|&t| self.generations[t].load(Ordering::Acquire))
            .collect()
    }

    /// Table `t` changed: every entry that read it goes.
    pub fn invalidate(&self, t: usize) {
        self.generations[t].fetch_add(1, Ordering::AcqRel);
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let stale: Vec<Vec<u8>> = inner
            .entries
            .iter()
            .filter(|(_, e)| e.tables.contains(&t))
            .map(|(k, _)| k.clone())
            .collect();
        let mut freed = 0;
        for k in &stale {
            if let Some(e) = inner.entries.pop(k) {
                freed += e.blocks;
            }
        }
        inner.blocks -= freed;
        let blocks = inner.blocks;
        drop(inner);
        if let Ok(mut s) = self.stats.lock() {
            s.invalidation_count += stale.len() as u64;
            s.delete_count_invalid += stale.len() as u64;
            s.block_count_current = blocks;
        }
    }

    /// The cached result of `key`, if any (a Find).
    pub fn find(&self, key: &[u8]) -> Option<Arc<Rows>> {
        let rows = {
            let mut inner = self.inner.lock().ok()?;
            inner.entries.get(key).map(|e| e.rows.clone())
        };
        if rows.is_some() {
            if let Ok(mut s) = self.stats.lock() {
                s.find_count += 1;
            }
        }
        rows
    }

    /// Stores a result fetched while the generations of its tables were
    /// `before`; refused (a Create failure) if one moved meanwhile or if
    /// the result alone is larger than the cache.
    pub fn create(&self, key: Vec<u8>, rows: Rows, tables: Vec<usize>, before: &[u64]) {
        let blocks = blocks_of(&key, &rows);
        let max = (self.opts.size / BLOCK_SIZE) as u64;
        let moved = self.generations(&tables) != before;
        if moved || blocks > max {
            if let Ok(mut s) = self.stats.lock() {
                s.create_count_failure += 1;
            }
            return;
        }
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        // Check again under the lock: an invalidation that ran between the
        // check above and here would otherwise miss this entry.
        if self.generations(&tables) != before {
            drop(inner);
            if let Ok(mut s) = self.stats.lock() {
                s.create_count_failure += 1;
            }
            return;
        }
        let mut evicted = 0u64;
        if let Some(old) = inner.entries.pop(&key) {
            inner.blocks -= old.blocks;
        }
        while inner.blocks + blocks > max {
            match inner.entries.pop_lru() {
                Some((_, e)) => {
                    inner.blocks -= e.blocks;
                    evicted += 1;
                }
                None => break,
            }
        }
        inner.blocks += blocks;
        let now = inner.blocks;
        inner.entries.put(
            key,
            Entry {
                rows: Arc::new(rows),
                blocks,
                tables,
            },
        );
        drop(inner);
        if let Ok(mut s) = self.stats.lock() {
            s.create_count_success += 1;
            s.delete_count_valid += evicted;
            s.block_count_current = now;
            s.block_count_current_max = s.block_count_current_max.max(now);
        }
    }

    pub fn stats(&self) -> CacheStats {
        self.stats.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

/// Blocks a result takes: its key, its values and a small overhead per
/// value, rounded up to whole blocks.
fn blocks_of(key: &[u8], rows: &Rows) -> u64 {
    let bytes: usize = key.len()
        + rows
            .iter()
            .flat_map(|r| r.iter())
            .map(|v| 8 + v.as_ref().map_or(0, Vec::len))
            .sum::<usize>();
    bytes.div_ceil(BLOCK_SIZE).max(1) as u64
}

/// The key of one execution: the SQL, every bind value (NULL apart from
/// any string) and the session settings that can change a result.
pub fn key(sql: &str, binds: &[Option<&str>], settings: &[(String, String)]) -> Vec<u8> {
    let mut k = Vec::with_capacity(sql.len() + 64);
    k.extend_from_slice(sql.as_bytes());
    for b in binds {
        match b {
            Some(v) => {
                k.push(1);
                k.extend_from_slice(&(v.len() as u32).to_le_bytes());
                k.extend_from_slice(v.as_bytes());
            }
            None => k.push(0),
        }
    }
    for (n, v) in settings {
        k.push(2);
        k.extend_from_slice(n.as_bytes());
        k.push(b'=');
        k.extend_from_slice(v.as_bytes());
    }
    k
}

/// What caching a statement takes: the annotated tables it reads, or why
/// it is not cached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cacheable {
    /// Read-only, every table it reads annotated (and a hint where one is
    /// `manual`): cached, depending on these tables.
    Yes(Vec<usize>),
    /// Writes these annotated tables (a session's own DML invalidates at
    /// once, and its open transaction bypasses the cache for them).
    Writes(Vec<usize>),
    No,
}

/// The identifiers of `sql` outside quotes and comments, lower case: the
/// candidates for table names, checked against the catalog by the caller.
pub fn identifiers(sql: &str) -> Vec<String> {
    let b = sql.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if let Some(end) = crate::sql::skip_literal_or_comment(sql, i) {
            i = end;
            continue;
        }
        match b[i] {
            b'"' | b'`' => {
                let q = b[i];
                let start = i + 1;
                i += 1;
                while i < b.len() && b[i] != q {
                    i += 1;
                }
                out.push(sql[start..i.min(b.len())].to_ascii_lowercase());
                i += 1;
            }
            c if c.is_ascii_alphabetic() || c == b'_' => {
                let start = i;
                while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_' || b[i] == b'$')
                {
                    i += 1;
                }
                out.push(sql[start..i].to_ascii_lowercase());
            }
            _ => i += 1,
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Whether the SQL carries Oracle's `/*+ result_cache */` hint.
pub fn has_hint(sql: &str) -> bool {
    let lower = sql.to_ascii_lowercase();
    let mut rest = lower.as_str();
    while let Some(p) = rest.find("/*+") {
        let body = &rest[p + 3..];
        let end = body.find("*/").unwrap_or(body.len());
        if body[..end]
            .split(|c: char| c.is_whitespace() || c == ',')
            .any(|w| w == "result_cache")
        {
            return true;
        }
        rest = &body[end..];
    }
    false
}

/// Decides what caching `sql` takes, given which of its identifiers are
/// tables (`tables`, lower case, from the catalog) and the cache's
/// annotations.
pub fn classify(cache: &ResultCache, sql: &str, read_only: bool, tables: &[String]) -> Cacheable {
    // `FOR UPDATE` locks, it does not write (it is refused below).
    let unlocked = sql
        .to_ascii_lowercase()
        .replace("for no key update", "")
        .replace("for update", "");
    let words = identifiers(&unlocked);
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    // A query that writes (a data-modifying WITH) is not read-only, and
    // one that calls a function whose result changes by itself (the
    // clock, random numbers, sequences) must not be answered from memory,
    // as pgpool's and Oracle's caches refuse them.
    let read_only = read_only && !has(&["insert", "update", "delete", "merge", "truncate"]);
    let volatile = has(&[
        "now",
        "random",
        "nextval",
        "setval",
        "currval",
        "clock_timestamp",
        "statement_timestamp",
        "timeofday",
        "current_timestamp",
        "current_time",
        "localtimestamp",
        "localtime",
        "sysdate",
        "sysdatetime",
        "uuid",
        "gen_random_uuid",
        "rand",
        "unix_timestamp",
        "curtime",
        "curdate",
        "pg_sleep",
        "sleep",
    ]);
    let mut annotated = Vec::new();
    let mut all_annotated = true;
    let mut all_force = true;
    for t in tables {
        match cache.table(t) {
            Some(i) => {
                annotated.push(i);
                all_force &= cache.opts.tables[i].1 == CacheMode::Force;
            }
            None => all_annotated = false,
        }
    }
    if annotated.is_empty() {
        return Cacheable::No;
    }
    if !read_only {
        return Cacheable::Writes(annotated);
    }
    let lower = sql.to_ascii_lowercase();
    let locks = lower.contains(" for update") || lower.contains(" for share");
    if all_annotated && !locks && !volatile && (all_force || has_hint(sql)) {
        Cacheable::Yes(annotated)
    } else {
        Cacheable::No
    }
}

/// What a session saw for one execution (for tests and embedding: see
/// `RunOptions::on_result`).
#[derive(Debug)]
pub struct Seen<'a> {
    pub session: usize,
    /// The statement's trace cursor (position in the workload, from 1).
    pub cursor: u64,
    pub binds: &'a [Option<&'a str>],
    pub rows: &'a Rows,
    /// Served from the cache, not the server.
    pub cached: bool,
    /// When the result was in hand.
    pub at: std::time::Instant,
}

/// A callback given every result a session receives.
#[derive(Clone)]
pub struct ResultHook(pub Arc<dyn Fn(&Seen<'_>) + Send + Sync>);

impl std::fmt::Debug for ResultHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResultHook")
    }
}

/// The annotated tables of a result cache, from `--result-cache-table
/// NAME:force|manual` values.
pub fn parse_tables(specs: &[String]) -> Result<Vec<(String, CacheMode)>, String> {
    let mut out: Vec<(String, CacheMode)> = Vec::new();
    for s in specs {
        let (name, mode) = s.split_once(':').unwrap_or((s, "force"));
        let mode = match mode.trim().to_ascii_lowercase().as_str() {
            "force" => CacheMode::Force,
            "manual" => CacheMode::Manual,
            other => {
                return Err(format!(
                    "--result-cache-table {s}: expected NAME:force or NAME:manual, found mode `{other}`"
                ))
            }
        };
        let name = name.trim().to_ascii_lowercase();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return Err(format!(
                "--result-cache-table {s}: expected a table name of letters, digits and _"
            ));
        }
        match out.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = mode,
            None => out.push((name, mode)),
        }
    }
    Ok(out)
}

/// Reads a result-cache config file: one `NAME force|manual` (or
/// `NAME:mode`) per line, `#` comments.
pub fn read_tables_file(path: &std::path::Path) -> Result<Vec<(String, CacheMode)>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut specs = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let spec = line.split_whitespace().collect::<Vec<_>>().join(":");
        parse_tables(std::slice::from_ref(&spec))
            .map_err(|e| format!("{}:{}: {e}", path.display(), n + 1))?;
        specs.push(spec);
    }
    parse_tables(&specs)
}

/// Per table, the map from table index to name (for the channel).
pub(crate) fn table_index(cache: &ResultCache) -> HashMap<String, usize> {
    cache
        .opts
        .tables
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (n.clone(), i))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(size: usize) -> ResultCache {
        ResultCache::new(CacheOptions {
            size,
            lag: Duration::from_millis(100),
            tables: vec![
                ("holiday".into(), CacheMode::Force),
                ("chair".into(), CacheMode::Manual),
            ],
            setup: false,
        })
    }

    fn rows(v: &str) -> Rows {
        vec![vec![Some(v.as_bytes().to_vec())]]
    }

    #[test]
    fn different_binds_never_share_an_entry() {
        assert_ne!(key("q", &[Some("1")], &[]), key("q", &[Some("11")], &[]));
        assert_ne!(
            key("q", &[Some("1"), Some("")], &[]),
            key("q", &[Some("1"), None], &[])
        );
        assert_ne!(
            key("q", &[Some("ab"), Some("c")], &[]),
            key("q", &[Some("a"), Some("bc")], &[])
        );
        let s = vec![("search_path".to_string(), "x".to_string())];
        assert_ne!(key("q", &[], &[]), key("q", &[], &s));
    }

    #[test]
    fn invalidation_and_moved_generations() {
        let c = cache(64 * 1024);
        let g = c.generations(&[0]);
        c.create(key("a", &[], &[]), rows("1"), vec![0], &g);
        assert!(c.find(&key("a", &[], &[])).is_some());
        c.invalidate(0);
        assert!(c.find(&key("a", &[], &[])).is_none());
        // A result fetched across a change is not stored.
        c.create(key("a", &[], &[]), rows("1"), vec![0], &g);
        assert!(c.find(&key("a", &[], &[])).is_none());
        let s = c.stats();
        assert_eq!(
            (
                s.create_count_success,
                s.create_count_failure,
                s.find_count,
                s.invalidation_count
            ),
            (1, 1, 1, 1)
        );
    }

    #[test]
    fn size_is_bounded_least_recently_used_out() {
        let c = cache(4 * BLOCK_SIZE);
        let big = "x".repeat(300); // two blocks: the cache holds two
        for i in 0..4 {
            let g = c.generations(&[0]);
            c.create(key(&format!("q{i}"), &[], &[]), rows(&big), vec![0], &g);
            if i == 1 {
                // q0 is used again: q1 is now the least recently used.
                assert!(c.find(&key("q0", &[], &[])).is_some());
            }
        }
        let s = c.stats();
        assert!(s.block_count_current <= s.block_count_max, "{s:?}");
        assert!(c.find(&key("q1", &[], &[])).is_none());
        assert!(c.find(&key("q3", &[], &[])).is_some());
        assert!(s.delete_count_valid >= 1);
    }

    #[test]
    fn only_read_only_queries_on_annotated_tables() {
        let c = cache(1 << 20);
        let t = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            classify(&c, "select * from holiday", true, &t(&["holiday"])),
            Cacheable::Yes(vec![0])
        );
        // chair is manual: a hint is needed.
        assert_eq!(
            classify(
                &c,
                "select * from holiday, chair",
                true,
                &t(&["holiday", "chair"])
            ),
            Cacheable::No
        );
        assert_eq!(
            classify(
                &c,
                "select /*+ RESULT_CACHE */ * from holiday, chair",
                true,
                &t(&["holiday", "chair"])
            ),
            Cacheable::Yes(vec![0, 1])
        );
        // A table without annotation makes it uncacheable.
        assert_eq!(
            classify(
                &c,
                "select * from holiday, other",
                true,
                &t(&["holiday", "other"])
            ),
            Cacheable::No
        );
        assert_eq!(
            classify(
                &c,
                "select * from holiday for update",
                true,
                &t(&["holiday"])
            ),
            Cacheable::No
        );
        assert_eq!(
            classify(&c, "update holiday set x = 1", false, &t(&["holiday"])),
            Cacheable::Writes(vec![0])
        );
        assert_eq!(
            identifiers("select \"Chair\", 'holiday' from x -- holiday\n/* chair */"),
            vec!["chair", "from", "select", "x"]
        );
    }

    #[test]
    fn a_lost_channel_stops_serving() {
        let c = cache(1 << 20);
        assert!(
            !c.serving(0),
            "nothing is served before the channel confirms"
        );
        c.confirm(1_000);
        assert!(c.serving(50_000) && !c.serving(101_000));
        c.lose_channel();
        assert!(!c.serving(2_000));
    }

    #[test]
    fn table_annotations_parse_with_clear_errors() {
        assert_eq!(
            parse_tables(&["HOLIDAY:force".into(), "chair:manual".into(), "x".into()]).unwrap(),
            vec![
                ("holiday".into(), CacheMode::Force),
                ("chair".into(), CacheMode::Manual),
                ("x".into(), CacheMode::Force)
            ]
        );
        let e = parse_tables(&["t:sometimes".into()]).unwrap_err();
        assert!(e.contains("NAME:force or NAME:manual"), "{e}");
    }
}
