//! Warnings about damaged input: kept per file so that the caller can show
//! the first few with file and line, and count the rest.

use std::fmt;

/// One warning about a line that could not be read as expected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file as the user named it.
    pub file: String,
    /// 1-based line number in the (uncompressed) text.
    pub line: u64,
    /// What was found and what was expected.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}: {}", self.file, self.line, self.message)
    }
}

/// The first `keep` warnings of a file, and how many there were in all.
#[derive(Debug, Clone, Default)]
pub struct Diagnostics {
    pub kept: Vec<Diagnostic>,
    pub total: u64,
}

impl Diagnostics {
    /// How many warnings are kept per file; the rest are only counted.
    pub const KEEP: usize = 5;

    pub fn push(&mut self, file: &str, line: u64, message: impl Into<String>) {
        self.total += 1;
        if self.kept.len() < Self::KEEP {
            self.kept.push(Diagnostic {
                file: file.to_string(),
                line,
                message: message.into(),
            });
        }
    }

    /// A warning that goes before the others: the damage that ended a
    /// file early (a broken compressed stream), which explains the
    /// warnings about the lines before it and must not be the one left
    /// out as "N more warnings not shown".
    pub fn push_first(&mut self, file: &str, line: u64, message: impl Into<String>) {
        self.total += 1;
        self.kept.insert(
            0,
            Diagnostic {
                file: file.to_string(),
                line,
                message: message.into(),
            },
        );
        self.kept.truncate(Self::KEEP);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_damage_goes_first_and_the_count_stays() {
        let mut d = Diagnostics::default();
        for i in 1..=7 {
            d.push("f", i, "bad line");
        }
        d.push_first("f", 9, "damaged");
        assert_eq!(d.total, 8);
        assert_eq!(d.kept.len(), Diagnostics::KEEP);
        assert_eq!((d.kept[0].line, d.kept[1].line), (9, 1));
    }
}
