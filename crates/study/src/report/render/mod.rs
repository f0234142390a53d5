//! One renderer per format, each writing a whole [`Document`]: the
//! sections never see a format.

pub mod html;
pub mod markdown;
pub mod text;

use crate::report::document::{Block, Document};
use crate::report::Format;

/// The document in `format`.
pub fn render(doc: &Document, format: Format) -> String {
    match format {
        Format::Text => text::render(doc),
        Format::Markdown => markdown::render(doc),
        Format::Html => html::render(doc),
    }
}

/// The blocks of `doc` written one after the other by `block`, the
/// report ending with its last line, not a blank one (the text and
/// Markdown renderers; HTML closes its page instead).
fn lines(doc: &Document, block: fn(&Block, &mut String)) -> String {
    let mut out = String::new();
    for b in &doc.blocks {
        block(b, &mut out);
    }
    if out.ends_with("\n\n") {
        out.pop();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::document::{Block, Mark, Table};

    /// A small document with a block of every kind.
    fn doc() -> Document {
        let mut d = Document::default();
        d.push(Block::Title {
            title: "s — a <study>".into(),
            subtitle: "2 of 2 runs".into(),
        });
        d.push(Block::About("An *about* <b>text</b>.".into()));
        d.heading(2, "Results");
        d.table_with(
            Table {
                head: vec!["lv".into(), "t (ms)".into()],
                rows: vec![
                    vec!["a".into(), "1.5*".into()],
                    vec!["bb".into(), "12.0".into()],
                ],
                left: 1,
            },
            Mark::Star,
            vec!["unstable".into()],
        );
        d.chart("<svg></svg>\n".into());
        d.push(Block::Sourced {
            text: "The original".into(),
            source: "Oracle".into(),
        });
        d.push(Block::Labelled {
            label: "original".into(),
            items: vec!["a & b".into()],
        });
        d.push(Block::Listing {
            caption: "lv=a (1 run)".into(),
            text: "CALL  DURATION\n".into(),
        });
        d.push(Block::Panels(vec![
            vec!["x 1".into(), "* y 2".into()],
            vec!["x 3".into()],
        ]));
        d.push(Block::Preformatted("# total 3\n\n".into()));
        d.paragraph("The end.");
        d.table_with(
            Table {
                head: vec!["fact".into()],
                rows: vec![],
                left: 1,
            },
            Mark::Note,
            vec!["a note".into()],
        );
        d
    }

    #[test]
    fn text_renders_every_block() {
        assert_eq!(
            render(&doc(), Format::Text),
            "s — a <study>\n2 of 2 runs\n\nResults\n\nlv  t (ms)\n--  ------\na     1.5*\nbb    12.0\n\
             * unstable\n\nThe original (Oracle)\n\noriginal: a & b\n\nlv=a (1 run)\nCALL  DURATION\n\n\
             x 1      x 3\n* y 2\n\n# total 3\n\nThe end.\n\nfact\n----\nnote: a note\n"
        );
    }

    #[test]
    fn markdown_renders_every_block() {
        assert_eq!(
            render(&doc(), Format::Markdown),
            "# s — a <study>\n\n2 of 2 runs\n\n## Results\n\n| lv | t (ms) |\n|---|---:|\n| a | 1.5* |\n\
             | bb | 12.0 |\n\n\\* unstable\n\n## The original\n\nOracle\n\n- original: a & b\n\n\
             ### lv=a (1 run)\n\n```\nCALL  DURATION\n```\n\n```\nx 1      x 3\n* y 2\n```\n\n\
             ```\n# total 3\n```\n\nThe end.\n\n| fact |\n|---|\n\n*Note:* a note\n"
        );
    }

    #[test]
    fn html_renders_every_block() {
        let h = render(&doc(), Format::Html);
        assert!(h.starts_with("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>s — a &lt;study&gt;</title>\n<style>"), "{h}");
        let body = h.split_once("</style>\n</head>\n<body>\n").unwrap().1;
        assert_eq!(
            body,
            "<h1>s — a &lt;study&gt;</h1>\n<p>2 of 2 runs</p>\n<p>An <em>about</em> &lt;b&gt;text&lt;/b&gt;.</p>\n\
             <h2>Results</h2>\n<table>\n<thead><tr><th>lv</th><th>t (ms)</th></tr></thead>\n<tbody>\n\
             <tr><td class=\"l\">a</td><td class=\"r\">1.5*</td></tr>\n<tr><td class=\"l\">bb</td><td class=\"r\">12.0</td></tr>\n\
             </tbody>\n</table>\n<p class=\"note\">* unstable</p>\n<svg></svg>\n<h2>The original</h2>\n<p>Oracle</p>\n\
             <p>Original: a &amp; b</p>\n<h3>lv=a (1 run)</h3>\n<pre>CALL  DURATION\n</pre>\n\
             <div class=\"side\"><pre>x 1\n<mark>* y 2</mark>\n</pre><pre>x 3\n</pre></div>\n<pre># total 3</pre>\n\
             <p>The end.</p>\n<table>\n<thead><tr><th>fact</th></tr></thead>\n<tbody>\n</tbody>\n</table>\n\
             <p class=\"note\">Note: a note</p>\n</body>\n</html>\n"
        );
    }
}
