//! Every example in README.md and docs/*.md runs as documented.
//!
//! An example is a fenced block whose info string starts with `console`:
//! lines starting with `$ ` are commands (run by bash from the repository's
//! root, with this build's `tracelab` first on PATH, standard error joined
//! to standard output), and the lines after a command, up to the next, are
//! what it prints. A last line `[exit N]` gives its exit status (0 when
//! absent). `console` compares the output whole (trailing blanks aside);
//! `console,ignore-output` checks the exit status only, for output that
//! differs from run to run (timings).

use std::path::{Path, PathBuf};
use std::process::Command;

struct Example {
    file: String,
    line: usize,
    command: String,
    expected: Option<String>,
    exit: i32,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn examples(file: &Path, text: &str) -> Vec<Example> {
    let name = file
        .strip_prefix(root())
        .unwrap_or(file)
        .display()
        .to_string();
    let mut out = Vec::new();
    let mut lines = text.lines().enumerate().peekable();
    while let Some((_, l)) = lines.next() {
        let Some(info) = l.strip_prefix("```console") else {
            continue;
        };
        let compare = !info.contains("ignore-output");
        let mut block: Vec<(usize, &str)> = Vec::new();
        for (n, l) in lines.by_ref() {
            if l.starts_with("```") {
                break;
            }
            block.push((n + 1, l));
        }
        let mut i = 0;
        while i < block.len() {
            let (n, l) = block[i];
            let Some(cmd) = l.strip_prefix("$ ") else {
                i += 1;
                continue;
            };
            let mut command = cmd.to_string();
            while command.ends_with('\\') && i + 1 < block.len() {
                i += 1;
                // bash reads the backslash-newline as one line, as a
                // reader does.
                command.push('\n');
                command.push_str(block[i].1);
            }
            i += 1;
            let mut output = Vec::new();
            while i < block.len() && !block[i].1.starts_with("$ ") {
                output.push(block[i].1);
                i += 1;
            }
            let mut exit = 0;
            if let Some(last) = output.last() {
                if let Some(code) = last
                    .strip_prefix("[exit ")
                    .and_then(|r| r.strip_suffix(']'))
                {
                    exit = code.parse().expect("[exit N] with a number");
                    output.pop();
                }
            }
            out.push(Example {
                file: name.clone(),
                line: n,
                command,
                expected: compare.then(|| normalise(&output.join("\n"))),
                exit,
            });
        }
    }
    out
}

/// Lines (from 1) of the fences that open a block without saying what it
/// holds. Every block says: `console` (run and checked), or `sh`, `text`,
/// `sql`, `python`, ... for what is not run (commands that take minutes or
/// need a cluster, outputs of long studies, other languages).
fn bare_fences(text: &str) -> Vec<usize> {
    let mut open = false;
    let mut bare = Vec::new();
    for (n, l) in text.lines().enumerate() {
        let Some(info) = l.trim_start().strip_prefix("```") else {
            continue;
        };
        if !open && info.trim().is_empty() {
            bare.push(n + 1);
        }
        open = !open;
    }
    bare
}

fn normalise(s: &str) -> String {
    let lines: Vec<&str> = s.lines().map(str::trim_end).collect();
    lines.join("\n").trim_matches('\n').to_string()
}

/// README.md, then every .md under docs/ (docs/studies/ too), sorted.
fn docs() -> Vec<PathBuf> {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for p in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if p.is_dir() {
                walk(&p, files);
            } else if p.extension().is_some_and(|x| x == "md") {
                files.push(p);
            }
        }
    }
    let mut more = Vec::new();
    walk(&root().join("docs"), &mut more);
    more.sort();
    let mut files = vec![root().join("README.md")];
    files.extend(more);
    files
}

/// Runs the examples of one page: (failures, examples, examples in docs/).
fn check_page(f: PathBuf, path: &str) -> (Vec<String>, usize, usize) {
    let text = std::fs::read_to_string(&f).unwrap();
    let mut failures = Vec::new();
    for n in bare_fences(&text) {
        failures.push(format!(
            "{}:{n}: a ``` block that does not say what it holds (console, sh, text, sql, ...)",
            f.strip_prefix(root()).unwrap_or(&f).display()
        ));
    }
    let examples = examples(&f, &text);
    // The docs write under /tmp/ (paths a reader can type); the test runs
    // them in a fresh directory of the page's own, removed afterwards, so
    // that no fixed name (/tmp/tracelab-lab, /tmp/x.parquet) is left
    // behind or shared with another run of the test. The directory's name
    // is put back to /tmp in what the commands print.
    let scratch = tempfile::Builder::new()
        .prefix("tracelab-docs-")
        .tempdir_in("/tmp")
        .unwrap();
    let dir = scratch.path().to_str().unwrap().to_string();
    let _stop = StopServers(scratch.path());
    for e in &examples {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "exec 2>&1\n{}",
                e.command.replace("/tmp/", &format!("{dir}/"))
            ))
            .current_dir(root())
            .env("PATH", path)
            .env("TERM", "dumb")
            .output()
            .expect("bash runs");
        let got = normalise(&String::from_utf8_lossy(&out.stdout).replace(&dir, "/tmp"));
        let code = out.status.code().unwrap_or(-1);
        if code != e.exit {
            failures.push(format!(
                "{}:{}: `{}` exited {code}, documented {}:\n{got}",
                e.file, e.line, e.command, e.exit
            ));
        } else if let Some(want) = &e.expected {
            if &got != want {
                failures.push(format!(
                    "{}:{}: `{}` printed:\n{got}\n--- documented:\n{want}",
                    e.file, e.line, e.command
                ));
            }
        }
    }
    let in_docs = examples
        .iter()
        .filter(|e| e.file.starts_with("docs"))
        .count();
    (failures, examples.len(), in_docs)
}

#[test]
fn every_example_in_the_docs_runs_as_documented() {
    let bin = PathBuf::from(common_bin());
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    // One thread per page, the examples of a page in order (a page's later
    // examples may use what its earlier ones made); pages use /tmp paths of
    // their own, so that they can run at once and the test stays short.
    let results: Vec<(Vec<String>, usize, usize)> = std::thread::scope(|s| {
        let pages: Vec<_> = docs()
            .into_iter()
            .map(|f| s.spawn(|| check_page(f, &path)))
            .collect();
        pages.into_iter().map(|t| t.join().unwrap()).collect()
    });
    let failures: Vec<String> = results.iter().flat_map(|r| r.0.clone()).collect();
    let count: usize = results.iter().map(|r| r.1).sum();
    let in_docs: usize = results.iter().map(|r| r.2).sum();
    // The README's look at each command alone has more than 8; the pages
    // of docs/ (skew, prof, calls, run, db, study) 50.
    assert!(count >= 8, "only {count} examples found");
    assert!(in_docs >= 40, "only {in_docs} examples found in docs/");
    assert!(
        failures.is_empty(),
        "{} of {count} examples differ from the docs:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

/// Stops the servers a page's examples left running in its directory
/// (an example that failed before its `db stop`), before the directory
/// goes.
struct StopServers<'a>(&'a Path);

impl Drop for StopServers<'_> {
    fn drop(&mut self) {
        let Ok(entries) = std::fs::read_dir(self.0) else {
            return;
        };
        for d in entries.filter_map(|e| e.ok().map(|e| e.path())) {
            if d.join("tracelab-db.json").exists() {
                let _ = Command::new(common_bin())
                    .args(["db", "stop", "--dir"])
                    .arg(&d)
                    .output();
            }
        }
    }
}

fn common_bin() -> String {
    std::env::var("TRACELAB_TEST_BIN")
        .unwrap_or_else(|_| env!("CARGO_BIN_EXE_tracelab").to_string())
}

#[test]
fn examples_write_their_tmp_files_in_a_directory_removed_afterwards() {
    // A page whose example makes a file under /tmp/ and prints its path:
    // the path printed is the documented one, but no such file is left.
    let name = format!("{}/tracelab-docs-probe-{}", "/tmp", std::process::id());
    let page = tempfile::Builder::new()
        .prefix("tracelab-docs-page-")
        .suffix(".md")
        .tempfile_in("/tmp")
        .unwrap();
    std::fs::write(
        page.path(),
        format!("```console\n$ touch {name} && ls {name}\n{name}\n```\n"),
    )
    .unwrap();
    let (failures, count, _) = check_page(page.path().to_path_buf(), "/usr/bin:/bin");
    assert_eq!((failures, count), (Vec::<String>::new(), 1));
    let left = Path::new(&name).exists();
    let _ = std::fs::remove_file(&name);
    assert!(!left, "the example left {name} behind");
}

/// Test sources name no fixed path under /tmp: a string that starts with
/// `/tmp/` or a fixed name joined to the temporary directory is shared by
/// every run of the test (two checkouts testing at once) and stays behind
/// when a test fails. Tests use `tempfile` directories, removed on drop.
/// (`Trace file /tmp/x.trc` inside a trace's text is not a path written.)
#[test]
fn no_test_source_names_a_fixed_path_under_tmp() {
    fn walk(dir: &Path, files: &mut Vec<PathBuf>) {
        for p in std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()) {
            if p.is_dir() {
                walk(&p, files);
            } else if p.extension().is_some_and(|x| x == "rs" || x == "py") {
                files.push(p);
            }
        }
    }
    let mut files = Vec::new();
    for c in std::fs::read_dir(root().join("crates")).unwrap() {
        let tests = c.unwrap().path().join("tests");
        if tests.is_dir() {
            walk(&tests, &mut files);
        }
    }
    assert!(files.len() > 20, "{} test files", files.len());
    // Spelt in pieces, so that this file does not name what it looks for.
    let joined = concat!("temp_dir", "().join(\"");
    // A string starting with /tmp/ and a name after it (`"/tmp/"` alone
    // is not a path).
    let fixed = |l: &str| {
        l.match_indices("\"/tmp/")
            .any(|(i, m)| !l[i + m.len()..].starts_with('"'))
    };
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        for (n, l) in text.lines().enumerate() {
            if fixed(l) || l.contains(joined) {
                bad.push(format!("{}:{}: {}", f.display(), n + 1, l.trim()));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "fixed paths under /tmp:\n{}",
        bad.join("\n")
    );
}

#[test]
fn examples_are_read_with_their_output_and_exit_status() {
    let text = "x\n```console\n$ echo a \\\n  b\na b\n$ false\n[exit 1]\n```\n```console,ignore-output\n$ date\nwhenever\n```\n```sh\n$ not an example\n```\n";
    let e = examples(Path::new("t.md"), text);
    assert_eq!(e.len(), 3);
    assert_eq!(e[0].command, "echo a \\\n  b");
    assert_eq!(e[0].expected.as_deref(), Some("a b"));
    assert_eq!((e[0].line, e[1].exit), (3, 1));
    assert_eq!(e[1].expected.as_deref(), Some(""));
    assert!(e[2].expected.is_none());
    assert_eq!(bare_fences(text), Vec::<usize>::new());
    assert_eq!(bare_fences("a\n```\nx\n```\n  ```sh\ny\n  ```\n"), vec![2]);
}
