//! What the result cache may take, asked of the engine rather than
//! guessed from the text (Oracle's rule: a result is never served once it
//! may be stale beyond the lag; when in doubt, do not cache).
//!
//! - PostgreSQL: each query is made into a temporary view inside a
//!   transaction that is rolled back; the view's dependencies in
//!   `pg_depend` are every relation and function the query reads, as the
//!   server resolved them (schema, OID). Views are followed to their base
//!   tables, partitions to the root of their tree; every function and
//!   operator must be `immutable` in `pg_proc.provolatile` (stable ones
//!   such as `now()` or `pg_backend_pid()` change by themselves, and a
//!   function reading a table is not immutable). Invalidation must be in
//!   place: a statement trigger that fires under every replication role
//!   (`ENABLE ALWAYS`) on every table of the tree, and the DDL event
//!   trigger.
//! - MariaDB: the tables of a query are its identifiers that name tables
//!   in the catalog (any schema: more than it reads is safe), views
//!   followed through their definitions; no function from the server's
//!   own list of non-deterministic built-ins (its query cache's), no stored
//!   function that is not `DETERMINISTIC`, no user variable. Invalidation:
//!   the counting triggers on every table, and the tables' definitions
//!   (see `fingerprint_sql`) watched by the channel.
//!
//! Both: some words make a value that no catalog lists (the SQL-value
//! functions such as `current_date`, a `'now'` literal, `TABLESAMPLE`,
//! locking clauses): such a query is not cached either.

use std::collections::{BTreeSet, HashMap};

use tracelab_engine::sql::{inline_binds, inline_literals};
use tracelab_engine::{AdminError, TextRow, Watch};

use crate::cache::{self, has_hint, CacheMode, Resolution, Slot};
use crate::invalidate::{self, COUNTERS};

/// What the channel asks about: the workload's statements and the
/// annotations.
pub(crate) struct Ask {
    /// Per statement: its text as written (for hints) and as the engine
    /// gets it (`$n` placeholders).
    pub statements: Vec<(String, String)>,
    pub tables: Vec<(String, CacheMode)>,
    /// Install what invalidation lacks (`--result-cache-setup`).
    pub setup: bool,
}

/// Words whose value changes by themselves though no catalog lists them
/// as a function: PostgreSQL's SQL-value functions and MariaDB's
/// parenthesis-free time and user functions.
const VALUE_WORDS: &[&str] = &[
    "current_date",
    "current_time",
    "current_timestamp",
    "localtime",
    "localtimestamp",
    "current_role",
    "current_user",
    "session_user",
    "system_user",
    "user",
    "current_catalog",
    "current_schema",
    "utc_date",
    "utc_time",
    "utc_timestamp",
    "tablesample",
];

/// Date/time input strings that mean "when this is parsed".
const VALUE_LITERALS: &[&str] = &["now", "today", "tomorrow", "yesterday", "current"];

/// MariaDB's built-ins whose result changes by itself: the functions its
/// query cache refuses (and a few later ones of the same kind).
const MARIADB_NONDETERMINISTIC: &[&str] = &[
    "benchmark",
    "connection_id",
    "convert_tz",
    "curdate",
    "current_date",
    "current_time",
    "current_timestamp",
    "current_user",
    "current_role",
    "curtime",
    "database",
    "schema",
    "encrypt",
    "found_rows",
    "get_lock",
    "is_free_lock",
    "is_used_lock",
    "last_insert_id",
    "load_file",
    "master_pos_wait",
    "master_gtid_wait",
    "now",
    "rand",
    "random_bytes",
    "release_lock",
    "release_all_locks",
    "row_count",
    "sleep",
    "sysdate",
    "sys_guid",
    "unix_timestamp",
    "user",
    "session_user",
    "system_user",
    "uuid",
    "uuid_short",
    "localtime",
    "localtimestamp",
    "utc_date",
    "utc_time",
    "utc_timestamp",
    "nextval",
    "lastval",
    "setval",
    "last_value",
    "rownum",
    "version",
];

/// Why a query's text alone keeps it out of the cache, if it does.
pub(crate) fn text_refusal(sql: &str) -> Option<String> {
    let words = cache::words(sql);
    for (i, (w, _)) in words.iter().enumerate() {
        if VALUE_WORDS.contains(&w.as_str()) {
            return Some(format!("uses {w}, whose value changes by itself"));
        }
        let next = words.get(i + 1).map(|(n, _)| n.as_str());
        if w == "for" && matches!(next, Some("update" | "share" | "no" | "key")) {
            return Some("locks rows (FOR UPDATE/SHARE)".into());
        }
        if w == "lock" && next == Some("in") {
            return Some("locks rows (LOCK IN SHARE MODE)".into());
        }
    }
    for lit in literals(sql) {
        if VALUE_LITERALS.contains(&lit.trim().to_ascii_lowercase().as_str()) {
            return Some(format!(
                "has the literal '{lit}', whose value is the time it is read"
            ));
        }
    }
    None
}

/// The contents of the string literals of `sql` (`'...'`, `E'...'`).
fn literals(sql: &str) -> Vec<&str> {
    crate::sql::tokens(sql)
        .filter(|t| t.kind == crate::sql::Kind::Literal)
        .map(|t| {
            // After the opening quote (and `E`), without the closing
            // one (an unclosed literal runs to the end of the text).
            let text = t.text(sql);
            let body = &text[text.find('\'').map_or(0, |q| q + 1)..];
            body.strip_suffix('\'').unwrap_or(body)
        })
        .collect()
}

/// A relation the catalog resolved: its kind, the root of its partition
/// tree (itself when not a partition), and its name as the server prints
/// it.
#[derive(Debug, Clone)]
struct Rel {
    kind: String,
    root: i64,
    name: String,
    bare: String,
}

/// The base relations behind the relations (and views) in `$1` (an array
/// of OIDs): views are followed through their rules; then every function
/// and operator their rules use that is not immutable, and every system
/// catalog they read.
const PG_DEPENDENCIES: &str = "
with recursive v(oid) as (
    select unnest($1::oid[])
  union
    select d.refobjid
    from v join pg_rewrite w on w.ev_class = v.oid
    join pg_depend d on d.classid = 'pg_rewrite'::regclass and d.objid = w.oid
      and d.refclassid = 'pg_class'::regclass and d.refobjid <> v.oid
), refs as (
    -- The rules' query trees name every function, operator and relation
    -- they use (pg_depend leaves out the built-in ones, which are pinned).
    select m[1] as what, m[2]::oid as oid
    from v join pg_rewrite w on w.ev_class = v.oid,
    regexp_matches(w.ev_action::text,
      ':(funcid|opfuncid|aggfnoid|winfnoid|tsmhandler|opno|relid) (\\d+)', 'g') m
)
select 'rel', c.relkind::text, coalesce(pg_partition_root(c.oid), c.oid)::oid::int8,
       c.oid::regclass::text, lower(c.relname::text)
from v join pg_class c on c.oid = v.oid
where c.relkind <> 'v' or not exists (select 1 from pg_rewrite w where w.ev_class = c.oid)
union all
select 'fn', p.provolatile::text, p.oid::int8, p.oid::regprocedure::text, ''
from refs join pg_proc p on p.oid = refs.oid
where refs.what in ('funcid', 'opfuncid', 'aggfnoid', 'winfnoid', 'tsmhandler')
  and p.provolatile <> 'i'
union all
select 'fn', p.provolatile::text, p.oid::int8, o.oid::regoperator::text, ''
from refs join pg_operator o on o.oid = refs.oid
join pg_proc p on p.oid = o.oprcode
where refs.what = 'opno' and p.provolatile <> 'i'
union all
select 'sys', '', c.oid::int8, c.oid::regclass::text, ''
from refs join pg_class c on c.oid = refs.oid
where refs.what = 'relid' and c.oid < 16384";

/// The tables of the partition tree of `$1` (or the table itself) that
/// lack the invalidation trigger as `--result-cache-setup` installs it:
/// after each statement, on insert, update, delete and truncate, enabled
/// under every replication role, calling the current notify function.
const PG_MISSING_TRIGGERS: &str = "
select c.oid::regclass::text
from pg_class c
where (c.oid = $1::int8::oid or c.oid in (select relid from pg_partition_tree($1::int8::oid)))
  and c.relkind in ('r', 'p')
  and not exists (
    select 1 from pg_trigger g
    where g.tgrelid = c.oid and g.tgname = 'tracelab_rc' and g.tgenabled = 'A'
      and g.tgfoid = to_regprocedure('tracelab_rc_notify()') and g.tgtype & 127 = 60)";

/// Whether the functions and the DDL event trigger are as
/// `--result-cache-setup` installs them; a reason when not.
async fn pg_base_missing(w: &mut Watch) -> Result<Option<String>, String> {
    let rows = w
        .query(
            "select
               (select prosrc from pg_proc where oid = to_regprocedure('tracelab_rc_notify()')),
               (select prosrc from pg_proc where oid = to_regprocedure('tracelab_rc_ddl()')),
               (select evtenabled::text || evtevent from pg_event_trigger
                 where evtname = 'tracelab_rc_ddl' and evtfoid = to_regprocedure('tracelab_rc_ddl()'))",
        )
        .await
        .map_err(|e| invalidate::pg_message(&e))?;
    let notify = value(rows.first(), 0);
    let ddl = value(rows.first(), 1);
    let event = value(rows.first(), 2);
    let same = |have: Option<String>, want: &str| have.is_some_and(|h| h.trim() == want.trim());
    Ok(if !same(notify, invalidate::PG_NOTIFY_BODY) {
        Some("the invalidation function tracelab_rc_notify() is missing or old".into())
    } else if !same(ddl, invalidate::PG_DDL_BODY) || event.as_deref() != Some("Addl_command_end") {
        Some(
            "the DDL event trigger tracelab_rc_ddl is missing or not enabled always \
             (it takes a superuser to install)"
                .into(),
        )
    } else {
        None
    })
}

/// Value `i` of `row` as text (`None` for NULL or no row).
fn value(row: Option<&TextRow>, i: usize) -> Option<String> {
    row?.get(i).map(str::to_string)
}

/// Value `i` of `row` as an integer (`None` for NULL or no row).
fn integer(row: Option<&TextRow>, i: usize) -> Option<i64> {
    row?.get(i)?.trim().parse().ok()
}

async fn pg_batch(w: &mut Watch, sql: &[String]) -> Result<(), String> {
    for s in sql {
        w.execute(s)
            .await
            .map_err(|e| format!("--result-cache-setup: {}", invalidate::pg_message(&e)))?;
    }
    Ok(())
}

/// The base relations behind `oids` and the functions they use that are
/// not immutable.
async fn pg_dependencies(
    w: &mut Watch,
    oids: &[i64],
) -> Result<(Vec<Rel>, Vec<(String, String)>), String> {
    let oids: Vec<String> = oids.iter().map(|&o| (o as u32).to_string()).collect();
    let array = format!("{{{}}}", oids.join(","));
    let rows = w
        .query(&inline_binds(PG_DEPENDENCIES, &[Some(&array)]))
        .await
        .map_err(|e| invalidate::pg_message(&e))?;
    let mut rels = Vec::new();
    let mut fns = Vec::new();
    for r in &rows {
        let what = value(Some(r), 0).unwrap_or_default();
        let kind = value(Some(r), 1).unwrap_or_default();
        let name = value(Some(r), 3).unwrap_or_default();
        if what == "sys" {
            fns.push((name, "catalog".into()));
        } else if what == "rel" {
            rels.push(Rel {
                kind,
                root: integer(Some(r), 2).unwrap_or_default(),
                name,
                bare: value(Some(r), 4).unwrap_or_default(),
            });
        } else {
            fns.push((name, kind));
        }
    }
    Ok((rels, fns))
}

/// The query behind a temporary view: each `$n` a NULL of the type the
/// server gives the parameter (schema, name; the view must not change the
/// query's meaning, only lose its parameters); wrapped, so that duplicate
/// column names do not matter.
fn pg_probe(sql: &str, types: &[(String, String)]) -> String {
    let quote = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let body = crate::sql::map_dollar_placeholders(sql, |n, out| match types.get(n - 1) {
        Some((schema, name)) => out.push_str(&format!("(NULL::{}.{})", quote(schema), quote(name))),
        None => out.push_str("NULL"),
    });
    format!("create temp view tracelab_rc_probe as select 1 from (\n{body}\n) tracelab_rc_q")
}

/// Resolves the workload on PostgreSQL (installing what invalidation
/// lacks when asked to).
pub(crate) async fn postgres(w: &mut Watch, ask: &Ask) -> Result<Resolution, String> {
    let mut missing = pg_base_missing(w).await?;
    if missing.is_some() && ask.setup {
        pg_batch(w, &invalidate::pg_base_setup()).await?;
        missing = pg_base_missing(w).await?;
    }
    if let Some(why) = missing {
        return Ok(Resolution {
            statements: ask.statements.iter().map(|_| Err(why.clone())).collect(),
            slots: Vec::new(),
        });
    }
    // The annotations, as roots of base tables (a view's are its tables').
    let mut annotated: HashMap<i64, CacheMode> = HashMap::new();
    for (name, mode) in &ask.tables {
        let rows = w
            .query(&inline_binds(
                "select to_regclass($1)::oid::int8",
                &[Some(name)],
            ))
            .await
            .map_err(|e| invalidate::pg_message(&e))?;
        let Some(oid) = integer(rows.first(), 0) else {
            continue;
        };
        for rel in pg_dependencies(w, &[oid]).await?.0 {
            let m = annotated.entry(rel.root).or_insert(*mode);
            if *mode == CacheMode::Force {
                *m = CacheMode::Force;
            }
        }
    }
    let mut slots: Vec<Slot> = Vec::new();
    let mut checked: HashMap<i64, Result<(), String>> = HashMap::new();
    let mut statements = Vec::with_capacity(ask.statements.len());
    for (sql, engine_sql) in &ask.statements {
        let verdict = pg_statement(w, ask, sql, engine_sql, &annotated, &mut checked).await;
        statements.push(verdict.map(|rels| {
            rels.into_iter()
                .map(|(root, bare)| {
                    let id = root.to_string();
                    match slots.iter().position(|s| s.id == id) {
                        Some(i) => i,
                        None => {
                            slots.push(Slot { id, name: bare });
                            slots.len() - 1
                        }
                    }
                })
                .collect()
        }));
    }
    Ok(Resolution { statements, slots })
}

/// One statement: the roots (and bare names) of the tables it reads when
/// it may be cached.
async fn pg_statement(
    w: &mut Watch,
    ask: &Ask,
    sql: &str,
    engine_sql: &str,
    annotated: &HashMap<i64, CacheMode>,
    checked: &mut HashMap<i64, Result<(), String>>,
) -> Result<Vec<(i64, String)>, String> {
    if cache::candidate(sql, true) != cache::Candidate::Query {
        return Err("writes".into());
    }
    if let Some(why) = text_refusal(sql) {
        return Err(why);
    }
    let doubt = |e: AdminError| {
        format!(
            "the server could not say what it reads ({})",
            invalidate::pg_message(&e)
        )
    };
    let types = w.parameter_types(engine_sql).await.map_err(doubt)?;
    w.execute("BEGIN").await.map_err(doubt)?;
    let probe = async {
        w.execute(&pg_probe(engine_sql, &types))
            .await
            .map_err(doubt)?;
        let rows = w
            .query("select 'pg_temp.tracelab_rc_probe'::regclass::oid::int8")
            .await
            .map_err(doubt)?;
        let oid = integer(rows.first(), 0)
            .ok_or_else(|| "the server could not say what it reads (no probe view)".to_string())?;
        pg_dependencies(w, &[oid]).await
    }
    .await;
    w.execute("ROLLBACK").await.map_err(doubt)?;
    let (rels, fns) = probe?;
    if let Some((c, _)) = fns.iter().find(|(_, v)| v == "catalog") {
        return Err(format!("reads the system catalog {c}"));
    }
    if let Some((f, v)) = fns.first() {
        let what = if v == "s" { "stable" } else { "volatile" };
        return Err(format!(
            "calls {f}, which is {what}: its result can change by itself"
        ));
    }
    let mut roots: Vec<(i64, String)> = Vec::new();
    let mut all_force = true;
    for r in rels.iter().filter(|r| r.kind != "v") {
        if !matches!(r.kind.as_str(), "r" | "p" | "m") {
            return Err(format!(
                "reads {}, whose changes no trigger can report",
                r.name
            ));
        }
        let Some(mode) = annotated.get(&r.root) else {
            return Err(format!("reads {}, which is not annotated", r.name));
        };
        all_force &= *mode == CacheMode::Force;
        if !roots.iter().any(|(o, _)| *o == r.root) {
            roots.push((r.root, r.bare.clone()));
        }
        // A materialized view changes only by REFRESH, a DDL event.
        if r.kind == "m" {
            continue;
        }
        let verdict = match checked.get(&r.root) {
            Some(v) => v.clone(),
            None => {
                let v = pg_triggers(w, r.root, ask.setup).await;
                checked.insert(r.root, v.clone());
                v
            }
        };
        verdict?;
    }
    if roots.is_empty() {
        return Err("reads no table".into());
    }
    if !all_force && !has_hint(sql) {
        return Err("reads a manual table and has no /*+ result_cache */ hint".into());
    }
    Ok(roots)
}

/// The invalidation triggers on the tree of `root` are in place (installed
/// first when `setup`).
async fn pg_triggers(w: &mut Watch, root: i64, setup: bool) -> Result<(), String> {
    let sql = inline_binds(PG_MISSING_TRIGGERS, &[Some(&root.to_string())]);
    let missing = |rows: Vec<TextRow>| -> Vec<String> {
        rows.iter().filter_map(|r| value(Some(r), 0)).collect()
    };
    let mut lacking = missing(
        w.query(&sql)
            .await
            .map_err(|e| invalidate::pg_message(&e))?,
    );
    if !lacking.is_empty() && setup {
        pg_batch(w, &invalidate::pg_table_setup(&lacking)).await?;
        lacking = missing(
            w.query(&sql)
                .await
                .map_err(|e| invalidate::pg_message(&e))?,
        );
    }
    match lacking.first() {
        None => Ok(()),
        Some(t) => Err(format!(
            "{t} has no invalidation trigger enabled always (--result-cache-setup installs it)"
        )),
    }
}

/// What the MariaDB channel watches besides the counters: a digest of the
/// definitions of every table, view, trigger and stored function the
/// workload could read, by name (any schema). Any DDL that matters
/// changes it: ALTER (the columns, or InnoDB's table id when the table is
/// rebuilt), DROP and CREATE, RENAME, TRUNCATE (a new table id), CREATE OR
/// REPLACE of a view or function, a dropped trigger.
pub(crate) fn fingerprint_sql(names: &BTreeSet<String>) -> String {
    let list = if names.is_empty() {
        "''".to_string()
    } else {
        names
            .iter()
            .map(|n| format!("'{}'", n.replace('\\', "\\\\").replace('\'', "''")))
            .collect::<Vec<_>>()
            .join(",")
    };
    format!(
        "select md5(concat_ws('|',
          (select group_concat(concat_ws(':', t.table_schema, t.table_name, t.table_type,
              t.create_time, t.engine, ifnull(i.table_id, '')) order by t.table_schema, t.table_name)
             from information_schema.tables t
             left join information_schema.innodb_sys_tables i
               on i.name = concat(t.table_schema, '/', t.table_name)
             where lower(t.table_name) in ({list})),
          (select group_concat(concat_ws(':', table_schema, table_name, column_name, column_type,
              ordinal_position) order by table_schema, table_name, ordinal_position)
             from information_schema.columns where lower(table_name) in ({list})),
          (select group_concat(concat_ws(':', table_schema, table_name, md5(view_definition))
              order by table_schema, table_name)
             from information_schema.views where lower(table_name) in ({list})),
          (select group_concat(concat_ws(':', trigger_schema, trigger_name, event_object_table,
              created) order by trigger_schema, trigger_name)
             from information_schema.triggers where lower(event_object_table) in ({list})),
          (select group_concat(concat_ws(':', routine_schema, routine_name, created, last_altered,
              is_deterministic) order by routine_schema, routine_name)
             from information_schema.routines where lower(routine_name) in ({list}))))"
    )
}

/// A MariaDB table or view: schema, name (as the catalog has them), type.
type MariaRel = (String, String, String);

const MARIA_SYSTEM: &[&str] = &["mysql", "information_schema", "performance_schema", "sys"];

/// The names of `sql` as MariaDB resolves them: `schema.name` where a
/// word is qualified, else `db.name` (the connection's database). A
/// column reference gives a pair that names no table, which is harmless.
fn maria_names(sql: &str, db: &str) -> BTreeSet<(String, String)> {
    use crate::sql::{Dialect, Kind, Lexer};
    let b = sql.as_bytes();
    // Words with where each starts and ends, so that `a.b` can be seen.
    let ws: Vec<(String, usize, usize)> = Lexer::new(sql, Dialect::MariaDb, 0)
        .filter_map(|t| {
            let w = match t.kind {
                Kind::Word => t.text(sql).to_ascii_lowercase(),
                Kind::QuotedName => crate::cache::unquote(t.text(sql)).to_ascii_lowercase(),
                _ => return None,
            };
            Some((w, t.start, t.end))
        })
        .collect();
    let db = db.to_ascii_lowercase();
    let mut out = BTreeSet::new();
    for (k, (w, _, end)) in ws.iter().enumerate() {
        let qualified =
            b.get(*end) == Some(&b'.') && ws.get(k + 1).is_some_and(|(_, s, _)| *s == end + 1);
        if qualified {
            out.insert((w.clone(), ws[k + 1].0.clone()));
        }
        let qualifies = k > 0 && ws[k - 1].2 + 1 == ws[k].1 && b.get(ws[k - 1].2) == Some(&b'.');
        if !qualifies {
            out.insert((db.clone(), w.clone()));
        }
    }
    out
}

/// The tables and views among `names` (schema, name pairs).
async fn maria_rels(
    w: &mut Watch,
    names: &BTreeSet<(String, String)>,
) -> Result<Vec<MariaRel>, String> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let q = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"));
    let list: Vec<String> = names
        .iter()
        .map(|(s, t)| format!("({}, {})", q(s), q(t)))
        .collect();
    let rows = w
        .query(&format!(
            "select table_schema, table_name, table_type from information_schema.tables \
             where (lower(table_schema), lower(table_name)) in ({})",
            list.join(",")
        ))
        .await
        .map_err(|e| maria_message(&e))?;
    Ok(rows
        .iter()
        .map(|r| {
            let v = |i| value(Some(r), i).unwrap_or_default();
            (v(0), v(1), v(2))
        })
        .collect())
}

/// A MariaDB error as the channel reports it: the message and the
/// server's error number.
fn maria_message(e: &AdminError) -> String {
    e.detail()
}

/// `sql` with its `$n` replaced by `values` as MariaDB string literals.
fn maria_sql(sql: &str, values: &[&str]) -> String {
    let values: Vec<Option<&str>> = values.iter().map(|v| Some(*v)).collect();
    inline_literals(sql, &values, true)
}

/// Expands `rels` through views: the base tables, and the words of every
/// view definition met (for functions); the names met are added to
/// `watched`.
async fn maria_bases(
    w: &mut Watch,
    db: &str,
    mut rels: Vec<MariaRel>,
    watched: &mut BTreeSet<String>,
) -> Result<(Vec<MariaRel>, Vec<(String, bool)>), String> {
    let mut bases = Vec::new();
    let mut words = Vec::new();
    let mut views_seen = BTreeSet::new();
    while let Some(r) = rels.pop() {
        if r.2 != "VIEW" {
            if !bases.contains(&r) {
                bases.push(r);
            }
            continue;
        }
        if !views_seen.insert((r.0.clone(), r.1.clone())) {
            continue;
        }
        let rows = w
            .query(&maria_sql(
                "select view_definition from information_schema.views \
                 where table_schema = $1 and table_name = $2",
                &[&r.0, &r.1],
            ))
            .await
            .map_err(|e| maria_message(&e))?;
        let def = value(rows.first(), 0).unwrap_or_default();
        let vw = cache::words(&def);
        watched.extend(vw.iter().map(|(n, _)| n.clone()));
        words.extend(vw);
        // A view's names resolve in the view's own schema.
        let _ = db;
        rels.extend(maria_rels(w, &maria_names(&def, &r.0)).await?);
    }
    Ok((bases, words))
}

/// Resolves the workload on MariaDB; also returns the names whose
/// definitions the channel watches.
pub(crate) async fn mariadb(
    w: &mut Watch,
    ask: &Ask,
) -> Result<(Resolution, BTreeSet<String>), String> {
    let err = |e: AdminError| maria_message(&e);
    let db = value(w.query("select database()").await.map_err(err)?.first(), 0);
    let Some(db) = db else {
        let why = "the connection has no database (name one in the URL)".to_string();
        return Ok((
            Resolution {
                statements: ask.statements.iter().map(|_| Err(why.clone())).collect(),
                slots: Vec::new(),
            },
            BTreeSet::new(),
        ));
    };
    let mut watched: BTreeSet<String> = BTreeSet::new();
    if ask.setup {
        for s in invalidate::mariadb_base_setup(&db) {
            w.execute(&s)
                .await
                .map_err(|e| format!("--result-cache-setup: {}", maria_message(&e)))?;
        }
    }
    let have_counters = integer(
        w.query(&maria_sql(
            "select count(*) from information_schema.tables where table_schema = $1 and table_name = $2",
            &[&db, COUNTERS],
        ))
        .await
        .map_err(err)?
        .first(),
        0,
    );
    // Annotations, as base tables (a view's are its tables').
    let mut annotated: HashMap<(String, String), CacheMode> = HashMap::new();
    for (name, mode) in &ask.tables {
        let (schema, table) = match name.split_once('.') {
            Some((s, t)) => (s.to_string(), t.to_string()),
            None => (db.to_ascii_lowercase(), name.clone()),
        };
        watched.insert(table.clone());
        let rels = maria_rels(w, &BTreeSet::from([(schema, table)])).await?;
        for b in maria_bases(w, &db, rels, &mut watched).await?.0 {
            let key = (b.0.to_ascii_lowercase(), b.1.to_ascii_lowercase());
            let m = annotated.entry(key).or_insert(*mode);
            if *mode == CacheMode::Force {
                *m = CacheMode::Force;
            }
        }
    }
    let mut slots: Vec<Slot> = Vec::new();
    let mut statements = Vec::new();
    for (sql, _) in &ask.statements {
        let words = cache::words(sql);
        watched.extend(words.iter().map(|(w, _)| w.clone()));
        let verdict = maria_verdict(
            w,
            (&db, have_counters, ask.setup),
            &annotated,
            &mut watched,
            (sql, &words),
        )
        .await;
        statements.push(verdict.map(|tables| {
            tables
                .into_iter()
                .map(|(schema, table)| {
                    let id = format!("{schema}.{table}");
                    match slots.iter().position(|s| s.id == id) {
                        Some(i) => i,
                        None => {
                            slots.push(Slot { id, name: table });
                            slots.len() - 1
                        }
                    }
                })
                .collect()
        }));
    }
    Ok((Resolution { statements, slots }, watched))
}

/// Whether the result cache may keep `sql`'s results on MariaDB: the base
/// tables it reads (schema, table), each annotated and with its
/// invalidation triggers (installed with `setup`), or why not.
async fn maria_verdict(
    w: &mut Watch,
    (db, have_counters, setup): (&str, Option<i64>, bool),
    annotated: &HashMap<(String, String), CacheMode>,
    watched: &mut BTreeSet<String>,
    (sql, words): (&str, &[(String, bool)]),
) -> Result<Vec<(String, String)>, String> {
    let err = |e: AdminError| maria_message(&e);
    if cache::candidate(sql, true) != cache::Candidate::Query {
        return Err("writes".to_string());
    }
    if let Some(why) = text_refusal(sql) {
        return Err(why);
    }
    if have_counters != Some(1) {
        return Err(format!(
            "{db}.{COUNTERS} is missing (--result-cache-setup installs it)"
        ));
    }
    if let Some((w, _)) = words
        .iter()
        .find(|(w, _)| MARIA_SYSTEM.contains(&w.as_str()))
    {
        return Err(format!("reads the {w} schema"));
    }
    // User variables and sequences: NEXT VALUE FOR, PREVIOUS VALUE FOR.
    if sql.contains('@') {
        return Err("uses a variable (@)".into());
    }
    if words
        .windows(2)
        .any(|p| matches!(p[0].0.as_str(), "next" | "previous") && p[1].0 == "value")
    {
        return Err("reads a sequence".into());
    }
    let rels = maria_rels(w, &maria_names(sql, db)).await?;
    let (bases, view_words) = maria_bases(w, db, rels, watched).await?;
    let calls: BTreeSet<String> = words
        .iter()
        .chain(&view_words)
        .filter(|(_, call)| *call)
        .map(|(w, _)| w.clone())
        .collect();
    if let Some(f) = calls
        .iter()
        .find(|f| MARIADB_NONDETERMINISTIC.contains(&f.as_str()))
    {
        return Err(format!("calls {f}(), whose result changes by itself"));
    }
    if !calls.is_empty() {
        let list: Vec<String> = calls.iter().map(|f| format!("'{f}'")).collect();
        let routines: Vec<(String, String)> = w
            .query(&format!(
                "select lower(routine_name), is_deterministic from information_schema.routines \
                 where routine_type = 'FUNCTION' and lower(routine_name) in ({})",
                list.join(",")
            ))
            .await
            .map_err(err)?
            .iter()
            .map(|r| {
                let v = |i| value(Some(r), i).unwrap_or_default();
                (v(0), v(1))
            })
            .collect();
        watched.extend(calls.iter().cloned());
        if let Some((f, _)) = routines.iter().find(|(_, d)| d != "YES") {
            return Err(format!("calls {f}(), which is not DETERMINISTIC"));
        }
    }
    let mut out: Vec<(String, String)> = Vec::new();
    let mut all_force = true;
    for (schema, table, _) in &bases {
        let key = (schema.to_ascii_lowercase(), table.to_ascii_lowercase());
        let Some(mode) = annotated.get(&key) else {
            return Err(format!("reads {schema}.{table}, which is not annotated"));
        };
        all_force &= *mode == CacheMode::Force;
        let triggers = integer(
            w.query(&maria_sql(
                "select count(*) from information_schema.triggers \
                 where event_object_schema = $1 and event_object_table = $2 \
                 and trigger_name like 'tracelab\\_rc\\_%' and action_statement like $3",
                &[schema, table, &format!("%{COUNTERS}%")],
            ))
            .await
            .map_err(err)?
            .first(),
            0,
        );
        if triggers != Some(3) && setup {
            for s in invalidate::mariadb_table_setup(db, schema, table) {
                w.execute(&s)
                    .await
                    .map_err(|e| format!("--result-cache-setup: {}", maria_message(&e)))?;
            }
        } else if triggers != Some(3) {
            return Err(format!(
                "{schema}.{table} has no invalidation triggers (--result-cache-setup installs them)"
            ));
        }
        out.push(key);
    }
    if out.is_empty() {
        return Err("reads no table".into());
    }
    if !all_force && !has_hint(sql) {
        return Err("reads a manual table and has no /*+ result_cache */ hint".into());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_change_by_themselves_are_refused_by_their_text() {
        for sql in [
            "select current_date",
            "select * from t where d < CURRENT_TIMESTAMP",
            "select 'now'::timestamptz",
            "select * from t tablesample system (10)",
            "select * from t for update",
            "select * from t for no key update",
            "select * from t lock in share mode",
        ] {
            assert!(text_refusal(sql).is_some(), "{sql}");
        }
        for sql in [
            "select * from t where name = 'nowhere'",
            "select /*+ result_cache */ * from t where x = $1",
            "select 'for update' from t",
        ] {
            assert!(text_refusal(sql).is_none(), "{sql}");
        }
    }

    #[test]
    fn mariadb_names_resolve_in_their_schema() {
        let n = maria_names("select t.a, `o`.`rc_t`.v from rc_t t, other . x", "Db");
        let has = |s: &str, t: &str| n.contains(&(s.to_string(), t.to_string()));
        assert!(
            has("db", "rc_t") && has("o", "rc_t") && has("t", "a"),
            "{n:?}"
        );
        assert!(
            !has("db", "a") && has("db", "other") && has("db", "x"),
            "{n:?}"
        );
    }

    #[test]
    fn probes_keep_the_query_and_lose_its_parameters() {
        assert_eq!(
            pg_probe(
                "select a, a from t where x = $1 and y = '$2'",
                &[("pg_catalog".into(), "int4".into())]
            ),
            "create temp view tracelab_rc_probe as select 1 from (\n\
             select a, a from t where x = (NULL::\"pg_catalog\".\"int4\") and y = '$2'\n\
             ) tracelab_rc_q"
        );
    }
}
