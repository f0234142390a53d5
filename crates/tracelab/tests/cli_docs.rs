//! What tracelab says about itself: `--version` with the commit it was
//! built from, shell completions and manual pages generated from the clap
//! definitions (so that they cannot fall behind `--help`), and help texts
//! that read as a user expects.

mod common;

use std::process::Command;

use common::tracelab;

/// `tracelab --version` names the commit of a build from a git checkout
/// (CI builds one), and every subcommand says the same.
#[test]
fn version_names_the_commit() {
    let (out, _, code) = tracelab(&["--version"]);
    assert_eq!(code, 0);
    let line = out.trim();
    let rest = line
        .strip_prefix(&format!("tracelab {} ", env!("CARGO_PKG_VERSION")))
        .unwrap_or_else(|| panic!("version line: {line}"));
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    if let Some(head) = head {
        assert!(
            rest == format!("(commit {head})") || rest == format!("(commit {head}, modified)"),
            "{line} (HEAD {head})"
        );
    }
    let (sub, _, _) = tracelab(&["skew", "--version"]);
    assert!(sub.trim().ends_with(rest), "{sub}");
}

/// The completion scripts cover every subcommand and option; bash's is
/// valid bash.
#[test]
fn completions_cover_every_subcommand_and_option() {
    let (bash, err, code) = tracelab(&["completions", "bash"]);
    assert_eq!(code, 0, "{err}");
    for word in [
        "skew",
        "prof",
        "calls",
        "run",
        "study",
        "proxy",
        "db",
        "--alldepths",
        "--result-cache-lag",
        "--report",
        "--quick",
    ] {
        assert!(bash.contains(word), "bash completion lacks {word}");
    }
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("tracelab.bash");
    std::fs::write(&script, &bash).unwrap();
    let check = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    // Sourced, it completes a subcommand's options.
    let complete = Command::new("bash")
        .arg("-c")
        .arg(format!(
            ". {}; COMP_WORDS=(tracelab skew --all); COMP_CWORD=2; _tracelab tracelab --all skew; printf '%s\\n' \"${{COMPREPLY[@]}}\"",
            script.display()
        ))
        .output()
        .unwrap();
    assert!(
        String::from_utf8_lossy(&complete.stdout).contains("--alldepths"),
        "{}{}",
        String::from_utf8_lossy(&complete.stdout),
        String::from_utf8_lossy(&complete.stderr)
    );
    for shell in ["zsh", "fish", "elvish", "powershell"] {
        let (s, err, code) = tracelab(&["completions", shell]);
        assert_eq!(code, 0, "{shell}: {err}");
        assert!(
            s.contains("--result-cache-lag") && s.contains("study"),
            "{shell}"
        );
    }
    let (_, err, code) = tracelab(&["completions", "tcsh"]);
    assert_eq!(code, 2);
    assert!(err.contains("tcsh"), "{err}");
    // Into a directory, under the shell's file name.
    let (_, err, code) = tracelab(&["completions", "fish", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(dir.path().join("tracelab.fish").is_file());
}

/// `tracelab man --dir D` writes one page per command and subcommand; each
/// is a roff page naming every option its `--help` lists.
#[test]
fn man_pages_cover_every_command_and_option() {
    let dir = tempfile::tempdir().unwrap();
    let (_, err, code) = tracelab(&["man", "--dir", dir.path().to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let man1 = dir.path().join("man1");
    for (page, cmd) in [
        ("tracelab.1", vec![]),
        ("tracelab-skew.1", vec!["skew"]),
        ("tracelab-prof.1", vec!["prof"]),
        ("tracelab-calls.1", vec!["calls"]),
        ("tracelab-run.1", vec!["run"]),
        ("tracelab-proxy.1", vec!["proxy"]),
        ("tracelab-study-run.1", vec!["study", "run"]),
        ("tracelab-study-report.1", vec!["study", "report"]),
        ("tracelab-db-start.1", vec!["db", "start"]),
    ] {
        let text =
            std::fs::read_to_string(man1.join(page)).unwrap_or_else(|e| panic!("{page}: {e}"));
        let name = page.trim_end_matches(".1");
        assert!(
            text.contains(&format!(".TH {name} 1")),
            "{page}: {}",
            &text[..200.min(text.len())]
        );
        let mut args = cmd.clone();
        args.push("--help");
        let (help, _, _) = tracelab(&args);
        // The option each line of the help's option list starts with.
        for opt in help
            .lines()
            .map(str::trim_start)
            .filter(|l| l.starts_with('-'))
            .filter_map(|l| l.split_whitespace().find(|w| w.starts_with("--")))
            .map(|w| w.trim_end_matches(|c: char| !c.is_ascii_alphanumeric()))
        {
            // roff writes a dash as \-.
            let roff = opt.replace('-', "\\-");
            assert!(text.contains(&roff), "{page} lacks {opt}");
        }
    }
    // Without --dir: tracelab.1 on standard output.
    let (page, _, code) = tracelab(&["man"]);
    assert_eq!(code, 0);
    assert!(
        page.starts_with(".ie") || page.contains(".TH tracelab 1"),
        "{}",
        &page[..100]
    );
}

/// Help texts that describe every positional and option of the study
/// subcommands, and name run's default runtime.
#[test]
fn help_describes_every_argument() {
    for cmd in [
        vec!["study", "report", "--help"],
        vec!["study", "compare", "--help"],
        vec!["study", "show", "--help"],
    ] {
        let (help, _, _) = tracelab(&cmd);
        // clap prints an argument without a description as `  <NAME>  `
        // followed by nothing.
        for line in help.lines() {
            let t = line.trim_end();
            assert!(
                !(t.trim_start().starts_with('<') && t.split_whitespace().count() == 1),
                "{cmd:?}: undescribed argument: {t}"
            );
            assert!(
                !t.ends_with(
                    "--format <FORMAT>  [default: text] [possible values: text, markdown, html]"
                ),
                "{t}"
            );
        }
    }
    let (help, _, _) = tracelab(&["run", "--help"]);
    assert!(help.contains("[default: 10"), "{help}");
    // Flags read as flags, with their --no forms said, and mrskew's
    // options that are accepted without effect listed.
    for cmd in ["skew", "calls", "prof", "run", "proxy"] {
        let (help, _, _) = tracelab(&[cmd, "--help"]);
        assert!(
            !help.contains("possible values: true, false"),
            "{cmd}: {help}"
        );
        assert!(!help.contains("[<"), "{cmd}: {help}");
    }
    let (help, _, _) = tracelab(&["skew", "--help"]);
    for said in ["--alldepths", "--nocommas", "--nohead", "--[no]histogram"] {
        assert!(help.contains(said), "skew --help lacks {said}: {help}");
    }
    // And they work: --nocommas, --commas=0 (mrskew's), the last one wins.
    let trace = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/crc-local-force/orcl_ora_30537_RC-20230830160541-20230703160541.trc.gz"
    );
    let (with, _, _) = tracelab(&["skew", "--name=:all", "--alldepths", trace]);
    assert!(with.contains(','), "thousands separated by default: {with}");
    for no in [
        vec!["--nocommas"],
        vec!["--commas=0"],
        vec!["--commas", "--nocommas"],
    ] {
        let mut args = vec!["skew", "--name=:all", "--alldepths"];
        args.extend(no.iter().copied());
        args.push(trace);
        let (without, err, code) = tracelab(&args);
        assert_eq!(code, 0, "{no:?}: {err}");
        assert_eq!(without, with.replace(',', ""), "{no:?}");
    }
}
