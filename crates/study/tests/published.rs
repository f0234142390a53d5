//! Every built-in study puts the original's figures beside its own: its
//! study file has `[report.published]` (figures, ratios or directions of
//! the original), and its page in docs/studies/ has a side-by-side table
//! (the original's figure, ours, our 95 % interval, agreement or not).

use std::path::PathBuf;

use tracelab_study::builtin::STUDIES;

fn pages() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/studies")
}

#[test]
fn every_built_in_study_has_the_originals_figures() {
    assert!(STUDIES.len() >= 5, "the five built-in studies");
    for (name, _, _) in STUDIES {
        let l = tracelab_study::load(name).unwrap_or_else(|e| panic!("{name}: {e}"));
        let p = l
            .study
            .report
            .published
            .as_ref()
            .unwrap_or_else(|| panic!("{name}: no [report.published]"));
        assert!(
            !p.cells.is_empty() || !p.ratios.is_empty(),
            "{name}: [report.published] gives no figure of the original"
        );
        assert!(!p.title.is_empty(), "{name}: the original is not named");
    }
}

/// A Markdown table's header row naming the original's figure, ours and
/// our interval.
fn side_by_side_header(line: &str) -> bool {
    let l = line.trim().to_lowercase();
    l.starts_with('|') && l.contains("original") && l.contains("ours") && l.contains("interval")
}

#[test]
fn every_study_page_has_a_side_by_side_table() {
    let mut seen = 0;
    for e in std::fs::read_dir(pages()).unwrap() {
        let path = e.unwrap().path();
        if path.extension().and_then(|x| x.to_str()) != Some("md") {
            continue;
        }
        seen += 1;
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let at = lines
            .iter()
            .position(|l| side_by_side_header(l))
            .unwrap_or_else(|| {
                panic!(
                    "{}: no side-by-side table (a header row with original, ours and interval)",
                    path.display()
                )
            });
        // A Markdown table: the separator row, then at least one row.
        assert!(
            lines
                .get(at + 1)
                .is_some_and(|l| l.trim_start().starts_with("|-")
                    || l.trim_start().starts_with("| -")
                    || l.trim_start().starts_with("|:")),
            "{}: the side-by-side header is not followed by a table's separator row",
            path.display()
        );
        assert!(
            lines
                .get(at + 2)
                .is_some_and(|l| l.trim_start().starts_with('|')),
            "{}: the side-by-side table has no row",
            path.display()
        );
    }
    // Every built-in study has its page.
    for (name, _, _) in STUDIES {
        assert!(
            pages().join(format!("{name}.md")).exists(),
            "docs/studies/{name}.md: no page"
        );
    }
    assert!(seen >= STUDIES.len());
}
