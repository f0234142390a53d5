//! Finding the server binaries of each engine.

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

    /// The server's major version, from `postgres --version` ("postgres
    /// (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"); `None` if it does
    /// not run or says something else.
    pub fn major_version(&self) -> Option<u32> {
        let out = Command::new(self.tool("postgres"))
            .arg("--version")
            .output()
            .ok()?;
        major_of(&String::from_utf8_lossy(&out.stdout))
    }
}

/// The major version in `postgres --version`'s line.
fn major_of(line: &str) -> Option<u32> {
    let rest = line.split_once("(PostgreSQL) ")?.1;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().ok()
}

/// pg_config may name a client-only directory: the server tools must be
/// there too.
fn complete(dir: &Path) -> bool {
    ["initdb", "pg_ctl", "postgres"]
        .iter()
        .all(|t| dir.join(t).is_file())
}

/// The MariaDB server and the script that initialises its data directory.
/// Debian keeps them apart (`/usr/sbin/mariadbd`, `/usr/bin/mariadb-install-db`)
/// and a binary tarball puts the script under `scripts/`, so they are found
/// one by one rather than as one directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MariaBinaries {
    /// `mariadbd` (or `mysqld` on older packages).
    pub server: PathBuf,
    /// `mariadb-install-db` (or `mysql_install_db`).
    pub install_db: PathBuf,
}

const MARIA_SERVERS: [&str; 2] = ["mariadbd", "mysqld"];
const MARIA_INSTALL_DBS: [&str; 2] = ["mariadb-install-db", "mysql_install_db"];

impl MariaBinaries {
    /// Looks for the server at `$TRACELAB_MARIADB_BINDIR` alone when set,
    /// else on PATH, then in /usr/sbin, /usr/bin and /usr/local/mysql/bin;
    /// the install script next to the server first (same directory, its
    /// `../scripts` or `../bin`), then in the same places.
    pub fn find() -> Result<MariaBinaries, DbError> {
        let candidates: Vec<PathBuf> = match std::env::var_os("TRACELAB_MARIADB_BINDIR") {
            Some(dir) => vec![PathBuf::from(dir)],
            None => std::env::var_os("PATH")
                .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
                .unwrap_or_default()
                .into_iter()
                .chain(
                    ["/usr/sbin", "/usr/bin", "/usr/local/mysql/bin"]
                        .iter()
                        .map(PathBuf::from),
                )
                .collect(),
        };
        let server = first_file(&candidates, &MARIA_SERVERS).ok_or(DbError::NoMariadb)?;
        let near: Vec<PathBuf> = server
            .parent()
            .map(|d| vec![d.to_path_buf(), d.join("../scripts"), d.join("../bin")])
            .unwrap_or_default();
        let install_db = first_file(&near, &MARIA_INSTALL_DBS)
            .or_else(|| first_file(&candidates, &MARIA_INSTALL_DBS))
            .ok_or(DbError::NoMariadb)?;
        Ok(MariaBinaries { server, install_db })
    }

    /// The installation's base directory (`/usr` for `/usr/sbin/mariadbd`),
    /// where the install script finds its SQL files.
    pub fn basedir(&self) -> PathBuf {
        self.server
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from("/usr"))
    }
}

/// The first `dir/name` that is a file, trying every name in a directory
/// before the next directory.
fn first_file(dirs: &[PathBuf], names: &[&str]) -> Option<PathBuf> {
    dirs.iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_major_version_is_read_from_postgres_version() {
        assert_eq!(
            major_of("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n"),
            Some(15)
        );
        assert_eq!(major_of("postgres (PostgreSQL) 13.22\n"), Some(13));
        assert_eq!(major_of("postgres (PostgreSQL) 18beta1\n"), Some(18));
        assert_eq!(major_of("postgres (PostgreSQL) 9.6.24\n"), Some(9));
        assert_eq!(major_of("something else\n"), None);
    }

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

    #[test]
    fn mariadb_tools_are_found_by_either_name_in_order() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        let dirs = vec![a.path().to_path_buf(), b.path().to_path_buf()];
        assert_eq!(first_file(&dirs, &MARIA_SERVERS), None);
        std::fs::write(b.path().join("mysqld"), "").unwrap();
        assert_eq!(
            first_file(&dirs, &MARIA_SERVERS),
            Some(b.path().join("mysqld"))
        );
        std::fs::write(a.path().join("mysqld"), "").unwrap();
        std::fs::write(a.path().join("mariadbd"), "").unwrap();
        assert_eq!(
            first_file(&dirs, &MARIA_SERVERS),
            Some(a.path().join("mariadbd"))
        );
        let bins = MariaBinaries {
            server: PathBuf::from("/usr/local/mysql/bin/mariadbd"),
            install_db: PathBuf::from("/usr/local/mysql/scripts/mariadb-install-db"),
        };
        assert_eq!(bins.basedir(), PathBuf::from("/usr/local/mysql"));
    }
}
