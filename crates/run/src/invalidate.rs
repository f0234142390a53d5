//! How the result cache hears of changes: one channel per process (not per
//! session), on a thread of its own for the length of the run. The channel
//! also asks the catalog what the workload's statements read
//! (`crate::resolve`), when it connects and after every DDL it hears of.
//!
//! - PostgreSQL: a connection that LISTENs on `tracelab_rc`. Statement
//!   triggers (enabled always, so that they fire under
//!   `session_replication_role = replica` too) NOTIFY the OID of the
//!   table's partition root at commit; an event trigger on
//!   `ddl_command_end` (enabled always) NOTIFYs `ddl`. A heartbeat
//!   (`select 1`) every quarter lag proves the connection alive; when
//!   heartbeat N completes, every notification committed before heartbeat
//!   N-1 was sent has been read (the server sends pending notifications
//!   before it reads the next command), so the cache may serve until
//!   heartbeat N-1's start plus the lag.
//! - MariaDB: triggers count changes per table in `tracelab_rc_changes`; a
//!   connection reads the counters, and a digest of the definitions of
//!   every table, view, trigger and function the workload may read (see
//!   `resolve::fingerprint_sql`), every half lag; a read that started at S
//!   has seen every change committed before S. The server's count of DDL
//!   statements begun is read too: when it moves, the channel waits for
//!   the statements then running to end before it asks the catalog again.
//!
//! A DDL stops the cache from serving anything until the catalog has been
//! asked again. A failed channel stops the cache from serving at once and
//! flushes it; it reconnects and starts afresh (nothing heard before can
//! be trusted: NOTIFY has no replay).

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tracelab_engine::{AdminError, TextRow, Watch};

use crate::cache::ResultCache;
use crate::clock::Clock;
use crate::resolve::{self, Ask};
use crate::Engine;

/// The NOTIFY channel of the PostgreSQL triggers.
pub const CHANNEL: &str = "tracelab_rc";
/// The listening connection's application_name, to tell it apart in
/// pg_stat_activity.
pub const APPLICATION: &str = "tracelab result cache";
/// The MariaDB table of change counters.
pub const COUNTERS: &str = "tracelab_rc_changes";

/// The body of the PostgreSQL trigger function: the OID of the changed
/// table's partition root (the table itself when it is not a partition),
/// so that a same-named table in another schema, or a table dropped and
/// created again, is never taken for the annotated one.
pub(crate) const PG_NOTIFY_BODY: &str = " begin perform pg_notify('tracelab_rc', \
     coalesce(pg_partition_root(TG_RELID), TG_RELID)::oid::text); return null; end ";
/// The body of the PostgreSQL event trigger function.
pub(crate) const PG_DDL_BODY: &str = " begin perform pg_notify('tracelab_rc', 'ddl'); end ";

/// The functions and the DDL event trigger (an event trigger takes a
/// superuser).
pub(crate) fn pg_base_setup() -> Vec<String> {
    vec![
        format!(
            "create or replace function tracelab_rc_notify() returns trigger language plpgsql \
             as $${PG_NOTIFY_BODY}$$"
        ),
        format!(
            "create or replace function tracelab_rc_ddl() returns event_trigger language plpgsql \
             as $${PG_DDL_BODY}$$"
        ),
        "drop event trigger if exists tracelab_rc_ddl".into(),
        "create event trigger tracelab_rc_ddl on ddl_command_end execute function tracelab_rc_ddl()"
            .into(),
        "alter event trigger tracelab_rc_ddl enable always".into(),
    ]
}

/// The trigger on each of `tables` (names as the catalog prints them:
/// quoted and qualified where needed).
pub(crate) fn pg_table_setup(tables: &[String]) -> Vec<String> {
    let mut sql = Vec::new();
    for t in tables {
        sql.push(format!("drop trigger if exists tracelab_rc on {t}"));
        sql.push(format!(
            "create trigger tracelab_rc after insert or update or delete or truncate on {t} \
             for each statement execute function tracelab_rc_notify()"
        ));
        sql.push(format!("alter table {t} enable always trigger tracelab_rc"));
    }
    sql
}

/// A MariaDB identifier, quoted.
fn bq(s: &str) -> String {
    format!("`{}`", s.replace('`', "``"))
}

/// A MariaDB string literal.
fn lit(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "''"))
}

/// The counters table, in the connection's database `db`.
pub(crate) fn mariadb_base_setup(db: &str) -> Vec<String> {
    vec![format!(
        "create table if not exists {}.{COUNTERS} (tbl varchar(129) primary key, n bigint not null)",
        bq(db)
    )]
}

/// The counting triggers on `schema.table` (TRUNCATE fires none on
/// MariaDB: it is DDL there, seen by the definition digest).
pub(crate) fn mariadb_table_setup(db: &str, schema: &str, table: &str) -> Vec<String> {
    let id = lit(&format!(
        "{}.{}",
        schema.to_ascii_lowercase(),
        table.to_ascii_lowercase()
    ));
    let counters = format!("{}.{COUNTERS}", bq(db));
    let mut sql = vec![format!("insert ignore into {counters} values ({id}, 0)")];
    for (op, suffix) in [("insert", "ins"), ("update", "upd"), ("delete", "del")] {
        let trigger = format!(
            "{}.{}",
            bq(schema),
            bq(&format!("tracelab_rc_{table}_{suffix}"))
        );
        sql.push(format!("drop trigger if exists {trigger}"));
        sql.push(format!(
            "create trigger {trigger} after {op} on {}.{} for each row \
             insert into {counters} values ({id}, 1) on duplicate key update n = n + 1",
            bq(schema),
            bq(table)
        ));
    }
    sql
}

/// The SQL that installs invalidation on `tables` (for those who install
/// it by hand; `--result-cache-setup` installs it on the base tables the
/// catalog names, views followed, partitions included). On MariaDB the
/// tables are taken to be in database `tracelab`.
pub fn setup_sql(engine: Engine, tables: &[String]) -> Vec<String> {
    match engine {
        Engine::Postgres => {
            let mut sql = pg_base_setup();
            sql.extend(pg_table_setup(tables));
            sql
        }
        Engine::Mysql => {
            let mut sql = mariadb_base_setup("tracelab");
            for t in tables {
                let (schema, table) = t.split_once('.').unwrap_or(("tracelab", t));
                sql.extend(mariadb_table_setup("tracelab", schema, table));
            }
            sql
        }
        Engine::Sqlite => Vec::new(),
    }
}

fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// A PostgreSQL error as the channel reports it: the message and its
/// SQLSTATE.
pub(crate) fn pg_message(e: &AdminError) -> String {
    match &e.code {
        Some(code) => format!("{} (SQLSTATE {code})", e.message),
        None => e.message.clone(),
    }
}

/// Value `i` of the first of `rows` as text (`None` for NULL or no row).
fn first(rows: &[TextRow], i: usize) -> Option<String> {
    rows.first()?.get(i).map(str::to_string)
}

/// Value `i` of `row` as an integer.
fn integer(row: &TextRow, i: usize) -> Option<i64> {
    row.get(i)?.trim().parse().ok()
}

/// What the channel needs besides the cache.
pub(crate) struct Channel {
    pub engine: Engine,
    pub url: String,
    /// The sessions' settings (`-s`): a search_path changes what names
    /// resolve to.
    pub settings: Vec<(String, String)>,
    pub ask: Ask,
    pub clock: Clock,
}

/// Runs the channel until `done`; meant for a thread of its own.
pub(crate) fn run(cache: Arc<ResultCache>, ch: Channel, done: Arc<AtomicBool>) {
    let Ok(rt) = runtime() else {
        cache.lose_channel();
        return;
    };
    let lag = cache.opts.lag;
    let cache = &cache;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        while !done.load(Ordering::Acquire) {
            let r = match ch.engine {
                Engine::Postgres => listen(cache, &ch, &done).await,
                Engine::Mysql => poll_counters(cache, &ch, &done).await,
                Engine::Sqlite => return,
            };
            if let Err(why) = r {
                cache.channel_lost(&why);
            }
            pause((lag / 4).max(Duration::from_millis(5)), &done).await;
        }
    });
}

/// Sleeps for `d`, or less once the run is `done`: a channel between two
/// heartbeats of a long lag (a quarter of a minute, say) must not hold
/// the end of the run back that long.
async fn pause(d: Duration, done: &AtomicBool) {
    let until = tokio::time::Instant::now() + d;
    while !done.load(Ordering::Acquire) {
        let now = tokio::time::Instant::now();
        if now >= until {
            return;
        }
        tokio::time::sleep((until - now).min(Duration::from_millis(20))).await;
    }
}

/// Asks the catalog until an answer is published (a DDL heard while
/// asking makes the answer void: ask again).
async fn resolve_pg(cache: &ResultCache, w: &mut Watch, ask: &Ask) -> Result<(), String> {
    loop {
        let epoch = cache.epoch();
        let r = resolve::postgres(w, ask).await?;
        if cache.publish(epoch, r) {
            return Ok(());
        }
    }
}

async fn listen(cache: &Arc<ResultCache>, ch: &Channel, done: &AtomicBool) -> Result<(), String> {
    // Notifications invalidate as they arrive, before any later reply
    // reaches the heartbeat.
    let heard = cache.clone();
    let mut w = Watch::connect(&ch.url, APPLICATION, move |payload| {
        if payload == "ddl" {
            heard.ddl();
        } else {
            heard.invalidate_id(payload);
        }
    })
    .await
    .map_err(|e| format!("cannot connect: {}", pg_message(&e)))?;
    for (name, value) in &ch.settings {
        w.set(name, value)
            .await
            .map_err(|e| format!("cannot set {name}: {}", pg_message(&e)))?;
    }
    w.execute(&format!("LISTEN {CHANNEL}"))
        .await
        .map_err(|e| format!("cannot LISTEN: {}", pg_message(&e)))?;
    // Listening from here on: what was cached or resolved before may have
    // missed changes.
    cache.ddl();
    resolve_pg(cache, &mut w, &ch.ask).await?;
    let period = (cache.opts.lag / 4).max(Duration::from_millis(2));
    let mut previous: Option<i64> = None;
    let mut published = cache.epoch();
    while !done.load(Ordering::Acquire) {
        let sent = ch.clock.now();
        w.query("select 1")
            .await
            .map_err(|e| format!("the listening connection failed: {}", pg_message(&e)))?;
        if w.is_lost() {
            return Err("the listening connection was lost".into());
        }
        let first = previous.is_none();
        if let Some(p) = previous {
            cache.confirm(p);
        }
        previous = Some(sent);
        if cache.epoch() != published {
            // A DDL: ask the catalog again before anything is cached.
            resolve_pg(cache, &mut w, &ch.ask).await?;
            published = cache.epoch();
            continue;
        }
        // The second heartbeat follows the first at once: the cache serves
        // from then on, not a quarter lag after the channel connected.
        if !first {
            pause(period, done).await;
        }
    }
    Ok(())
}

/// MariaDB's definition digest of `names` (see `resolve::fingerprint_sql`).
async fn fingerprint(w: &mut Watch, names: &BTreeSet<String>) -> Result<String, String> {
    let rows = w
        .query(&resolve::fingerprint_sql(names))
        .await
        .map_err(|e| format!("cannot read the table definitions: {}", e.detail()))?;
    Ok(first(&rows, 0).unwrap_or_default())
}

/// Asks the catalog until an answer is published over an unchanged
/// definition digest; returns the digest and the names it covers.
async fn resolve_maria(
    cache: &ResultCache,
    c: &mut Watch,
    ask: &Ask,
) -> Result<(String, BTreeSet<String>), String> {
    let mut names: BTreeSet<String> = BTreeSet::new();
    loop {
        let epoch = cache.epoch();
        let before = fingerprint(c, &names).await?;
        let (r, watched) = resolve::mariadb(c, ask).await?;
        if watched != names {
            // Views named more tables: digest those too, and ask again.
            names = watched;
            continue;
        }
        if fingerprint(c, &names).await? != before {
            continue;
        }
        if cache.publish(epoch, r) {
            return Ok((before, names));
        }
    }
}

/// How many DDL statements MariaDB's sessions have begun since it started:
/// its `Com_` counters of the statements that change what a query may
/// read, summed over every session (temporary tables, users and roles
/// left out). A statement counts when it starts, before it commits.
///
/// The definition digest alone misses DDL that leaves the catalog as it
/// was: `alter table t drop column v, add column v int` is instant, keeps
/// the columns, the InnoDB table id and (within the same second: the
/// catalog's create time has no finer grain) the create time, and makes
/// every value NULL.
const DDL_BEGUN_SQL: &str = "select cast(sum(variable_value) as signed) \
     from information_schema.global_status \
     where (variable_name like 'COM\\_ALTER\\_%' or variable_name like 'COM\\_CREATE\\_%' \
            or variable_name like 'COM\\_DROP\\_%' \
            or variable_name in ('COM_RENAME_TABLE', 'COM_TRUNCATE')) \
       and variable_name not like '%TEMPORARY%' and variable_name not like '%USER' \
       and variable_name not like '%ROLE'";

/// See [`DDL_BEGUN_SQL`].
async fn ddl_begun(c: &mut Watch) -> Result<i64, String> {
    let rows = c.query(DDL_BEGUN_SQL).await.map_err(|e| {
        format!(
            "cannot read the server's statement counters: {}",
            e.detail()
        )
    })?;
    Ok(rows.first().and_then(|r| integer(r, 0)).unwrap_or_default())
}

/// Waits until every statement the other sessions were running when it
/// was called has ended (MariaDB's process list, seen whole with the
/// PROCESS privilege): a DDL counted by [`DDL_BEGUN_SQL`] before the call
/// has then committed or failed, so the catalog asked afterwards shows
/// it. Statements begun since do not hold it up, so a busy workload
/// cannot keep it waiting; a long one may, and the cache serves nothing
/// meanwhile.
async fn running_statements_end(c: &mut Watch, done: &AtomicBool) -> Result<(), String> {
    // The server's clock when first asked (unix time, µs, as it prints
    // it): later asks count only statements older than that.
    let mut since: Option<String> = None;
    while !done.load(Ordering::Acquire) {
        let at = since.as_deref().unwrap_or("unix_timestamp(now(6))");
        let rows = c
            .query(&format!(
                "select cast(unix_timestamp(now(6)) as char), count(*) \
                 from information_schema.processlist \
                 where id <> connection_id() and command in ('Query', 'Execute') \
                   and time_ms >= (unix_timestamp(now(6)) - {at}) * 1000"
            ))
            .await
            .map_err(|e| format!("cannot read the process list: {}", e.detail()))?;
        let Some(row) = rows.first() else {
            return Ok(());
        };
        let now = row.get(0).unwrap_or_default().to_string();
        let running = integer(row, 1).unwrap_or_default();
        if running == 0 {
            return Ok(());
        }
        if since.is_none() && now.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            since = Some(now);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

async fn poll_counters(cache: &ResultCache, ch: &Channel, done: &AtomicBool) -> Result<(), String> {
    let mut c = Watch::connect(&ch.url, APPLICATION, |_| {})
        .await
        .map_err(|e| format!("cannot connect: {}", e.detail()))?;
    for (name, value) in &ch.settings {
        // A name that is not a system variable's fails the sessions, which
        // say so; the channel does without it.
        if name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            c.set(name, value)
                .await
                .map_err(|e| format!("cannot set {name}: {}", e.detail()))?;
        }
    }
    let period = (cache.opts.lag / 2).max(Duration::from_millis(2));
    let mut seen: Option<HashMap<String, i64>> = None;
    cache.ddl();
    let mut ddl = ddl_begun(&mut c).await?;
    running_statements_end(&mut c, done).await?;
    let (mut digest, mut names) = resolve_maria(cache, &mut c, &ch.ask).await?;
    while !done.load(Ordering::Acquire) {
        let sent = ch.clock.now();
        let rows = c
            .query(&format!("select lower(tbl), n from {COUNTERS}"))
            .await
            .map_err(|e| {
                format!(
                    "cannot read {COUNTERS} (install it with --result-cache-setup): {}",
                    e.detail()
                )
            })?;
        let now: HashMap<String, i64> = rows
            .iter()
            .map(|r| {
                let t = r.get(0).unwrap_or_default().to_string();
                (t, integer(r, 1).unwrap_or_default())
            })
            .collect();
        let begun = ddl_begun(&mut c).await?;
        if begun != ddl || fingerprint(&mut c, &names).await? != digest {
            // A DDL began (or the catalog changed): nothing is served
            // until it has ended and the catalog has been asked again.
            cache.ddl();
            ddl = begun;
            running_statements_end(&mut c, done).await?;
            (digest, names) = resolve_maria(cache, &mut c, &ch.ask).await?;
        } else if let Some(before) = &seen {
            for (t, n) in &now {
                if before.get(t) != Some(n) {
                    cache.invalidate_id(t);
                }
            }
        }
        // The first read after connecting is the baseline: the cache
        // started afresh (`ddl` above).
        seen = Some(now);
        cache.confirm(sent);
        pause(period, done).await;
    }
    c.close().await;
    Ok(())
}
