//! What a study will create, drop or change on a database that is not
//! tracelab's own (`--db`), named before anything runs there: a built-in
//! study's setup drops and creates tables by name, and a user's database
//! may hold tables of those names. `--yes` is the user's consent.

use tracelab_engine::Engine;

use crate::error::StudyError;
use crate::model::script::statements;
use crate::model::spec::{Loaded, Sql};

/// When a script runs, as the list says it.
const ONCE: &str = "once, before the first run";
const BEFORE: &str = "before each run";
const EACH: &str = "in each run";
const AFTER: &str = "after each run";
const FRESHNESS: &str = "in the freshness check, after the plan";

/// The words of a statement, lower case, comments and quotes left as
/// they are (object names are words).
fn words(st: &str) -> Vec<String> {
    st.split(|c: char| c.is_whitespace() || c == '(' || c == ';' || c == ',')
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .collect()
}

/// What one statement changes, in a few words ("drop table ins_t"), or
/// `None` for one that changes nothing lasting (queries, transaction
/// control, checkpoints, temporary tables, session settings).
pub(crate) fn change(st: &str) -> Option<String> {
    let w = words(st);
    let at = |i: usize| w.get(i).map(String::as_str).unwrap_or("");
    let kinds = [
        "table",
        "view",
        "index",
        "function",
        "procedure",
        "sequence",
        "type",
        "schema",
        "trigger",
        "extension",
        "materialized",
        "role",
        "user",
        "database",
    ];
    // The object's name after the kind and its modifiers.
    let name_after = |mut i: usize| {
        while matches!(
            at(i),
            "if" | "not" | "exists" | "only" | "concurrently" | "view" | "table"
        ) {
            i += 1;
        }
        at(i).trim_end_matches(';').to_string()
    };
    match at(0) {
        "create" => {
            let mut i = 1;
            while matches!(
                at(i),
                "or" | "replace"
                    | "global"
                    | "local"
                    | "unlogged"
                    | "temp"
                    | "temporary"
                    | "unique"
            ) {
                if matches!(at(i), "temp" | "temporary") {
                    return None;
                }
                i += 1;
            }
            kinds
                .contains(&at(i))
                .then(|| format!("create {} {}", at(i), name_after(i + 1)))
        }
        "drop" if kinds.contains(&at(1)) => Some(format!("drop {} {}", at(1), name_after(2))),
        "truncate" => Some(format!("truncate {}", name_after(1))),
        "alter" if at(1) == "system" => Some(format!("alter system: {}", st.trim())),
        "alter" if kinds.contains(&at(1)) => Some(format!("alter {} {}", at(1), name_after(2))),
        "insert" | "merge" if at(1) == "into" => Some(format!("{} into {}", at(0), at(2))),
        "replace" if at(1) == "into" => Some(format!("replace into {}", at(2))),
        "update" => Some(format!("update {}", name_after(1))),
        "delete" if at(1) == "from" => Some(format!("delete from {}", name_after(2))),
        "copy" if w.iter().any(|x| x == "from") => Some(format!("copy into {}", at(1))),
        "do" => Some("a DO block (it may change anything)".into()),
        "call" => Some(format!("call {}", at(1))),
        "pragma" if st.contains('=') => Some(format!("set {}", st.trim())),
        "grant" | "revoke" | "comment" | "cluster" | "reindex" | "security" => Some(
            st.split_whitespace()
                .take(4)
                .collect::<Vec<_>>()
                .join(" ")
                .to_ascii_lowercase(),
        ),
        _ => None,
    }
}

impl Loaded {
    /// Everything the study will change on `engine`'s database, grouped by
    /// when it happens.
    pub(crate) fn changes(
        &self,
        engine: &str,
    ) -> Result<Vec<(&'static str, Vec<String>)>, StudyError> {
        let s = &self.study;
        let kind = Engine::from_name(engine);
        let mut scripts: Vec<(&'static str, &str, &Sql)> = Vec::new();
        if let Some(sql) = &s.setup {
            scripts.push((ONCE, "setup", sql));
        }
        if let Some(sql) = &s.workload.before {
            scripts.push((BEFORE, "workload.before", sql));
        }
        scripts.push((EACH, "workload.sql", &s.workload.sql));
        if let Some(sql) = &s.workload.after {
            scripts.push((AFTER, "workload.after", sql));
        }
        for f in &s.factors {
            for l in &f.levels {
                for (when, key, sql) in [
                    (BEFORE, "factors.levels.before", &l.before),
                    (EACH, "factors.levels.sql", &l.sql),
                    (AFTER, "factors.levels.after", &l.after),
                ] {
                    if let Some(sql) = sql {
                        scripts.push((when, key, sql));
                    }
                }
            }
        }
        let mut out: Vec<(&'static str, Vec<String>)> = [ONCE, BEFORE, EACH, AFTER, FRESHNESS]
            .iter()
            .map(|w| (*w, Vec::new()))
            .collect();
        let mut add = |when: &'static str, what: String| {
            if let Some((_, v)) = out.iter_mut().find(|(w, _)| *w == when) {
                if !v.contains(&what) {
                    v.push(what);
                }
            }
        };
        for (when, key, sql) in scripts {
            for text in sql.for_engine(engine).unwrap_or_default() {
                for st in statements(&self.sql_text(key, text)?) {
                    if let Some(c) = change(&st) {
                        add(when, c);
                    }
                }
            }
        }
        if let Some(kit) = &s.workload.sqldir {
            // Its files are read when the runs start: whatever they do.
            add(
                EACH,
                format!("the statements of sqlrun kit {kit} (whatever they change)"),
            );
        }
        for f in &s.factors {
            for l in &f.levels {
                for k in l.server.for_engine(engine).keys() {
                    add(
                        BEFORE,
                        match kind {
                            Some(Engine::Mysql) => {
                                format!("set global {k} (level {}={})", f.name, l.name)
                            }
                            _ => format!(
                                "alter system set {k} (level {}={}; reset after the study)",
                                f.name, l.name
                            ),
                        },
                    );
                }
            }
        }
        // A level's result cache installs its invalidation triggers
        // (run --result-cache-setup); the freshness check's writer changes
        // a table while the sessions read.
        for f in &s.factors {
            for l in &f.levels {
                if let Some(c) = l.result_cache.as_ref().filter(|c| c.setup) {
                    add(
                        ONCE,
                        format!(
                            "create the result cache's invalidation triggers (tracelab_rc*) on the tables the workload reads ({}){} (level {}={})",
                            c.tables.join(", "),
                            if kind == Some(Engine::Mysql) {
                                ", and table tracelab_rc_changes"
                            } else {
                                ", and event trigger tracelab_rc_ddl"
                            },
                            f.name,
                            l.name
                        ),
                    );
                }
            }
        }
        if let Some(pieces) = s
            .freshness
            .as_ref()
            .and_then(|fr| fr.write.for_engine(engine))
        {
            for text in pieces {
                for st in statements(&self.sql_text("freshness.write", text)?) {
                    if let Some(c) = change(&st) {
                        add(FRESHNESS, c);
                    }
                }
            }
        }
        out.retain(|(_, v)| !v.is_empty());
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_are_named_by_what_they_change() {
        assert_eq!(
            change("DROP TABLE IF EXISTS ins_t").as_deref(),
            Some("drop table ins_t")
        );
        assert_eq!(
            change("CREATE TABLE ins_t (id int, pad text)").as_deref(),
            Some("create table ins_t")
        );
        assert_eq!(
            change("CREATE OR REPLACE FUNCTION explain_json(q text) RETURNS json").as_deref(),
            Some("create function explain_json")
        );
        assert_eq!(change("CREATE TEMP TABLE t (a int)"), None);
        assert_eq!(change("TRUNCATE ins_t").as_deref(), Some("truncate ins_t"));
        assert_eq!(
            change("INSERT INTO ins_t VALUES (1, 'x')").as_deref(),
            Some("insert into ins_t")
        );
        assert_eq!(change("SELECT wal_bytes FROM pg_stat_wal"), None);
        assert_eq!(change("CHECKPOINT"), None);
        assert_eq!(change("BEGIN"), None);
        assert_eq!(
            change("PRAGMA journal_mode = WAL").as_deref(),
            Some("set PRAGMA journal_mode = WAL")
        );
    }

    /// Every change on PostgreSQL as `when: what`.
    fn flat(l: &Loaded) -> Vec<String> {
        l.changes("postgres")
            .unwrap()
            .iter()
            .flat_map(|(w, v)| v.iter().map(move |x| format!("{w}: {x}")))
            .collect()
    }

    #[test]
    fn result_cache_names_its_triggers_and_the_writer() {
        let l = crate::model::load("result-cache").unwrap();
        let flat = flat(&l);
        assert!(
            flat.contains(&"once, before the first run: drop table holiday".to_string()),
            "{flat:?}"
        );
        assert!(
            flat.iter().any(|x| x.starts_with(
                "once, before the first run: create the result cache's invalidation triggers"
            ) && x.contains("holiday:force")),
            "{flat:?}"
        );
        assert!(
            flat.contains(&"in the freshness check, after the plan: update holiday".to_string()),
            "{flat:?}"
        );
    }

    #[test]
    fn commit_batch_names_its_table() {
        let l = crate::model::load("commit-batch").unwrap();
        let flat = flat(&l);
        assert!(
            flat.contains(&"once, before the first run: drop table ins_t".to_string()),
            "{flat:?}"
        );
        assert!(
            flat.contains(&"once, before the first run: create table ins_t".to_string()),
            "{flat:?}"
        );
        assert!(
            flat.contains(&"before each run: truncate ins_t".to_string()),
            "{flat:?}"
        );
        assert!(
            flat.contains(&"in each run: insert into ins_t".to_string()),
            "{flat:?}"
        );
    }
}
