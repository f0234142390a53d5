//! Finding the PostgreSQL server binaries.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::DbError;

/// The directory holding `initdb`, `pg_ctl` and `postgres`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PgBinaries {
    pub bindir: PathBuf,
}

impl PgBinaries {
    /// Looks, in order, at `$TRACELAB_PG_BINDIR`, `pg_config --bindir`,
    /// PATH, and the newest `/usr/lib/postgresql/*/bin` (Debian keeps the
    /// server binaries there, off PATH).
    pub fn find() -> Result<PgBinaries, DbError> {
        if let Some(dir) = std::env::var_os("TRACELAB_PG_BINDIR") {
            let dir = PathBuf::from(dir);
            return if complete(&dir) {
                Ok(PgBinaries { bindir: dir })
            } else {
                Err(DbError::NoPostgres)
            };
        }
        let from_pg_config = Command::new("pg_config")
            .arg("--bindir")
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()));
        let from_path = std::env::var_os("PATH")
            .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .unwrap_or_default();
        let mut debian: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .map(|e| e.path().join("bin"))
                    .collect()
            })
            .unwrap_or_default();
        // Newest major version first.
        debian.sort_by_key(|p| {
            std::cmp::Reverse(
                p.parent()
                    .and_then(|v| v.file_name())
                    .and_then(|v| v.to_str())
                    .and_then(|v| v.parse::<u32>().ok())
                    .unwrap_or(0),
            )
        });
        from_pg_config
            .into_iter()
            .chain(from_path)
            .chain(debian)
            .find(|d| complete(d))
            .map(|bindir| PgBinaries { bindir })
            .ok_or(DbError::NoPostgres)
    }

    pub fn tool(&self, name: &str) -> PathBuf {
        self.bindir.join(name)
    }
}

/// pg_config may name a client-only directory: the server tools must be
/// there too.
fn complete(dir: &Path) -> bool {
    ["initdb", "pg_ctl", "postgres"]
        .iter()
        .all(|t| dir.join(t).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_the_server_tools_is_not_enough() {
        let d = tempfile::tempdir().unwrap();
        assert!(!complete(d.path()));
        for t in ["initdb", "pg_ctl"] {
            std::fs::write(d.path().join(t), "").unwrap();
        }
        assert!(!complete(d.path()));
        std::fs::write(d.path().join("postgres"), "").unwrap();
        assert!(complete(d.path()));
    }
}
