//! `tracelab completions SHELL`: the shell's completion script, generated
//! from the same clap definitions that parse the command line, so it never
//! falls behind them.

use std::path::PathBuf;

use clap_complete::Shell;

use crate::exit::Failure;
use crate::output::out;

#[derive(clap::Args)]
#[command(after_help = "Install, for example:
  bash: tracelab completions bash > ~/.local/share/bash-completion/completions/tracelab
  zsh:  tracelab completions zsh > ~/.zfunc/_tracelab   (with fpath+=~/.zfunc)
  fish: tracelab completions fish > ~/.config/fish/completions/tracelab.fish")]
pub struct Args {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: Shell,
    /// Write the script into this directory (under the shell's usual file
    /// name) instead of standard output.
    #[arg(long, value_name = "DIR")]
    dir: Option<PathBuf>,
}

pub fn run(a: Args, mut cmd: clap::Command) -> Result<i32, Failure> {
    match &a.dir {
        Some(dir) => {
            let path = clap_complete::generate_to(a.shell, &mut cmd, "tracelab", dir).map_err(
                |source| Failure::Output {
                    what: dir.display().to_string(),
                    source,
                },
            )?;
            crate::output::say!("tracelab: wrote {}", path.display());
        }
        None => {
            let mut buf = Vec::new();
            clap_complete::generate(a.shell, &mut cmd, "tracelab", &mut buf);
            out(&String::from_utf8_lossy(&buf))?;
        }
    }
    Ok(crate::exit::OK)
}
