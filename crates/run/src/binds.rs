//! Bind rows held compactly, once for the whole run.
//!
//! Why not `Vec<Vec<Option<String>>>`: a row of one short value cost
//! about 80 bytes that way (the row's vector, the value's string, two
//! allocations), so a 14.6 MB bind file took over a gigabyte, and each
//! run copied it once more for its sessions. Here every value's text sits
//! in one string, followed by its end offset (4 bytes while the text is
//! under 2 GiB, else 8) and a NULL bit; the table is shared by the
//! sessions behind an `Arc`, and the order a session walks it in is
//! computed, not stored (see [`Shuffle`]). A bind file takes about its
//! own size plus 4 bytes per value, whatever the number of sessions.

use std::sync::Arc;

/// A statement's bind rows: one row of values per execution, cycled;
/// `None` is NULL. Cloning shares the rows.
#[derive(Clone, Default)]
pub struct Binds(Arc<Table>);

#[derive(Default)]
struct Table {
    /// Every value's text, one after the other.
    text: String,
    /// Where each value's text ends in `text`.
    ends: Ends,
    /// One bit per value: set for NULL.
    nulls: Vec<u64>,
    rows: usize,
    /// Values per row when every row has as many (else `row_ends`).
    width: usize,
    /// Where each row's values end, by value index, when rows differ in
    /// width (sqlrun kits' bind files may); empty otherwise.
    row_ends: Vec<usize>,
    /// The first value holding a NUL byte, as its file has it.
    nul: Option<NulAt>,
}

/// Where a bind file holds a value with a NUL byte: PostgreSQL's text
/// cannot hold one, and the simple protocol cannot even send it (its
/// statements are NUL-terminated strings).
#[derive(Debug, Clone)]
pub struct NulAt {
    pub path: std::path::PathBuf,
    pub line: u64,
    /// The value's place in its line, from 1.
    pub value: usize,
}

/// End offsets, as narrow as the text allows.
enum Ends {
    Narrow(Vec<u32>),
    Wide(Vec<u64>),
}

impl Default for Ends {
    fn default() -> Self {
        Ends::Narrow(Vec::new())
    }
}

impl Ends {
    fn get(&self, i: usize) -> usize {
        match self {
            Ends::Narrow(v) => v[i] as usize,
            Ends::Wide(v) => v[i] as usize,
        }
    }

    fn len(&self) -> usize {
        match self {
            Ends::Narrow(v) => v.len(),
            Ends::Wide(v) => v.len(),
        }
    }

    fn push(&mut self, end: usize) {
        if let Ends::Narrow(v) = self {
            match u32::try_from(end) {
                Ok(e) => return v.push(e),
                // The text outgrew 4 GiB: widen, once.
                Err(_) => *self = Ends::Wide(v.iter().map(|&e| u64::from(e)).collect()),
            }
        }
        if let Ends::Wide(v) = self {
            v.push(end as u64);
        }
    }

    fn shrink(&mut self) {
        match self {
            Ends::Narrow(v) => v.shrink_to_fit(),
            Ends::Wide(v) => v.shrink_to_fit(),
        }
    }

    fn bytes(&self) -> usize {
        match self {
            Ends::Narrow(v) => v.capacity() * 4,
            Ends::Wide(v) => v.capacity() * 8,
        }
    }
}

impl Binds {
    /// The number of rows.
    pub fn len(&self) -> usize {
        self.0.rows
    }

    pub fn is_empty(&self) -> bool {
        self.0.rows == 0
    }

    /// The values of row `r`.
    pub fn row(&self, r: usize) -> impl ExactSizeIterator<Item = Option<&str>> + '_ {
        let t = &*self.0;
        let (from, to) = if t.row_ends.is_empty() {
            (r * t.width, (r + 1) * t.width)
        } else {
            (r.checked_sub(1).map_or(0, |p| t.row_ends[p]), t.row_ends[r])
        };
        (from..to).map(move |v| {
            if t.nulls[v / 64] >> (v % 64) & 1 == 1 {
                return None;
            }
            let start = v.checked_sub(1).map_or(0, |p| t.ends.get(p));
            Some(&t.text[start..t.ends.get(v)])
        })
    }

    /// The first value read from a file that holds a NUL byte.
    pub fn nul(&self) -> Option<&NulAt> {
        self.0.nul.as_ref()
    }

    /// Every row, as owned values (for tests and small workloads).
    pub fn to_vec(&self) -> Vec<Vec<Option<String>>> {
        (0..self.len())
            .map(|r| self.row(r).map(|v| v.map(str::to_string)).collect())
            .collect()
    }

    /// The bytes the rows take in memory.
    pub fn heap_bytes(&self) -> usize {
        let t = &*self.0;
        t.text.capacity()
            + t.ends.bytes()
            + t.nulls.capacity() * 8
            + t.row_ends.capacity() * std::mem::size_of::<usize>()
    }
}

impl std::fmt::Debug for Binds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Binds({} rows, {} bytes)", self.len(), self.heap_bytes())
    }
}

impl From<Vec<Vec<Option<String>>>> for Binds {
    fn from(rows: Vec<Vec<Option<String>>>) -> Binds {
        rows.into_iter().collect()
    }
}

impl FromIterator<Vec<Option<String>>> for Binds {
    fn from_iter<I: IntoIterator<Item = Vec<Option<String>>>>(rows: I) -> Binds {
        let mut b = Builder::new(0);
        for row in rows {
            for v in &row {
                b.push(v.as_deref());
            }
            b.end_row();
        }
        b.finish()
    }
}

/// Builds a [`Binds`] value by value, row by row.
pub(crate) struct Builder {
    t: Table,
    /// Values pushed so far.
    values: usize,
    /// Values at the end of the previous row.
    row_start: usize,
}

impl Builder {
    /// A builder for about `text_bytes` of values (a file's size: a hint
    /// that saves growing the text).
    pub(crate) fn new(text_bytes: u64) -> Builder {
        let mut t = Table::default();
        t.text.reserve(usize::try_from(text_bytes).unwrap_or(0));
        Builder {
            t,
            values: 0,
            row_start: 0,
        }
    }

    pub(crate) fn push(&mut self, value: Option<&str>) {
        let v = self.values;
        if v / 64 >= self.t.nulls.len() {
            self.t.nulls.push(0);
        }
        match value {
            Some(s) => self.t.text.push_str(s),
            None => self.t.nulls[v / 64] |= 1 << (v % 64),
        }
        self.t.ends.push(self.t.text.len());
        self.values += 1;
    }

    /// Notes the first value of a file that holds a NUL byte (see
    /// [`Binds::nul`]).
    pub(crate) fn nul_at(&mut self, at: impl FnOnce() -> NulAt) {
        if self.t.nul.is_none() {
            self.t.nul = Some(at());
        }
    }

    /// The number of values in the row being built.
    pub(crate) fn row_width(&self) -> usize {
        self.values - self.row_start
    }

    pub(crate) fn end_row(&mut self) {
        let w = self.row_width();
        let t = &mut self.t;
        if t.rows == 0 {
            t.width = w;
        } else if t.row_ends.is_empty() && w != t.width {
            // The first row of another width: from here on, rows say
            // where they end.
            t.row_ends = (1..=t.rows).map(|r| r * t.width).collect();
        }
        if !t.row_ends.is_empty() {
            t.row_ends.push(self.values);
        }
        t.rows += 1;
        self.row_start = self.values;
    }

    pub(crate) fn rows(&self) -> usize {
        self.t.rows
    }

    pub(crate) fn finish(mut self) -> Binds {
        debug_assert_eq!(self.t.ends.len(), self.values);
        self.t.text.shrink_to_fit();
        self.t.ends.shrink();
        self.t.nulls.shrink_to_fit();
        self.t.row_ends.shrink_to_fit();
        Binds(Arc::new(self.t))
    }
}

/// A random order of the rows `0..n`, its own for each seed, computed
/// position by position instead of stored: a session of a run with many
/// sessions and a big bind file would otherwise hold a shuffled copy of
/// every row number (8 bytes a row, per session).
///
/// Hand-written because no well-kept crate offers a stateless random
/// permutation: a four-round Feistel network over the smallest even
/// power of two that holds `n` (a bijection of that domain, whatever the
/// round function), walked until it lands below `n` ("cycle walking",
/// which keeps it a bijection of `0..n`; fewer than four steps on
/// average, as the domain is under four times `n`).
#[derive(Debug, Clone)]
pub(crate) struct Shuffle {
    n: u64,
    half_bits: u32,
    keys: [u64; 4],
}

impl Shuffle {
    pub(crate) fn new(n: usize, rng: &mut fastrand::Rng) -> Shuffle {
        let n = n as u64;
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        Shuffle {
            n,
            half_bits: bits.div_ceil(2).max(1),
            keys: [rng.u64(..), rng.u64(..), rng.u64(..), rng.u64(..)],
        }
    }

    /// The row at position `i` (below `n`) of the order.
    pub(crate) fn at(&self, i: usize) -> usize {
        let mut x = i as u64;
        loop {
            x = self.permute(x);
            if x < self.n {
                return x as usize;
            }
        }
    }

    fn permute(&self, x: u64) -> u64 {
        let h = self.half_bits;
        let mask = (1u64 << h) - 1;
        let (mut l, mut r) = (x >> h, x & mask);
        for k in self.keys {
            let f = mix(r ^ k) & mask;
            (l, r) = (r, l ^ f);
        }
        (l << h) | r
    }
}

/// SplitMix64's finalizer: a cheap, well-mixing round function.
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_as_given_nulls_and_empty_values_apart() {
        let rows = vec![
            vec![Some("1686".to_string()), None, Some(String::new())],
            vec![None, Some("é,x".into()), Some("z".into())],
        ];
        let b = Binds::from(rows.clone());
        assert_eq!(b.len(), 2);
        assert_eq!(b.to_vec(), rows);
        // Rows of other widths (sqlrun kits).
        let ragged = vec![
            vec![Some("a".to_string())],
            vec![Some("a".to_string())],
            vec![Some("b".into()), Some("c".into())],
            vec![],
            vec![None],
        ];
        assert_eq!(Binds::from(ragged.clone()).to_vec(), ragged);
        assert!(Binds::default().is_empty());
    }

    #[test]
    fn a_row_of_one_short_value_takes_a_few_bytes() {
        let b: Binds = (0..100_000).map(|i| vec![Some(i.to_string())]).collect();
        let text: usize = (0..100_000).map(|i: i32| i.to_string().len()).sum();
        // The text, 4 bytes of offset and a bit per value (the old rows
        // took 60-80 bytes a row).
        assert!(
            b.heap_bytes() <= text + 100_000 * 4 + 100_000 / 8 + 64,
            "{} bytes for {text} bytes of values",
            b.heap_bytes()
        );
        // Sharing does not copy.
        let shared = b.clone();
        assert_eq!(Arc::as_ptr(&shared.0), Arc::as_ptr(&b.0));
    }

    #[test]
    fn wide_offsets_past_four_gib_read_the_same() {
        let mut e = Ends::Narrow(vec![1, 2]);
        e.push(u32::MAX as usize + 10);
        assert!(matches!(e, Ends::Wide(_)));
        assert_eq!((e.get(0), e.get(2)), (1, u32::MAX as usize + 10));
    }

    #[test]
    fn a_shuffle_is_a_permutation_of_its_own_for_each_seed() {
        for n in [1usize, 2, 3, 7, 64, 1000, 4097] {
            let mut rng = fastrand::Rng::with_seed(n as u64);
            let s = Shuffle::new(n, &mut rng);
            let mut seen = vec![false; n];
            for i in 0..n {
                let r = s.at(i);
                assert!(!seen[r], "n={n}: row {r} twice");
                seen[r] = true;
            }
        }
        let n = 1000;
        let a = Shuffle::new(n, &mut fastrand::Rng::with_seed(1));
        let b = Shuffle::new(n, &mut fastrand::Rng::with_seed(2));
        let same = (0..n).filter(|&i| a.at(i) == b.at(i)).count();
        assert!(same < 20, "two seeds, {same} of {n} positions alike");
        let in_order = (0..n).filter(|&i| a.at(i) == i).count();
        assert!(in_order < 20, "{in_order} of {n} rows in place");
    }
}
