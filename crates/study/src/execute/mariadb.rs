//! MariaDB as a study engine: the options of the private server, whose
//! `restart` settings (thread_handling, buffer pool size) are mariadbd
//! options. Its scripts, probes and facts go through the engine layer's
//! administrative connection (`tracelab_engine::admin`).

use std::collections::BTreeMap;

use crate::model::spec::Loaded;

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
