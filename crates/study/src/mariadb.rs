//! MariaDB as a study engine: its scripts and probes through a client
//! (so that their numeric columns become measurements, as on PostgreSQL),
//! its facts, and the options of the private server, whose `restart`
//! settings (thread_handling, buffer pool size) are mariadbd options.

use std::collections::BTreeMap;

use mysql_async::prelude::Queryable;

use crate::error::StudyError;
use crate::spec::Loaded;

fn runtime() -> Result<tokio::runtime::Runtime, StudyError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| StudyError::Database(format!("cannot start a runtime: {e}")))
}

/// A value as a number, when it is one.
fn number(v: &mysql_async::Value) -> Option<f64> {
    use mysql_async::Value;
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::UInt(u) => Some(*u as f64),
        Value::Float(f) => Some(f64::from(*f)),
        Value::Double(d) => Some(*d),
        Value::Bytes(b) => std::str::from_utf8(b).ok()?.trim().parse().ok(),
        _ => None,
    }
}

/// Runs `scripts` one after the other on one connection, each sent whole
/// as one multi-statement query: the server parses it, stored programs
/// (`CREATE PROCEDURE ... BEGIN ...; ...; END`) included, which a split at
/// `;` would break. The numeric columns of any row of any of its results
/// go `into` the measurements. `what` names the script in errors (`setup`,
/// `probe model`), with the statement, never the URL.
pub fn script(
    url: &str,
    scripts: &[String],
    what: &str,
    into: &mut BTreeMap<String, f64>,
    short: impl Fn(&str) -> String,
) -> Result<(), StudyError> {
    let rt = runtime()?;
    rt.block_on(async {
        let opts = mysql_async::Opts::from_url(url)
            .map_err(|e| StudyError::Database(format!("{what}: {e}")))?;
        let mut c = mysql_async::Conn::new(opts)
            .await
            .map_err(|e| StudyError::Database(format!("{what}: connect: {e}")))?;
        for st in scripts {
            let r: Result<(), mysql_async::Error> = async {
                let mut res = c.query_iter(st.as_str()).await?;
                while !res.is_empty() {
                    let rows: Vec<mysql_async::Row> = res.collect().await?;
                    for r in rows {
                        let cols = r.columns_ref().to_vec();
                        for (i, col) in cols.iter().enumerate() {
                            if let Some(v) = r.as_ref(i).and_then(number) {
                                into.insert(col.name_str().into_owned(), v);
                            }
                        }
                    }
                }
                Ok(())
            }
            .await;
            if let Err(e) = r {
                let _ = c.disconnect().await;
                return Err(StudyError::Database(format!(
                    "{what}: `{}`: {e}",
                    short(st)
                )));
            }
        }
        let _ = c.disconnect().await;
        Ok(())
    })
}

/// Version and the settings the studies depend on.
pub fn facts(url: &str) -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let Ok(rt) = runtime() else { return f };
    let _ = rt.block_on(async {
        let opts = mysql_async::Opts::from_url(url).ok()?;
        let mut c = mysql_async::Conn::new(opts).await.ok()?;
        let rows: Vec<(String, String)> = c
            .query(
                "SELECT LOWER(VARIABLE_NAME), VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES \
                 WHERE VARIABLE_NAME IN ('VERSION', 'THREAD_POOL_SIZE', 'THREAD_POOL_MAX_THREADS', \
                 'THREAD_POOL_STALL_LIMIT', 'THREAD_POOL_OVERSUBSCRIBE', 'THREAD_CACHE_SIZE', \
                 'INNODB_BUFFER_POOL_SIZE', 'INNODB_FLUSH_LOG_AT_TRX_COMMIT', 'PERFORMANCE_SCHEMA', \
                 'TMP_TABLE_SIZE', 'MAX_HEAP_TABLE_SIZE', 'SORT_BUFFER_SIZE')",
            )
            .await
            .ok()?;
        for (k, v) in rows {
            let key = if k == "version" {
                "mariadb.version".to_string()
            } else {
                format!("mariadb.setting.{k}")
            };
            f.insert(key, v);
        }
        let _ = c.disconnect().await;
        Some(())
    });
    f
}

/// mariadbd options of the private server: what the study's measurements
/// need, then the `restart` settings of the levels in force.
pub fn server_options(l: &Loaded, restart: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if l.study.measure.backend_cpu {
        // For the CPU of the sessions' threads: performance_schema names
        // each session's OS thread (about 0.05 s more to start, 100 MB
        // more memory), and no thread cache, so that a session's thread
        // has done no other session's work.
        out.push(("performance_schema".to_string(), "ON".to_string()));
        out.push(("thread_cache_size".to_string(), "0".to_string()));
    }
    out.extend(restart.iter().map(|(k, v)| (k.clone(), v.clone())));
    out
}
