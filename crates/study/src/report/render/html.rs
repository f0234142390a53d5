//! The HTML renderer: one standalone page, its style inline, the charts
//! as inline SVG.

use std::fmt::Write as _;

use crate::report::document::{Block, Document, Mark, Table};
use crate::report::esc;

const CSS: &str = "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\
table{border-collapse:collapse;margin:1em 0}\
th,td{padding:.2em .6em;border-bottom:1px solid #ddd}\
th{background:#f4f4f4}td.r{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\
p.note{color:#844}svg{display:block;margin:1em 0}\
div.side{display:flex;gap:2em;overflow-x:auto}mark{background:#ffe58a}";

pub fn render(doc: &Document) -> String {
    let mut out = String::new();
    for b in &doc.blocks {
        block(b, &mut out);
    }
    out.push_str("</body>\n</html>\n");
    out
}

fn block(b: &Block, out: &mut String) {
    match b {
        Block::Title { title, subtitle } => {
            let _ = writeln!(
                out,
                "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n<h1>{}</h1>\n<p>{}</p>",
                esc(title),
                CSS,
                esc(title),
                esc(subtitle)
            );
        }
        Block::About(a) => {
            if !a.trim().is_empty() {
                out.push_str(&markdown_html(a.trim()));
            }
        }
        Block::Heading { level, text } => {
            let _ = writeln!(out, "<h{level}>{}</h{level}>", esc(text));
        }
        Block::Sourced { text, source } => {
            let _ = writeln!(out, "<h2>{}</h2>\n<p>{}</p>", esc(text), esc(source));
        }
        Block::Paragraph(p) => {
            let _ = writeln!(out, "<p>{}</p>", esc(p));
        }
        Block::Table {
            table: t,
            mark,
            notes,
        } => {
            table(t, out);
            let prefix = match mark {
                Mark::Star => "*",
                Mark::Note => "Note:",
            };
            for n in notes {
                let _ = writeln!(out, "<p class=\"note\">{prefix} {}</p>", esc(n));
            }
        }
        Block::Labelled { label, items } => {
            let mut c = label.chars();
            let label: String = c
                .next()
                .map(|f| f.to_uppercase().chain(c).collect())
                .unwrap_or_default();
            for i in items {
                let _ = writeln!(out, "<p>{label}: {}</p>", esc(i));
            }
        }
        Block::Preformatted(p) => {
            let _ = writeln!(out, "<pre>{}</pre>", esc(p.trim_end()));
        }
        Block::Listing { caption, text } => {
            let _ = writeln!(out, "<h3>{}</h3>\n<pre>{}</pre>", esc(caption), esc(text));
        }
        Block::Panels(p) => panels(p, out),
        Block::Chart(svg) => out.push_str(svg),
    }
}

/// Panels side by side in a flex row; a line starting `* ` marked.
fn panels(blocks: &[Vec<String>], out: &mut String) {
    out.push_str("<div class=\"side\">");
    for b in blocks {
        out.push_str("<pre>");
        for l in b {
            if l.starts_with("* ") {
                let _ = writeln!(out, "<mark>{}</mark>", esc(l));
            } else {
                let _ = writeln!(out, "{}", esc(l));
            }
        }
        out.push_str("</pre>");
    }
    out.push_str("</div>\n");
}

pub fn table(t: &Table, out: &mut String) {
    out.push_str("<table>\n<thead><tr>");
    for h in &t.head {
        let _ = write!(out, "<th>{}</th>", esc(h));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in &t.rows {
        out.push_str("<tr>");
        for (i, c) in r.iter().enumerate() {
            let class = if i < t.left { "l" } else { "r" };
            let _ = write!(out, "<td class=\"{class}\">{}</td>", esc(c));
        }
        out.push_str("</tr>\n");
    }
    out.push_str("</tbody>\n</table>\n");
}

/// A study's `about` text, written in Markdown, as HTML. Raw HTML in it is
/// shown as text: a study file is not trusted to put markup in a report.
fn markdown_html(text: &str) -> String {
    use pulldown_cmark::{Event, Parser};
    let events = Parser::new(text).map(|e| match e {
        Event::Html(h) | Event::InlineHtml(h) => Event::Text(h),
        e => e,
    });
    let mut html = String::new();
    pulldown_cmark::html::push_html(&mut html, events);
    html
}
