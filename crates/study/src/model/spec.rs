//! The study file: TOML plus SQL files, read with the line of every
//! mistake. docs/study.md ("The study file") documents each key.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::StudyError;

/// The most repetitions of a cell a study may ask for: more is a mistake
/// (`reps = 4294967295` planned runs until memory ran out).
pub const MAX_REPS: u32 = 1000;

/// A whole study as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Study {
    pub name: String,
    #[serde(default)]
    pub title: String,
    #[serde(default)]
    pub about: String,
    /// Repetitions of every cell (`--reps` overrides).
    #[serde(default = "three")]
    pub reps: u32,
    /// Repetitions with `--quick`.
    pub quick_reps: Option<u32>,
    /// `interleaved` (every cell once per round, A B C A B C) or `random`
    /// (the whole plan shuffled with a recorded seed).
    #[serde(default)]
    pub order: Order,
    /// Seed of a random order; a new one (recorded) when absent.
    pub seed: Option<u64>,
    /// Values substituted for `{name}` in SQL and run options, and visible
    /// as `$name` in report expressions.
    #[serde(default)]
    pub vars: BTreeMap<String, toml::Value>,
    /// What `--quick` changes: vars and the levels kept.
    #[serde(default)]
    pub quick: Quick,
    /// Server settings of the private PostgreSQL, written at its start.
    #[serde(default)]
    pub server: BTreeMap<String, String>,
    /// SQL run once per engine before the first run (not measured).
    pub setup: Option<Sql>,
    pub workload: WorkloadSpec,
    #[serde(default)]
    pub factors: Vec<Factor>,
    #[serde(default)]
    pub probes: Vec<Probe>,
    #[serde(default)]
    pub measure: Measure,
    pub report: ReportSpec,
    /// A check run after the plan: a writer changes a cached table while
    /// the sessions read, and every result is checked for staleness.
    pub freshness: Option<crate::model::freshness::FreshnessSpec>,
}

fn three() -> u32 {
    3
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    #[default]
    Interleaved,
    Random,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Quick {
    #[serde(default)]
    pub vars: BTreeMap<String, toml::Value>,
    /// Per factor, the level names kept with `--quick`.
    #[serde(default)]
    pub levels: BTreeMap<String, Vec<toml::Value>>,
}

/// SQL given inline, as a list of pieces run in order, or per engine
/// (`postgres`, `sqlite`, `mariadb`); a piece ending in `.sql` is a file
/// next to the study file.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Sql {
    One(String),
    Many(Vec<String>),
    PerEngine(BTreeMap<String, Sql>),
}

impl Sql {
    /// The pieces of SQL for `engine`, if any.
    pub fn for_engine(&self, engine: &str) -> Option<Vec<&str>> {
        match self {
            Sql::One(s) => Some(vec![s.as_str()]),
            Sql::Many(v) => Some(v.iter().map(String::as_str).collect()),
            Sql::PerEngine(m) => m.get(engine).and_then(|s| s.for_engine(engine)),
        }
    }

    /// Every piece of SQL, for any engine.
    pub fn pieces(&self) -> Vec<&str> {
        match self {
            Sql::One(s) => vec![s.as_str()],
            Sql::Many(v) => v.iter().map(String::as_str).collect(),
            Sql::PerEngine(m) => m.values().flat_map(Sql::pieces).collect(),
        }
    }
}

/// `name = value` settings for every engine, and tables of settings for
/// one engine each: `{ a = "1", mariadb = { b = 2 } }`. Values are
/// strings, numbers or booleans (kept as text).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(try_from = "BTreeMap<String, toml::Value>")]
pub struct Settings {
    all: BTreeMap<String, String>,
    engines: BTreeMap<String, BTreeMap<String, String>>,
}

impl TryFrom<BTreeMap<String, toml::Value>> for Settings {
    type Error = String;

    fn try_from(m: BTreeMap<String, toml::Value>) -> Result<Settings, String> {
        let scalar = |k: &str, v: toml::Value| match v {
            toml::Value::String(_)
            | toml::Value::Integer(_)
            | toml::Value::Float(_)
            | toml::Value::Boolean(_) => Ok(value_text(&v)),
            _ => Err(format!("`{k}`: expected a string, number or boolean")),
        };
        let mut out = Settings::default();
        for (k, v) in m {
            match v {
                toml::Value::Table(t) => {
                    if !crate::model::engine::ENGINES.contains(&k.as_str()) {
                        return Err(format!(
                            "`{k}` holds a table: expected `name = value`, or a table of settings per engine ({})",
                            crate::model::engine::ENGINES.join(", ")
                        ));
                    }
                    let mut e = BTreeMap::new();
                    for (n, x) in t {
                        e.insert(n.clone(), scalar(&format!("{k}.{n}"), x)?);
                    }
                    out.engines.insert(k, e);
                }
                v => {
                    let v = scalar(&k, v)?;
                    out.all.insert(k, v);
                }
            }
        }
        Ok(out)
    }
}

impl Settings {
    /// The settings that hold on `engine`: the common ones and its own.
    pub fn for_engine(&self, engine: &str) -> BTreeMap<String, String> {
        let mut m = self.all.clone();
        if let Some(e) = self.engines.get(engine) {
            m.extend(e.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        m
    }

    pub fn is_empty(&self) -> bool {
        self.all.is_empty() && self.engines.values().all(BTreeMap::is_empty)
    }

    /// Every name set, for any engine.
    pub fn names(&self) -> impl Iterator<Item = &String> {
        self.all
            .keys()
            .chain(self.engines.values().flat_map(|e| e.keys()))
    }
}

/// A number, or text with `{var}` references that becomes one.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum Num {
    Int(u64),
    Float(f64),
    Text(String),
}

/// The `tracelab run` specification of one measured run: the study's own
/// keys below (they take vars and engines), and every other option of
/// `tracelab run` under its own name (`run`).
#[derive(Debug, Clone, Deserialize)]
pub struct WorkloadSpec {
    /// The statement(s) every session executes; with `protocol = "simple"`
    /// several statements separated by `;` go in one call. Either this or
    /// `sqldir`.
    #[serde(default = "no_sql")]
    pub sql: Sql,
    /// An sqlrun kit, as `tracelab run --sqldir`: a directory next to the
    /// study file whose `sqlfile.conf` lists `weight,sqlfile[,bindfile]`
    /// records; instead of `sql`.
    pub sqldir: Option<String>,
    /// How each session picks a kit's next statement (`run --exe-mode`):
    /// `sequential` (the default), `semi-random` (by the kit's weights)
    /// or `truly-random`.
    pub exe_mode: Option<String>,
    /// Bind values file (as `tracelab run --binds`), next to the study.
    pub binds: Option<String>,
    #[serde(default = "one")]
    pub sessions: Num,
    /// Statements per session; transactions = statements / tx_per_commit.
    pub statements: Option<Num>,
    /// Transactions per session (when `statements` is not given).
    pub transactions: Option<Num>,
    /// Seconds per session (instead of a count).
    pub runtime: Option<Num>,
    /// Statements per transaction; 0 is autocommit.
    #[serde(default = "zero")]
    pub tx_per_commit: Num,
    /// `extended` (prepared; several statements separated by `;` are
    /// executed in turn, one per execution) or `simple` (text, several
    /// statements in one call).
    #[serde(default = "extended")]
    pub protocol: String,
    /// Rows per round trip of a query's fetches (PostgreSQL; as `run
    /// --fetch-size`); 0 fetches every row in one go.
    #[serde(default = "zero")]
    pub fetch_size: Num,
    /// Session settings (SET / PRAGMA) of every session.
    #[serde(default)]
    pub settings: Settings,
    /// Statements of an unmeasured warm-up run before each measured run
    /// (0: none).
    #[serde(default = "zero")]
    pub warmup: Num,
    /// SQL before each measured run (not measured), e.g. TRUNCATE,
    /// CHECKPOINT.
    pub before: Option<Sql>,
    /// SQL after each run, before the `after` probes (e.g. the deferred
    /// work a load left behind).
    pub after: Option<Sql>,
    /// A client result cache for every run (`run --result-cache`), as a
    /// level's `result_cache`; a level's own wins.
    pub result_cache: Option<crate::model::result_cache::CacheLevel>,
    /// Every other key: an option of `tracelab run` under its own name
    /// (`rate = 50`, `exe_delay = "10ms"`, `connect_mode = "tsunami"`),
    /// read into `tracelab_run::RunOptions` for each cell once its vars
    /// are in (`crate::model::run_options`); an unknown key is refused
    /// there, by name, when the study is read.
    #[serde(flatten)]
    pub run: toml::Table,
}

/// No SQL: the workload is a kit (`sqldir`).
fn no_sql() -> Sql {
    Sql::Many(Vec::new())
}

impl Sql {
    /// No piece at all (a workload that names a kit instead).
    pub fn is_empty(&self) -> bool {
        self.pieces().is_empty()
    }
}

/// A kit's `exe_mode` as the driver takes it.
pub fn exe_mode(name: Option<&str>) -> Option<tracelab_run::ExeMode> {
    match name.unwrap_or("sequential") {
        "sequential" => Some(tracelab_run::ExeMode::Sequential),
        "semi-random" | "semi_random" => Some(tracelab_run::ExeMode::SemiRandom),
        "truly-random" | "truly_random" => Some(tracelab_run::ExeMode::TrulyRandom),
        _ => None,
    }
}

fn one() -> Num {
    Num::Int(1)
}
fn zero() -> Num {
    Num::Int(0)
}
fn extended() -> String {
    "extended".into()
}

/// One factor and its levels.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Factor {
    pub name: String,
    /// Levels given as plain values (`values = [1, 2, 4]`): each sets the
    /// var named after the factor.
    #[serde(default)]
    pub values: Vec<toml::Value>,
    /// Levels given in full.
    #[serde(default)]
    pub levels: Vec<Level>,
    /// The level names run by default; all when absent (`--level
    /// NAME=a,b` overrides).
    pub active: Option<Vec<String>>,
}

/// What a level changes.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Level {
    pub name: String,
    /// Session settings (SET on PostgreSQL, PRAGMA on SQLite).
    #[serde(default)]
    pub settings: Settings,
    /// Server settings applied with ALTER SYSTEM and a reload.
    #[serde(default)]
    pub server: Settings,
    /// Server settings that need a restart of the private server.
    #[serde(default)]
    pub restart: Settings,
    /// Environment of the private server's processes (`LD_PRELOAD =
    /// "{clock_lib}"`): the server is restarted when it changes.
    #[serde(default)]
    pub env: Settings,
    /// Options of the measured run (`tracelab run`'s) at this level.
    #[serde(default)]
    pub run: RunLevel,
    /// The level runs only in cells where each of these factors is at one
    /// of these levels (`{ loop = ["client"] }`); the other cells are not
    /// run, and the report says so.
    #[serde(default)]
    pub only_with: BTreeMap<String, Vec<toml::Value>>,
    /// Why the level runs only there, for the report.
    pub why: Option<String>,
    /// The workload's SQL for this level.
    pub sql: Option<Sql>,
    /// SQL before each measured run of this level (after the workload's).
    pub before: Option<Sql>,
    /// SQL after each run of this level (before the workload's `after`).
    pub after: Option<Sql>,
    #[serde(default)]
    pub vars: BTreeMap<String, toml::Value>,
    /// The engine this level belongs to: a cell that pairs it with another
    /// engine is not run (`model = serial` is a PostgreSQL level,
    /// `pool-of-threads` a MariaDB one).
    pub engine: Option<String>,
    /// tracelab proxy between the run's sessions and the server, with the
    /// link it emulates; its server-side traces are profiled.
    pub proxy: Option<crate::model::proxy::ProxyLevel>,
    /// A client result cache for the run's sessions (`run --result-cache`).
    pub result_cache: Option<crate::model::result_cache::CacheLevel>,
}

/// `tracelab run` options a level sets for its measured runs: any option
/// of the workload's that `tracelab run` has (`rate`, `timer`,
/// `exe_delay`, ...), over the workload's, and these.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct RunLevel {
    /// A client-side 10046 trace per session (`run --trace`), profiled as
    /// `trace_*` measurements, its size as `trace_bytes`.
    #[serde(default)]
    pub trace: bool,
    /// Rows per fetch round trip (over the workload's `fetch_size`).
    pub fetch_size: Option<Num>,
    /// `tracelab run`'s other options, as the workload's `run`.
    #[serde(flatten)]
    pub options: toml::Table,
}

/// A query whose columns become measurements, before and/or after a run.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Probe {
    pub name: String,
    pub sql: Sql,
    /// `delta` (after − before), `after` or `before`.
    #[serde(default)]
    pub when: When,
    /// Server settings the probe's figures depend on (PostgreSQL:
    /// `track_wal_io_timing = "on"` for WAL timings): where the server
    /// has other values, the probe is not taken and the report says why,
    /// rather than showing a 0 that was never measured.
    #[serde(default)]
    pub needs: BTreeMap<String, String>,
    /// The PostgreSQL major versions the probe's SQL is for (`"14-17"`,
    /// `"18-"`): a server of another version does not take it. Views
    /// change between versions (PostgreSQL 18 moved the WAL's sync counts
    /// and times from `pg_stat_wal` to `pg_stat_io`), so a study gives
    /// one probe per form, each for its versions.
    #[serde(default)]
    pub versions: Option<Versions>,
}

/// A range of PostgreSQL major versions: `"16"`, `"14-17"`, `"18-"`,
/// `"-17"`.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(try_from = "String")]
pub struct Versions {
    pub from: u32,
    pub to: u32,
}

impl Versions {
    pub fn contains(&self, major: u32) -> bool {
        (self.from..=self.to).contains(&major)
    }
}

impl TryFrom<String> for Versions {
    type Error = String;

    fn try_from(text: String) -> Result<Versions, String> {
        let bad = || {
            format!(
                "versions = \"{text}\": expected a PostgreSQL major version or a range of them, \
                 e.g. \"16\", \"14-17\" or \"18-\""
            )
        };
        let num = |t: &str, empty: u32| -> Result<u32, String> {
            let t = t.trim();
            if t.is_empty() {
                Ok(empty)
            } else {
                t.parse().map_err(|_| bad())
            }
        };
        let (from, to) = match text.split_once('-') {
            Some((a, b)) => (num(a, 0)?, num(b, u32::MAX)?),
            None if text.trim().is_empty() => return Err(bad()),
            None => {
                let v = num(&text, u32::MAX)?;
                (v, v)
            }
        };
        if from > to || (from == 0 && to == u32::MAX) {
            return Err(bad());
        }
        Ok(Versions { from, to })
    }
}

#[derive(Debug, Clone, Copy, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum When {
    #[default]
    Delta,
    Before,
    After,
}

/// Measurements beyond elapsed, the run summary and the probes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Measure {
    /// CPU of each session's server process (/proc), as `backend_cpu_ms`.
    #[serde(default = "yes")]
    pub backend_cpu: bool,
    /// System call counts of the server (`strace -c -f`) on every run,
    /// as `syscalls` and `syscall_NAME`; skipped with a note where strace
    /// is missing. See `strace_runs` for counts that leave the timed runs
    /// alone.
    #[serde(default)]
    pub strace: bool,
    /// Growth of the private server's log files during the run
    /// (`server_log_bytes`), and lines of it holding given text.
    #[serde(default)]
    pub server_log: LogSpec,
    /// A 10046 trace of every session, profiled by the skew engine:
    /// `trace_NAME_s` and `trace_NAME_calls` per call name (`exec`,
    /// `commit`, `sql_net_message_from_client`, ...) and `trace_total_s`.
    #[serde(default)]
    pub trace: bool,
    /// Runs per cell with `strace -c -f` attached, apart from the timed
    /// runs (strace slows the server): they come after the timed rounds,
    /// store the strace table (the `syscalls` table of the store, and
    /// `syscalls`, `syscall_NAME`) and keep their other figures under a
    /// `strace_` prefix (`strace_elapsed_ms`), out of the timed columns.
    #[serde(default)]
    pub strace_runs: u32,
    /// strace also follows tracelab's own process, the driver's sessions
    /// (and an in-process proxy's loops), wherever it follows the server:
    /// `client_syscalls`, `client_syscall_NAME`.
    #[serde(default)]
    pub strace_client: bool,
    /// System calls reported even when none was made (as 0), so that a
    /// column can name them: `["write", "clock_gettime"]`.
    #[serde(default)]
    pub strace_calls: Vec<String>,
    /// Vars of the runs under strace (`strace_runs`), over the cell's:
    /// fewer iterations, say, as strace stops at every system call and
    /// the counts are read per statement.
    #[serde(default)]
    pub strace_vars: BTreeMap<String, toml::Value>,
    /// Counters of every server process or thread that need no ptrace,
    /// on every run: context switches and read/write syscalls from /proc,
    /// server CPU, tasks started, and `perf stat -e context-switches`
    /// where perf works (`crate::execute::server_counters`).
    #[serde(default)]
    pub server_counters: bool,
    /// The filter (mrskew's `--where`) of the profile tables the report
    /// shows of the client's and a proxy's traces, e.g. `$af < 1` to
    /// leave out the long idle waits; the `trace_*` measurements are of
    /// every call.
    pub profile_where: Option<String>,
    /// Commands run beside (or after) each measured run, whose output
    /// lines `NAME VALUE` are measurements `{name}_NAME`.
    #[serde(default)]
    pub command: Vec<crate::model::outside::CommandSpec>,
    /// `perf stat` counters of the server's processes over each measured
    /// run, as `perf_EVENT`; where perf cannot count, the study says so
    /// once and goes on without them.
    pub perf: Option<crate::model::outside::PerfSpec>,
}

impl Default for Measure {
    fn default() -> Self {
        Measure {
            backend_cpu: true,
            strace: false,
            server_log: LogSpec::default(),
            trace: false,
            strace_runs: 0,
            strace_client: false,
            strace_calls: Vec::new(),
            strace_vars: BTreeMap::new(),
            server_counters: false,
            profile_where: None,
            command: Vec::new(),
            perf: None,
        }
    }
}

fn yes() -> bool {
    true
}

/// The server log measurement: `true`, or `{ count = { NAME = "text" } }`
/// for `log_NAME`, the lines of the log's growth that hold the text.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(try_from = "toml::Value")]
pub struct LogSpec {
    pub on: bool,
    pub count: BTreeMap<String, String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LogTable {
    #[serde(default)]
    count: BTreeMap<String, String>,
}

impl TryFrom<toml::Value> for LogSpec {
    type Error = String;

    fn try_from(v: toml::Value) -> Result<LogSpec, String> {
        match v {
            toml::Value::Boolean(on) => Ok(LogSpec {
                on,
                count: BTreeMap::new(),
            }),
            t @ toml::Value::Table(_) => {
                let t = LogTable::deserialize(t).map_err(|e| e.message().to_string())?;
                Ok(LogSpec {
                    on: true,
                    count: t.count,
                })
            }
            _ => Err("expected true, false or a table { count = { NAME = \"text\" } }".into()),
        }
    }
}

/// The report: a table whose rows are one factor's levels, one table per
/// combination of the other factors, and a chart.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReportSpec {
    /// The factor whose levels are the rows, or several (`["tracing",
    /// "sampling"]`: a row per combination of their levels that ran).
    #[serde(deserialize_with = "one_or_many")]
    pub rows: Vec<String>,
    /// The level of `rows` (of the first of them) that % changes and
    /// ratios compare with.
    pub baseline: Option<String>,
    /// Baselines of tables with different levels (one engine's models
    /// each): a table's baseline is the first of `baseline` and these
    /// that it has.
    #[serde(default)]
    pub baselines: Vec<String>,
    pub columns: Vec<Column>,
    pub chart: Option<Chart>,
    /// A table of every cell, its factors' levels first (the layout of
    /// the classic studies' published tables).
    pub cells: Option<CellsSpec>,
    /// Tables of column means by the levels of one factor.
    #[serde(default)]
    pub averages: Vec<AveragesSpec>,
    /// Questions answered by tests: does a factor's level differ from its
    /// baseline, everything else equal?
    #[serde(default)]
    pub questions: Vec<Question>,
    /// The original study's figures, shown next to these.
    pub published: Option<crate::model::published::Published>,
    /// Per-session tables: the tally of each run (sqlrun's rc.log), the
    /// cache statistics, a chart of the sessions' values by cell.
    pub sessions: Option<crate::model::sessions::SessionsSpec>,
    /// mrskew's table of the traces of each cell (client and proxy).
    pub profiles: Option<crate::model::profiles::ProfilesSpec>,
    /// The System calls section: the strace tables of the runs under
    /// strace (`strace_runs`), side by side per row. `false` leaves it out
    /// (the tables stay in the store) where columns already give the
    /// counts that matter and the rows are many.
    #[serde(default = "yes")]
    pub strace_tables: bool,
}

impl ReportSpec {
    /// The baseline of a table whose levels (of the first rows factor)
    /// are `levels`.
    pub fn baseline_of<'a>(&self, levels: impl Iterator<Item = &'a str> + Clone) -> Option<String> {
        self.baseline
            .iter()
            .chain(&self.baselines)
            .find(|b| levels.clone().any(|l| l == b.as_str()))
            .cloned()
    }
}

/// A string or a list of strings.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(s) => vec![s],
        OneOrMany::Many(v) => v,
    })
}

/// `cells = { factors = [...], columns = [...] }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CellsSpec {
    #[serde(default)]
    pub title: String,
    /// The factors shown, in this order (factors of one level are left
    /// out and named in the title).
    pub factors: Vec<String>,
    /// Column names (of `columns`).
    pub columns: Vec<String>,
}

/// `averages = [{ by = "timer", per = ["proc"], columns = [...] }]`: the
/// mean of each column over the cells of each level of `by`, per
/// combination of the `per` factors.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AveragesSpec {
    pub by: String,
    #[serde(default)]
    pub per: Vec<String>,
    pub columns: Vec<String>,
}

/// `questions = [{ title = "does tracing cost?", factor = "tracing",
/// baseline = "off", column = "elapsed", per = ["proc"] }]`: for each
/// combination of `per`, every level of `factor` against `baseline` with
/// the other factors equal, each a test of the column.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Question {
    pub title: String,
    pub factor: String,
    pub baseline: String,
    pub column: String,
    #[serde(default)]
    pub per: Vec<String>,
}

/// One column: an expression over the run's measurements and vars
/// (`$elapsed_ms / $statements`), in tracelab's expression language.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Column {
    pub name: String,
    pub label: String,
    pub expr: String,
    /// Decimal places shown.
    #[serde(default = "two")]
    pub digits: usize,
    /// Also show the % change from the baseline level.
    #[serde(default)]
    pub change: bool,
    /// Include in the statistics section (ratios, tests).
    #[serde(default = "yes")]
    pub stats: bool,
    /// The least value the quantity can take (0 for a time, a rate or a
    /// size): a value below it is shown with a note saying how it arose,
    /// and an interval stops there.
    pub min: Option<f64>,
}

fn two() -> usize {
    2
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chart {
    pub title: String,
    /// Column names drawn as lines against the rows factor.
    pub lines: Vec<String>,
    /// A log2 x axis (levels must be numbers).
    #[serde(default)]
    pub log2_x: bool,
    /// A factor whose levels are the series (bars of one colour each) of
    /// the first of `lines`, one chart per combination of the factors
    /// other than the rows and this one.
    pub series: Option<String>,
    #[serde(default)]
    pub y_label: String,
}

/// A study read from a file or the built-ins, with its text (stored with
/// the results) and the directory its SQL files are relative to.
#[derive(Debug, Clone)]
pub struct Loaded {
    pub study: Study,
    pub file: String,
    pub text: String,
    pub dir: Option<PathBuf>,
    /// SQL files of a built-in study, by name.
    pub(crate) embedded: &'static [(&'static str, &'static str)],
}

impl Loaded {
    /// Parses and checks a study's text; `file` names it in messages.
    pub fn parse(
        file: &str,
        text: &str,
        dir: Option<PathBuf>,
        embedded: &'static [(&'static str, &'static str)],
    ) -> Result<Loaded, StudyError> {
        let study: Study = toml::from_str(text).map_err(|e| {
            let line = e.span().map_or(1, |s| {
                text[..s.start.min(text.len())].lines().count().max(1)
            });
            let line = if e
                .span()
                .is_some_and(|s| text[..s.start.min(text.len())].ends_with('\n'))
            {
                line + 1
            } else {
                line
            };
            StudyError::File {
                file: file.to_string(),
                line,
                key: key_at(text, line),
                what: e.message().trim().to_string(),
            }
        })?;
        let loaded = Loaded {
            study,
            file: file.to_string(),
            text: text.to_string(),
            dir,
            embedded,
        };
        loaded.check()?;
        Ok(loaded)
    }

    /// Reads a study file from disk.
    pub fn from_path(path: &Path) -> Result<Loaded, StudyError> {
        let bytes = std::fs::read(path).map_err(crate::error::io(path))?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let good = &e.as_bytes()[..e.utf8_error().valid_up_to()];
            let line = good.iter().filter(|&&b| b == b'\n').count() + 1;
            let column =
                good.len() - good.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1) + 1;
            StudyError::File {
                file: path.display().to_string(),
                line,
                key: "(file)".into(),
                what: format!(
                    "not UTF-8 text (byte 0x{:02x} at column {column}): a study file is UTF-8 TOML",
                    e.as_bytes()[good.len()]
                ),
            }
        })?;
        Loaded::parse(
            &path.display().to_string(),
            &text,
            path.parent().map(Path::to_path_buf),
            &[],
        )
    }

    /// An error at the line of `key` (a dotted path as in the file).
    pub fn error(&self, key: &str, what: impl Into<String>) -> StudyError {
        StudyError::File {
            file: self.file.clone(),
            line: line_of(&self.text, key),
            key: key.to_string(),
            what: what.into(),
        }
    }

    /// The text of SQL given inline or as a `.sql` file.
    pub fn sql_text(&self, key: &str, sql: &str) -> Result<String, StudyError> {
        let s = sql.trim();
        if !s.ends_with(".sql") || s.contains(char::is_whitespace) {
            return Ok(sql.to_string());
        }
        if let Some((_, t)) = self.embedded.iter().find(|(n, _)| *n == s) {
            return Ok(t.to_string());
        }
        let on_disk = self
            .dir
            .as_ref()
            .map(|d| std::fs::read_to_string(d.join(s)));
        match on_disk {
            Some(Ok(t)) => Ok(t),
            // A copy of a built-in study may keep naming the built-in's
            // SQL files (`tracelab study show redo-undo/debt.sql` prints one).
            _ if crate::model::builtin::sql_file(s).is_some() => {
                Ok(crate::model::builtin::sql_file(s)
                    .unwrap_or_default()
                    .to_string())
            }
            Some(Err(e)) => Err(self.error(key, format!("cannot read SQL file {s}: {e}"))),
            None => Err(self.error(key, format!("no SQL file {s} in this study"))),
        }
    }

    /// A data file the study names (a bind file, say): next to the study
    /// file, or, for a built-in study (or a copy of one naming its files),
    /// its embedded text written into `scratch`.
    pub fn data_file(&self, key: &str, name: &str, scratch: &Path) -> Result<PathBuf, StudyError> {
        let on_disk = self.dir.as_ref().map(|d| d.join(name));
        if let Some(p) = on_disk.as_ref().filter(|p| p.is_file()) {
            return Ok(p.clone());
        }
        let embedded = self
            .embedded
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, t)| *t)
            .or_else(|| crate::model::builtin::sql_file(name));
        match embedded {
            Some(text) => {
                let path = scratch.join(name.replace('/', "_"));
                std::fs::write(&path, text).map_err(crate::error::io(&path))?;
                Ok(path)
            }
            None => Err(self.error(
                key,
                format!(
                    "no file {name} {}",
                    on_disk.map_or("in this study".to_string(), |p| format!(
                        "({} does not exist)",
                        p.display()
                    ))
                ),
            )),
        }
    }

    /// Checks what serde cannot: names that must refer to each other.
    fn check(&self) -> Result<(), StudyError> {
        self.check_factors()?;
        self.check_references()?;
        self.check_measure()?;
        self.check_report()
    }

    /// The repetitions, the study's name, the factors and their levels, the
    /// quick levels.
    fn check_factors(&self) -> Result<(), StudyError> {
        let s = &self.study;
        let max = MAX_REPS;
        for (key, reps) in [("reps", Some(s.reps)), ("quick_reps", s.quick_reps)] {
            if let Some(r) = reps.filter(|r| !(1..=max).contains(r)) {
                return Err(self.error(key, format!("{r}: expected 1 to {max} repetitions")));
            }
        }
        // The name is stored, checked on --resume and part of the default
        // results directory's name.
        let good = |c: char| c.is_ascii_alphanumeric() || "-_.".contains(c);
        if s.name.is_empty() || s.name.starts_with('.') || !s.name.chars().all(good) {
            return Err(self.error(
                "name",
                format!(
                    "{:?}: expected a name of letters, digits, `-`, `_` and `.` (not starting with `.`)",
                    s.name
                ),
            ));
        }
        let mut names = std::collections::BTreeSet::new();
        for f in &s.factors {
            if !names.insert(f.name.as_str()) {
                return Err(self.error("factors.name", format!("factor `{}` twice", f.name)));
            }
            if f.values.is_empty() == f.levels.is_empty() {
                return Err(self.error(
                    "factors",
                    format!("factor `{}`: expected either `values` or `levels`", f.name),
                ));
            }
            if f.name == "engine" {
                for l in f.level_names() {
                    if !crate::model::engine::ENGINES.contains(&l.as_str()) {
                        return Err(self.error(
                            "factors.levels.name",
                            format!(
                                "engine level `{l}`: expected one of {}",
                                crate::model::engine::ENGINES.join(", ")
                            ),
                        ));
                    }
                }
            }
            if let Some(a) = &f.active {
                for n in a {
                    if !f.level_names().contains(n) {
                        return Err(self.error(
                            "factors.active",
                            format!("factor `{}` has no level `{n}`", f.name),
                        ));
                    }
                }
            }
        }
        for (fname, lv) in &s.quick.levels {
            let Some(f) = s.factors.iter().find(|f| &f.name == fname) else {
                return Err(self.error(&format!("quick.levels.{fname}"), "no such factor"));
            };
            for v in lv {
                let v = value_text(v);
                if !f.level_names().contains(&v) {
                    return Err(self.error(
                        &format!("quick.levels.{fname}"),
                        format!("factor `{fname}` has no level `{v}`"),
                    ));
                }
            }
        }
        Ok(())
    }

    /// What levels and the report name: factors, their levels, columns.
    fn check_references(&self) -> Result<(), StudyError> {
        let s = &self.study;
        crate::model::run_options::check(&s.workload.run)
            .map_err(|(k, e)| self.error(&format!("workload.{k}"), e))?;
        for f in &s.factors {
            for lv in f.all_levels() {
                for (other, allowed) in &lv.only_with {
                    if other == &f.name {
                        return Err(self.error(
                            "factors.levels.only_with",
                            format!(
                                "level `{}` of `{other}`: only_with names its own factor",
                                lv.name
                            ),
                        ));
                    }
                    for a in allowed {
                        self.need("factors.levels.only_with", other, Some(&value_text(a)))?;
                    }
                }
                crate::model::run_options::check(&lv.run.options).map_err(|(k, e)| {
                    self.error(
                        &format!("factors.levels.run.{k}"),
                        format!("level `{}`: {e}", lv.name),
                    )
                })?;
            }
        }
        if s.report.rows.is_empty() {
            return Err(self.error("report.rows", "expected the name of a factor"));
        }
        for r in &s.report.rows {
            self.need("report.rows", r, None)?;
        }
        if let Some(b) = &s.report.baseline {
            self.need("report.baseline", &s.report.rows[0], Some(b))?;
        }
        for b in &s.report.baselines {
            self.need("report.baselines", &s.report.rows[0], Some(b))?;
        }
        let column = |key: &str, name: &str| -> Result<(), StudyError> {
            if s.report.columns.iter().any(|c| c.name == name) {
                Ok(())
            } else {
                Err(self.error(key, format!("no column named `{name}`")))
            }
        };
        if let Some(c) = &s.report.cells {
            for f in &c.factors {
                self.need("report.cells.factors", f, None)?;
            }
            for n in &c.columns {
                column("report.cells.columns", n)?;
            }
        }
        for a in &s.report.averages {
            self.need("report.averages.by", &a.by, None)?;
            for f in &a.per {
                self.need("report.averages.per", f, None)?;
            }
            for n in &a.columns {
                column("report.averages.columns", n)?;
            }
        }
        for q in &s.report.questions {
            self.need("report.questions.baseline", &q.factor, Some(&q.baseline))?;
            for f in &q.per {
                self.need("report.questions.per", f, None)?;
            }
            column("report.questions.column", &q.column)?;
        }
        if let Some(f) = s.report.chart.as_ref().and_then(|c| c.series.as_ref()) {
            self.need("report.chart.series", f, None)?;
        }
        for f in &s.factors {
            for lv in &f.levels {
                if let Some(e) = &lv.engine {
                    if !crate::model::engine::ENGINES.contains(&e.as_str()) {
                        return Err(self.error(
                            "factors.levels.engine",
                            format!(
                                "level `{}`: engine `{e}`: expected one of {}",
                                lv.name,
                                crate::model::engine::ENGINES.join(", ")
                            ),
                        ));
                    }
                }
            }
        }
        Ok(())
    }

    /// The measurements asked for, and what they need.
    fn check_measure(&self) -> Result<(), StudyError> {
        let s = &self.study;
        if s.measure.strace && s.measure.strace_runs > 0 {
            return Err(self.error(
                "measure.strace_runs",
                "expected either `strace = true` (strace on every run) or `strace_runs` (separate runs under strace), not both",
            ));
        }
        let m = &s.measure;
        if !m.strace && m.strace_runs == 0 {
            for (key, set) in [
                ("measure.strace_client", m.strace_client),
                ("measure.strace_calls", !m.strace_calls.is_empty()),
                ("measure.strace_vars", !m.strace_vars.is_empty()),
            ] {
                if set {
                    return Err(self.error(
                        key,
                        "says what strace counts, but nothing runs under strace: add `strace_runs = 1` (or `strace = true`)",
                    ));
                }
            }
        }
        crate::model::outside::check(&m.command, m.perf.as_ref())
            .map_err(|(key, e)| self.error(key, e))?;
        if m.strace && !m.strace_vars.is_empty() {
            return Err(self.error(
                "measure.strace_vars",
                "vars of the runs under strace are for `strace_runs` (with `strace = true` every run is under strace)",
            ));
        }
        Ok(())
    }

    /// Report columns and charts, the workload's protocol, each feature's
    /// own checks, and the server settings.
    fn check_report(&self) -> Result<(), StudyError> {
        let s = &self.study;
        for c in &s.report.columns {
            crate::model::columns::compile(&c.expr).map_err(|e| {
                self.error(
                    "report.columns.expr",
                    format!("column `{}`: {}", c.name, e.message),
                )
            })?;
        }
        if let Some(ch) = &s.report.chart {
            for l in &ch.lines {
                if !s.report.columns.iter().any(|c| &c.name == l) {
                    return Err(self.error("report.chart.lines", format!("no column named `{l}`")));
                }
            }
        }
        let w = &s.workload;
        match (&w.sqldir, w.sql.is_empty()) {
            (Some(_), false) => {
                return Err(self.error(
                    "workload.sqldir",
                    "expected either `sql` or `sqldir` (a kit), not both",
                ))
            }
            (None, true) => {
                return Err(self.error(
                    "workload",
                    "expected `sql` (the statements) or `sqldir` (an sqlrun kit)",
                ))
            }
            _ => {}
        }
        if w.exe_mode.is_some() && w.sqldir.is_none() {
            return Err(self.error(
                "workload.exe_mode",
                "picks a kit's statements: give the kit with `sqldir`",
            ));
        }
        if exe_mode(w.exe_mode.as_deref()).is_none() {
            return Err(self.error(
                "workload.exe_mode",
                "expected `sequential`, `semi-random` or `truly-random`",
            ));
        }
        if !["extended", "prepared", "simple"].contains(&s.workload.protocol.as_str()) {
            return Err(self.error("workload.protocol", "expected `extended` or `simple`"));
        }
        if let Some(c) = &w.result_cache {
            c.check()
                .map_err(|e| self.error("workload.result_cache", e))?;
        }
        for f in &s.factors {
            for lv in &f.levels {
                if let Some(p) = &lv.proxy {
                    p.check()
                        .map_err(|e| self.error("factors.levels.proxy", e))?;
                }
                if let Some(c) = &lv.result_cache {
                    c.check()
                        .map_err(|e| self.error("factors.levels.result_cache", e))?;
                }
            }
        }
        if let Some(w) = &s.measure.profile_where {
            crate::model::profiles::check_where(w)
                .map_err(|e| self.error("measure.profile_where", e))?;
        }
        if let Some(p) = &s.report.profiles {
            p.check().map_err(|e| self.error("report.profiles.of", e))?;
        }
        if let Some(p) = &s.report.published {
            p.check(s).map_err(|e| self.error("report.published", e))?;
        }
        if let Some(x) = &s.report.sessions {
            x.check(s).map_err(|e| self.error("report.sessions", e))?;
        }
        if let Some(fr) = &s.freshness {
            fr.check(s).map_err(|e| self.error("freshness", e))?;
        }
        self.check_server_settings()?;
        Ok(())
    }

    /// `name` names a factor, and `level` (when given) one of its levels.
    fn need(&self, key: &str, name: &str, level: Option<&str>) -> Result<(), StudyError> {
        let Some(f) = self.study.factors.iter().find(|f| f.name == name) else {
            return Err(self.error(
                key,
                format!("expected the name of a factor, found `{name}`"),
            ));
        };
        match level {
            Some(l) if !f.level_names().iter().any(|n| n == l) => {
                Err(self.error(key, format!("factor `{}` has no level `{l}`", f.name)))
            }
            _ => Ok(()),
        }
    }

    /// Server settings are written into postgresql.conf, `ALTER SYSTEM
    /// SET name` and `SET GLOBAL name` as they are: a name must be a
    /// setting name and a value one line (see tracelab_db's checks).
    fn check_server_settings(&self) -> Result<(), StudyError> {
        let s = &self.study;
        let check = |key: &str, engine: &str, name: &str, value: &str| {
            let r = if tracelab_engine::Engine::from_name(engine)
                == Some(tracelab_engine::Engine::Mysql)
            {
                tracelab_db::check_mariadb_setting(name, value)
            } else {
                tracelab_db::check_postgres_setting(name, value)
            };
            r.map_err(|e| {
                let what = e.to_string();
                let what = what.strip_prefix("-c ").unwrap_or(&what);
                self.error(key, what.to_string())
            })
        };
        for (k, v) in &s.server {
            check("server", "postgres", k, v)?;
        }
        for f in &s.factors {
            for lv in f.all_levels() {
                for (key, set) in [
                    ("factors.levels.server", &lv.server),
                    ("factors.levels.restart", &lv.restart),
                ] {
                    for (k, v) in &set.all {
                        check(key, "postgres", k, v)?;
                    }
                    for (engine, m) in &set.engines {
                        for (k, v) in m {
                            check(key, engine, k, v)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Server settings of the study that run a program or load code from
    /// a place of the study's choosing (`tracelab_db::runs_program`), as
    /// `key: name = value`.
    pub fn server_programs(&self) -> Vec<String> {
        let s = &self.study;
        let mut out = Vec::new();
        for (k, v) in &s.server {
            if tracelab_db::runs_program("postgres", k, v) {
                out.push(format!("server: {k} = {v:?}"));
            }
        }
        for f in &s.factors {
            for lv in f.all_levels() {
                for (key, set) in [("server", &lv.server), ("restart", &lv.restart)] {
                    for engine in crate::model::engine::ENGINES {
                        for (k, v) in set.for_engine(engine) {
                            let line = format!(
                                "factor {} level {}: {key}: {k} = {v:?} ({engine})",
                                f.name, lv.name
                            );
                            if tracelab_db::runs_program(engine, &k, &v) && !out.contains(&line) {
                                out.push(line);
                            }
                        }
                    }
                }
            }
        }
        out
    }
}

impl Factor {
    /// Level names in file order.
    pub fn level_names(&self) -> Vec<String> {
        if self.levels.is_empty() {
            self.values.iter().map(value_text).collect()
        } else {
            self.levels.iter().map(|l| l.name.clone()).collect()
        }
    }

    /// All levels, plain values made into levels.
    pub fn all_levels(&self) -> Vec<Level> {
        if self.levels.is_empty() {
            self.values
                .iter()
                .map(|v| Level {
                    name: value_text(v),
                    ..Level::default()
                })
                .collect()
        } else {
            self.levels.clone()
        }
    }
}

/// A TOML value as a level name or var text.
pub fn value_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The dotted key defined on `line` (1-based): the nearest table header
/// above it and the key on the line itself.
fn key_at(text: &str, line: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let here = lines.get(line.saturating_sub(1)).copied().unwrap_or("");
    let key = here
        .split_once('=')
        .map(|(k, _)| k.trim().trim_matches('"').to_string())
        .filter(|k| !k.is_empty() && !k.contains(char::is_whitespace))
        .unwrap_or_default();
    let table = lines[..line.saturating_sub(1).min(lines.len())]
        .iter()
        .rev()
        .chain(std::iter::once(&here))
        .find_map(|l| {
            let t = l.trim();
            t.starts_with('[')
                .then(|| t.trim_matches(|c| c == '[' || c == ']').trim().to_string())
        });
    match (table, key.is_empty()) {
        (Some(t), false) => format!("{t}.{key}"),
        (Some(t), true) => t,
        (None, false) => key,
        (None, true) => "(top level)".into(),
    }
}

/// The first line that defines the last part of a dotted key under its
/// table (or anywhere, failing that).
fn line_of(text: &str, key: &str) -> usize {
    let last = key.rsplit('.').next().unwrap_or(key);
    let defines = |l: &str| {
        let t = l.trim_start();
        t.strip_prefix(last)
            .is_some_and(|r| r.trim_start().starts_with('='))
            || t.contains(&format!("{{ {last} ="))
            || t.contains(&format!(", {last} ="))
    };
    text.lines().position(defines).map_or(1, |i| i + 1)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_probes_versions_are_one_major_version_or_a_range() {
        let v = |t: &str| Versions::try_from(t.to_string());
        assert_eq!(v("16"), Ok(Versions { from: 16, to: 16 }));
        assert_eq!(v("14-17"), Ok(Versions { from: 14, to: 17 }));
        assert_eq!(
            v("18-"),
            Ok(Versions {
                from: 18,
                to: u32::MAX
            })
        );
        assert_eq!(v(" -17 "), Ok(Versions { from: 0, to: 17 }));
        assert!(v("18-").unwrap().contains(19) && !v("18-").unwrap().contains(17));
        for bad in ["", "-", "17-14", "x", "15.2", "14-17-18"] {
            let e = v(bad).unwrap_err();
            assert!(
                e.contains("e.g. \"16\", \"14-17\" or \"18-\""),
                "{bad}: {e}"
            );
        }
    }
    use super::*;

    const GOOD: &str = r#"
name = "t"
[workload]
sql = "select 1"
statements = 10
[[factors]]
name = "batch"
values = [1, 2]
[report]
rows = "batch"
columns = [{ name = "r", label = "r", expr = "$elapsed_ms" }]
"#;

    #[test]
    fn a_good_file_reads() {
        let l = Loaded::parse("t.toml", GOOD, None, &[]).unwrap();
        assert_eq!(l.study.factors[0].level_names(), vec!["1", "2"]);
        assert_eq!(l.study.reps, 3);
    }

    #[test]
    fn a_wrong_type_names_file_line_and_key() {
        let bad = GOOD.replace("statements = 10", "statements = [10]");
        let e = Loaded::parse("t.toml", &bad, None, &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.toml:5: key `workload.statements`:"), "{e}");
    }

    #[test]
    fn an_unknown_key_names_file_line_and_key() {
        let bad = GOOD.replace("statements = 10", "statments = 10");
        let e = Loaded::parse("t.toml", &bad, None, &[])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("t.toml:5: key `workload.statments`:"), "{e}");
        assert!(e.contains("unknown field"), "{e}");
    }

    #[test]
    fn limits_and_names_are_checked() {
        for (from, to, key) in [
            ("name = \"t\"", "name = \"\"", "name"),
            ("name = \"t\"", "name = \"../x\"", "name"),
            ("name = \"t\"", "name = \"t\"\nreps = 4294967295", "reps"),
            ("name = \"t\"", "name = \"t\"\nreps = 0", "reps"),
        ] {
            let bad = GOOD.replace(from, to);
            let e = Loaded::parse("t.toml", &bad, None, &[])
                .unwrap_err()
                .to_string();
            assert!(e.contains(&format!("key `{key}`")), "{to}: {e}");
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.toml");
        let mut bytes = GOOD.as_bytes().to_vec();
        bytes.extend_from_slice(b"# caf\xe9\n");
        std::fs::write(&p, bytes).unwrap();
        let e = Loaded::from_path(&p).unwrap_err();
        assert!(matches!(e, StudyError::File { line: 12, .. }), "{e}");
        assert!(
            e.to_string()
                .contains("not UTF-8 text (byte 0xe9 at column 6)"),
            "{e}"
        );
    }

    #[test]
    fn a_report_on_no_factor_is_named() {
        let bad = GOOD.replace("rows = \"batch\"", "rows = \"bach\"");
        let e = Loaded::parse("t.toml", &bad, None, &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("t.toml:10: key `report.rows`: expected the name of a factor"),
            "{e}"
        );
    }

    #[test]
    fn settings_for_every_engine_and_per_engine() {
        let text = GOOD.replace(
            "values = [1, 2]",
            "levels = [{ name = \"1\", settings = { a = 1, mariadb = { b = \"x\" } }, env = { LD_PRELOAD = \"{clock_lib}\" } }]",
        );
        let l = Loaded::parse("t.toml", &text, None, &[]).unwrap();
        let lv = &l.study.factors[0].levels[0];
        assert_eq!(lv.settings.for_engine("postgres").len(), 1);
        let m = lv.settings.for_engine("mariadb");
        assert_eq!(m["a"], "1");
        assert_eq!(m["b"], "x");
        let bad = GOOD.replace(
            "values = [1, 2]",
            "levels = [{ name = \"1\", settings = { oracle = { b = \"x\" } } }]",
        );
        let e = Loaded::parse("t.toml", &bad, None, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("`oracle` holds a table"), "{e}");
        assert!(e.starts_with("t.toml:"), "{e}");
    }

    #[test]
    fn strace_and_server_log_measurements_read() {
        let text = GOOD.replace(
            "[report]",
            "[measure]\nstrace_runs = 1\nstrace_client = true\nstrace_calls = [\"write\"]\nstrace_vars = { n = 5 }\nserver_log = { count = { plans = \"Query Text:\" } }\n[report]",
        );
        let l = Loaded::parse("t.toml", &text, None, &[]).unwrap();
        let m = &l.study.measure;
        assert!(m.strace_client && !m.strace && m.strace_runs == 1);
        assert_eq!(m.strace_calls, ["write"]);
        assert_eq!(value_text(&m.strace_vars["n"]), "5");
        assert!(m.server_log.on);
        assert_eq!(m.server_log.count["plans"], "Query Text:");
        let plain = GOOD.replace("[report]", "[measure]\nserver_log = true\n[report]");
        let l = Loaded::parse("t.toml", &plain, None, &[]).unwrap();
        assert!(l.study.measure.server_log.on && l.study.measure.server_log.count.is_empty());
        // What strace counts, with nothing under strace.
        let bad = GOOD.replace("[report]", "[measure]\nstrace_client = true\n[report]");
        let e = Loaded::parse("t.toml", &bad, None, &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("key `measure.strace_client`: says what strace counts, but nothing runs under strace"),
            "{e}"
        );
        let bad = GOOD.replace(
            "[report]",
            "[measure]\nstrace = true\nstrace_vars = { n = 5 }\n[report]",
        );
        let e = Loaded::parse("t.toml", &bad, None, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("key `measure.strace_vars`"), "{e}");
    }

    #[test]
    fn only_with_and_report_names_must_exist() {
        let bad = GOOD.replace(
            "values = [1, 2]",
            "levels = [{ name = \"1\", only_with = { engine = [\"postgres\"] } }]",
        );
        let e = Loaded::parse("t.toml", &bad, None, &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "key `factors.levels.only_with`: expected the name of a factor, found `engine`"
            ),
            "{e}"
        );
        let rows = GOOD.replace("rows = \"batch\"", "rows = [\"batch\", \"size\"]");
        let e = Loaded::parse("t.toml", &rows, None, &[])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("key `report.rows`: expected the name of a factor, found `size`"),
            "{e}"
        );
        let q = GOOD.replace(
            "[report]",
            "[report]\nquestions = [{ title = \"q\", factor = \"batch\", baseline = \"3\", column = \"r\" }]",
        );
        let e = Loaded::parse("t.toml", &q, None, &[])
            .unwrap_err()
            .to_string();
        assert!(e.contains("factor `batch` has no level `3`"), "{e}");
    }
}
