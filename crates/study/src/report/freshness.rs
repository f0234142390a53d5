//! The freshness check's section of the report: per engine, the largest
//! staleness seen against the cache's lag, and how long each session took
//! to see each change.

use crate::model::spec::Study;
use crate::report::{fmt_num, Document, Table};
use crate::store::Stored;

/// The report's section: per engine, what the check found.
pub fn section(st: &Stored, study: &Study, doc: &mut Document) {
    if st.freshness.is_empty() {
        return;
    }
    let title = "Freshness: a writer changes a cached table during a cached run";
    doc.heading(2, title);
    let cell = study
        .freshness
        .as_ref()
        .map(|f| {
            f.levels
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    for (engine, by) in &st.freshness {
        let Some(w) = by.get(&-1) else { continue };
        let g = |n: &str| w.get(n).copied().unwrap_or(0.0);
        let lag = g("lag_ms");
        let stale = g("max_staleness_cached_ms");
        let ok = stale <= lag && g("unseen") == 0.0 && g("backwards") == 0.0;
        let text = format!(
            "engine={engine} {cell}: {} sessions read for {} s (lag {} ms) while a writer made {} change{}, one every {} ms. \
             {} results checked, {} from the cache. Largest staleness of a cached result: {} ms; of a result from the server \
             (in flight when the change committed): {} ms. Every session saw every change within {} ms{}. \
             {}",
            fmt_num(g("sessions"), 0),
            fmt_num(g("runtime_s"), 0),
            fmt_num(lag, 0),
            fmt_num(g("changes"), 0),
            if g("changes") == 1.0 { "" } else { "s" },
            fmt_num(g("every_ms"), 0),
            fmt_num(g("reads"), 0),
            fmt_num(g("cached_reads"), 0),
            fmt_num(stale, 3),
            fmt_num(g("max_staleness_server_ms"), 3),
            fmt_num(g("max_visible_ms"), 3),
            if g("unseen") > 0.0 {
                format!(
                    ", except {} times a session read on for a lag without seeing a change",
                    fmt_num(g("unseen"), 0)
                )
            } else {
                String::new()
            },
            if ok {
                "Within the lag: yes.".to_string()
            } else {
                format!(
                    "Within the lag: NO (staleness {} ms against {} ms; {} results older than one the session had had for the same binds).",
                    fmt_num(stale, 3),
                    fmt_num(lag, 0),
                    fmt_num(g("backwards"), 0)
                )
            }
        );
        let mut rows = Vec::new();
        for (s, v) in by.iter().filter(|(s, _)| **s >= 0) {
            let g = |n: &str| v.get(n).copied().unwrap_or(0.0);
            rows.push(vec![
                (s + 1).to_string(),
                fmt_num(g("reads"), 0),
                fmt_num(g("cached_reads"), 0),
                fmt_num(g("highest_change"), 0),
                fmt_num(g("max_staleness_cached_ms"), 3),
                fmt_num(g("max_staleness_server_ms"), 3),
                fmt_num(g("max_visible_ms"), 3),
                fmt_num(g("unseen"), 0),
            ]);
        }
        let table = Table {
            head: [
                "session",
                "reads",
                "from cache",
                "last change seen",
                "staleness cached (ms)",
                "staleness server (ms)",
                "saw each change within (ms)",
                "unseen",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            rows,
            left: 1,
        };
        doc.paragraph(text);
        doc.table(table);
    }
}
