//! How the result cache hears of changes: one channel per process (not per
//! session), on a thread of its own for the length of the run.
//!
//! - PostgreSQL: a connection that LISTENs on `tracelab_rc`, where the
//!   triggers of `--result-cache-setup` NOTIFY the table's name at commit.
//!   A heartbeat (`select 1`) every quarter lag proves the connection
//!   alive; when heartbeat N completes, every notification committed before
//!   heartbeat N-1 was sent has been read (the server sends pending
//!   notifications before it reads the next command), so the cache may
//!   serve until heartbeat N-1's start plus the lag.
//! - MariaDB: triggers count changes per table in `tracelab_rc_changes`; a
//!   connection reads the counters every half lag, and a read that started
//!   at S has seen every change committed before S.
//!
//! A failed channel stops the cache from serving at once and flushes it;
//! it reconnects and starts afresh (nothing heard before can be trusted:
//! NOTIFY has no replay).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mysql_async::prelude::Queryable;

use crate::cache::{table_index, ResultCache};
use crate::clock::Clock;
use crate::engine::{redact, Engine};
use crate::error::RunError;

/// The NOTIFY channel of the PostgreSQL triggers.
pub const CHANNEL: &str = "tracelab_rc";
/// The listening connection's application_name, to tell it apart in
/// pg_stat_activity.
pub const APPLICATION: &str = "tracelab result cache";
/// The MariaDB table of change counters.
pub const COUNTERS: &str = "tracelab_rc_changes";

/// The SQL that installs invalidation on `tables` (documented in the
/// README for those who install it by hand).
pub fn setup_sql(engine: Engine, tables: &[String]) -> Vec<String> {
    let mut sql = Vec::new();
    match engine {
        Engine::Postgres => {
            sql.push(format!(
                "create or replace function tracelab_rc_notify() returns trigger language plpgsql as \
                 $$ begin perform pg_notify('{CHANNEL}', lower(TG_TABLE_NAME)); return null; end $$"
            ));
            for t in tables {
                sql.push(format!("drop trigger if exists tracelab_rc on {t}"));
                sql.push(format!(
                    "create trigger tracelab_rc after insert or update or delete or truncate on {t} \
                     for each statement execute function tracelab_rc_notify()"
                ));
            }
        }
        Engine::Mysql => {
            sql.push(format!(
                "create table if not exists {COUNTERS} (tbl varchar(64) primary key, n bigint not null)"
            ));
            for t in tables {
                sql.push(format!("insert ignore into {COUNTERS} values ('{t}', 0)"));
                for (op, suffix) in [("insert", "ins"), ("update", "upd"), ("delete", "del")] {
                    sql.push(format!("drop trigger if exists tracelab_rc_{t}_{suffix}"));
                    sql.push(format!(
                        "create trigger tracelab_rc_{t}_{suffix} after {op} on {t} for each row \
                         insert into {COUNTERS} values ('{t}', 1) on duplicate key update n = n + 1"
                    ));
                }
            }
        }
        Engine::Sqlite => {}
    }
    sql
}

/// Installs invalidation on the cache's tables, before a run.
pub fn setup(engine: Engine, url: &str, tables: &[String]) -> Result<(), RunError> {
    let rt = runtime()?;
    let fail = |e: String| RunError::Usage(format!("--result-cache-setup on {}: {e}", redact(url)));
    rt.block_on(async {
        match engine {
            Engine::Postgres => {
                let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                let driver = tokio::spawn(conn);
                for s in setup_sql(engine, tables) {
                    client
                        .batch_execute(&s)
                        .await
                        .map_err(|e| fail(pg_message(&e)))?;
                }
                drop(client);
                let _ = driver.await;
            }
            Engine::Mysql => {
                let opts = mysql_opts(url).map_err(fail)?;
                let mut c = mysql_async::Conn::new(opts)
                    .await
                    .map_err(|e| fail(e.to_string()))?;
                for s in setup_sql(engine, tables) {
                    c.query_drop(s).await.map_err(|e| fail(e.to_string()))?;
                }
                let _ = c.disconnect().await;
            }
            Engine::Sqlite => {
                return Err(RunError::Usage(
                    "--result-cache works with PostgreSQL and MariaDB: SQLite runs in process, \
                     where there is no round trip to save"
                        .into(),
                ))
            }
        }
        Ok(())
    })
}

fn runtime() -> Result<tokio::runtime::Runtime, RunError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| RunError::Usage(format!("cannot start a runtime: {e}")))
}

fn pg_message(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

pub(crate) fn mysql_opts(url: &str) -> Result<mysql_async::Opts, String> {
    let url_m = match url.strip_prefix("mariadb:") {
        Some(rest) => format!("mysql:{rest}"),
        None => url.to_string(),
    };
    mysql_async::Opts::from_url(&url_m)
        .map_err(|_| format!("cannot read the URL `{}`", redact(url)))
}

/// Runs the channel until `done`; meant for a thread of its own.
pub(crate) fn run(
    cache: Arc<ResultCache>,
    engine: Engine,
    url: String,
    clock: Clock,
    done: Arc<AtomicBool>,
) {
    let Ok(rt) = runtime() else {
        cache.lose_channel();
        return;
    };
    let lag = cache.opts.lag;
    let names = table_index(&cache);
    let cache = &cache;
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async {
        while !done.load(Ordering::Acquire) {
            let r = match engine {
                Engine::Postgres => listen(cache, &names, &url, clock, &done).await,
                Engine::Mysql => poll_counters(cache, &names, &url, clock, &done).await,
                Engine::Sqlite => return,
            };
            if let Err(why) = r {
                cache.channel_lost(&why);
            }
            if !done.load(Ordering::Acquire) {
                tokio::time::sleep((lag / 4).max(Duration::from_millis(5))).await;
            }
        }
    });
}

async fn listen(
    cache: &Arc<ResultCache>,
    names: &HashMap<String, usize>,
    url: &str,
    clock: Clock,
    done: &AtomicBool,
) -> Result<(), String> {
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|_| format!("cannot read the URL `{}`", redact(url)))?;
    config.application_name(APPLICATION);
    let (client, mut connection) = config
        .connect(tokio_postgres::NoTls)
        .await
        .map_err(|e| format!("cannot connect: {}", pg_message(&e)))?;
    // The connection's messages are read here: notifications invalidate as
    // they arrive, before any later reply reaches the heartbeat.
    let lost = Arc::new(AtomicBool::new(false));
    let driver = {
        let (names, lost, cache) = (names.clone(), lost.clone(), cache.clone());
        tokio::task::spawn_local(async move {
            loop {
                let m = std::future::poll_fn(|cx| connection.poll_message(cx)).await;
                match m {
                    Some(Ok(tokio_postgres::AsyncMessage::Notification(n))) => {
                        if let Some(&t) = names.get(&n.payload().to_ascii_lowercase()) {
                            cache.invalidate(t);
                        }
                    }
                    Some(Ok(_)) => {}
                    Some(Err(_)) | None => {
                        lost.store(true, Ordering::Release);
                        return;
                    }
                }
            }
        })
    };
    // The driver goes with this function, however it returns.
    struct Abort(tokio::task::JoinHandle<()>);
    impl Drop for Abort {
        fn drop(&mut self) {
            self.0.abort();
        }
    }
    let _driver = Abort(driver);
    client
        .batch_execute(&format!("LISTEN {CHANNEL}"))
        .await
        .map_err(|e| format!("cannot LISTEN: {}", pg_message(&e)))?;
    // Listening from here on: what was cached before may have missed
    // changes.
    cache.flush();
    let period = (cache.opts.lag / 4).max(Duration::from_millis(2));
    let mut previous: Option<i64> = None;
    while !done.load(Ordering::Acquire) {
        let sent = clock.now();
        client
            .simple_query("select 1")
            .await
            .map_err(|e| format!("the listening connection failed: {}", pg_message(&e)))?;
        if lost.load(Ordering::Acquire) {
            return Err("the listening connection was lost".into());
        }
        if let Some(p) = previous {
            cache.confirm(p);
        }
        previous = Some(sent);
        tokio::time::sleep(period).await;
    }
    Ok(())
}

async fn poll_counters(
    cache: &ResultCache,
    names: &HashMap<String, usize>,
    url: &str,
    clock: Clock,
    done: &AtomicBool,
) -> Result<(), String> {
    let opts = mysql_opts(url)?;
    let mut c = mysql_async::Conn::new(opts)
        .await
        .map_err(|e| format!("cannot connect: {e}"))?;
    let period = (cache.opts.lag / 2).max(Duration::from_millis(2));
    let mut seen: Option<HashMap<String, i64>> = None;
    while !done.load(Ordering::Acquire) {
        let sent = clock.now();
        let rows: Vec<(String, i64)> = c
            .query(format!("select lower(tbl), n from {COUNTERS}"))
            .await
            .map_err(|e| {
                format!("cannot read {COUNTERS} (install it with --result-cache-setup): {e}")
            })?;
        let now: HashMap<String, i64> = rows.into_iter().collect();
        match &seen {
            // The first read after connecting: start afresh.
            None => cache.flush(),
            Some(before) => {
                for (t, n) in &now {
                    if before.get(t) != Some(n) {
                        if let Some(&i) = names.get(t) {
                            cache.invalidate(i);
                        }
                    }
                }
            }
        }
        seen = Some(now);
        cache.confirm(sent);
        tokio::time::sleep(period).await;
    }
    let _ = c.disconnect().await;
    Ok(())
}
