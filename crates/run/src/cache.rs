//! A client result cache with Oracle Client Result Cache semantics: one
//! cache per process, shared by the run's sessions (or one per session, as
//! each of sqlrun's sessions was a process of its own); results keyed by SQL
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
use std::sync::{Arc, Mutex, RwLock};
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
    /// One cache (and one invalidation channel) per session instead of
    /// one shared by the run's sessions: as Oracle's cache is per client
    /// process, and each of sqlrun's sessions is a process, so that each
    /// session fills its own cache and has its own statistics.
    pub per_session: bool,
}

/// Rows as the engine returned them: each value's bytes, `None` for NULL
/// (the engine layer's type: the cache keeps what a connection returns).
pub use tracelab_engine::conn::Rows;

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
    /// Statements (their cursor number) the cache would not take at the
    /// latest look at the catalog, and why.
    pub not_cached: Vec<(usize, String)>,
}

impl CacheStats {
    /// The statistics of several caches together (one per session): counts
    /// and blocks added up, the block size kept, the last channel error and
    /// the first cache's statements not cached.
    pub fn sum(all: &[CacheStats]) -> CacheStats {
        let mut t = all.first().cloned().unwrap_or_default();
        for s in all.iter().skip(1) {
            t.block_count_max += s.block_count_max;
            t.block_count_current += s.block_count_current;
            t.block_count_current_max += s.block_count_current_max;
            t.create_count_success += s.create_count_success;
            t.create_count_failure += s.create_count_failure;
            t.find_count += s.find_count;
            t.invalidation_count += s.invalidation_count;
            t.delete_count_invalid += s.delete_count_invalid;
            t.delete_count_valid += s.delete_count_valid;
            t.channel_failures += s.channel_failures;
            if s.channel_error.is_some() {
                t.channel_error = s.channel_error.clone();
            }
        }
        t
    }

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
    /// The catalog epoch the result was fetched in.
    epoch: u64,
    /// Slots (base tables) the query reads.
    tables: Arc<[usize]>,
}

struct Inner {
    entries: lru::LruCache<Vec<u8>, Entry>,
    blocks: u64,
}

/// A base table the cached queries read, as the catalog names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Slot {
    /// What the invalidation channel hears for it: the table's OID on
    /// PostgreSQL (the root of a partition tree), `schema.table` on
    /// MariaDB.
    pub id: String,
    /// Its unqualified name, lower case (a session's own writes name it).
    pub name: String,
}

/// What the server said about the workload, for one catalog epoch.
#[derive(Debug, Clone, Default)]
pub(crate) struct Resolution {
    /// Per workload statement: the slots it reads when the server would
    /// give the same result for as long as those tables do not change;
    /// otherwise why not.
    pub statements: Vec<Result<Vec<usize>, String>>,
    pub slots: Vec<Slot>,
}

/// The cache's view of the catalog between two DDL events.
pub(crate) struct State {
    epoch: u64,
    statements: Vec<Option<Arc<[usize]>>>,
    by_id: HashMap<String, usize>,
    names: Vec<String>,
    /// Per slot: bumped at every change heard of.
    generations: Vec<AtomicU64>,
}

impl State {
    fn empty(epoch: u64) -> State {
        State {
            epoch,
            statements: Vec::new(),
            by_id: HashMap::new(),
            names: Vec::new(),
            generations: Vec::new(),
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
}

/// The process's cache, shared by every session of the run.
pub struct ResultCache {
    pub(crate) opts: CacheOptions,
    inner: Mutex<Inner>,
    /// Bumped at every DDL heard of (and at every new channel): what was
    /// resolved before no longer holds until the channel resolves again.
    epoch: AtomicU64,
    state: RwLock<Arc<State>>,
    /// µs on the run's clock before which entries may be served.
    fresh_until: AtomicI64,
    stats: Mutex<CacheStats>,
}

impl ResultCache {
    pub fn new(opts: CacheOptions) -> ResultCache {
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
            epoch: AtomicU64::new(1),
            state: RwLock::new(Arc::new(State::empty(0))),
            fresh_until: AtomicI64::new(0),
            stats: Mutex::new(stats),
        }
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
        self.ddl();
    }

    /// The channel failed for `why`: as [`Self::lose_channel`], counted.
    pub fn channel_lost(&self, why: &str) {
        self.lose_channel();
        if let Ok(mut s) = self.stats.lock() {
            s.channel_failures += 1;
            s.channel_error = Some(why.to_string());
        }
    }

    /// The current catalog epoch (read before resolving, given back to
    /// [`Self::publish`]).
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// A DDL was heard of (or a new channel starts, which may have missed
    /// some): nothing resolved before holds, every entry goes, and no
    /// statement is cached until the channel has asked the catalog again.
    pub fn ddl(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.drop_entries(|_| true);
    }

    /// Installs what the channel resolved while the epoch was `epoch`;
    /// false (nothing installed) if a DDL was heard meanwhile.
    pub(crate) fn publish(&self, epoch: u64, r: Resolution) -> bool {
        let Ok(mut state) = self.state.write() else {
            return false;
        };
        if self.epoch() != epoch {
            return false;
        }
        let uncached: Vec<(usize, String)> = r
            .statements
            .iter()
            .enumerate()
            .filter_map(|(k, s)| s.as_ref().err().map(|why| (k + 1, why.clone())))
            // Statements that write are not queries: nothing to say.
            .filter(|(_, why)| why != "writes")
            .collect();
        *state = Arc::new(State {
            epoch,
            statements: r
                .statements
                .into_iter()
                .map(|s| s.ok().map(Arc::from))
                .collect(),
            by_id: r
                .slots
                .iter()
                .enumerate()
                .map(|(i, s)| (s.id.clone(), i))
                .collect(),
            names: r.slots.iter().map(|s| s.name.clone()).collect(),
            generations: r.slots.iter().map(|_| AtomicU64::new(0)).collect(),
        });
        drop(state);
        if let Ok(mut s) = self.stats.lock() {
            s.not_cached = uncached;
        }
        true
    }

    /// Whether statement `k` (its position in the workload) may be served
    /// from the cache now, and the state and slots to do it with.
    pub(crate) fn plan(&self, k: usize) -> Option<(Arc<State>, Arc<[usize]>)> {
        let state = self.state.read().ok()?.clone();
        if state.epoch != self.epoch() {
            return None;
        }
        let tables = state.statements.get(k)?.clone()?;
        Some((state, tables))
    }

    /// Drops the entries `stale` picks, counted as invalidations.
    fn drop_entries(&self, stale: impl Fn(&Entry) -> bool) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        let keys: Vec<Vec<u8>> = inner
            .entries
            .iter()
            .filter(|(_, e)| stale(e))
            .map(|(k, _)| k.clone())
            .collect();
        let mut freed = 0;
        for k in &keys {
            if let Some(e) = inner.entries.pop(k) {
                freed += e.blocks;
            }
        }
        inner.blocks -= freed;
        let blocks = inner.blocks;
        drop(inner);
        if let Ok(mut s) = self.stats.lock() {
            s.invalidation_count += keys.len() as u64;
            s.delete_count_invalid += keys.len() as u64;
            s.block_count_current = blocks;
        }
    }

    /// Slot `t` of `state` changed: every entry that read it goes.
    fn invalidate_slot(&self, state: &State, t: usize) {
        state.generations[t].fetch_add(1, Ordering::AcqRel);
        let epoch = state.epoch;
        self.drop_entries(|e| e.epoch == epoch && e.tables.contains(&t));
    }

    /// The table the channel names `id` changed.
    pub(crate) fn invalidate_id(&self, id: &str) {
        let Some(state) = self.state.read().ok().map(|s| s.clone()) else {
            return;
        };
        if let Some(&t) = state.by_id.get(id) {
            self.invalidate_slot(&state, t);
        }
    }

    /// A session's own write to tables of these names (any schema: more
    /// than needed is safe) committed or is about to: their entries go.
    pub(crate) fn invalidate_names(&self, names: &[String]) {
        let Some(state) = self.state.read().ok().map(|s| s.clone()) else {
            return;
        };
        for (t, n) in state.names.iter().enumerate() {
            if names.contains(n) {
                self.invalidate_slot(&state, t);
            }
        }
    }

    /// A session's own DDL: every entry goes (the channel re-resolves when
    /// the DDL's event arrives).
    pub(crate) fn invalidate_all(&self) {
        let Some(state) = self.state.read().ok().map(|s| s.clone()) else {
            return;
        };
        for g in &state.generations {
            g.fetch_add(1, Ordering::AcqRel);
        }
        self.drop_entries(|_| true);
    }

    /// The cached result of `key`, if any (a Find).
    pub fn find(&self, key: &[u8]) -> Option<Arc<Rows>> {
        let epoch = self.epoch();
        let rows = {
            let mut inner = self.inner.lock().ok()?;
            inner
                .entries
                .get(key)
                .filter(|e| e.epoch == epoch)
                .map(|e| e.rows.clone())
        };
        if rows.is_some() {
            if let Ok(mut s) = self.stats.lock() {
                s.find_count += 1;
            }
        }
        rows
    }

    /// Stores a result fetched while the generations of its tables were
    /// `before` in `state`; refused (a Create failure) if one moved or a
    /// DDL was heard meanwhile, or if the result alone is larger than the
    /// cache.
    pub(crate) fn create(
        &self,
        key: Vec<u8>,
        rows: Rows,
        state: &State,
        tables: Arc<[usize]>,
        before: &[u64],
    ) {
        let blocks = blocks_of(&key, &rows);
        let max = (self.opts.size / BLOCK_SIZE) as u64;
        let moved = || state.generations(&tables) != before || self.epoch() != state.epoch;
        if moved() || blocks > max {
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
        if moved() {
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
                epoch: state.epoch,
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

/// The identifiers of `sql` outside quotes and comments, lower case: the
/// candidates for table and function names.
pub fn identifiers(sql: &str) -> Vec<String> {
    let mut out: Vec<String> = words(sql).into_iter().map(|(w, _)| w).collect();
    out.sort();
    out.dedup();
    out
}

/// The words of `sql` outside quotes and comments, lower case, in order,
/// each with whether a `(` follows it (a function call).
pub(crate) fn words(sql: &str) -> Vec<(String, bool)> {
    use crate::sql::Kind;
    crate::sql::tokens(sql)
        .filter_map(|t| {
            let word = match t.kind {
                Kind::Word => t.text(sql).to_ascii_lowercase(),
                Kind::QuotedName => unquote(t.text(sql)).to_ascii_lowercase(),
                _ => return None,
            };
            let call = sql[t.end..].trim_start().starts_with('(');
            Some((word, call))
        })
        .collect()
}

/// The name a quoted name (`"a""b"`, `` `a` ``) stands for: its quotes
/// off, a doubled quote inside made one (unclosed: to the end).
pub(crate) fn unquote(quoted: &str) -> String {
    let q = &quoted[..1];
    let inner = &quoted[1..];
    let inner = inner.strip_suffix(q).unwrap_or(inner);
    inner.replace(&q.repeat(2), q)
}

/// Whether the SQL carries Oracle's `/*+ result_cache */` hint.
pub fn has_hint(sql: &str) -> bool {
    crate::sql::tokens(sql)
        .filter(|t| t.kind == crate::sql::Kind::Comment)
        .filter_map(|t| t.text(sql).strip_prefix("/*+"))
        .any(|body| {
            body.trim_end_matches("*/")
                .split(|c: char| c.is_whitespace() || c == ',')
                .any(|w| w.eq_ignore_ascii_case("result_cache"))
        })
}

/// What a statement is to the cache, from its text: a query the server is
/// asked about (see `crate::resolve`), or a statement that may write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidate {
    /// A query (SELECT, WITH, VALUES, TABLE) that writes nothing.
    Query,
    /// Anything else: once it succeeds, the session's own change drops
    /// the entries of tables of these names (every entry for DDL), and
    /// while its transaction is open its queries bypass the cache.
    Write { ddl: bool, names: Vec<String> },
}

/// Words that make a statement change the catalog (a session's own DDL
/// drops every entry).
const DDL: &[&str] = &[
    "create", "alter", "drop", "truncate", "rename", "comment", "grant", "revoke", "refresh",
    "cluster", "vacuum", "reindex", "import",
];

/// Classifies a statement by its text; `query` is whether its first word
/// makes it a query.
pub fn candidate(sql: &str, query: bool) -> Candidate {
    let words = identifiers(sql);
    let has = |list: &[&str]| words.iter().any(|w| list.contains(&w.as_str()));
    // A data-modifying WITH writes.
    if query && !has(&["insert", "update", "delete", "merge", "truncate"]) {
        return Candidate::Query;
    }
    let first = words_first(sql);
    Candidate::Write {
        ddl: DDL.contains(&first.as_str()) || first == "do" || first == "call",
        names: words,
    }
}

/// The first word of a statement, lower case.
fn words_first(sql: &str) -> String {
    words(sql)
        .into_iter()
        .next()
        .map(|(w, _)| w)
        .unwrap_or_default()
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
        let part_ok = |p: &str| {
            !p.is_empty()
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'$')
        };
        if !name.split('.').all(part_ok) || name.split('.').count() > 2 {
            return Err(format!(
                "--result-cache-table {s}: expected a table or view name of letters, digits and _ \
                 (schema.name for another schema than the search path's)"
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(size: usize) -> ResultCache {
        let c = ResultCache::new(CacheOptions {
            size,
            lag: Duration::from_millis(100),
            tables: vec![
                ("holiday".into(), CacheMode::Force),
                ("chair".into(), CacheMode::Manual),
            ],
            setup: false,
            per_session: false,
        });
        let slot = |id: &str, name: &str| Slot {
            id: id.into(),
            name: name.into(),
        };
        assert!(c.publish(
            c.epoch(),
            Resolution {
                statements: vec![Ok(vec![0]), Ok(vec![0, 1]), Err("calls now()".into())],
                slots: vec![slot("16384", "holiday"), slot("16390", "chair")],
            }
        ));
        c
    }

    fn rows(v: &str) -> Rows {
        vec![vec![Some(v.as_bytes().to_vec())]]
    }

    /// Stores `v` under key `k` for statement `stmt`, as a session does.
    fn store(c: &ResultCache, stmt: usize, k: &str, v: &str) {
        let (state, tables) = c.plan(stmt).unwrap();
        let g = state.generations(&tables);
        c.create(key(k, &[], &[]), rows(v), &state, tables, &g);
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
    fn invalidation_by_identity_and_moved_generations() {
        let c = cache(64 * 1024);
        let (state, tables) = c.plan(0).unwrap();
        let g = state.generations(&tables);
        c.create(key("a", &[], &[]), rows("1"), &state, tables.clone(), &g);
        store(&c, 1, "b", "2");
        assert!(c.find(&key("a", &[], &[])).is_some());
        // Another table's change leaves holiday's entry alone; holiday's
        // own (by OID) drops both entries that read it.
        c.invalidate_id("16390");
        assert!(c.find(&key("a", &[], &[])).is_some());
        assert!(c.find(&key("b", &[], &[])).is_none());
        c.invalidate_id("99999");
        assert!(c.find(&key("a", &[], &[])).is_some());
        c.invalidate_id("16384");
        assert!(c.find(&key("a", &[], &[])).is_none());
        // A result fetched across a change is not stored.
        c.create(key("a", &[], &[]), rows("1"), &state, tables, &g);
        assert!(c.find(&key("a", &[], &[])).is_none());
        let s = c.stats();
        assert_eq!(
            (s.create_count_success, s.create_count_failure, s.find_count),
            (2, 1, 3)
        );
        assert_eq!(s.invalidation_count, 2);
        assert_eq!(s.not_cached, vec![(3, "calls now()".to_string())]);
    }

    #[test]
    fn a_ddl_stops_caching_until_the_catalog_is_asked_again() {
        let c = cache(64 * 1024);
        store(&c, 0, "a", "1");
        let (state, tables) = c.plan(0).unwrap();
        let g = state.generations(&tables);
        c.ddl();
        assert!(c.find(&key("a", &[], &[])).is_none());
        assert!(c.plan(0).is_none(), "nothing cached before re-resolving");
        // A result fetched before the DDL is not stored after it.
        c.create(key("a", &[], &[]), rows("1"), &state, tables, &g);
        assert!(c.find(&key("a", &[], &[])).is_none());
        // A resolution begun before another DDL is refused.
        let e = c.epoch();
        c.ddl();
        assert!(!c.publish(e, Resolution::default()));
        assert!(c.publish(c.epoch(), Resolution::default()));
        assert!(c.plan(0).is_none(), "statement 0 is no longer cacheable");
    }

    #[test]
    fn size_is_bounded_least_recently_used_out() {
        let c = cache(4 * BLOCK_SIZE);
        let big = "x".repeat(300); // two blocks: the cache holds two
        for i in 0..4 {
            store(&c, 0, &format!("q{i}"), &big);
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
    fn statements_are_told_apart_by_their_text() {
        assert_eq!(candidate("select * from holiday", true), Candidate::Query);
        assert_eq!(
            candidate(
                "with x as (delete from t returning *) select * from x",
                true
            ),
            Candidate::Write {
                ddl: false,
                names: identifiers("with x as (delete from t returning *) select * from x")
            }
        );
        assert!(matches!(
            candidate("ALTER TABLE t ADD c int", false),
            Candidate::Write { ddl: true, .. }
        ));
        assert!(matches!(
            candidate("update t set x = 1", false),
            Candidate::Write { ddl: false, .. }
        ));
        assert_eq!(
            identifiers("select \"Chair\", 'holiday' from x -- holiday\n/* chair */"),
            vec!["chair", "from", "select", "x"]
        );
        assert_eq!(
            words("select now (), n from t"),
            vec![
                ("select".to_string(), false),
                ("now".to_string(), true),
                ("n".to_string(), false),
                ("from".to_string(), false),
                ("t".to_string(), false)
            ]
        );
    }

    #[test]
    fn the_hint_is_a_comment_not_text_in_a_literal() {
        assert!(has_hint("select /*+ RESULT_CACHE */ * from t"));
        assert!(has_hint("select /*+ index(t i), result_cache */ * from t"));
        assert!(!has_hint("select /* result_cache */ * from t"));
        assert!(!has_hint("select '/*+ result_cache */' from t"));
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
        assert!(c.plan(0).is_none());
    }

    #[test]
    fn table_annotations_parse_with_clear_errors() {
        assert_eq!(
            parse_tables(&[
                "HOLIDAY:force".into(),
                "chair:manual".into(),
                "x".into(),
                "other.rc_t".into()
            ])
            .unwrap(),
            vec![
                ("holiday".into(), CacheMode::Force),
                ("chair".into(), CacheMode::Manual),
                ("x".into(), CacheMode::Force),
                ("other.rc_t".into(), CacheMode::Force)
            ]
        );
        let e = parse_tables(&["t:sometimes".into()]).unwrap_err();
        assert!(e.contains("NAME:force or NAME:manual"), "{e}");
        assert!(parse_tables(&["a.b.c".into()]).is_err());
        assert!(parse_tables(&["a;drop".into()]).is_err());
    }
}
