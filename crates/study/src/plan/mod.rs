//! The runs of a study: every cell (one level of each factor) times the
//! repetitions, in an order that spreads drift over all cells.

pub mod cell;

use std::collections::BTreeMap;

use crate::error::StudyError;
use crate::model::spec::{value_text, Level, Loaded, Order, MAX_REPS};

pub use cell::{Amounts, Cell, Phase, VarSource};

/// One planned run.
#[derive(Debug, Clone, PartialEq)]
pub struct Planned {
    /// Position in the plan, from 0; runs are executed in this order.
    pub seq: usize,
    pub rep: u32,
    /// (factor, level) in factor order.
    pub cell: Vec<(String, String)>,
    /// A run with strace attached (`[measure] strace_runs`), apart from
    /// the timed ones.
    pub strace: bool,
}

/// A cell as text: `batch=1 engine=postgres`.
pub fn cell_key(cell: &[(String, String)]) -> String {
    cell.iter()
        .map(|(f, l)| format!("{f}={l}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// What `run` was asked for beyond the file.
#[derive(Debug, Clone, Default)]
pub struct Choice {
    pub quick: bool,
    pub reps: Option<u32>,
    /// `--level FACTOR=a,b`: the levels to run of a factor.
    pub levels: BTreeMap<String, Vec<String>>,
    pub seed: Option<u64>,
    /// `--var NAME=VALUE`: study vars given other values (recorded in the
    /// store as the facts `var.NAME`).
    pub vars: BTreeMap<String, String>,
}

/// The levels of each factor that this run uses.
pub fn chosen_levels(l: &Loaded, c: &Choice) -> Result<Vec<(String, Vec<Level>)>, StudyError> {
    let s = &l.study;
    for name in c.levels.keys() {
        if !s.factors.iter().any(|f| &f.name == name) {
            return Err(StudyError::Usage(format!(
                "--level {name}=...: the study has no factor `{name}` (it has: {})",
                s.factors
                    .iter()
                    .map(|f| f.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
    }
    let mut out = Vec::new();
    for f in &s.factors {
        let all = f.all_levels();
        let keep: Option<Vec<String>> = if let Some(v) = c.levels.get(&f.name) {
            for n in v {
                if !all.iter().any(|l| &l.name == n) {
                    return Err(StudyError::Usage(format!(
                        "--level {}={n}: no such level (levels: {})",
                        f.name,
                        f.level_names().join(", ")
                    )));
                }
            }
            Some(v.clone())
        } else if c.quick && s.quick.levels.contains_key(&f.name) {
            Some(s.quick.levels[&f.name].iter().map(value_text).collect())
        } else {
            f.active.clone()
        };
        let levels: Vec<Level> = match keep {
            Some(k) => all.into_iter().filter(|l| k.contains(&l.name)).collect(),
            None => all,
        };
        out.push((f.name.clone(), levels));
    }
    Ok(out)
}

/// Whether `level` applies in `cell`: each factor its `only_with` names is
/// at one of the levels it allows.
pub fn applies(level: &Level, cell: &[(String, String)]) -> bool {
    level.only_with.iter().all(|(f, allowed)| {
        cell.iter()
            .find(|(cf, _)| cf == f)
            .is_none_or(|(_, l)| allowed.iter().any(|a| &value_text(a) == l))
    })
}

/// The most runs one study may plan.
pub const MAX_RUNS: usize = 100_000;

/// The plan: cells with the first factor varying slowest, repeated
/// `reps` times (interleaved), or all runs shuffled with `seed`.
pub fn plan(l: &Loaded, c: &Choice, seed: u64) -> Result<Vec<Planned>, StudyError> {
    let s = &l.study;
    if let Some(r) = c.reps.filter(|r| !(1..=MAX_REPS).contains(r)) {
        return Err(StudyError::Usage(format!(
            "--reps {r}: expected 1 to {MAX_REPS} repetitions"
        )));
    }
    let reps = c
        .reps
        .or(if c.quick { s.quick_reps } else { None })
        .unwrap_or(s.reps)
        .max(1);
    let factors = chosen_levels(l, c)?;
    // Counted before anything is allocated.
    let total = factors
        .iter()
        .try_fold(reps as usize, |n, (_, lv)| n.checked_mul(lv.len().max(1)));
    if total.is_none_or(|n| n > MAX_RUNS) {
        return Err(StudyError::Usage(format!(
            "the study would plan {} runs ({reps} repetitions of {} cells); at most {MAX_RUNS}",
            total.map_or("too many".into(), |n| n.to_string()),
            factors
                .iter()
                .map(|(_, lv)| lv.len().max(1))
                .product::<usize>()
        )));
    }
    let mut cells: Vec<Vec<(String, Level)>> = vec![Vec::new()];
    for (name, levels) in &factors {
        let mut next = Vec::new();
        for c in &cells {
            for lv in levels {
                let mut c = c.clone();
                c.push((name.clone(), lv.clone()));
                next.push(c);
            }
        }
        cells = next;
    }
    // A level of one engine pairs with no other engine.
    cells.retain(|cell| {
        let engine = cell
            .iter()
            .find(|(f, _)| f == "engine")
            .map_or("postgres", |(_, lv)| lv.name.as_str());
        cell.iter()
            .all(|(_, lv)| lv.engine.as_deref().is_none_or(|e| e == engine))
    });
    if cells.is_empty() {
        return Err(StudyError::Usage(
            "no cell to run: every combination of the chosen levels pairs a level with another engine than its own".into(),
        ));
    }
    // Cells with a level that does not apply there (`only_with`) are not
    // run; the report names them (`crate::report::overview::not_run`).
    let named = |c: &[(String, Level)]| -> Vec<(String, String)> {
        c.iter()
            .map(|(f, lv)| (f.clone(), lv.name.clone()))
            .collect()
    };
    cells.retain(|cell| {
        let names = named(cell);
        cell.iter().all(|(_, lv)| applies(lv, &names))
    });
    if cells.is_empty() {
        return Err(StudyError::Usage(
            "no cell to run: every combination of the levels chosen has a level that does not apply there (only_with)"
                .into(),
        ));
    }
    let cells: Vec<Vec<(String, String)>> = cells.iter().map(|c| named(c)).collect();
    let round = |rep: u32, strace: bool| {
        cells.iter().map(move |cell| Planned {
            seq: 0,
            rep,
            cell: cell.clone(),
            strace,
        })
    };
    let mut runs: Vec<Planned> = (0..reps).flat_map(|rep| round(rep, false)).collect();
    if s.order == Order::Random {
        fastrand::Rng::with_seed(seed).shuffle(&mut runs);
    }
    // Runs under strace after every timed one, so that none of its
    // slowness reaches them.
    runs.extend((0..s.measure.strace_runs).flat_map(|rep| round(rep, true)));
    for (i, r) in runs.iter_mut().enumerate() {
        r.seq = i;
    }
    Ok(runs)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STUDY: &str = r#"
name = "t"
reps = 2
quick_reps = 1
[quick.levels]
b = [1]
[workload]
sql = "select 1"
[[factors]]
name = "a"
values = ["x", "y"]
[[factors]]
name = "b"
values = [1, 2, 4]
[report]
rows = "b"
columns = [{ name = "r", label = "r", expr = "$elapsed_ms" }]
"#;

    #[test]
    fn interleaved_rounds_cover_every_cell() {
        let l = Loaded::parse("t", STUDY, None, &[]).unwrap();
        let p = plan(&l, &Choice::default(), 0).unwrap();
        assert_eq!(p.len(), 12);
        assert_eq!(cell_key(&p[0].cell), "a=x b=1");
        assert_eq!(cell_key(&p[5].cell), "a=y b=4");
        assert_eq!(p[6].rep, 1);
        assert_eq!(p[6].cell, p[0].cell);
    }

    #[test]
    fn quick_keeps_its_levels_and_reps() {
        let l = Loaded::parse("t", STUDY, None, &[]).unwrap();
        let c = Choice {
            quick: true,
            ..Choice::default()
        };
        let p = plan(&l, &c, 0).unwrap();
        assert_eq!(p.len(), 2);
    }

    #[test]
    fn levels_that_do_not_apply_are_not_planned() {
        let text = STUDY.replace(
            "values = [1, 2, 4]",
            "levels = [{ name = \"1\" }, { name = \"2\", only_with = { a = [\"y\"] } }, { name = \"4\" }]",
        );
        let l = Loaded::parse("t", &text, None, &[]).unwrap();
        let p = plan(&l, &Choice::default(), 0).unwrap();
        let keys: Vec<String> = p
            .iter()
            .filter(|r| r.rep == 0)
            .map(|r| cell_key(&r.cell))
            .collect();
        assert_eq!(
            keys,
            ["a=x b=1", "a=x b=4", "a=y b=1", "a=y b=2", "a=y b=4"]
        );
        let only_x = Choice {
            levels: [
                ("a".to_string(), vec!["x".to_string()]),
                ("b".to_string(), vec!["2".to_string()]),
            ]
            .into_iter()
            .collect(),
            ..Choice::default()
        };
        let e = plan(&l, &only_x, 0).unwrap_err().to_string();
        assert!(e.contains("no cell to run"), "{e}");
    }

    #[test]
    fn random_order_is_the_seeds() {
        let text = STUDY.replace("reps = 2", "reps = 2\norder = \"random\"");
        let l = Loaded::parse("t", &text, None, &[]).unwrap();
        let a = plan(&l, &Choice::default(), 7).unwrap();
        let b = plan(&l, &Choice::default(), 7).unwrap();
        assert_eq!(a, b);
        let mut keys: Vec<String> = a.iter().map(|r| cell_key(&r.cell)).collect();
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), 6);
    }

    #[test]
    fn levels_of_an_engine_pair_only_with_it_and_strace_runs_come_last() {
        let text = r#"
name = "t"
reps = 2
[workload]
sql = "select 1"
[measure]
strace_runs = 1
[[factors]]
name = "engine"
values = ["mariadb", "postgres"]
[[factors]]
name = "model"
levels = [
  { name = "threads", engine = "mariadb" },
  { name = "pool", engine = "mariadb" },
  { name = "serial", engine = "postgres" },
]
[report]
rows = "model"
baselines = ["threads", "serial"]
columns = [{ name = "r", label = "r", expr = "$elapsed_ms" }]
"#;
        let l = Loaded::parse("t", text, None, &[]).unwrap();
        let p = plan(&l, &Choice::default(), 0).unwrap();
        let keys: Vec<String> = p.iter().map(|r| cell_key(&r.cell)).collect();
        assert_eq!(
            keys[..3],
            [
                "engine=mariadb model=threads",
                "engine=mariadb model=pool",
                "engine=postgres model=serial"
            ]
        );
        assert_eq!(p.len(), 3 * 2 + 3);
        assert!(p[..6].iter().all(|r| !r.strace));
        assert!(p[6..].iter().all(|r| r.strace && r.rep == 0));
        assert_eq!(p[8].seq, 8);
        let bad = text.replace(r#"engine = "postgres" }"#, r#"engine = "oracle" }"#);
        let e = Loaded::parse("t", &bad, None, &[]).unwrap_err().to_string();
        assert!(e.contains("engine `oracle`"), "{e}");
        let bad = text.replace(
            r#"baselines = ["threads", "serial"]"#,
            r#"baselines = ["threads", "x"]"#,
        );
        let e = Loaded::parse("t", &bad, None, &[]).unwrap_err().to_string();
        assert!(e.contains("has no level `x`"), "{e}");
    }

    #[test]
    fn a_shuffled_plan_is_the_interleaved_one_reordered_and_reps_are_counted() {
        let text = STUDY.replace("reps = 2", "reps = 3\norder = \"random\"");
        let l = Loaded::parse("t", &text, None, &[]).unwrap();
        let shuffled = plan(&l, &Choice::default(), 11).unwrap();
        let other = plan(&l, &Choice::default(), 12).unwrap();
        let interleaved = plan(
            &Loaded::parse("t", STUDY, None, &[]).unwrap(),
            &Choice::default(),
            0,
        )
        .unwrap();
        assert_eq!(shuffled.len(), 3 * 6);
        let runs = |p: &[Planned]| {
            let mut v: Vec<(String, u32)> = p.iter().map(|r| (cell_key(&r.cell), r.rep)).collect();
            v.sort();
            v
        };
        let mut three = runs(&interleaved);
        three.extend(
            interleaved
                .iter()
                .filter(|r| r.rep == 0)
                .map(|r| (cell_key(&r.cell), 2)),
        );
        three.sort();
        assert_eq!(runs(&shuffled), three, "every cell, each repetition once");
        assert_ne!(shuffled, other, "another seed, another order");
        assert!(shuffled.iter().enumerate().all(|(i, r)| r.seq == i));
        // --reps over the file's; out of range refused.
        let c = Choice {
            reps: Some(1),
            ..Choice::default()
        };
        assert_eq!(plan(&l, &c, 11).unwrap().len(), 6);
        let c = Choice {
            reps: Some(MAX_REPS + 1),
            ..Choice::default()
        };
        let e = plan(&l, &c, 11).unwrap_err().to_string();
        assert!(e.contains("--reps 1001: expected 1 to 1000"), "{e}");
    }

    #[test]
    fn levels_of_any_toml_type_are_named_as_written() {
        let text = STUDY.replace("values = [1, 2, 4]", "values = [1, 2.5, true, \"x y\"]");
        let l = Loaded::parse("t", &text, None, &[]).unwrap();
        let c = Choice {
            levels: [("a".to_string(), vec!["y".to_string()])].into(),
            ..Choice::default()
        };
        let p = plan(&l, &c, 0).unwrap();
        let keys: Vec<String> = p
            .iter()
            .filter(|r| r.rep == 0)
            .map(|r| cell_key(&r.cell))
            .collect();
        assert_eq!(keys, ["a=y b=1", "a=y b=2.5", "a=y b=true", "a=y b=x y"]);
        let c = Choice {
            levels: [("b".to_string(), vec!["3".to_string()])].into(),
            ..Choice::default()
        };
        let e = plan(&l, &c, 0).unwrap_err().to_string();
        assert!(e.contains("--level b=3: no such level"), "{e}");
    }
}
