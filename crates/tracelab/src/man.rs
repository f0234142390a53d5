//! `tracelab man`: manual pages generated from the clap definitions (one
//! for tracelab, one per subcommand: `tracelab-skew(1)`, `tracelab-study-run(1)`
//! …), so that `man` says what `--help` says.

use std::path::{Path, PathBuf};

use crate::exit::Failure;
use crate::output::out;

#[derive(clap::Args)]
pub struct Args {
    /// Write every page (tracelab.1 and tracelab-SUBCOMMAND.1) into this
    /// directory, for `man -M` or a MANPATH entry, instead of printing
    /// tracelab.1 on standard output.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn run(a: Args, cmd: clap::Command) -> Result<i32, Failure> {
    match &a.dir {
        None => out(&String::from_utf8_lossy(&page(&cmd)?))?,
        Some(dir) => {
            let dir = dir.join("man1");
            std::fs::create_dir_all(&dir).map_err(|source| Failure::Output {
                what: dir.display().to_string(),
                source,
            })?;
            let n = write_all(&dir, cmd)?;
            crate::output::say!("tracelab: wrote {n} pages into {}", dir.display());
        }
    }
    Ok(crate::exit::OK)
}

fn page(cmd: &clap::Command) -> Result<Vec<u8>, Failure> {
    let mut buf = Vec::new();
    clap_mangen::Man::new(cmd.clone())
        .render(&mut buf)
        .map_err(|source| Failure::Output {
            what: "the manual page".into(),
            source,
        })?;
    Ok(buf)
}

/// Writes `cmd`'s page and those of its subcommands, named by their path
/// (`tracelab-study-run.1`); returns how many.
fn write_all(dir: &Path, cmd: clap::Command) -> Result<usize, Failure> {
    let mut cmd = cmd;
    cmd.build();
    write_tree(dir, &cmd, cmd.get_name())
}

fn write_tree(dir: &Path, cmd: &clap::Command, name: &str) -> Result<usize, Failure> {
    let named = cmd
        .clone()
        .name(name.to_string())
        .bin_name(name.replace('-', " "));
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, page(&named)?).map_err(|source| Failure::Output {
        what: path.display().to_string(),
        source,
    })?;
    let mut n = 1;
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        n += write_tree(dir, sub, &format!("{name}-{}", sub.get_name()))?;
    }
    Ok(n)
}
