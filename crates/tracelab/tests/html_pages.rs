//! Every kind of HTML page tracelab writes (`run --report`, `prof --html`,
//! `study run`'s report.html and `study report --format html`), opened in
//! headless Chromium (Debian's chromium and chromedriver, installed by
//! scripts/test.sh, driven by tests/browser/check_pages.py): it loads
//! without errors, every chart is drawn (a screenshot of each chart shows
//! its data in colour, not only axes), no text of a chart runs into other
//! text or out of the chart (the boxes the browser laid the text out in:
//! prof's p10 labels `<10.000000<100.000000` did), every figure's caption
//! sits above its chart, and every internal link resolves.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::tracelab;

fn fixture(p: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(p)
        .to_string_lossy()
        .into_owned()
}

/// A two-level study on SQLite, three repetitions (intervals to draw).
fn study_file(dir: &Path) -> PathBuf {
    let file = dir.join("pages.toml");
    std::fs::write(
        &file,
        r#"
name = "pages"
about = """
A *small* study for the browser test: `select` on SQLite.

- two levels
- three repetitions
"""
reps = 3
[workload]
sql = "select 1"
statements = 200
[[factors]]
name = "engine"
values = ["sqlite"]
[[factors]]
name = "n"
values = [1, 2]
[report]
rows = "n"
columns = [{ name = "e", label = "elapsed ms", expr = "$elapsed_ms" }]
chart = { title = "Elapsed", lines = ["e"], y_label = "ms" }
"#,
    )
    .unwrap();
    file
}

#[test]
fn every_html_page_loads_draws_its_charts_and_its_links_resolve() {
    let dir = tempfile::Builder::new()
        .prefix("tracelab-pages-")
        .tempdir_in("/tmp")
        .unwrap();
    let d = dir.path();
    // run --report
    let run_page = d.join("run.html");
    let (_, err, code) = tracelab(&[
        "run",
        "--engine",
        "sqlite",
        "--sql",
        "select 1",
        "--rate",
        "200",
        "--runtime",
        "3",
        "--report",
        run_page.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // prof --html, two traces (links from the profile to the statements)
    let prof_page = d.join("prof.html");
    let (_, err, code) = tracelab(&[
        "prof",
        "--html",
        prof_page.to_str().unwrap(),
        &fixture("db-ping/cdb1_ora_15440_PINGTEST.trc"),
        &fixture("trace-combine/main.trc"),
    ]);
    assert_eq!(code, 0, "{err}");
    // study run's report.html, and the same rebuilt by study report
    let store = d.join("store");
    let (_, err, code) = tracelab(&[
        "study",
        "run",
        study_file(d).to_str().unwrap(),
        "--out",
        store.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let study_page = store.join("report.html");
    let (rebuilt, err, code) = tracelab(&[
        "study",
        "report",
        store.to_str().unwrap(),
        "--format",
        "html",
    ]);
    assert_eq!(code, 0, "{err}");
    // The study's page: its description's Markdown rendered (raw HTML in
    // it shown as text), a whisker (95 % interval) on every point of its
    // chart, the chart's title apart from the cell's name.
    let html = std::fs::read_to_string(&study_page).unwrap();
    assert!(
        html.contains("<em>small</em>") && html.contains("<li>two levels</li>"),
        "{html}"
    );
    assert_eq!(html.matches("class=\"whisker\"").count(), 2, "{html}");
    assert!(html.contains(">Elapsed (engine=sqlite)</text>"), "{html}");
    let rebuilt_page = d.join("rebuilt.html");
    std::fs::write(&rebuilt_page, rebuilt).unwrap();

    let pages = [
        (&run_page, 3),
        (&prof_page, 4),
        (&study_page, 1),
        (&rebuilt_page, 1),
    ];
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/browser/check_pages.py");
    let out = Command::new("python3")
        .arg(&script)
        .args(pages.iter().map(|(p, _)| p.as_os_str()))
        .output()
        .expect("python3 runs (scripts/test.sh installs what the tests need)");
    assert!(
        out.status.success(),
        "the browser check failed (scripts/test.sh installs chromium, chromium-driver, selenium and pillow): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value =
        serde_json::from_slice(&out.stdout).expect("JSON from check_pages.py");
    for (page, least_charts) in pages {
        let key = page.to_str().unwrap();
        let r = &v[key];
        assert_eq!(r["ready"], "complete", "{key}: {r}");
        assert_eq!(r["errors"].as_array().unwrap().len(), 0, "{key}: {r}");
        assert_eq!(r["broken_links"].as_array().unwrap().len(), 0, "{key}: {r}");
        assert_eq!(
            r["captions_below"].as_array().unwrap().len(),
            0,
            "{key}: captions under their charts: {}",
            r["captions_below"]
        );
        let charts = r["charts"].as_array().unwrap();
        assert!(
            charts.len() >= least_charts,
            "{key}: {} charts",
            charts.len()
        );
        for (i, c) in charts.iter().enumerate() {
            let (w, h) = (c["width"].as_f64().unwrap(), c["height"].as_f64().unwrap());
            assert!(w >= 100.0 && h >= 50.0, "{key}: chart {i} is {w}x{h}");
            // The data is drawn in colour: a blank or axes-only chart has
            // (next to) no coloured pixels; a flat line across a 720-pixel
            // chart has about a thousand.
            let coloured = c["coloured"].as_f64().unwrap();
            assert!(coloured >= 400.0, "{key}: chart {i} shows no data: {c}");
            // Labels, counts and titles each readable: not on top of
            // another, not cut off at the chart's edge.
            assert!(c["labels"].as_u64().unwrap() >= 2, "{key}: chart {i}: {c}");
            assert_eq!(
                c["overlaps"].as_array().unwrap().len(),
                0,
                "{key}: chart {i}: text over text: {}",
                c["overlaps"]
            );
            assert_eq!(
                c["outside"].as_array().unwrap().len(),
                0,
                "{key}: chart {i}: text cut off at the chart's edge: {}",
                c["outside"]
            );
        }
    }
    // prof's duration histograms: a captioned figure each (so the check
    // of the captions above has figures to look at), their edges in
    // compact units, the exact range of each bar in its tooltip.
    let prof = &v[prof_page.to_str().unwrap()];
    assert!(prof["captioned_figures"].as_u64().unwrap() >= 3, "{prof}");
    let html = std::fs::read_to_string(&prof_page).unwrap();
    assert!(
        html.contains(">100µs</text>") && html.contains(">1ms</text>"),
        "prof's histogram edges"
    );
    assert!(
        html.contains("<title>0.001000 s to under 0.010000 s: "),
        "prof's histogram tooltips"
    );
    // The prof page links its profile rows to its statements.
    assert!(
        v[prof_page.to_str().unwrap()]["internal_links"]
            .as_u64()
            .unwrap()
            > 10
    );
}
