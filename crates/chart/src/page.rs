//! The HTML page around tracelab's reports (`study report`, `prof --html`,
//! `run --report`): one self-contained file with the style they share,
//! and the escaping of text put into it. Apart from the charts, which are
//! SVG put into such pages.

/// A self-contained HTML page (no script, no external file) around `body`,
/// with the style every tracelab report shares.
pub fn page(title: &str, body: &str) -> String {
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>\n{STYLE}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        esc(title)
    )
}

/// The style of tracelab's HTML reports.
pub const STYLE: &str = "body{font-family:system-ui,-apple-system,Segoe UI,Helvetica,Arial,sans-serif;margin:1.5em auto;max-width:1200px;padding:0 1em;color:#222}
h1{font-size:1.5em}h2{font-size:1.25em;border-bottom:2px solid #4e79a7;padding-bottom:.2em;margin-top:2em}h3{font-size:1.05em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.9em}th,td{padding:.2em .6em;border-bottom:1px solid #ddd;text-align:left;vertical-align:top}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:.82em;line-height:1.3}
.facts{color:#555}.note{color:#666;font-size:.85em}svg.chart{display:block;margin:1em 0;max-width:100%;height:auto}a{color:#2b5b8a}
";

/// HTML-escapes text for an element or an attribute.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_holds_its_style_and_escapes_its_title() {
        let p = page("a < b", "<p>x</p>\n");
        assert!(p.starts_with("<!DOCTYPE html>\n"));
        assert!(p.contains("<title>a &lt; b</title>"), "{p}");
        assert!(p.contains(STYLE));
        assert!(p.ends_with("<body>\n<p>x</p>\n</body>\n</html>\n"), "{p}");
    }
}
