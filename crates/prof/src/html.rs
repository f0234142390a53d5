//! One self-contained HTML page (no script, no external file): per trace,
//! the resource profile as a bar chart whose rows link to the statements
//! that spent the time, the statements ranked, a timeline of the session
//! over `tim`, and each statement's tkprof block, duration histograms,
//! binds and recursive statements. Charts are inline SVG written here: a
//! few rectangles do not need a plotting crate.

use std::fmt::Write as _;

use crate::report::{FileProfile, StatementReport};
use crate::stats::{P10, P10_BUCKETS};
use crate::text::{p10_labels, secs6, shown};
use crate::tkprof;

const PALETTE: [&str; 10] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f", "#bab0ac",
];

pub use tracelab_chart::esc;

fn anchor(f: usize, rank: usize) -> String {
    format!("f{f}-s{rank}")
}

/// The page for all profiles.
pub fn render(profiles: &[&FileProfile]) -> String {
    let mut o = String::new();
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>tracelab prof</title>\n<style>\n");
    // The style every tracelab report shares, then prof's own classes.
    o.push_str(tracelab_chart::STYLE);
    o.push_str(
        "td.t{max-width:38em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}.stmt{border-top:1px solid #bbb;margin-top:1.5em}\n\
svg text{font-family:inherit;font-size:11px}\n\
</style>\n</head>\n<body>\n<h1>tracelab prof</h1>\n",
    );
    for (f, p) in profiles.iter().enumerate() {
        file(&mut o, f, p);
    }
    o.push_str("</body>\n</html>\n");
    o
}

fn file(o: &mut String, f: usize, p: &FileProfile) {
    let _ = writeln!(o, "<h2 id=\"f{f}\">{}</h2>", esc(&p.file));
    let mut facts = vec![esc(&p.engine.describe())];
    if let Some(n) = &p.trace_name {
        facts.push(format!("trace file {}", esc(n)));
    }
    if let Some(s) = &p.started {
        facts.push(format!("started {}", esc(s)));
    }
    facts.push(format!("{} lines, {} calls", p.lines, p.calls));
    if p.process_blocks > 0 {
        facts.push(format!(
            "a trcsess merge of {} process blocks",
            p.process_blocks
        ));
    }
    let _ = writeln!(o, "<p class=\"facts\">{}</p>", facts.join(" · "));
    for w in &p.warnings {
        let _ = writeln!(o, "<p class=\"note\">warning: {}</p>", esc(w));
    }
    for n in &p.notes {
        let _ = writeln!(o, "<p class=\"note\">note: {}</p>", esc(n));
    }
    let _ = writeln!(
        o,
        "<p>Response time <b>R = {} s</b>: every call and wait, the time the trace does not account for, and think time (SQL*Net message from client of {} s or more).</p>",
        secs6(p.response_time_us),
        p.thinktime_us as f64 * 1e-6
    );
    profile(o, f, p);
    timeline(o, p);
    ranking(o, f, p);
    for s in p.statements.iter().filter(|s| shown(s)) {
        statement(o, f, p, s);
    }
    o.push_str("<h3>Overall totals (tkprof)</h3>\n<pre>");
    let mut t = String::new();
    tkprof::totals_and_summary(&mut t, p);
    o.push_str(&esc(&t));
    o.push_str("</pre>\n");
}

/// The statements that spent most of a profile row's time, for its links.
fn spenders<'a>(p: &'a FileProfile, name: &str) -> Vec<(&'a StatementReport, i64)> {
    // Think time is SQL*Net message from client on the statements' cursors.
    let name = if name.starts_with("think time") {
        crate::collect::SNMFC
    } else {
        name
    };
    let mut v: Vec<(&StatementReport, i64)> = p
        .statements
        .iter()
        .filter(|s| shown(s))
        .filter_map(|s| {
            let us = match name {
                "CPU: PARSE calls" => s.without_recursive.parse.cpu_us,
                "CPU: EXEC calls" => s.without_recursive.execute.cpu_us,
                "CPU: FETCH calls" => s.without_recursive.fetch.cpu_us,
                _ => s
                    .waits
                    .iter()
                    .find(|w| w.name == name)
                    .map_or(0, |w| w.total_us),
            };
            (us > 0).then_some((s, us))
        })
        .collect();
    v.sort_by_key(|x| std::cmp::Reverse(x.1));
    v.truncate(3);
    v
}

fn profile(o: &mut String, f: usize, p: &FileProfile) {
    o.push_str("<h3>Resource profile</h3>\n");
    let max = p
        .profile
        .iter()
        .map(|c| c.duration_us)
        .max()
        .unwrap_or(1)
        .max(1);
    let row_h = 22;
    let (label_w, bar_w) = (300, 520);
    let h = row_h * p.profile.len() + 10;
    let _ = writeln!(
        o,
        "<svg width=\"{}\" height=\"{h}\" role=\"img\" aria-label=\"resource profile\">",
        label_w + bar_w + 200
    );
    for (i, c) in p.profile.iter().enumerate() {
        let y = i * row_h + 4;
        let w = (c.duration_us.max(0) as f64 / max as f64 * bar_w as f64).round();
        let _ = writeln!(
            o,
            "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text><rect x=\"{}\" y=\"{y}\" width=\"{w}\" height=\"{}\" fill=\"{}\"><title>{}: {} s, {:.1}%</title></rect><text x=\"{}\" y=\"{}\">{} s ({:.1}%)</text>",
            label_w - 6,
            y + 14,
            esc(&c.name),
            label_w,
            row_h - 6,
            PALETTE[i % PALETTE.len()],
            esc(&c.name),
            secs6(c.duration_us),
            c.percent,
            label_w as f64 + w + 6.0,
            y + 14,
            secs6(c.duration_us),
            c.percent
        );
    }
    o.push_str("</svg>\n");
    o.push_str("<table>\n<tr><th>component</th><th class=\"n\">seconds</th><th class=\"n\">%</th><th class=\"n\">calls</th><th class=\"n\">mean</th><th class=\"n\">max</th><th>spent mostly by</th></tr>\n");
    for c in &p.profile {
        let links: Vec<String> = spenders(p, &c.name)
            .iter()
            .map(|(s, us)| {
                format!(
                    "<a href=\"#{}\">#{} {}</a> {} s",
                    anchor(f, s.rank),
                    s.rank,
                    esc(&short_id(s)),
                    secs6(*us)
                )
            })
            .collect();
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{}</td></tr>",
            esc(&c.name),
            secs6(c.duration_us),
            c.percent,
            c.calls,
            secs6(if c.calls > 0 { c.duration_us / c.calls as i64 } else { 0 }),
            secs6(c.max_us),
            links.join(", ")
        );
    }
    let _ = writeln!(
        o,
        "<tr><th>TOTAL</th><th class=\"n\">{}</th><th class=\"n\">100.0</th><th></th><th></th><th></th><th></th></tr>\n</table>",
        secs6(p.response_time_us)
    );
}

fn short_id(s: &StatementReport) -> String {
    if s.placeholder {
        s.sqlid.split(':').next().unwrap_or("").to_string()
    } else {
        s.sqlid.clone()
    }
}

fn timeline(o: &mut String, p: &FileProfile) {
    let t = &p.timeline;
    let (Some(&(first, _)), Some(&(last, _))) = (t.bins.first(), t.bins.last()) else {
        return;
    };
    o.push_str("<h3>Timeline of the session</h3>\n");
    let span = (last - first + t.bin_us).max(1);
    let (w, h, left, top) = (1000.0, 200.0, 60.0, 10.0);
    let max = t
        .bins
        .iter()
        .map(|(_, v)| v.iter().map(|(_, us)| (*us).max(0)).sum::<i64>())
        .max()
        .unwrap_or(1)
        .max(1);
    let _ = writeln!(
        o,
        "<svg width=\"{}\" height=\"{}\" role=\"img\" aria-label=\"timeline\">",
        w + left + 20.0,
        h + top + 80.0
    );
    let bw = (t.bin_us as f64 / span as f64 * w).max(1.0);
    for (start, parts) in &t.bins {
        let x = left + (start - first) as f64 / span as f64 * w;
        let mut y = top + h;
        let mut parts = parts.clone();
        parts.sort_by_key(|(c, _)| *c);
        for (c, us) in parts {
            if us <= 0 {
                continue;
            }
            let bh = us as f64 / max as f64 * h;
            y -= bh;
            let _ = write!(
                o,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{bw:.1}\" height=\"{bh:.1}\" fill=\"{}\"><title>{}: {} s</title></rect>",
                PALETTE[c % PALETTE.len()],
                esc(&p.profile[c].name),
                secs6(us)
            );
        }
    }
    let _ = writeln!(
        o,
        "<line x1=\"{left}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"#444\"/><text x=\"{left}\" y=\"{}\">tim {first}</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">+{} s</text><text x=\"0\" y=\"{}\">{} s</text>",
        top + h,
        left + w,
        top + h,
        top + h + 14.0,
        left + w,
        top + h + 14.0,
        secs6(span),
        top + 10.0,
        secs6(max)
    );
    // Legend: the components in profile order.
    for (i, c) in p.profile.iter().enumerate().take(10) {
        let x = left + (i % 4) as f64 * 250.0;
        let y = top + h + 28.0 + (i / 4) as f64 * 14.0;
        let name: String = c.name.chars().take(36).collect();
        let _ = write!(
            o,
            "<rect x=\"{x}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{y}\">{}</text>",
            y - 9.0,
            PALETTE[i % PALETTE.len()],
            x + 14.0,
            esc(&name)
        );
    }
    o.push_str("</svg>\n");
    let _ = writeln!(
        o,
        "<p class=\"note\">Seconds spent per bin of {} s, by profile component (bins of a trcsess merge add up its processes).</p>",
        secs6(t.bin_us)
    );
}

fn ranking(o: &mut String, f: usize, p: &FileProfile) {
    o.push_str("<h3>Statements by share of R</h3>\n<table>\n<tr><th>rank</th><th>SQL ID</th><th class=\"n\">dep</th><th class=\"n\">elapsed</th><th class=\"n\">% of R</th><th class=\"n\">CPU</th><th class=\"n\">executions</th><th>text</th></tr>\n");
    for s in p.statements.iter().filter(|s| shown(s)) {
        let text: String = s.sql.chars().take(90).collect();
        let _ = writeln!(
            o,
            "<tr><td><a href=\"#{}\">#{}</a></td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{:.1}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"t\">{}</td></tr>",
            anchor(f, s.rank),
            s.rank,
            esc(&short_id(s)),
            s.dep.map_or("?".into(), |d| d.to_string()),
            secs6(s.self_elapsed_us),
            s.percent_of_r,
            secs6(s.self_cpu_us),
            s.executions.count,
            if s.placeholder { "(no PARSING IN CURSOR in the trace)".to_string() } else { esc(&text) }
        );
    }
    o.push_str("</table>\n<p class=\"note\">Elapsed and CPU in the statement's own calls, its recursive statements' time left out.</p>\n");
    if let Some(line) = crate::text::folded_line(p) {
        let _ = writeln!(o, "<p class=\"note\">{}</p>", esc(&line));
    }
}

/// The p10 buckets' edges as a reader says them: compact enough to sit
/// under the line between two bars (mrskew's `0.000010` is nine
/// characters, wider than a bar); the exact range is the bar's tooltip.
const P10_EDGES: [&str; P10_BUCKETS + 1] = [
    "0", "1µs", "10µs", "100µs", "1ms", "10ms", "100ms", "1s", "10s", "100s", "1000s", "",
];

/// A statement's p10 histogram as a small figure: its caption above (the
/// figure's `figcaption`, which also names the chart for a screen reader),
/// the count over each bar with room above the tallest, the bucket edges
/// under the lines between the bars.
fn histogram(o: &mut String, id: &str, title: &str, h: &P10) {
    if h.count() == 0 {
        return;
    }
    let labels = p10_labels();
    let max = h.counts.iter().copied().max().unwrap_or(1).max(1);
    // slot per bar, left and right margins (half an edge label each),
    // room over the tallest bar for its count, bar height, axis to bottom.
    let (slot, left, right, head, hh, foot) = (64.0, 14.0, 22.0, 18.0, 100.0, 22.0);
    let _ = writeln!(
        o,
        "<figure style=\"display:inline-block;margin:0 1.5em 0 0\"><figcaption class=\"note\" id=\"{id}\">{} by elapsed time (p10 buckets)</figcaption><svg width=\"{}\" height=\"{}\" role=\"img\" aria-labelledby=\"{id}\">",
        esc(title),
        left + P10_BUCKETS as f64 * slot + right,
        head + hh + foot,
    );
    let floor = head + hh;
    for (i, &n) in h.counts.iter().enumerate() {
        let x = left + i as f64 * slot;
        let bh = n as f64 / max as f64 * hh;
        // " 3.     0.000010     0.000100": the bucket's bounds in seconds.
        let bounds: Vec<&str> = labels
            .get(i)
            .map_or(Vec::new(), |l| l.split_whitespace().skip(1).collect());
        let range = match bounds.as_slice() {
            [lo, hi] => format!("{lo} s to under {hi} s"),
            _ => String::new(),
        };
        let _ = write!(
            o,
            "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{:.1}\" height=\"{bh:.1}\" fill=\"#4e79a7\"><title>{}: {n}</title></rect>",
            x + 3.0,
            floor - bh,
            slot - 6.0,
            esc(&range),
        );
        if n > 0 {
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{n}</text>",
                x + slot / 2.0,
                floor - bh - 4.0
            );
        }
    }
    for (i, e) in P10_EDGES.iter().enumerate().filter(|(_, e)| !e.is_empty()) {
        let x = left + i as f64 * slot;
        let _ = write!(
            o,
            "<line x1=\"{x}\" x2=\"{x}\" y1=\"{floor}\" y2=\"{}\" stroke=\"#444\"/><text x=\"{x}\" y=\"{}\" text-anchor=\"middle\">{e}</text>",
            floor + 4.0,
            floor + 16.0
        );
    }
    let _ = writeln!(
        o,
        "<line x1=\"{left}\" x2=\"{}\" y1=\"{floor}\" y2=\"{floor}\" stroke=\"#444\"/></svg></figure>",
        left + P10_BUCKETS as f64 * slot
    );
}

fn statement(o: &mut String, f: usize, p: &FileProfile, s: &StatementReport) {
    let _ = writeln!(
        o,
        "<div class=\"stmt\" id=\"{}\"><h3>#{} {} · {:.1}% of R · {} s elapsed, {} s CPU in its own calls</h3>",
        anchor(f, s.rank),
        s.rank,
        esc(&short_id(s)),
        s.percent_of_r,
        secs6(s.self_elapsed_us),
        secs6(s.self_cpu_us)
    );
    let mut t = String::new();
    tkprof::statement(&mut t, s, &p.engine);
    let _ = writeln!(o, "<pre>{}</pre>", esc(&t));
    if !s.children.is_empty() {
        o.push_str("<p>With recursive statements (gross, as the trace lines give them):</p>");
        let mut t = String::new();
        tkprof::call_table(&mut t, &s.with_recursive, p.engine.has_block_stats());
        let _ = writeln!(o, "<pre>{}</pre>", esc(&t));
        o.push_str("<p>Recursive statements run inside it:</p><ul>");
        for c in &s.children {
            let k = &p.statements[c.statement];
            let _ = writeln!(
                o,
                "<li><a href=\"#{}\">#{} {}</a> dep={}: {} calls, {} s elapsed, {} s CPU</li>",
                anchor(f, k.rank),
                k.rank,
                esc(&short_id(k)),
                k.dep.map_or("?".into(), |d| d.to_string()),
                c.calls,
                secs6(c.elapsed_us),
                secs6(c.cpu_us)
            );
        }
        o.push_str("</ul>\n");
    }
    if !s.parents.is_empty() {
        let ps: Vec<String> = s
            .parents
            .iter()
            .map(|&i| {
                let k = &p.statements[i];
                format!(
                    "<a href=\"#{}\">#{} {}</a>",
                    anchor(f, k.rank),
                    k.rank,
                    esc(&short_id(k))
                )
            })
            .collect();
        let _ = writeln!(o, "<p>Run inside {}.</p>", ps.join(", "));
    }
    let id = anchor(f, s.rank);
    histogram(
        o,
        &format!("{id}-hx"),
        "executions (EXEC + FETCHes)",
        &s.execution_histogram,
    );
    histogram(o, &format!("{id}-he"), "EXEC calls", &s.exec_histogram);
    histogram(o, &format!("{id}-hf"), "FETCH calls", &s.fetch_histogram);
    if s.binds.executions > 0 {
        let _ = writeln!(
            o,
            "<p>Bind sets: {}{} distinct in {} executions with binds.</p><table><tr><th class=\"n\">executions</th><th>values</th></tr>",
            if s.binds.capped { "at least " } else { "" },
            s.binds.distinct,
            s.binds.executions
        );
        for b in &s.binds.sets {
            let vals: Vec<String> = b
                .values
                .iter()
                .enumerate()
                .map(|(i, v)| format!(":{}={}", i + 1, esc(v.as_deref().unwrap_or("NULL"))))
                .collect();
            let _ = writeln!(
                o,
                "<tr><td class=\"n\">{}</td><td><code>{}</code></td></tr>",
                b.executions,
                vals.join(" ")
            );
        }
        o.push_str("</table>\n");
    }
    if let Some(x) = &s.slowest {
        let _ = writeln!(
            o,
            "<p class=\"note\">Slowest execution: {} s{}.</p>",
            secs6(x.elapsed_us),
            if x.line > 0 {
                format!(", EXEC at line {}", x.line)
            } else {
                String::new()
            }
        );
    }
    o.push_str("</div>\n");
}
