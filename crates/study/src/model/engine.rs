//! The engine as a factor: each level names an engine, which gives the
//! URL the run connects to (its requirement is `execute::requirement`).

use tracelab_engine::Engine;

/// The engines a study can name, as its files write them.
pub const ENGINES: &[&str] = &Engine::NAMES;

/// The engine a URL names, by its scheme (the study's level names).
pub fn engine_of_url(url: &str) -> Option<&'static str> {
    Engine::of_url(url).ok().map(Engine::name)
}

pub use tracelab_engine::redact;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_name_engines_and_lose_passwords() {
        assert_eq!(engine_of_url("postgres://u@h/d"), Some("postgres"));
        assert_eq!(engine_of_url("sqlite:/tmp/x"), Some("sqlite"));
        assert_eq!(engine_of_url("mysql://u@h/d"), Some("mariadb"));
        assert_eq!(engine_of_url("http://x"), None);
        assert_eq!(
            redact("postgres://u:secret@h:5/d"),
            "postgres://u:***@h:5/d"
        );
        assert_eq!(redact("postgres://u@h/d"), "postgres://u@h/d");
    }
}
