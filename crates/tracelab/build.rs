//! Puts the commit tracelab was built from into `--version`
//! (`tracelab 0.1.0 (commit 1a2b3c4d5e6f)`), as ripgrep and hyperfine users
//! expect when they report a figure. Outside a git checkout (a crate
//! tarball), the version stands alone.

use std::process::Command;

fn main() {
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let version = env!("CARGO_PKG_VERSION");
    let long = match git(&["rev-parse", "--short=12", "HEAD"]) {
        Some(commit) if !commit.is_empty() => {
            let dirty = git(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            format!(
                "{version} (commit {commit}{})",
                if dirty { ", modified" } else { "" }
            )
        }
        _ => version.to_string(),
    };
    println!("cargo:rustc-env=TRACELAB_VERSION={long}");
    // Rebuilt when HEAD moves (a commit, a checkout) or the index changes.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        println!("cargo:rerun-if-changed={dir}/HEAD");
        println!("cargo:rerun-if-changed={dir}/index");
        // A branch's ref lives in the common directory (worktrees share it).
        let common = git(&["rev-parse", "--git-common-dir"]).unwrap_or(dir);
        if let Some(head) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={common}/{head}");
        }
        println!("cargo:rerun-if-changed={common}/packed-refs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
