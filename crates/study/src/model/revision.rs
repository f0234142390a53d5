//! A study file changed since its runs were stored: which parts changed,
//! and whether the runs stored can be kept with it (`study run --resume`
//! goes on with the file as it is now; `study report --study` lays out
//! the stored runs with the file's `[report]`).
//!
//! The rule: what shaped a run done must be as it was. The factors (their
//! names, in order), every level of the stored plan (it must still be in
//! the file: the plan is kept), and each level a run done ran (its
//! definition unchanged); with runs done, also the vars, `--quick`'s
//! part, the server settings, the set-up SQL, the workload, the probes
//! and the measurements. The rest (title, about, report, freshness
//! check, repetitions and order: the stored plan is kept) may change.

use std::collections::BTreeSet;

use crate::model::spec::{Factor, Study};

/// The parts of `new` that differ from `old` (the stored study), by name,
/// when the runs stored can be kept with `new`; else why not, naming the
/// factor, level or part. `planned` holds every cell of the stored plan,
/// `done` the cells of the runs done (a cell is its (factor, level)
/// pairs).
pub fn revise(
    old: &Study,
    new: &Study,
    planned: &[Vec<(String, String)>],
    done: &[Vec<(String, String)>],
) -> Result<Vec<&'static str>, String> {
    let names = |s: &Study| s.factors.iter().map(|f| f.name.clone()).collect::<Vec<_>>();
    if names(old) != names(new) {
        return Err(format!(
            "the runs stored have factors {}; the file has {}",
            names(old).join(", "),
            names(new).join(", ")
        ));
    }
    let level = |s: &Study, f: &str, l: &str| {
        s.factors
            .iter()
            .find(|x| x.name == f)
            .and_then(|x: &Factor| x.all_levels().into_iter().find(|lv| lv.name == l))
    };
    let planned_levels: BTreeSet<&(String, String)> = planned.iter().flatten().collect();
    for (f, l) in &planned_levels {
        if level(new, f, l).is_none() {
            return Err(format!(
                "factor `{f}`: level `{l}` of the stored plan is not in the file"
            ));
        }
    }
    let done_levels: BTreeSet<&(String, String)> = done.iter().flatten().collect();
    for (f, l) in &done_levels {
        let runs = done
            .iter()
            .filter(|c| c.contains(&(f.clone(), l.clone())))
            .count();
        if format!("{:?}", level(old, f, l)) != format!("{:?}", level(new, f, l)) {
            return Err(format!(
                "factor `{f}`: level `{l}` changed, and {runs} run(s) done ran it as it was"
            ));
        }
    }
    let d = |a: &dyn std::fmt::Debug, b: &dyn std::fmt::Debug| format!("{a:?}") != format!("{b:?}");
    // What shaped the runs done.
    let shaping = [
        ("vars", d(&old.vars, &new.vars)),
        ("quick", d(&old.quick, &new.quick)),
        ("server", d(&old.server, &new.server)),
        ("setup", d(&old.setup, &new.setup)),
        ("workload", d(&old.workload, &new.workload)),
        ("probes", d(&old.probes, &new.probes)),
        ("measure", d(&old.measure, &new.measure)),
    ];
    let mut changed = Vec::new();
    for (part, differs) in shaping {
        if !differs {
            continue;
        }
        if !done.is_empty() {
            return Err(format!(
                "`{part}` changed, and the {} run(s) done ran it as it was",
                done.len()
            ));
        }
        changed.push(part);
    }
    let free = [
        (
            "title",
            d(&(&old.title, &old.about), &(&new.title, &new.about)),
        ),
        (
            "repetitions and order (the stored plan is kept)",
            d(
                &(old.reps, old.quick_reps, old.order, old.seed),
                &(new.reps, new.quick_reps, new.order, new.seed),
            ),
        ),
        (
            "factors (levels not in the stored plan)",
            d(&old.factors, &new.factors),
        ),
        ("report", d(&old.report, &new.report)),
        ("freshness", d(&old.freshness, &new.freshness)),
    ];
    changed.extend(free.into_iter().filter(|(_, c)| *c).map(|(p, _)| p));
    Ok(changed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::spec::Loaded;

    fn study(extra: &str, n_values: &str) -> Study {
        let text = format!(
            "name = \"r\"\n[workload]\nsql = \"SELECT 1\"\n[[factors]]\nname = \"n\"\nvalues = [{n_values}]\n[report]\nrows = \"n\"\ncolumns = [{{ name = \"e\", label = \"{extra}\", expr = \"$elapsed_ms\" }}]\n"
        );
        Loaded::parse("r.toml", &text, None, &[]).unwrap().study
    }

    fn cell(l: &str) -> Vec<(String, String)> {
        vec![("n".to_string(), l.to_string())]
    }

    #[test]
    fn a_changed_label_is_kept_and_named() {
        let planned = [cell("1"), cell("2")];
        let got = revise(
            &study("a", "1, 2"),
            &study("b", "1, 2"),
            &planned,
            &planned[..1],
        );
        assert_eq!(got, Ok(vec!["report"]));
    }

    #[test]
    fn a_level_of_the_plan_gone_is_refused_by_name() {
        let planned = [cell("1"), cell("2")];
        let got = revise(&study("a", "1, 2"), &study("a", "1, 3"), &planned, &[]);
        assert_eq!(
            got,
            Err("factor `n`: level `2` of the stored plan is not in the file".to_string())
        );
    }
}
