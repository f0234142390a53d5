//! The plain-text renderer: fixed-width tables, headings as lines of their
//! own, no charts.

use std::fmt::Write as _;

use crate::report::document::{Block, Document, Mark, Table};

/// How many panels stand side by side: strace's table is about 70
/// characters wide, so two make a line a terminal or a wiki still shows;
/// more go on in bands below.
const ACROSS: usize = 2;

pub fn render(doc: &Document) -> String {
    super::lines(doc, block)
}

fn block(b: &Block, out: &mut String) {
    match b {
        Block::Title { title, subtitle } => {
            let _ = writeln!(out, "{title}\n{subtitle}\n");
        }
        Block::About(_) | Block::Chart(_) => {}
        Block::Heading { text, .. } => {
            let _ = writeln!(out, "{text}\n");
        }
        Block::Sourced { text, source } => {
            let _ = writeln!(out, "{text} ({source})\n");
        }
        Block::Paragraph(p) => {
            let _ = writeln!(out, "{p}\n");
        }
        Block::Table {
            table: t,
            mark,
            notes,
        } => {
            table(t, out);
            let prefix = match mark {
                Mark::Star => "*",
                Mark::Note => "note:",
            };
            for n in notes {
                let _ = writeln!(out, "{prefix} {n}");
            }
            out.push('\n');
        }
        Block::Labelled { label, items } => {
            for i in items {
                let _ = writeln!(out, "{label}: {i}");
            }
            if !items.is_empty() {
                out.push('\n');
            }
        }
        Block::Preformatted(p) => {
            if !p.trim_end().is_empty() {
                let _ = writeln!(out, "{}\n", p.trim_end());
            }
        }
        Block::Listing { caption, text } => {
            let _ = writeln!(out, "{caption}\n{text}");
        }
        Block::Panels(p) => {
            out.push_str(&panels(p));
            out.push('\n');
        }
    }
}

/// A table with its columns padded to their widest cell.
pub fn table(t: &Table, out: &mut String) {
    let n = t.head.len();
    let mut w = vec![0; n];
    for r in std::iter::once(&t.head).chain(&t.rows) {
        for (i, c) in r.iter().enumerate().take(n) {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let line = |r: &Vec<String>, out: &mut String| {
        let cells: Vec<String> = (0..n)
            .map(|i| {
                let c = r.get(i).map_or("", String::as_str);
                if i < t.left {
                    format!("{c:<width$}", width = w[i])
                } else {
                    format!("{c:>width$}", width = w[i])
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    };
    line(&t.head, out);
    let _ = writeln!(
        out,
        "{}",
        w.iter()
            .map(|x| "-".repeat(*x))
            .collect::<Vec<_>>()
            .join("  ")
    );
    for r in &t.rows {
        line(r, out);
    }
}

/// Panels next to each other, [`ACROSS`] at a time, each padded to its
/// widest line; bands of them one under the other, a blank line apart.
pub fn panels(blocks: &[Vec<String>]) -> String {
    blocks
        .chunks(ACROSS)
        .map(band)
        .collect::<Vec<_>>()
        .join("\n")
}

/// One band of [`panels`].
fn band(blocks: &[Vec<String>]) -> String {
    let widths: Vec<usize> = blocks
        .iter()
        .map(|b| b.iter().map(|l| l.chars().count()).max().unwrap_or(0))
        .collect();
    let height = blocks.iter().map(Vec::len).max().unwrap_or(0);
    let mut out = String::new();
    for i in 0..height {
        let cells: Vec<String> = blocks
            .iter()
            .zip(&widths)
            .map(|(b, w)| format!("{:<w$}", b.get(i).map_or("", String::as_str), w = *w))
            .collect();
        let _ = writeln!(out, "{}", cells.join("    ").trim_end());
    }
    out
}
