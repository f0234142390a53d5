//! `run --report FILE.html`: one self-contained page of a run, as latte and
//! hyperfine users expect to look at one: throughput per second and latency
//! percentiles over the run, the latency histogram, the summary tables.

use std::fmt::Write as _;

use tracelab_chart::{esc, page, render, Chart, Point, Series, XAxis, YScale};

use crate::summary::{Latency, Summary};

/// The page. `what` says what ran (the command line, its password
/// removed), shown under the title.
pub fn html(summary: &Summary, what: &str) -> String {
    let mut b = String::new();
    let _ = writeln!(
        b,
        "<h1>tracelab run</h1>\n<p class=\"facts\"><code>{}</code></p>",
        esc(what)
    );
    let _ = writeln!(
        b,
        "<table>\n<tr><th>sessions</th><th class=\"n\">runtime (s)</th><th class=\"n\">transactions</th><th class=\"n\">executions</th><th class=\"n\">tps</th><th class=\"n\">errors</th></tr>\n<tr><td class=\"n\">{}</td><td class=\"n\">{:.3}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}</td><td class=\"n\">{}</td></tr>\n</table>",
        summary.sessions, summary.runtime_s, summary.transactions, summary.executions, summary.tps, summary.errors
    );
    b.push_str("<h2>Latency (µs)</h2>\n<table>\n<tr><th></th><th class=\"n\">p50</th><th class=\"n\">p90</th><th class=\"n\">p99</th><th class=\"n\">p99.9</th><th class=\"n\">max</th></tr>\n");
    latency_row(&mut b, "all statements", &summary.latency_us);
    // Transactions of several calls: their own latency (BEGIN to the end
    // of COMMIT) and their COMMIT's, which the statements' leaves out.
    let (tx, commit) = (&summary.transaction_latency_us, &summary.commit_latency_us);
    if commit.count > 0 {
        latency_row(
            &mut b,
            &format!("transactions, BEGIN to end of COMMIT ({})", tx.count),
            &tx.latency,
        );
        latency_row(
            &mut b,
            &format!("COMMIT calls ({})", commit.count),
            &commit.latency,
        );
    }
    if let Some(l) = &summary.schedule_lag_us {
        latency_row(&mut b, "schedule lag", l);
    }
    for st in &summary.per_statement {
        let sql: String = st.sql.split_whitespace().collect::<Vec<_>>().join(" ");
        let sql: String = sql.chars().take(60).collect();
        latency_row(&mut b, &format!("#{} {sql}", st.cursor), &st.latency_us);
    }
    b.push_str("</table>\n");

    let t = &summary.timeline;
    if t.is_empty() {
        b.push_str("<p class=\"note\">The run was too short for a second-by-second view.</p>\n");
    } else {
        let x = |s: &crate::live::Second| format!("{:.3}", s.t_s);
        let tps = [Series {
            label: "tps".into(),
            points: t.iter().map(|s| Point::new(x(s), s.tps)).collect(),
        }];
        b.push_str("<h2>Throughput</h2>\n");
        b.push_str(&render(&Chart {
            title: "Transactions per second",
            x_label: "seconds into the run",
            y_label: "transactions per second",
            x: XAxis::Linear,
            y: YScale::Linear,
            series: &tps,
        }));
        let pct = |label: &str, f: fn(&crate::live::Second) -> u64| Series {
            label: label.into(),
            points: t
                .iter()
                .filter(|s| s.max_us > 0)
                .map(|s| Point::new(x(s), f(s) as f64))
                .collect(),
        };
        let lat = [
            pct("p50", |s| s.p50_us),
            pct("p90", |s| s.p90_us),
            pct("p99", |s| s.p99_us),
            pct("max", |s| s.max_us),
        ];
        b.push_str("<h2>Latency over the run</h2>\n");
        b.push_str(&render(&Chart {
            title: "Latency percentiles of each second",
            x_label: "seconds into the run",
            y_label: "latency (µs)",
            x: XAxis::Linear,
            y: YScale::Auto,
            series: &lat,
        }));
    }
    if !summary.latency_histogram.is_empty() {
        let h = &summary.latency_histogram;
        // The buckets are contiguous: the edges are each one's lower bound
        // and the last one's upper bound.
        let edges: Vec<String> = h
            .iter()
            .map(|k| short(k.lo_us))
            .chain(h.last().map(|k| short(k.hi_us)))
            .collect();
        let bins: Vec<(f64, String)> = h
            .iter()
            .map(|k| {
                (
                    k.calls as f64,
                    format!("{} µs to under {} µs", k.lo_us, k.hi_us),
                )
            })
            .collect();
        b.push_str("<h2>Latency histogram</h2>\n");
        b.push_str(&tracelab_chart::histogram(
            "Calls by latency",
            "latency (µs)",
            "calls",
            &edges,
            &bins,
        ));
    }
    b.push_str("<h2>Sessions</h2>\n<table>\n<tr><th>session</th><th class=\"n\">transactions</th><th class=\"n\">executions</th><th class=\"n\">errors</th><th class=\"n\">elapsed (s)</th><th>ended early</th></tr>\n");
    for s in &summary.per_session {
        let _ = writeln!(
            b,
            "<tr><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.3}</td><td>{}</td></tr>",
            s.session,
            s.transactions,
            s.executions,
            s.errors,
            s.elapsed_us as f64 / 1e6,
            esc(s.failure.as_deref().unwrap_or(""))
        );
    }
    b.push_str("</table>\n");
    page("tracelab run", &b)
}

fn latency_row(b: &mut String, label: &str, l: &Latency) {
    let _ = writeln!(
        b,
        "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>",
        esc(label),
        l.p50,
        l.p90,
        l.p99,
        l.p99_9,
        l.max
    );
}

/// 2000 → 2k, 5000000 → 5M: bucket edges short enough for an axis.
fn short(us: u64) -> String {
    match us {
        n if n >= 1_000_000 && n % 1_000_000 == 0 => format!("{}M", n / 1_000_000),
        n if n >= 1_000 && n % 1_000 == 0 => format!("{}k", n / 1_000),
        n => n.to_string(),
    }
}
