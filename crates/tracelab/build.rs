//! Puts the commit tracelab was built from into `--version`
//! (`tracelab 0.1.0 (commit 1a2b3c4d5e6f)`), as ripgrep and hyperfine users
//! expect when they report a figure. Outside a git checkout (a crate
//! tarball), the version stands alone.
//!
//! And compiles the server tracer (crates/servertrace, a cdylib of the
//! workspace) into OUT_DIR, so that the binary embeds it: `db start
//! --server-trace` and `run --server-trace` write it out and set it as
//! LD_PRELOAD of the server they start. rustc directly rather than a nested
//! cargo, as crates/study/build.rs does for the clock shim: a cargo inside
//! a build script contends for the build directory's lock; the tracer is
//! made for this (no dependencies). Where it cannot be built (another OS or
//! architecture), an empty file is embedded and `--server-trace` says it
//! cannot run here.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    server_tracer();
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

fn server_tracer() {
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default());
    let src = dir.join("../servertrace/src/lib.rs");
    for f in [
        "../servertrace/src",
        "../proxy/src/message.rs",
        "../trace/src/secrets.rs",
        "../threadclock/src/lib.rs",
    ] {
        println!("cargo:rerun-if-changed={}", dir.join(f).display());
    }
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
    let lib = out.join("libtracelab_servertrace.so");
    let target = std::env::var("TARGET").unwrap_or_default();
    let supported =
        target.contains("linux") && (target.starts_with("x86_64") || target.starts_with("aarch64"));
    let built = supported
        && Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .args(["--edition", "2021", "--crate-type", "cdylib"])
            .args(["--crate-name", "tracelab_servertrace", "-C", "opt-level=3"])
            // One codegen unit, so that the hooks inline what they call
            // across the crate's modules, and no unwinding tables nor
            // landing pads: a panic in a hook aborts the backend either
            // way (it cannot unwind out of an `extern "C"` function), and
            // the tracer catches none. Together ~430 fewer instructions a
            // select-only query (callgrind, 46,770 → 46,340 a backend).
            .args(["-C", "codegen-units=1", "-C", "panic=abort"])
            .args([
                "-C",
                "debuginfo=0",
                "-C",
                "strip=symbols",
                "--target",
                &target,
            ])
            .env(
                "CARGO_PKG_VERSION",
                std::env::var("CARGO_PKG_VERSION").unwrap_or_default(),
            )
            .arg("-o")
            .arg(&lib)
            .arg(&src)
            .status()
            .is_ok_and(|s| s.success());
    if !built {
        if supported {
            println!("cargo:warning=the server tracer (crates/servertrace) did not build: --server-trace will not run");
        }
        let _ = std::fs::write(&lib, b"");
    }
}
