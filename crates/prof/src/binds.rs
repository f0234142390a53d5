//! Bind values: the set each execution ran with (read from the BINDS block
//! before its EXEC) and, per statement, how many distinct sets there were.
//!
//! The reader collects bind values only for a whole-file read; prof reads
//! a big file in pieces on all cores, so it reads the BINDS lines itself,
//! into one reusable buffer per cursor (no allocation per value).

use rustc_hash::{FxHashMap, FxHasher};
use serde::Serialize;
use std::hash::Hasher;

/// Distinct bind sets counted exactly up to this many per statement (memory
/// stays bounded by the number of statements); past it the count is a
/// lower bound and says so.
pub const DISTINCT_CAP: usize = 10_000;
/// Bind sets kept with their values per statement (the first seen).
pub const SHOWN_SETS: usize = 10;

/// The bind values of a cursor's current BINDS block.
#[derive(Debug, Clone, Default)]
pub(crate) struct BindBuf {
    /// Values as written, each followed by `\x1f`; a NULL (no `value=`
    /// line) is `\x1e`. Bytes: the values are checked as UTF-8 only
    /// when a set is shown, not on every execution.
    text: Vec<u8>,
    /// Binds in the block (`Bind#n` lines).
    pub count: u32,
    /// Whether a BINDS block was read since the last EXEC.
    pub fresh: bool,
    /// Inside a quoted value that goes on over lines.
    pub open_quote: bool,
}

impl BindBuf {
    pub fn start(&mut self) {
        self.text.clear();
        self.count = 0;
        self.fresh = true;
        self.open_quote = false;
    }

    /// A ` Bind#n` line: a new bind, NULL until a value line says otherwise.
    pub fn bind(&mut self) {
        self.count += 1;
        self.text.push(0x1e);
    }

    /// A `value=` line of the current bind.
    pub fn value(&mut self, v: &[u8]) {
        if self.count == 0 {
            self.bind();
        }
        if self.text.last() == Some(&0x1e) {
            self.text.pop();
        }
        self.text.extend_from_slice(v);
        self.text.push(0x1f);
        self.open_quote = v.first() == Some(&b'"') && (v.len() == 1 || !v.ends_with(b"\""));
    }

    /// A line that continues a quoted value.
    pub fn more(&mut self, line: &[u8]) {
        if self.text.last() == Some(&0x1f) {
            self.text.pop();
        }
        self.text.push(b'\n');
        self.text.extend_from_slice(line);
        self.text.push(0x1f);
        self.open_quote = !line.ends_with(b"\"");
    }

    pub fn hash(&self) -> u64 {
        let mut h = FxHasher::default();
        h.write(&self.text);
        h.write_u32(self.count);
        h.finish()
    }

    pub fn values(&self) -> Vec<Option<String>> {
        let mut out = Vec::with_capacity(self.count as usize);
        let mut start = 0;
        for (i, &b) in self.text.iter().enumerate() {
            match b {
                0x1e => out.push(None),
                0x1f => out.push(Some(
                    String::from_utf8_lossy(&self.text[start..i]).into_owned(),
                )),
                _ => continue,
            }
            start = i + 1;
        }
        out
    }
}

/// One bind set and the executions that used it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BindSet {
    /// Values as written (character values keep their quotes); `None` is
    /// NULL.
    pub values: Vec<Option<String>>,
    pub executions: u64,
    #[serde(skip)]
    pub(crate) hash: u64,
}

/// The bind sets of a statement's executions.
#[derive(Debug, Clone, Default)]
pub(crate) struct BindStats {
    pub executions: u64,
    /// Executions by bind set (by hash), up to `DISTINCT_CAP` sets.
    pub distinct: FxHashMap<u64, u64>,
    pub saturated: bool,
    /// The values of the first sets seen; their executions are read from
    /// `distinct` when the report is made.
    pub shown: Vec<BindSet>,
}

impl BindStats {
    pub fn add(&mut self, b: &BindBuf) {
        self.add_hashed(b.hash(), 1, || b.values());
    }

    fn add_hashed(&mut self, h: u64, execs: u64, values: impl FnOnce() -> Vec<Option<String>>) {
        self.executions += execs;
        self.count(h, execs);
        if self.shown.len() < SHOWN_SETS && !self.shown.iter().any(|s| s.hash == h) {
            self.shown.push(BindSet {
                values: values(),
                executions: 0,
                hash: h,
            });
        }
    }

    fn count(&mut self, h: u64, execs: u64) {
        if let Some(n) = self.distinct.get_mut(&h) {
            *n += execs;
        } else if self.distinct.len() < DISTINCT_CAP {
            self.distinct.insert(h, execs);
        } else {
            self.saturated = true;
        }
    }

    /// Adds another piece's sets (the later piece's first sets show after
    /// ours, as a single reader would have seen them).
    pub fn merge(&mut self, o: BindStats) {
        self.executions += o.executions;
        for (h, n) in o.distinct {
            self.count(h, n);
        }
        for s in o.shown {
            if self.shown.len() < SHOWN_SETS && !self.shown.iter().any(|m| m.hash == s.hash) {
                self.shown.push(s);
            }
        }
        self.saturated |= o.saturated;
    }

    /// The sets shown, with their executions.
    pub fn sets(&self) -> Vec<BindSet> {
        self.shown
            .iter()
            .map(|s| BindSet {
                executions: self.distinct.get(&s.hash).copied().unwrap_or(0),
                ..s.clone()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_nulls_and_distinct_sets() {
        let mut b = BindBuf::default();
        let mut st = BindStats::default();
        for v in [&b"22401"[..], b"22402", b"22401"] {
            b.start();
            b.bind();
            b.value(v);
            b.bind(); // NULL: no value line
            st.add(&b);
        }
        assert_eq!(b.values(), vec![Some("22401".to_string()), None]);
        assert_eq!(
            (st.executions, st.distinct.len(), st.shown.len()),
            (3, 2, 2)
        );
        assert_eq!(st.sets()[0].executions, 2);
        b.start();
        b.bind();
        b.value(b"\"two");
        b.more(b"lines\"");
        assert_eq!(b.values(), vec![Some("\"two\nlines\"".to_string())]);
        assert!(!b.open_quote);
    }
}
