//! What a report says about the server a study ran on: its version and
//! the settings the studies depend on, keyed `ENGINE.version` and
//! `ENGINE.setting.NAME`.

use std::collections::BTreeMap;

use crate::admin::Admin;
use crate::Engine;

/// The PostgreSQL settings a report shows (the WAL and checkpoint ones
/// that decide commit times, memory, autovacuum).
const POSTGRES_SETTINGS: &str =
    "select name, current_setting(name) from pg_settings where name in \
     ('synchronous_commit','wal_level','wal_sync_method','fsync','full_page_writes',\
      'shared_buffers','wal_buffers','max_wal_size','checkpoint_timeout',\
      'track_wal_io_timing','wal_skip_threshold','max_wal_senders','autovacuum')";

/// The MariaDB variables a report shows (thread pool, buffer pool, log
/// flushing, in-memory temporary tables).
const MARIADB_SETTINGS: &str =
    "SELECT LOWER(VARIABLE_NAME), VARIABLE_VALUE FROM information_schema.GLOBAL_VARIABLES \
     WHERE VARIABLE_NAME IN ('VERSION', 'THREAD_POOL_SIZE', 'THREAD_POOL_MAX_THREADS', \
     'THREAD_POOL_STALL_LIMIT', 'THREAD_POOL_OVERSUBSCRIBE', 'THREAD_CACHE_SIZE', \
     'INNODB_BUFFER_POOL_SIZE', 'INNODB_FLUSH_LOG_AT_TRX_COMMIT', 'PERFORMANCE_SCHEMA', \
     'TMP_TABLE_SIZE', 'MAX_HEAP_TABLE_SIZE', 'SORT_BUFFER_SIZE')";

/// Version and settings of the server behind `admin`; what cannot be read
/// is left out (a report without it is still a report).
pub fn server_facts(admin: &mut dyn Admin) -> BTreeMap<String, String> {
    let mut f = BTreeMap::new();
    let name = admin.engine().name();
    let pairs = |rows: Vec<crate::admin::TextRow>| -> Vec<(String, String)> {
        rows.iter()
            .filter_map(|r| Some((r.get(0)?.to_string(), r.get(1)?.to_string())))
            .collect()
    };
    match admin.engine() {
        Engine::Postgres => {
            if let Some(v) = admin
                .query("select version()")
                .ok()
                .and_then(|r| Some(r.first()?.get(0)?.to_string()))
            {
                f.insert(format!("{name}.version"), v);
            }
            if let Ok(rows) = admin.query(POSTGRES_SETTINGS) {
                for (k, v) in pairs(rows) {
                    f.insert(format!("{name}.setting.{k}"), v);
                }
            }
        }
        Engine::Mysql => {
            if let Ok(rows) = admin.query(MARIADB_SETTINGS) {
                for (k, v) in pairs(rows) {
                    let key = if k == "version" {
                        format!("{name}.version")
                    } else {
                        format!("{name}.setting.{k}")
                    };
                    f.insert(key, v);
                }
            }
        }
        Engine::Sqlite => {}
    }
    f
}
