//! Compiles the timer shim (crates/timeshim, a cdylib of the workspace) into
//! OUT_DIR, so that the study crate embeds it: the trace-overhead study
//! writes it out and sets it as LD_PRELOAD of the server it restarts.
//!
//! rustc directly rather than a nested cargo: a cargo inside a build
//! script contends for the build directory's lock and inherits the outer
//! build's environment; the shim is one file without dependencies, made
//! for exactly this. Where it cannot be built (another OS or architecture),
//! an empty file is embedded and the study says the timer levels cannot
//! run here.

use std::path::PathBuf;
use std::process::Command;

fn main() {
    let src = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("../timeshim/src/lib.rs");
    println!("cargo:rerun-if-changed={}", src.display());
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap_or_default());
    let lib = out.join("libtracelab_clock.so");
    let target = std::env::var("TARGET").unwrap_or_default();
    let supported =
        target.contains("linux") && (target.starts_with("x86_64") || target.starts_with("aarch64"));
    let built = supported
        && Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
            .args(["--edition", "2021", "--crate-type", "cdylib"])
            .args(["--crate-name", "tracelab_clock", "-C", "opt-level=3"])
            .args([
                "-C",
                "debuginfo=0",
                "-C",
                "strip=symbols",
                "--target",
                &target,
            ])
            .arg("-o")
            .arg(&lib)
            .arg(&src)
            .status()
            .is_ok_and(|s| s.success());
    if !built {
        if supported {
            println!("cargo:warning=the timer shim (crates/timeshim) did not build: the trace-overhead study's timer levels will not run");
        }
        let _ = std::fs::write(&lib, b"");
    }
}
