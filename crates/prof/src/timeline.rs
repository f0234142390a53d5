//! The session over `tim`: time per profile component in bins of a width
//! that doubles as the session grows, so that memory stays bounded
//! whatever the trace's length. Bins are aligned to multiples of their
//! (power-of-two) width, so pieces of a file read apart merge exactly.

use std::collections::BTreeMap;

/// Most bins kept; the width doubles past it.
pub const MAX_BINS: usize = 400;

#[derive(Debug, Clone, Default)]
pub(crate) struct Timeline {
    /// log2 of the bin width in µs.
    pub shift: u32,
    /// Bin index (tim >> shift) → (component id, µs).
    pub bins: BTreeMap<i64, Vec<(u32, i64)>>,
    /// The bin most calls fall in, kept out of the map until another is
    /// needed (most calls land in the same bin as the one before): its
    /// index, and its µs by component id (`None`: none added), so that
    /// adding to it is one index, not a search (this runs two or three
    /// times per top-level call).
    cur: Option<i64>,
    cur_us: Vec<Option<i64>>,
}

impl Timeline {
    /// Settles the current bin and keeps to `MAX_BINS`: before the bins are
    /// read.
    pub fn finish(&mut self) {
        self.settle();
        while self.bins.len() > MAX_BINS {
            let s = self.shift + 1;
            self.grow_to(s);
        }
    }

    /// Puts the current bin into the map.
    pub fn settle(&mut self) {
        if let Some(k) = self.cur.take() {
            let slot = self.bins.entry(k).or_default();
            for (c, us) in self.cur_us.iter_mut().enumerate() {
                if let Some(us) = us.take() {
                    add_to(slot, c as u32, us);
                }
            }
        }
    }

    pub fn width(&self) -> i64 {
        1i64 << self.shift
    }

    fn grow_to(&mut self, shift: u32) {
        if shift <= self.shift {
            return;
        }
        self.settle();
        let by = shift - self.shift;
        let old = std::mem::take(&mut self.bins);
        for (k, v) in old {
            let slot = self.bins.entry(k >> by).or_default();
            for (c, us) in v {
                add_to(slot, c, us);
            }
        }
        self.shift = shift;
    }

    /// Spreads `us` of component `comp` evenly over `[start, end]`.
    pub fn add(&mut self, start: i64, end: i64, comp: u32, us: i64) {
        if us == 0 {
            return;
        }
        let (start, end) = (start.min(end), end.max(start));
        if self.cur == Some(start >> self.shift) && self.cur == Some(end >> self.shift) {
            self.add_to_cur(comp, us);
            return;
        }
        while (end - start) >> self.shift > MAX_BINS as i64 / 4 {
            let s = self.shift + 1;
            self.grow_to(s);
        }
        let (first, last) = (start >> self.shift, end >> self.shift);
        if first == last {
            self.settle();
            self.cur = Some(first);
            self.add_to_cur(comp, us);
        } else {
            self.settle();
            // Each bin gets the share of `us` up to its end less the share
            // up to its start: wider bins then hold exactly the sum of the
            // narrower ones they replace (pieces of a file merge exactly).
            let span = (end - start).max(1);
            let upto = |t: i64| (us as i128 * (t - start) as i128 / span as i128) as i64;
            for b in first..=last {
                let lo = (b << self.shift).max(start);
                let hi = ((b + 1) << self.shift).min(end);
                let part = upto(hi) - upto(lo);
                add_to(self.bins.entry(b).or_default(), comp, part);
            }
        }
        while self.bins.len() > MAX_BINS {
            let s = self.shift + 1;
            self.grow_to(s);
        }
    }

    #[inline]
    fn add_to_cur(&mut self, comp: u32, us: i64) {
        let c = comp as usize;
        if self.cur_us.len() <= c {
            self.cur_us.resize(c + 1, None);
        }
        *self.cur_us[c].get_or_insert(0) += us;
    }

    /// Adds another timeline whose component ids `map` translates.
    pub fn merge(&mut self, o: Timeline, map: &[u32]) {
        let mut o = o;
        self.settle();
        o.settle();
        let shift = self.shift.max(o.shift);
        self.grow_to(shift);
        o.grow_to(shift);
        for (k, v) in o.bins {
            let slot = self.bins.entry(k).or_default();
            for (c, us) in v {
                add_to(slot, map[c as usize], us);
            }
        }
        while self.bins.len() > MAX_BINS {
            let s = self.shift + 1;
            self.grow_to(s);
        }
    }
}

#[inline]
fn add_to(slot: &mut Vec<(u32, i64)>, comp: u32, us: i64) {
    match slot.iter_mut().find(|(c, _)| *c == comp) {
        Some((_, v)) => *v += us,
        None => slot.push((comp, us)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn total(t: &mut Timeline) -> i64 {
        t.finish();
        t.bins.values().flatten().map(|(_, us)| us).sum()
    }

    #[test]
    fn time_is_kept_whole_and_bins_stay_bounded() {
        let mut t = Timeline::default();
        let mut sum = 0;
        for i in 0..10_000i64 {
            t.add(i * 1000, i * 1000 + 700, (i % 3) as u32, 700);
            sum += 700;
        }
        t.add(0, 60_000_000, 4, 60_000_000);
        sum += 60_000_000;
        assert_eq!(total(&mut t), sum);
        assert!(t.bins.len() <= MAX_BINS);
    }

    #[test]
    fn pieces_merge_to_the_whole() {
        let mut whole = Timeline::default();
        let mut a = Timeline::default();
        let mut b = Timeline::default();
        for i in 0..5000i64 {
            whole.add(i * 997, i * 997 + 500, 0, 500);
            if i < 2000 {
                a.add(i * 997, i * 997 + 500, 0, 500);
            } else {
                b.add(i * 997, i * 997 + 500, 0, 500);
            }
        }
        a.merge(b, &[0]);
        assert_eq!(total(&mut a), total(&mut whole));
        assert_eq!(a.shift, whole.shift);
        assert_eq!(a.bins.len(), whole.bins.len());
    }
}
