//! Without server binaries the error says how to install them. (Its own
//! test binary: it sets environment variables.)

use tracelab_db::{start_mariadb, start_postgres, MariaOptions, PgOptions};

#[test]
fn missing_binaries_name_the_install_command() {
    let empty = tempfile::tempdir().unwrap();
    std::env::set_var("TRACELAB_PG_BINDIR", empty.path());
    let err = start_postgres(&PgOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("apt-get install -y postgresql"), "{err}");
}

#[test]
fn missing_mariadb_binaries_name_the_install_command() {
    let empty = tempfile::tempdir().unwrap();
    std::env::set_var("TRACELAB_MARIADB_BINDIR", empty.path());
    let err = start_mariadb(&MariaOptions::default())
        .unwrap_err()
        .to_string();
    assert!(err.contains("apt-get install -y mariadb-server"), "{err}");
    assert!(err.contains("TRACELAB_MARIADB_BINDIR"), "{err}");
}
