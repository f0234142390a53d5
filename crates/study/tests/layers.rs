//! The study crate's layers import in one direction: every `crate::` path
//! in `src/` names its own layer or one below it (the order is in
//! `src/lib.rs` and docs/architecture.md). A module that reached up (the
//! model importing the executor, say) would bring back the import circle
//! the layers removed; this test names each such line.

use std::path::{Path, PathBuf};

/// Each layer's rank: a module may import its own layer and layers of a
/// lower rank. `execute` and `report` share a rank: neither may import the
/// other. `lib.rs`, the crate's face, is above them all.
const LAYERS: &[(&str, u32)] = &[
    ("error", 0),
    ("model", 1),
    ("plan", 2),
    ("store", 3),
    ("execute", 4),
    ("report", 4),
];

/// The rank of the face (`lib.rs` and what it defines: `crate::load`...).
const FACE: u32 = u32::MAX;

fn rank(layer: &str) -> Option<u32> {
    LAYERS.iter().find(|(n, _)| *n == layer).map(|(_, r)| *r)
}

/// The layer a source file belongs to: its directory under `src/`, or its
/// name for a file directly in `src/` (`lib` is the face).
fn layer_of(rel: &Path) -> String {
    let first = rel.components().next().unwrap().as_os_str();
    let first = first.to_string_lossy();
    first.strip_suffix(".rs").unwrap_or(&first).to_string()
}

/// Every top-level name a line reaches through `crate::`: `crate::a::b`
/// gives `a`, `crate::{a, b::c}` gives `a` and `b`.
fn targets(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = line;
    while let Some(i) = rest.find("crate::") {
        // `tracelab_study::crate::` cannot occur; a word before `crate`
        // (`my_crate::`) is not this crate.
        let before = rest[..i].chars().last();
        rest = &rest[i + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let body = &group[..group.find('}').unwrap_or(group.len())];
            for item in body.split(',') {
                let name = item.trim().split("::").next().unwrap_or("").trim();
                if !name.is_empty() {
                    out.push(name.to_string());
                }
            }
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.push(name);
        }
    }
    out
}

/// The offending lines of one file: `file:line: layer imports target`.
fn violations(rel: &Path, text: &str) -> Vec<String> {
    let layer = layer_of(rel);
    let own = if layer == "lib" {
        Some(FACE)
    } else {
        rank(&layer)
    };
    let Some(own) = own else {
        return vec![format!(
            "src/{}: in no layer (expected a file under one of {:?}, or lib.rs)",
            rel.display(),
            LAYERS.iter().map(|(n, _)| *n).collect::<Vec<_>>()
        )];
    };
    let mut out = Vec::new();
    // A `use crate::{...}` group may span lines: join a line with the next
    // while its braces are open.
    let mut pending = String::new();
    let mut start = 0;
    for (i, line) in text.lines().enumerate() {
        let code = line.trim_start();
        if code.starts_with("//") {
            continue;
        }
        if pending.is_empty() {
            start = i + 1;
        }
        pending.push_str(code);
        pending.push(' ');
        if pending.matches('{').count() > pending.matches('}').count()
            && pending.contains("crate::{")
        {
            continue;
        }
        if pending.contains("super::super") {
            // A path up past the parent module hides its layer from this
            // check: the layers are named through `crate::`.
            out.push(format!(
                "src/{}:{start}: `super::super` (name the layer through `crate::`)",
                rel.display()
            ));
        }
        for target in targets(&pending) {
            // Lower-case names are modules; anything else is an item of
            // the face (`crate::StudyError`, re-exported there).
            let theirs = if target.starts_with(char::is_lowercase) {
                rank(&target).unwrap_or(FACE)
            } else {
                FACE
            };
            let up = target != layer && theirs >= own;
            if up {
                out.push(format!(
                    "src/{}:{start}: layer `{layer}` imports `crate::{target}`, \
                     which is not below it",
                    rel.display()
                ));
            }
        }
        pending.clear();
    }
    out
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn each_layer_imports_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    assert!(files.len() > 20, "the sources were not found in {src:?}");
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        bad.extend(violations(f.strip_prefix(&src).unwrap(), &text));
    }
    assert!(bad.is_empty(), "imports up the layers:\n{}", bad.join("\n"));
}

#[test]
fn an_import_up_or_across_is_named_with_its_line() {
    let model = Path::new("model/spec.rs");
    let text = "//! use crate::execute::x in a comment is no import\n\
                use crate::error::StudyError;\n\
                use crate::{\n    model::engine,\n    plan::cell_key,\n};\n";
    assert_eq!(
        violations(model, text),
        vec!["src/model/spec.rs:3: layer `model` imports `crate::plan`, which is not below it"]
    );
    let report = Path::new("report/mod.rs");
    let text = "use crate::store::Stored;\nfn f() { crate::execute::run(); crate::load(\"x\"); }\n";
    assert_eq!(
        violations(report, text),
        vec![
            "src/report/mod.rs:2: layer `report` imports `crate::execute`, which is not below it",
            "src/report/mod.rs:2: layer `report` imports `crate::load`, which is not below it",
        ]
    );
    assert!(violations(
        Path::new("lib.rs"),
        "pub use report::render;\nuse crate::execute::x;"
    )
    .is_empty());
    assert_eq!(
        violations(Path::new("util.rs"), "").len(),
        1,
        "a file in no layer"
    );
    assert_eq!(
        violations(
            Path::new("model/spec.rs"),
            "use super::super::execute::Options;"
        ),
        vec!["src/model/spec.rs:1: `super::super` (name the layer through `crate::`)"]
    );
}

/// No function of the study and run crates' sources is over 150 lines
/// (rustfmt's layout: a function ends at the first `}` at its own
/// indentation). Long functions were what made these crates hard to
/// change; a new one is cut along its steps before it lands.
#[test]
fn no_function_is_over_150_lines() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    sources(&root.join("src"), &mut files);
    sources(&root.join("../run/src"), &mut files);
    let mut long = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        let mut i = 0;
        while i < lines.len() {
            let l = lines[i];
            let t = l.trim_start();
            let indent = l.len() - t.len();
            let is_fn = [
                "fn ",
                "pub fn ",
                "pub(crate) fn ",
                "async fn ",
                "pub async fn ",
                "pub(crate) async fn ",
            ]
            .iter()
            .any(|p| t.starts_with(p))
                && !t.ends_with(';')
                // A body on the fn's own line (`fn begin(&self) {}`).
                && !t.ends_with('}');
            if is_fn {
                let end = (i + 1..lines.len())
                    .find(|&j| {
                        let m = lines[j];
                        m.len() > indent
                            && m.as_bytes()[indent] == b'}'
                            && m[..indent].bytes().all(|b| b == b' ')
                    })
                    .unwrap_or(lines.len());
                if end - i > 150 {
                    long.push(format!("{}:{} ({} lines)", f.display(), i + 1, end - i));
                }
                i = end;
            }
            i += 1;
        }
    }
    assert!(
        long.is_empty(),
        "functions over 150 lines:\n{}",
        long.join("\n")
    );
}
