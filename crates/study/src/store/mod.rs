//! The results store: one SQLite file per study run directory
//! (`DIR/results.sqlite`). Every run is written in one transaction as soon
//! as it ends, so an interrupted study loses at most the run in flight.
//! docs/study.md ("The results store") documents the schema; reports read nothing else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rusqlite::{params, Connection, OptionalExtension};

use crate::error::StudyError;
use crate::plan::{cell_key, Planned};

/// One call name of a run's profile.
#[derive(Debug, Clone, PartialEq)]
pub struct ProfileRow {
    /// Whose traces: `client` or `proxy`.
    pub source: String,
    pub name: String,
    pub duration: f64,
    pub calls: u64,
    pub min: f64,
    pub max: f64,
}

/// One row of the `strace -c` table.
#[derive(Debug, Clone, PartialEq)]
pub struct Syscall {
    pub name: String,
    pub calls: u64,
    pub errors: u64,
    /// Time in the call, as strace's `seconds` column (system time).
    pub seconds: f64,
}

pub const FILE: &str = "results.sqlite";
/// The lock file beside the store, held (flock) by the `study run` that
/// writes it, with that process's id inside.
pub const LOCK_FILE: &str = "results.lock";

/// The results directory held by this process for a run: a second `study
/// run` (a `--resume` of the same directory, say) is refused at its start
/// rather than run the same cells at the same time and fail when it
/// writes. The lock goes with the process (the kernel drops a flock when
/// its file is closed), so a killed run leaves no stale lock; the file
/// stays (removing it would let a third run lock a new file while a
/// second still holds the old one).
pub struct StoreLock {
    _file: nix::fcntl::Flock<std::fs::File>,
    /// The directory, when this lock made it: a run that ends before it
    /// made a store (a server that would not start) leaves nothing.
    made: Option<PathBuf>,
}

impl Drop for StoreLock {
    fn drop(&mut self) {
        if let Some(dir) = &self.made {
            if !dir.join(FILE).exists() {
                let _ = std::fs::remove_file(dir.join(LOCK_FILE));
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}

impl StoreLock {
    /// Takes the lock of the results directory `dir` (made if missing),
    /// or says who holds it.
    pub fn take(dir: &Path) -> Result<StoreLock, StudyError> {
        use nix::fcntl::{Flock, FlockArg};
        use std::io::{Read, Seek, Write};
        let made = (!dir.exists()).then(|| dir.to_path_buf());
        std::fs::create_dir_all(dir).map_err(crate::error::io(dir))?;
        let path = dir.join(LOCK_FILE);
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(crate::error::io(&path))?;
        match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
            Ok(mut held) => {
                let me = std::process::id();
                let written = held
                    .set_len(0)
                    .and_then(|_| held.rewind())
                    .and_then(|_| writeln!(held, "{me}"));
                written.map_err(crate::error::io(&path))?;
                Ok(StoreLock { _file: held, made })
            }
            Err((mut file, nix::errno::Errno::EWOULDBLOCK)) => {
                let mut text = String::new();
                let _ = file.read_to_string(&mut text);
                let holder = match text.trim().parse::<u32>() {
                    Ok(pid) => format!("pid {pid}"),
                    Err(_) => "a process that has not yet written its pid".into(),
                };
                Err(StudyError::Busy {
                    path: dir.join(FILE),
                    holder,
                })
            }
            Err((_, e)) => Err(StudyError::Io {
                path,
                source: std::io::Error::from(e),
            }),
        }
    }
}

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS study (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    name TEXT NOT NULL,
    file TEXT NOT NULL,          -- where the study file came from
    text TEXT NOT NULL,          -- the study file itself
    quick INTEGER NOT NULL,
    reps INTEGER NOT NULL,
    seed INTEGER NOT NULL,
    tracelab_version TEXT NOT NULL,
    started TEXT NOT NULL        -- UTC, RFC 3339
);
CREATE TABLE IF NOT EXISTS earlier_texts ( -- study files a --resume replaced
    replaced TEXT NOT NULL,      -- UTC, RFC 3339
    file TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS facts (     -- machine and engine facts
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS plan (      -- every planned run, in run order
    seq INTEGER PRIMARY KEY,
    rep INTEGER NOT NULL,
    cell TEXT NOT NULL,          -- 'factor=level factor=level'
    levels TEXT NOT NULL         -- JSON [[factor, level], ...]
);
CREATE TABLE IF NOT EXISTS runs (      -- one row per finished run
    seq INTEGER PRIMARY KEY REFERENCES plan(seq),
    started TEXT NOT NULL,
    seconds REAL NOT NULL,       -- wall time of the whole run, setup included
    vars TEXT NOT NULL,          -- JSON {name: number} the run used
    summary TEXT NOT NULL,       -- JSON of the tracelab run summary
    notes TEXT NOT NULL          -- what was skipped and why
);
CREATE TABLE IF NOT EXISTS measurements (
    seq INTEGER NOT NULL REFERENCES runs(seq),
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (seq, name)
);
CREATE TABLE IF NOT EXISTS strace_runs (  -- planned runs under strace, apart from the timed ones
    seq INTEGER PRIMARY KEY REFERENCES plan(seq)
);
CREATE TABLE IF NOT EXISTS syscalls (     -- the strace -c table of a run, one row per syscall
    seq INTEGER NOT NULL REFERENCES plan(seq),
    name TEXT NOT NULL,
    calls INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    seconds REAL NOT NULL,
    PRIMARY KEY (seq, name)
);
CREATE TABLE IF NOT EXISTS session_values ( -- per session of a run
    seq INTEGER NOT NULL,
    session INTEGER NOT NULL,    -- from 0, as the run numbers them
    name TEXT NOT NULL,          -- executions, transactions, 'Find Count', ...
    value REAL NOT NULL,
    PRIMARY KEY (seq, session, name)
);
CREATE TABLE IF NOT EXISTS profiles (  -- a run's traces by call name
    seq INTEGER NOT NULL,
    source TEXT NOT NULL,        -- client or proxy
    name TEXT NOT NULL,          -- the call name
    duration REAL NOT NULL,      -- s
    calls INTEGER NOT NULL,
    min REAL NOT NULL,
    max REAL NOT NULL,
    PRIMARY KEY (seq, source, name)
);
CREATE TABLE IF NOT EXISTS freshness ( -- the check run, per engine
    engine TEXT NOT NULL,
    session INTEGER NOT NULL,    -- -1: the whole run
    name TEXT NOT NULL,
    value REAL NOT NULL,
    PRIMARY KEY (engine, session, name)
);
";

pub struct Store {
    conn: Connection,
    path: PathBuf,
}

/// The freshness check's values: engine → session (-1: the whole run)
/// → name → value.
pub type Freshness = BTreeMap<String, BTreeMap<i64, BTreeMap<String, f64>>>;

/// What a report needs, read back from a store.
#[derive(Debug, Clone)]
pub struct Stored {
    pub name: String,
    pub file: String,
    pub text: String,
    pub quick: bool,
    pub reps: u32,
    pub seed: u64,
    pub facts: BTreeMap<String, String>,
    pub planned: usize,
    pub runs: Vec<StoredRun>,
    /// (seq, session, name, value) of every run, by seq and session.
    pub session_values: Vec<(usize, usize, String, f64)>,
    pub profiles: Vec<(usize, ProfileRow)>,
    /// engine → session (-1: the whole run) → name → value.
    pub freshness: Freshness,
}

#[derive(Debug, Clone)]
pub struct StoredRun {
    pub seq: usize,
    pub rep: u32,
    pub cell: Vec<(String, String)>,
    /// Measurements and vars together, as report expressions see them.
    pub values: BTreeMap<String, f64>,
    pub notes: String,
    /// A run under strace, apart from the timed ones.
    pub strace: bool,
    /// Its strace table, by calls (empty when none was taken).
    pub syscalls: Vec<Syscall>,
}

/// Study-level facts written when a store is made.
pub struct Header<'a> {
    pub name: &'a str,
    pub file: &'a str,
    pub text: &'a str,
    pub quick: bool,
    pub reps: u32,
    pub seed: u64,
}

/// Whether a results store file holds anything: an empty file, or a
/// database with no table, is what a reader that opened the path before
/// the study made its store leaves (SQLite creates the file on open), and
/// holds no results to protect.
fn holds_anything(path: &Path) -> bool {
    match std::fs::metadata(path) {
        Err(_) => false,
        Ok(m) if m.len() == 0 => false,
        Ok(_) => Connection::open_with_flags(path, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .and_then(|c| {
                c.query_row("SELECT count(*) FROM sqlite_master", [], |r| {
                    r.get::<_, i64>(0)
                })
            })
            // A file SQLite cannot read is not a store to overwrite either.
            .map_or(true, |n| n > 0),
    }
}

impl Store {
    fn err(&self, e: rusqlite::Error) -> StudyError {
        StudyError::Store {
            path: self.path.clone(),
            what: e.to_string(),
        }
    }

    /// Runs `write` in one transaction: all of it is recorded or none.
    fn in_transaction(
        &mut self,
        write: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<()>,
    ) -> Result<(), StudyError> {
        let path = self.path.clone();
        let err = |e: rusqlite::Error| StudyError::Store {
            path,
            what: e.to_string(),
        };
        (|| {
            let tx = self.conn.transaction()?;
            write(&tx)?;
            tx.commit()
        })()
        .map_err(err)
    }

    /// Opens the store in `dir`; `create` makes a new one (refusing to
    /// overwrite results).
    pub fn open(dir: &Path, create: bool) -> Result<Store, StudyError> {
        let path = dir.join(FILE);
        if create && holds_anything(&path) {
            return Err(StudyError::Usage(format!(
                "{} already holds results; use --resume to continue that study, or another --out",
                path.display()
            )));
        }
        if !create && !path.exists() {
            return Err(StudyError::Store {
                path,
                what: "no results store here (run a study with --out DIR first)".into(),
            });
        }
        std::fs::create_dir_all(dir).map_err(crate::error::io(dir))?;
        let conn = Connection::open(&path).map_err(|e| StudyError::Store {
            path: path.clone(),
            what: e.to_string(),
        })?;
        let s = Store { conn, path };
        s.conn.execute_batch(SCHEMA).map_err(|e| s.err(e))?;
        Ok(s)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes the study header, the facts and the plan (a new store).
    pub fn begin(
        &mut self,
        h: &Header<'_>,
        facts: &BTreeMap<String, String>,
        plan: &[Planned],
    ) -> Result<(), StudyError> {
        self.in_transaction(|tx| {
            tx.execute(
                "INSERT INTO study (id, name, file, text, quick, reps, seed, tracelab_version, started)
                 VALUES (1, ?1, ?2, ?3, ?4, ?5, ?6, ?7, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))",
                params![h.name, h.file, h.text, h.quick, h.reps, h.seed as i64, env!("CARGO_PKG_VERSION")],
            )?;
            for (k, v) in facts {
                tx.execute(
                    "INSERT OR REPLACE INTO facts (key, value) VALUES (?1, ?2)",
                    params![k, v],
                )?;
            }
            for p in plan {
                tx.execute(
                    "INSERT INTO plan (seq, rep, cell, levels) VALUES (?1, ?2, ?3, ?4)",
                    params![
                        p.seq as i64,
                        p.rep,
                        cell_key(&p.cell),
                        serde_json::to_string(&p.cell).unwrap_or_default()
                    ],
                )?;
                if p.strace {
                    tx.execute(
                        "INSERT INTO strace_runs (seq) VALUES (?1)",
                        params![p.seq as i64],
                    )?;
                }
            }
            Ok(())
        })
    }

    /// Replaces the study file kept (a `--resume` with the file changed,
    /// compatible with the runs stored); the text it replaces is kept in
    /// `earlier_texts`, so the store still says what the runs done ran.
    pub fn revise(&mut self, file: &str, text: &str) -> Result<(), StudyError> {
        self.in_transaction(|tx| {
            tx.execute(
                "INSERT INTO earlier_texts (replaced, file, text)
                 SELECT strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), file, text FROM study WHERE id = 1",
                [],
            )?;
            tx.execute(
                "UPDATE study SET file = ?1, text = ?2 WHERE id = 1",
                params![file, text],
            )?;
            Ok(())
        })
    }

    /// Adds or replaces facts (engine facts learnt after a restart).
    pub fn facts(&self, facts: &BTreeMap<String, String>) -> Result<(), StudyError> {
        for (k, v) in facts {
            self.conn
                .execute(
                    "INSERT OR REPLACE INTO facts (key, value) VALUES (?1, ?2)",
                    params![k, v],
                )
                .map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// One more repetition of every cell the plan times (`study run
    /// --reps auto`): a round after the planned runs, in the order of the
    /// first, and the header's repetitions one more. Returns them.
    pub fn add_round(&mut self) -> Result<u32, StudyError> {
        let plan = self.plan()?;
        let reps = plan
            .iter()
            .filter(|p| !p.strace)
            .map(|p| p.rep + 1)
            .max()
            .unwrap_or(0);
        let next = plan.iter().map(|p| p.seq + 1).max().unwrap_or(0);
        let rows: Vec<(usize, String, String)> = plan
            .iter()
            .filter(|p| !p.strace && p.rep == 0)
            .zip(next..)
            .map(|(p, seq)| {
                (
                    seq,
                    cell_key(&p.cell),
                    serde_json::to_string(&p.cell).unwrap_or_default(),
                )
            })
            .collect();
        self.in_transaction(|tx| {
            for (seq, key, levels) in &rows {
                tx.execute(
                    "INSERT INTO plan (seq, rep, cell, levels) VALUES (?1, ?2, ?3, ?4)",
                    params![*seq as i64, reps, key, levels],
                )?;
            }
            tx.execute("UPDATE study SET reps = ?1 WHERE id = 1", params![reps + 1])?;
            Ok(())
        })?;
        Ok(reps + 1)
    }

    /// The plan as stored (for --resume).
    pub fn plan(&self) -> Result<Vec<Planned>, StudyError> {
        let straced: std::collections::BTreeSet<i64> = {
            let mut st = self
                .conn
                .prepare("SELECT seq FROM strace_runs")
                .map_err(|e| self.err(e))?;
            let rows = st
                .query_map([], |r| r.get::<_, i64>(0))
                .map_err(|e| self.err(e))?;
            rows.collect::<Result<_, _>>().map_err(|e| self.err(e))?
        };
        let mut st = self
            .conn
            .prepare("SELECT seq, rep, levels FROM plan ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, u32>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for row in rows {
            let (seq, rep, levels) = row.map_err(|e| self.err(e))?;
            out.push(Planned {
                seq: seq as usize,
                rep,
                strace: straced.contains(&seq),
                cell: serde_json::from_str(&levels).map_err(|e| StudyError::Store {
                    path: self.path.clone(),
                    what: format!("plan row {seq}: {e}"),
                })?,
            });
        }
        Ok(out)
    }

    /// Runs already recorded.
    pub fn done(&self) -> Result<std::collections::BTreeSet<usize>, StudyError> {
        let mut st = self
            .conn
            .prepare("SELECT seq FROM runs")
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| r.get::<_, i64>(0))
            .map_err(|e| self.err(e))?;
        let mut out = std::collections::BTreeSet::new();
        for r in rows {
            out.insert(r.map_err(|e| self.err(e))? as usize);
        }
        Ok(out)
    }

    /// Records one finished run and its measurements, in one transaction.
    pub fn record(
        &mut self,
        seq: usize,
        seconds: f64,
        vars: &BTreeMap<String, f64>,
        summary_json: &str,
        measurements: &BTreeMap<String, f64>,
        notes: &str,
    ) -> Result<(), StudyError> {
        self.in_transaction(|tx| {
            tx.execute(
                "INSERT INTO runs (seq, started, seconds, vars, summary, notes)
             VALUES (?1, strftime('%Y-%m-%dT%H:%M:%SZ', 'now'), ?2, ?3, ?4, ?5)",
                params![
                    seq as i64,
                    seconds,
                    serde_json::to_string(vars).unwrap_or_default(),
                    summary_json,
                    notes
                ],
            )?;
            for (k, v) in measurements {
                if v.is_finite() {
                    tx.execute(
                        "INSERT INTO measurements (seq, name, value) VALUES (?1, ?2, ?3)",
                        params![seq as i64, k, v],
                    )?;
                }
            }
            Ok(())
        })
    }

    /// Records the strace table of a run, written before the run itself
    /// ([`Store::record`]): a run stopped between the two is run again by
    /// --resume, which replaces these rows.
    pub fn record_syscalls(&mut self, seq: usize, syscalls: &[Syscall]) -> Result<(), StudyError> {
        self.in_transaction(|tx| {
        tx.execute("DELETE FROM syscalls WHERE seq = ?1", params![seq as i64])
            ?;
        for c in syscalls {
            tx.execute(
                "INSERT INTO syscalls (seq, name, calls, errors, seconds) VALUES (?1, ?2, ?3, ?4, ?5)",
                params![seq as i64, c.name, c.calls as i64, c.errors as i64, c.seconds],
            )
            ?;
        }
        Ok(())
        })
    }

    /// A run's per-session values and trace profiles, written before the
    /// run itself (`record`), replacing any left by an interrupted try.
    pub fn record_details(
        &mut self,
        seq: usize,
        sessions: &[(usize, String, f64)],
        profiles: &[ProfileRow],
    ) -> Result<(), StudyError> {
        self.in_transaction(|tx| {
            tx.execute("DELETE FROM session_values WHERE seq = ?1", [seq as i64])?;
            tx.execute("DELETE FROM profiles WHERE seq = ?1", [seq as i64])?;
            for (session, name, v) in sessions {
                tx.execute(
                "INSERT INTO session_values (seq, session, name, value) VALUES (?1, ?2, ?3, ?4)",
                params![seq as i64, *session as i64, name, v],
            )
            ?;
            }
            for p in profiles {
                tx.execute(
                    "INSERT INTO profiles (seq, source, name, duration, calls, min, max)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                    params![
                        seq as i64,
                        p.source,
                        p.name,
                        p.duration,
                        p.calls as i64,
                        p.min,
                        p.max
                    ],
                )?;
            }
            Ok(())
        })
    }

    /// The freshness check of `engine`: values of the whole run (session
    /// -1) and of each session, in one transaction.
    pub fn record_freshness(
        &mut self,
        engine: &str,
        values: &[(i64, String, f64)],
    ) -> Result<(), StudyError> {
        self.in_transaction(|tx| {
            tx.execute("DELETE FROM freshness WHERE engine = ?1", [engine])?;
            for (session, name, v) in values {
                if v.is_finite() {
                    tx.execute(
                    "INSERT INTO freshness (engine, session, name, value) VALUES (?1, ?2, ?3, ?4)",
                    params![engine, session, name, v],
                )
                ?;
                }
            }
            Ok(())
        })
    }

    /// Engines whose freshness check is recorded.
    pub fn freshness_done(&self) -> Result<std::collections::BTreeSet<String>, StudyError> {
        let mut st = self
            .conn
            .prepare("SELECT DISTINCT engine FROM freshness")
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?;
        rows.collect::<Result<_, _>>().map_err(|e| self.err(e))
    }

    /// Everything a report needs.
    pub fn load(&self) -> Result<Stored, StudyError> {
        let head = self
            .conn
            .query_row(
                "SELECT name, file, text, quick, reps, seed FROM study WHERE id = 1",
                [],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, bool>(3)?,
                        r.get::<_, u32>(4)?,
                        r.get::<_, i64>(5)?,
                    ))
                },
            )
            .optional()
            .map_err(|e| self.err(e))?
            .ok_or_else(|| StudyError::Store {
                path: self.path.clone(),
                what: "no study recorded".into(),
            })?;
        let facts = self.load_facts()?;
        let plan = self.plan()?;
        let runs = self.load_runs(&plan)?;
        let done: std::collections::BTreeSet<usize> = runs.iter().map(|r| r.seq).collect();
        let session_values = self.load_session_values(&done)?;
        let profiles = self.load_profiles(&done)?;
        let freshness = self.load_freshness()?;
        Ok(Stored {
            name: head.0,
            file: head.1,
            text: head.2,
            quick: head.3,
            reps: head.4,
            seed: head.5 as u64,
            facts,
            planned: plan.len(),
            runs,
            session_values,
            profiles,
            freshness,
        })
    }

    /// The facts recorded (machine, engines, `var.NAME`).
    fn load_facts(&self) -> Result<BTreeMap<String, String>, StudyError> {
        let mut facts = BTreeMap::new();
        let mut st = self
            .conn
            .prepare("SELECT key, value FROM facts")
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))
            .map_err(|e| self.err(e))?;
        for r in rows {
            let (k, v) = r.map_err(|e| self.err(e))?;
            facts.insert(k, v);
        }
        Ok(facts)
    }

    /// Every run recorded, with its values, notes and system calls, in plan
    /// order (`plan` gives each its cell).
    fn load_runs(&self, plan: &[Planned]) -> Result<Vec<StoredRun>, StudyError> {
        let mut runs = Vec::new();
        let mut st = self
            .conn
            .prepare("SELECT seq, vars, notes FROM runs ORDER BY seq")
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        let mut m = self
            .conn
            .prepare("SELECT name, value FROM measurements WHERE seq = ?1")
            .map_err(|e| self.err(e))?;
        let mut sc = self
            .conn
            .prepare(
                "SELECT name, calls, errors, seconds FROM syscalls WHERE seq = ?1 ORDER BY calls DESC, name",
            )
            .map_err(|e| self.err(e))?;
        for r in rows {
            let (seq, vars, notes) = r.map_err(|e| self.err(e))?;
            let mut values: BTreeMap<String, f64> = serde_json::from_str(&vars).unwrap_or_default();
            let ms = m
                .query_map([seq], |r| Ok((r.get::<_, String>(0)?, r.get::<_, f64>(1)?)))
                .map_err(|e| self.err(e))?;
            for x in ms {
                let (k, v) = x.map_err(|e| self.err(e))?;
                values.insert(k, v);
            }
            let Some(p) = plan.iter().find(|p| p.seq == seq as usize) else {
                continue;
            };
            let syscalls = sc
                .query_map([seq], |r| {
                    Ok(Syscall {
                        name: r.get(0)?,
                        calls: r.get::<_, i64>(1)? as u64,
                        errors: r.get::<_, i64>(2)? as u64,
                        seconds: r.get(3)?,
                    })
                })
                .map_err(|e| self.err(e))?
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| self.err(e))?;
            runs.push(StoredRun {
                seq: seq as usize,
                rep: p.rep,
                cell: p.cell.clone(),
                values,
                notes,
                strace: p.strace,
                syscalls,
            });
        }
        Ok(runs)
    }

    /// Each session's values, of the runs recorded only (`done`): an
    /// interrupted run's are left out.
    fn load_session_values(
        &self,
        done: &std::collections::BTreeSet<usize>,
    ) -> Result<Vec<(usize, usize, String, f64)>, StudyError> {
        let mut session_values = Vec::new();
        let mut st = self
            .conn
            .prepare(
                "SELECT seq, session, name, value FROM session_values ORDER BY seq, session, rowid",
            )
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)? as usize,
                    r.get::<_, i64>(1)? as usize,
                    r.get::<_, String>(2)?,
                    r.get::<_, f64>(3)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        for r in rows {
            let r = r.map_err(|e| self.err(e))?;
            // Only of runs recorded: an interrupted run's are left out.
            if done.contains(&r.0) {
                session_values.push(r);
            }
        }
        Ok(session_values)
    }

    /// The profiles' rows, of the runs recorded only (`done`).
    fn load_profiles(
        &self,
        done: &std::collections::BTreeSet<usize>,
    ) -> Result<Vec<(usize, ProfileRow)>, StudyError> {
        let mut profiles = Vec::new();
        let mut st = self
            .conn
            .prepare("SELECT seq, source, name, duration, calls, min, max FROM profiles ORDER BY seq, source, rowid")
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)? as usize,
                    ProfileRow {
                        source: r.get(1)?,
                        name: r.get(2)?,
                        duration: r.get(3)?,
                        calls: r.get::<_, i64>(4)? as u64,
                        min: r.get(5)?,
                        max: r.get(6)?,
                    },
                ))
            })
            .map_err(|e| self.err(e))?;
        for r in rows {
            let r = r.map_err(|e| self.err(e))?;
            if done.contains(&r.0) {
                profiles.push(r);
            }
        }
        Ok(profiles)
    }

    /// The freshness check's values: engine → session → name → value.
    fn load_freshness(&self) -> Result<Freshness, StudyError> {
        let mut freshness: Freshness = BTreeMap::new();
        let mut st = self
            .conn
            .prepare("SELECT engine, session, name, value FROM freshness")
            .map_err(|e| self.err(e))?;
        let rows = st
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, f64>(3)?,
                ))
            })
            .map_err(|e| self.err(e))?;
        for r in rows {
            let (e, s, n, v) = r.map_err(|e| self.err(e))?;
            freshness
                .entry(e)
                .or_default()
                .entry(s)
                .or_default()
                .insert(n, v);
        }
        Ok(freshness)
    }
}
