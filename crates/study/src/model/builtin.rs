//! The built-in studies, embedded in the binary: `study show NAME` prints
//! one so that a user can copy and change it.

/// Files of a study, SQL and data (bind files): (name as the study file
/// writes it, text).
pub type SqlFiles = &'static [(&'static str, &'static str)];

/// (name, TOML text, SQL files it names).
pub const STUDIES: &[(&str, &str, SqlFiles)] = &[
    (
        "commit-batch",
        include_str!("../../studies/commit-batch.toml"),
        &[],
    ),
    (
        "exec-model",
        include_str!("../../studies/exec-model.toml"),
        &[],
    ),
    (
        "redo-undo",
        include_str!("../../studies/redo-undo.toml"),
        &[(
            "redo-undo/debt.sql",
            include_str!("../../studies/redo-undo/debt.sql"),
        )],
    ),
    (
        "result-cache",
        include_str!("../../studies/result-cache.toml"),
        &[
            (
                "result-cache/setup.sql",
                include_str!("../../studies/result-cache/setup.sql"),
            ),
            (
                "result-cache/binds.txt",
                include_str!("../../studies/result-cache/binds.txt"),
            ),
        ],
    ),
    (
        "trace-overhead",
        include_str!("../../studies/trace-overhead.toml"),
        &[
            (
                "trace-overhead/objects.sql",
                include_str!("../../studies/trace-overhead/objects.sql"),
            ),
            (
                "trace-overhead/postgres.sql",
                include_str!("../../studies/trace-overhead/postgres.sql"),
            ),
            (
                "trace-overhead/mariadb.sql",
                include_str!("../../studies/trace-overhead/mariadb.sql"),
            ),
        ],
    ),
];

/// A built-in study's text.
pub fn text(name: &str) -> Option<&'static str> {
    STUDIES.iter().find(|s| s.0 == name).map(|s| s.1)
}

/// The SQL files of a built-in study (none for a study from a file).
pub fn files(name: &str) -> SqlFiles {
    STUDIES.iter().find(|s| s.0 == name).map_or(&[], |s| s.2)
}

/// A file (SQL, binds) of any built-in study, by the name its study uses.
pub fn sql_file(name: &str) -> Option<&'static str> {
    STUDIES
        .iter()
        .flat_map(|s| s.2.iter())
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
}
