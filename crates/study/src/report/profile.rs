//! The profiles' section of the report: mrskew's table of each cell's
//! traces (the proxy's server-side ones, the client's, the server
//! tracer's).

use tracelab_query::{Agg, Groups, Layout, Report};

use crate::store::ProfileRow;

/// mrskew's table of a cell, by skew's own report: the rows of its runs
/// added up (durations and calls summed, the least minimum, the greatest
/// maximum, in whole microseconds as the traces have them), sorted by
/// duration, ties in the order the rows came (each run's are in skew's
/// order: first appearance), the rest past `top` folded into `N others`.
pub fn table(rows: &[&ProfileRow], top: usize) -> String {
    let us = |s: f64| (s * 1e6).round() as i64;
    let mut groups = Groups::default();
    for (i, r) in rows.iter().enumerate() {
        let a = Agg::micros(
            i128::from(us(r.duration)),
            r.calls,
            us(r.min),
            us(r.max),
            (0, 0, i as u64),
        );
        match groups.map.get_mut(r.name.as_str()) {
            Some(x) => x.merge(&a),
            None => {
                groups.map.insert(r.name.as_str().into(), a);
            }
        }
    }
    let o = Layout {
        top,
        ..Layout::default()
    };
    Report::build(groups, &o, "CALL-NAME", "DURATION").render(&o)
}

/// The report's section: mrskew's table of each cell's traces, per
/// source asked for (the proxy's server-side traces, the client's).
pub fn section(
    st: &crate::store::Stored,
    study: &crate::model::spec::Study,
    doc: &mut crate::report::Document,
) {
    let Some(spec) = &study.report.profiles else {
        return;
    };
    let filter = study.measure.profile_where.as_deref().unwrap_or("1");
    let pos = |f: &str, l: &str| crate::report::level_pos(study, f, l);
    let mut runs: Vec<&crate::store::StoredRun> = st.runs.iter().collect();
    runs.sort_by_key(|r| {
        (
            r.cell.iter().map(|(f, l)| pos(f, l)).collect::<Vec<_>>(),
            r.seq,
        )
    });
    for source in &spec.of {
        let what = match source.as_str() {
            "proxy" => "the proxy's server-side traces",
            "server" => "the server's traces (from inside PostgreSQL)",
            _ => "the client's traces",
        };
        let title = if filter == "1" {
            format!("Profiles of {what}")
        } else {
            format!("Profiles of {what} (--where='{filter}')")
        };
        let mut cells: Vec<(String, Vec<usize>)> = Vec::new();
        for r in &runs {
            let key = crate::plan::cell_key(&r.cell);
            if !st
                .profiles
                .iter()
                .any(|(s, p)| *s == r.seq && &p.source == source)
            {
                continue;
            }
            match cells.iter_mut().find(|(k, _)| *k == key) {
                Some(c) => c.1.push(r.seq),
                None => cells.push((key, vec![r.seq])),
            }
        }
        if cells.is_empty() {
            continue;
        }
        doc.heading(2, title);
        for (key, seqs) in &cells {
            let rows: Vec<&ProfileRow> = st
                .profiles
                .iter()
                .filter(|(s, p)| seqs.contains(s) && &p.source == source)
                .map(|(_, p)| p)
                .collect();
            let head = format!(
                "{key} ({} run{})",
                seqs.len(),
                if seqs.len() == 1 { "" } else { "s" }
            );
            let t = table(&rows, spec.top);
            doc.push(crate::report::document::Block::Listing {
                caption: head,
                text: t,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(name: &str, d: f64, calls: u64, min: f64, max: f64) -> ProfileRow {
        ProfileRow {
            source: "proxy".into(),
            name: name.into(),
            duration: d,
            calls,
            min,
            max,
        }
    }

    #[test]
    fn a_cells_runs_add_up_into_mrskews_table() {
        let a = r("SQL*Net message from client", 3.0, 100, 0.01, 0.05);
        let b = r("SQL*Net message from client", 1.0, 50, 0.005, 0.02);
        let c = r("EXEC", 1.0, 150, 0.001, 0.02);
        let t = table(&[&a, &b, &c], 10);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0].split_whitespace().next(), Some("CALL-NAME"));
        assert!(
            lines[2].starts_with("SQL*Net message from client")
                && lines[2].contains("4.000000")
                && lines[2].contains("80.0%")
                && lines[2].contains("150")
                && lines[2].contains("0.005000")
                && lines[2].contains("0.050000"),
            "{t}"
        );
        assert!(lines[3].starts_with("EXEC"), "{t}");
        assert!(t.contains("TOTAL (2)"), "{t}");
        assert!(t.contains("5.000000  100.0%"), "{t}");
    }

    /// Runs of a call made once each (exec-model's one query a session):
    /// their durations add up, and the mean lies between the extremes.
    #[test]
    fn runs_of_one_call_each_add_up() {
        let a = r("EXEC", 0.194, 1, 0.194, 0.194);
        let b = r("EXEC", 0.210, 1, 0.210, 0.210);
        let t = table(&[&a, &b], 10);
        let exec = t.lines().find(|l| l.starts_with("EXEC")).unwrap();
        let cols: Vec<&str> = exec.split_whitespace().collect();
        // EXEC DURATION % CALLS MEAN MIN MAX
        assert_eq!(
            cols[1..],
            ["0.404000", "100.0%", "2", "0.202000", "0.194000", "0.210000"],
            "{t}"
        );
    }
}
