//! A planned cell resolved once into what its runs use: the engine, the
//! levels in force, the vars (the study's, `--quick`'s, `--var`'s, the
//! cell's levels', tracelab's built-in ones) and the workload's amounts.
//! The executor, the dry run and the freshness check take a [`Cell`]
//! rather than look the cell's factors up by name again; the workload's
//! amounts, a number, a script or a statement of the study file are read
//! with the cell's vars through its methods (the dry run shows a cell
//! whose amounts are wrong; a run refuses it before anything runs).

use std::collections::BTreeMap;
use std::time::Duration;

use tracelab_engine::Engine as Kind;
use tracelab_run::Stop;

use crate::error::StudyError;
use crate::model::columns::compile;
use crate::model::script::substitute;
use crate::model::spec::{value_text, Level, Loaded, Num, Sql};
use crate::plan::cell_key;

/// Where a cell's vars come from besides the study file.
#[derive(Debug, Clone, Copy)]
pub struct VarSource<'a> {
    /// `--quick`: the file's `[quick] vars` over its own.
    pub quick: bool,
    /// Vars tracelab provides (`clock_lib`, `server_trace_dir`).
    pub builtins: &'a BTreeMap<String, String>,
    /// `--var` values, over the study's own (and its quick ones).
    pub overrides: &'a BTreeMap<String, String>,
}

/// How much one run does, checked: a count is a whole number in its
/// range (`sessions = 0` and `sessions = 1.5` were taken as 1), a runtime
/// a positive number of seconds; the warm-up is not measured.
#[derive(Debug, Clone)]
pub struct Amounts {
    pub sessions: usize,
    pub per_commit: u64,
    pub stop: Stop,
    /// Statements (or transactions) of the warm-up run.
    pub warmup: u64,
}

/// A cell resolved for its runs.
#[derive(Debug, Clone)]
pub struct Cell {
    /// (factor, level) in factor order, as planned and stored.
    pub factors: Vec<(String, String)>,
    /// The engine's name (`postgres` when no factor names one).
    pub engine: String,
    /// The levels in force, in factor order.
    pub levels: Vec<Level>,
    /// Every var of the cell's runs, references resolved.
    pub vars: BTreeMap<String, String>,
    /// A run with strace attached: `[measure] strace_vars` in force.
    pub strace: bool,
}

/// Which of a level's and the workload's scripts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Before,
    After,
}

/// The most sessions a run may open.
const MAX_SESSIONS: u64 = 10_000;
/// The most statements or transactions a count may name.
const MAX_COUNT: u64 = 1_000_000_000_000;

impl Cell {
    /// The cell of `factors` (a strace run's when `strace`).
    pub fn resolve(
        l: &Loaded,
        factors: &[(String, String)],
        strace: bool,
        src: &VarSource<'_>,
    ) -> Cell {
        let levels = levels_of(l, factors);
        let vars = vars_of(l, src, factors, &levels, strace);
        Cell {
            factors: factors.to_vec(),
            engine: engine_of(factors),
            levels,
            vars,
            strace,
        }
    }

    /// The workload's amounts under the cell's vars, checked.
    pub fn workload(&self, l: &Loaded) -> Result<Amounts, StudyError> {
        amounts(l, &self.vars)
    }

    /// The `tracelab run` options of the workload and the levels' `run`
    /// tables (later levels over earlier ones) under the cell's vars:
    /// what the study's own keys do not set.
    pub fn run_options(&self, l: &Loaded) -> Result<tracelab_run::RunOptions, StudyError> {
        let mut tables = vec![&l.study.workload.run];
        tables.extend(self.levels.iter().map(|lv| &lv.run.options));
        crate::model::run_options::read(&tables, &self.vars).map_err(|(k, i, e)| {
            let key = match i {
                0 => format!("workload.{k}"),
                _ => format!("factors.levels.run.{k}"),
            };
            l.error(&key, format!("cell {}: {e}", self.key()))
        })
    }

    /// The cell as text: `batch=1 engine=postgres`.
    pub fn key(&self) -> String {
        cell_key(&self.factors)
    }

    /// The engine, when tracelab knows its name.
    pub fn kind(&self) -> Option<Kind> {
        Kind::from_name(&self.engine)
    }

    /// A number of the study file (`key` names it in messages) under the
    /// cell's vars.
    pub fn num(&self, l: &Loaded, key: &str, n: &Num) -> Result<f64, StudyError> {
        num(l, key, n, &self.vars)
    }

    /// A script of the study file for the cell's engine with its vars
    /// filled in; `None` when it has no SQL for that engine.
    pub fn sql(&self, l: &Loaded, key: &str, sql: &Sql) -> Result<Option<String>, StudyError> {
        sql_of(l, key, sql, &self.engine, &self.vars)
    }

    /// The before (or after) scripts of a run: the levels' first, the
    /// workload's last (it may end with the CHECKPOINT the measurement
    /// starts from).
    pub fn scripts(&self, l: &Loaded, phase: Phase) -> Result<Vec<String>, StudyError> {
        let w = &l.study.workload;
        let (key, pick): (&str, fn(&Level) -> Option<&Sql>) = match phase {
            Phase::Before => ("before", |lv| lv.before.as_ref()),
            Phase::After => ("after", |lv| lv.after.as_ref()),
        };
        let mut out = Vec::new();
        for lv in &self.levels {
            if let Some(sql) = pick(lv) {
                out.extend(self.sql(l, &format!("factors.levels.{key}"), sql)?);
            }
        }
        let own = match phase {
            Phase::Before => w.before.as_ref(),
            Phase::After => w.after.as_ref(),
        };
        if let Some(sql) = own {
            out.extend(self.sql(l, &format!("workload.{key}"), sql)?);
        }
        Ok(out)
    }

    /// The vars that are numbers, as the store keeps them with each run.
    pub fn numeric_vars(&self) -> BTreeMap<String, f64> {
        self.vars
            .iter()
            .filter_map(|(k, v)| v.parse::<f64>().ok().map(|x| (k.clone(), x)))
            .collect()
    }
}

/// The engine a cell names (`postgres` when no factor does).
pub fn engine_of(cell: &[(String, String)]) -> String {
    cell.iter()
        .find(|(f, _)| f == "engine")
        .map_or(Kind::Postgres.name().to_string(), |(_, l)| l.clone())
}

/// The levels a cell names, in its order.
pub fn levels_of(l: &Loaded, cell: &[(String, String)]) -> Vec<Level> {
    cell.iter()
        .filter_map(|(f, name)| {
            l.study
                .factors
                .iter()
                .find(|x| &x.name == f)
                .and_then(|x| x.all_levels().into_iter().find(|lv| &lv.name == name))
        })
        .collect()
}

/// The vars of a cell's runs: tracelab's, the study's (its quick ones with
/// `--quick`), `--var`'s, each factor's level by the factor's name, the
/// levels' own, and under strace `strace_vars`; then every reference
/// resolved.
fn vars_of(
    l: &Loaded,
    src: &VarSource<'_>,
    cell: &[(String, String)],
    levels: &[Level],
    strace: bool,
) -> BTreeMap<String, String> {
    let mut v: BTreeMap<String, String> = src.builtins.clone();
    v.extend(l.study.vars.iter().map(|(k, x)| (k.clone(), value_text(x))));
    if src.quick {
        for (k, x) in &l.study.quick.vars {
            v.insert(k.clone(), value_text(x));
        }
    }
    v.extend(src.overrides.iter().map(|(k, x)| (k.clone(), x.clone())));
    for (f, name) in cell {
        v.insert(f.clone(), name.clone());
    }
    for lv in levels {
        for (k, x) in &lv.vars {
            // A level's var may name a study var: rows = "{small}".
            let text = value_text(x);
            let text = substitute(&text, &v).unwrap_or(text);
            v.insert(k.clone(), text);
        }
    }
    if strace {
        // A run under strace: `strace_vars` over the cell's, before the
        // references left are resolved (`iterations = "{strace_iter}"`
        // changes `calls = "3 * {iterations}"` too).
        for (k, x) in &l.study.measure.strace_vars {
            let text = value_text(x);
            let text = substitute(&text, &v).unwrap_or(text);
            v.insert(k.clone(), text);
        }
    }
    resolve(&mut v);
    v
}

/// Replaces the `{var}`s left in vars' texts (a level's var naming another
/// var of a later level, or of its own), until none changes; a reference
/// to no var stays, to be reported where the var is used.
fn resolve(v: &mut BTreeMap<String, String>) {
    for _ in 0..8 {
        let mut changed = false;
        let snapshot = v.clone();
        for text in v.values_mut() {
            if !text.contains('{') {
                continue;
            }
            if let Ok(t) = substitute(text, &snapshot) {
                if t != *text {
                    *text = t;
                    changed = true;
                }
            }
        }
        if !changed {
            break;
        }
    }
}

/// A number, or text that becomes one once its `{var}`s are replaced: a
/// number, or arithmetic in the report's expression language (`"3 *
/// {iterations}"`).
pub(crate) fn num(
    l: &Loaded,
    key: &str,
    n: &Num,
    vars: &BTreeMap<String, String>,
) -> Result<f64, StudyError> {
    match n {
        Num::Int(i) => Ok(*i as f64),
        Num::Float(f) => Ok(*f),
        Num::Text(t) => {
            let s = substitute(t, vars).map_err(|e| l.error(key, e))?;
            if let Ok(x) = s.trim().parse::<f64>() {
                return Ok(x);
            }
            // Arithmetic on numbers only: the expression language reads a
            // bare word as text (which counts as 0).
            let arithmetic = s
                .chars()
                .all(|c| c.is_ascii_digit() || " \t.+-*/()".contains(c));
            arithmetic
                .then(|| compile(&s).ok())
                .flatten()
                .and_then(|e| e.eval(&BTreeMap::new()))
                .ok_or_else(|| l.error(key, format!("expected a number, found `{s}`")))
        }
    }
}

fn whole(
    l: &Loaded,
    key: &str,
    n: &Num,
    vars: &BTreeMap<String, String>,
    least: u64,
    most: u64,
) -> Result<u64, StudyError> {
    let x = num(l, key, n, vars)?;
    if x.is_finite() && x.fract() == 0.0 && x >= least as f64 && x <= most as f64 {
        Ok(x as u64)
    } else {
        Err(l.error(
            key,
            format!("{x}: expected a whole number from {least} to {most}"),
        ))
    }
}

fn amounts(l: &Loaded, vars: &BTreeMap<String, String>) -> Result<Amounts, StudyError> {
    let w = &l.study.workload;
    let sessions = whole(l, "workload.sessions", &w.sessions, vars, 1, MAX_SESSIONS)? as usize;
    let per_commit = whole(
        l,
        "workload.tx_per_commit",
        &w.tx_per_commit,
        vars,
        0,
        MAX_COUNT,
    )?;
    let stop = if let Some(n) = &w.statements {
        let n = whole(l, "workload.statements", n, vars, 1, MAX_COUNT)?;
        Stop::Transactions(if per_commit > 0 {
            n.div_ceil(per_commit)
        } else {
            n
        })
    } else if let Some(n) = &w.transactions {
        Stop::Transactions(whole(l, "workload.transactions", n, vars, 1, MAX_COUNT)?)
    } else if let Some(r) = &w.runtime {
        let secs = num(l, "workload.runtime", r, vars)?;
        if !(secs > 0.0 && secs <= 7.0 * 86400.0) {
            return Err(l.error(
                "workload.runtime",
                format!("{secs}: expected seconds, more than 0 and at most a week"),
            ));
        }
        Stop::Runtime(Duration::from_secs_f64(secs))
    } else {
        Stop::Transactions(1)
    };
    let warmup = whole(l, "workload.warmup", &w.warmup, vars, 0, MAX_COUNT)?;
    Ok(Amounts {
        sessions,
        per_commit,
        stop,
        warmup,
    })
}

/// The SQL for `engine` (its pieces joined in order), with vars replaced.
pub(crate) fn sql_of(
    l: &Loaded,
    key: &str,
    sql: &Sql,
    engine: &str,
    vars: &BTreeMap<String, String>,
) -> Result<Option<String>, StudyError> {
    let Some(pieces) = sql.for_engine(engine) else {
        return Ok(None);
    };
    let mut text = Vec::new();
    for p in pieces {
        let t = l.sql_text(key, p)?;
        let t = substitute(&t, vars).map_err(|e| l.error(key, e))?;
        text.push(t.trim().trim_end_matches(';').trim_end().to_string());
    }
    Ok(Some(text.join(";\n")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const STUDY: &str = r#"
name = "t"
[workload]
sql = "select 1"
[[factors]]
name = "n"
values = [1]
[report]
rows = "n"
columns = [{ name = "r", label = "r", expr = "$elapsed_ms" }]
"#;

    #[test]
    fn numeric_keys_take_arithmetic_over_vars() {
        let l = Loaded::parse("t", STUDY, None, &[]).unwrap();
        let mut v = BTreeMap::new();
        // A var naming a var defined after it resolves all the same.
        v.insert("calls".to_string(), "3 * {iterations}".to_string());
        v.insert("iterations".to_string(), "{n}".to_string());
        v.insert("n".to_string(), "250".to_string());
        resolve(&mut v);
        assert_eq!(v["calls"], "3 * 250");
        let n = num(&l, "workload.statements", &Num::Text("{calls}".into()), &v).unwrap();
        assert_eq!(n, 750.0);
        let e = num(&l, "workload.statements", &Num::Text("{nope}".into()), &v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no var `nope`"), "{e}");
        let e = num(&l, "workload.statements", &Num::Text("many".into()), &v)
            .unwrap_err()
            .to_string();
        assert!(e.contains("expected a number, found `many`"), "{e}");
    }

    /// Two engines, a level with vars and a script of its own, study
    /// vars referring to each other, quick vars and strace vars.
    const CELLS: &str = r#"
name = "t"
[vars]
rows = 100
small = 10
iterations = 2
calls = "3 * {iterations}"
sessions = 2
[quick.vars]
rows = 5
[workload]
sql = "select {rows}"
sessions = "{sessions}"
statements = "{calls}"
tx_per_commit = 4
before = { postgres = "analyze t" }
after = "select {rows} as n;"
[measure]
strace_runs = 1
strace_vars = { iterations = 7 }
[[factors]]
name = "engine"
values = ["postgres", "sqlite"]
[[factors]]
name = "size"
levels = [
  { name = "small", vars = { rows = "{small}" }, before = "select '{rows}' as w" },
  { name = "big" },
]
[report]
rows = "size"
columns = [{ name = "r", label = "r", expr = "$elapsed_ms" }]
"#;

    fn factors(engine: &str, size: &str) -> Vec<(String, String)> {
        vec![
            ("engine".to_string(), engine.to_string()),
            ("size".to_string(), size.to_string()),
        ]
    }

    #[test]
    fn a_cell_resolves_its_engine_levels_and_vars_in_order_of_precedence() {
        let l = Loaded::parse("t", CELLS, None, &[]).unwrap();
        let builtins: BTreeMap<String, String> =
            [("clock_lib".to_string(), "/x/clock.so".to_string())].into();
        let none = BTreeMap::new();
        let plain = VarSource {
            quick: false,
            builtins: &builtins,
            overrides: &none,
        };
        let c = Cell::resolve(&l, &factors("sqlite", "small"), false, &plain);
        assert_eq!(c.engine, "sqlite");
        assert_eq!(c.kind(), Some(Kind::Sqlite));
        assert_eq!(c.key(), "engine=sqlite size=small");
        let names: Vec<&str> = c.levels.iter().map(|x| x.name.as_str()).collect();
        assert_eq!(names, ["sqlite", "small"]);
        // A level's var over the study's, naming another study var.
        assert_eq!(c.vars["rows"], "10");
        assert_eq!(c.vars["size"], "small");
        assert_eq!(c.vars["engine"], "sqlite");
        assert_eq!(c.vars["clock_lib"], "/x/clock.so");
        assert_eq!(c.vars["calls"], "3 * 2");
        assert_eq!(c.numeric_vars().get("rows"), Some(&10.0));
        assert_eq!(c.numeric_vars().get("calls"), None, "not a number");

        // --quick's vars over the study's; --var over both; the level's
        // over all of them.
        let overrides: BTreeMap<String, String> = [("rows".to_string(), "7".to_string())].into();
        let quick = VarSource {
            quick: true,
            builtins: &builtins,
            overrides: &none,
        };
        let big = factors("postgres", "big");
        assert_eq!(Cell::resolve(&l, &big, false, &plain).vars["rows"], "100");
        assert_eq!(Cell::resolve(&l, &big, false, &quick).vars["rows"], "5");
        let given = VarSource {
            overrides: &overrides,
            ..quick
        };
        assert_eq!(Cell::resolve(&l, &big, false, &given).vars["rows"], "7");
        let small = Cell::resolve(&l, &factors("postgres", "small"), false, &given);
        assert_eq!(small.vars["rows"], "10");

        // Under strace, strace_vars before the references are resolved.
        let traced = Cell::resolve(&l, &big, true, &plain);
        assert!(traced.strace);
        assert_eq!(traced.vars["calls"], "3 * 7");
    }

    #[test]
    fn a_cells_workload_takes_its_vars() {
        let l = Loaded::parse("t", CELLS, None, &[]).unwrap();
        let none = BTreeMap::new();
        let src = VarSource {
            quick: false,
            builtins: &none,
            overrides: &none,
        };
        let big = factors("postgres", "big");
        let w = Cell::resolve(&l, &big, false, &src).workload(&l).unwrap();
        assert_eq!((w.sessions, w.per_commit, w.warmup), (2, 4, 0));
        // 3 * 2 statements, 4 to a commit: 2 transactions.
        assert!(matches!(w.stop, Stop::Transactions(2)), "{:?}", w.stop);
        let w = Cell::resolve(&l, &big, true, &src).workload(&l).unwrap();
        assert!(matches!(w.stop, Stop::Transactions(6)), "{:?}", w.stop);

        // A count out of range or not whole is refused, naming its key.
        for bad in ["0", "1.5", "20000"] {
            let o: BTreeMap<String, String> = [("sessions".to_string(), bad.to_string())].into();
            let src = VarSource {
                overrides: &o,
                ..src
            };
            let e = Cell::resolve(&l, &big, false, &src)
                .workload(&l)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("workload.sessions")
                    && e.contains("expected a whole number from 1 to 10000"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn a_cells_scripts_are_its_engines_levels_first_then_the_workloads() {
        let l = Loaded::parse("t", CELLS, None, &[]).unwrap();
        let none = BTreeMap::new();
        let src = VarSource {
            quick: false,
            builtins: &none,
            overrides: &none,
        };
        let pg = Cell::resolve(&l, &factors("postgres", "small"), false, &src);
        assert_eq!(
            pg.scripts(&l, Phase::Before).unwrap(),
            ["select '10' as w", "analyze t"]
        );
        // The trailing `;` goes: statements are joined with `;\n`.
        assert_eq!(pg.scripts(&l, Phase::After).unwrap(), ["select 10 as n"]);
        let lite = Cell::resolve(&l, &factors("sqlite", "big"), false, &src);
        assert!(
            lite.scripts(&l, Phase::Before).unwrap().is_empty(),
            "the workload's before is PostgreSQL's only"
        );
        assert_eq!(
            lite.sql(&l, "workload.sql", &l.study.workload.sql).unwrap(),
            Some("select 100".to_string())
        );
        assert_eq!(engine_of(&[]), "postgres", "no engine factor");
    }
}
