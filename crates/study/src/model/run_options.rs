//! The options of `tracelab run` a study's workload and its levels' `run`
//! tables set under their own names (`rate = 50`, `exe_delay = "10ms"`),
//! read into `tracelab_run::RunOptions` by its own serde definition: a new
//! option of `run` is a study key with no code here. A value may hold
//! `{var}`s: such a key is read once per cell, its vars filled in; the
//! others are checked when the study is read. Names may be written as on
//! the command line too (`exe-delay`).

use std::collections::BTreeMap;

use serde::Deserialize;
use tracelab_run::RunOptions;

use crate::model::script::substitute;

/// A key with `-` for `_`, as `RunOptions` names its options.
fn snake(k: &str) -> String {
    k.replace('-', "_")
}

/// The options of one key, or the key's error: read alone, so that the
/// message names it whatever serde says.
fn read_one(k: &str, v: &toml::Value) -> Result<RunOptions, String> {
    let mut t = toml::Table::new();
    t.insert(snake(k), v.clone());
    RunOptions::deserialize(toml::Value::Table(t)).map_err(|e| {
        let msg = e.message().trim().to_string();
        if msg.starts_with("unknown field") {
            format!(
                "unknown field `{k}`: neither a key of the study's workload (docs/study.md) nor an option of `tracelab run`{}",
                msg.split_once(", expected")
                    .map_or(String::new(), |(_, rest)| format!(" (expected{rest})"))
            )
        } else {
            msg
        }
    })
}

/// Checks the keys of a table (the workload's, or a level's `run`):
/// unknown names, and the values that hold no `{var}`. The error is
/// (key, what).
pub fn check(t: &toml::Table) -> Result<(), (String, String)> {
    for (k, v) in t {
        let has_var = matches!(v, toml::Value::String(s) if s.contains('{'));
        let probe = if has_var {
            // The name alone: its value is known per cell.
            toml::Value::Boolean(true)
        } else {
            v.clone()
        };
        match read_one(k, &probe) {
            Ok(_) => {}
            Err(e) if has_var && !e.starts_with("unknown field") => {}
            Err(e) => return Err((k.clone(), e)),
        }
    }
    Ok(())
}

/// A text whose vars are filled in, as the value it spells: a number or a
/// boolean when it is one (`"{rate}"` → 50), else the text (`"10ms"`).
fn value_of(text: String) -> toml::Value {
    let t = text.trim();
    if let Ok(i) = t.parse::<i64>() {
        return toml::Value::Integer(i);
    }
    if let Ok(x) = t.parse::<f64>() {
        if x.is_finite() {
            return toml::Value::Float(x);
        }
    }
    match t {
        "true" => toml::Value::Boolean(true),
        "false" => toml::Value::Boolean(false),
        _ => toml::Value::String(text),
    }
}

/// The run options of a cell: `tables` in order (the workload's, then
/// each level's `run`), later keys over earlier ones, vars filled in. The
/// error is (the key as written in its table, the index of that table,
/// what).
pub fn read(
    tables: &[&toml::Table],
    vars: &BTreeMap<String, String>,
) -> Result<RunOptions, (String, usize, String)> {
    let mut merged: BTreeMap<String, (String, usize, toml::Value)> = BTreeMap::new();
    for (i, t) in tables.iter().enumerate() {
        for (k, v) in t.iter() {
            let v = match v {
                toml::Value::String(s) if s.contains('{') => {
                    value_of(substitute(s, vars).map_err(|e| (k.clone(), i, e))?)
                }
                other => other.clone(),
            };
            merged.insert(snake(k), (k.clone(), i, v));
        }
    }
    for (k, i, v) in merged.values() {
        read_one(k, v).map_err(|e| (k.clone(), *i, e))?;
    }
    let t: toml::Table = merged.into_iter().map(|(k, (_, _, v))| (k, v)).collect();
    RunOptions::deserialize(toml::Value::Table(t))
        .map_err(|e| (String::new(), 0, e.message().to_string()))
}

/// The options `tables` set, later tables over earlier ones, as `name =
/// value` with the vars filled in (a reference to no var left as
/// written): what the dry run shows of a cell.
pub fn shown(tables: &[&toml::Table], vars: &BTreeMap<String, String>) -> Vec<String> {
    let mut merged: BTreeMap<String, (String, toml::Value)> = BTreeMap::new();
    for t in tables {
        for (k, v) in t.iter() {
            let v = match v {
                toml::Value::String(s) if s.contains('{') => {
                    value_of(substitute(s, vars).unwrap_or_else(|_| s.clone()))
                }
                other => other.clone(),
            };
            merged.insert(snake(k), (k.clone(), v));
        }
    }
    merged
        .into_values()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tracelab_run::{ConnectMode, Timer};

    fn table(text: &str) -> toml::Table {
        toml::from_str(text).unwrap()
    }

    #[test]
    fn later_tables_win_and_vars_become_values() {
        let w = table("rate = \"{rate}\"\nexe-delay = \"10ms\"\ntimer = \"syscall\"");
        let lv = table("connect_mode = \"tsunami\"\ntimer = \"coarse\"");
        let vars: BTreeMap<String, String> = [("rate".to_string(), "50".to_string())].into();
        let o = read(&[&w, &lv], &vars).unwrap();
        assert_eq!(o.rate, Some(50.0));
        assert_eq!(o.exe_delay, Duration::from_millis(10));
        assert_eq!(o.connect, ConnectMode::Tsunami);
        assert_eq!(o.timer, Timer::Coarse);
        assert_eq!(
            shown(&[&w, &lv], &vars),
            [
                "connect_mode = \"tsunami\"",
                "exe-delay = \"10ms\"",
                "rate = 50",
                "timer = \"coarse\""
            ]
        );
        let e = read(&[&w], &BTreeMap::new()).unwrap_err();
        assert_eq!((e.0.as_str(), e.1), ("rate", 0));
        assert!(e.2.contains("no var `rate`"), "{e:?}");
        let zero: BTreeMap<String, String> = [("rate".to_string(), "0".to_string())].into();
        let e = read(&[&w], &zero).unwrap_err();
        assert!(e.2.contains("expected transactions per second"), "{e:?}");
    }

    #[test]
    fn unknown_names_and_bad_values_are_named_when_read() {
        let (k, e) = check(&table("rat = 5")).unwrap_err();
        assert_eq!(k, "rat");
        assert!(
            e.contains("unknown field `rat`: neither a key of the study's workload")
                && e.contains("`rate`"),
            "{e}"
        );
        let (k, e) = check(&table("timer = \"tsc\"")).unwrap_err();
        assert_eq!(k, "timer");
        assert!(e.contains("tsc"), "{e}");
        // A value with a var is checked per cell; its name now.
        assert!(check(&table("rate = \"{r}\"")).is_ok());
        assert_eq!(check(&table("ratee = \"{r}\"")).unwrap_err().0, "ratee");
    }
}
