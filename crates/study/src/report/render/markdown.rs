//! The Markdown renderer: pipe tables, fenced listings, no charts.

use std::fmt::Write as _;

use crate::report::document::{Block, Document, Mark, Table};

pub fn render(doc: &Document) -> String {
    super::lines(doc, block)
}

fn block(b: &Block, out: &mut String) {
    match b {
        Block::Title { title, subtitle } => {
            let _ = writeln!(out, "# {title}\n\n{subtitle}\n");
        }
        Block::About(_) | Block::Chart(_) => {}
        Block::Heading { level, text } => {
            let _ = writeln!(out, "{} {text}\n", "#".repeat(*level));
        }
        Block::Sourced { text, source } => {
            let _ = writeln!(out, "## {text}\n\n{source}\n");
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
            match mark {
                Mark::Star => {
                    out.push('\n');
                    for n in notes {
                        let _ = writeln!(out, "\\* {n}\n");
                    }
                }
                Mark::Note => {
                    for n in notes {
                        let _ = writeln!(out, "\n*Note:* {n}");
                    }
                    out.push('\n');
                }
            }
        }
        Block::Labelled { label, items } => {
            for i in items {
                let _ = writeln!(out, "- {label}: {i}");
            }
            if !items.is_empty() {
                out.push('\n');
            }
        }
        Block::Preformatted(p) => {
            let _ = writeln!(out, "```\n{}\n```\n", p.trim_end());
        }
        Block::Listing { caption, text } => {
            let _ = writeln!(out, "### {caption}\n\n```\n{text}```\n");
        }
        Block::Panels(p) => {
            let _ = writeln!(out, "```\n{}```\n", super::text::panels(p));
        }
    }
}

/// A pipe table; a `|` in a cell is escaped.
pub fn table(t: &Table, out: &mut String) {
    let cell = |c: &String| c.replace('|', "\\|");
    let line = |r: &Vec<String>| r.iter().map(cell).collect::<Vec<_>>().join(" | ");
    let _ = writeln!(out, "| {} |", line(&t.head));
    let _ = writeln!(
        out,
        "|{}|",
        (0..t.head.len())
            .map(|i| if i < t.left { "---" } else { "---:" })
            .collect::<Vec<_>>()
            .join("|")
    );
    for r in &t.rows {
        let _ = writeln!(out, "| {} |", line(r));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_escape_the_bar() {
        let t = Table {
            head: vec!["expr".into()],
            rows: vec![vec!["$a || $b".into()]],
            left: 1,
        };
        let mut out = String::new();
        table(&t, &mut out);
        assert_eq!(out, "| expr |\n|---|\n| $a \\|\\| $b |\n");
    }
}
