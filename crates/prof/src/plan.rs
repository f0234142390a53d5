//! Row-source plans from STAT lines, kept as tkprof prints them: one plan
//! per distinct shape, with the rows of the first capture, the average and
//! the maximum over every capture.

use serde::Serialize;

/// One STAT line: `STAT #c id=1 cnt=1 pid=0 pos=1 obj=22 op='...'`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StatLine {
    pub cursor: u64,
    pub id: i64,
    pub cnt: i64,
    pub pid: i64,
    pub pos: i64,
    pub obj: i64,
    /// The operation as written, statistics included:
    /// `TABLE ACCESS FULL EMP (cr=7 pr=0 pw=0 time=58 us cost=3 ...)`.
    pub op: String,
}

/// Parses a STAT line; `None` when it is not one tkprof could read (a
/// damaged line is counted, not shown).
pub(crate) fn parse_stat(b: &[u8]) -> Option<StatLine> {
    let rest = b.strip_prefix(b"STAT #")?;
    let end = rest.iter().position(|&c| c == b' ')?;
    let cursor = crate::collect::cursor_key(&rest[..end])?;
    let rest = &rest[end + 1..];
    let op_at = memchr::memmem::find(rest, b"op='")?;
    let (head, op) = (&rest[..op_at], &rest[op_at + 4..]);
    let op = op.strip_suffix(b"'").unwrap_or(op);
    let mut s = StatLine {
        cursor,
        id: -1,
        cnt: 0,
        pid: 0,
        pos: 0,
        obj: 0,
        op: String::from_utf8_lossy(op).into_owned(),
    };
    for word in head.split(|&c| c == b' ') {
        let Some(eq) = memchr::memchr(b'=', word) else {
            continue;
        };
        let v = std::str::from_utf8(&word[eq + 1..])
            .ok()
            .and_then(|v| v.parse::<i64>().ok());
        match (&word[..eq], v) {
            (b"id", Some(v)) => s.id = v,
            (b"cnt", Some(v)) => s.cnt = v,
            (b"pid", Some(v)) => s.pid = v,
            (b"pos", Some(v)) => s.pos = v,
            (b"obj", Some(v)) => s.obj = v,
            _ => {}
        }
    }
    (s.id >= 0).then_some(s)
}

/// The operation without its run-time statistics: what makes two
/// captures the same plan.
fn op_name(op: &str) -> &str {
    match op.rfind(" (cr=") {
        Some(i) => &op[..i],
        None => op.trim_end(),
    }
}

/// One line of a plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlanLine {
    pub id: i64,
    pub pid: i64,
    pub pos: i64,
    pub obj: i64,
    /// Depth in the tree (0 for the root), for tkprof's one-space indent.
    pub depth: usize,
    /// The operation as written in the first capture, statistics included.
    pub op: String,
    pub rows_first: i64,
    pub rows_sum: i64,
    pub rows_max: i64,
}

/// A distinct plan of a statement and how often its statistics were
/// captured (one capture per STAT dump).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// `plh=` of the statement's calls when the plan was dumped (0 when
    /// the trace has none).
    pub plan_hash: i64,
    pub captures: u64,
    pub lines: Vec<PlanLine>,
}

impl Plan {
    /// Rows (avg) of line `i`, as tkprof prints it (whole rows).
    pub fn rows_avg(&self, i: usize) -> i64 {
        if self.captures == 0 {
            0
        } else {
            self.lines[i].rows_sum / self.captures as i64
        }
    }

    fn same_shape(&self, capture: &[StatLine]) -> bool {
        self.lines.len() == capture.len()
            && self
                .lines
                .iter()
                .zip(capture)
                .all(|(l, s)| l.id == s.id && l.pid == s.pid && op_name(&l.op) == op_name(&s.op))
    }

    pub(crate) fn merge(&mut self, o: &Plan) {
        self.captures += o.captures;
        for (l, m) in self.lines.iter_mut().zip(&o.lines) {
            l.rows_sum += m.rows_sum;
            l.rows_max = l.rows_max.max(m.rows_max);
        }
    }

    pub(crate) fn same_plan(&self, o: &Plan) -> bool {
        self.lines.len() == o.lines.len()
            && self
                .lines
                .iter()
                .zip(&o.lines)
                .all(|(l, m)| l.id == m.id && l.pid == m.pid && op_name(&l.op) == op_name(&m.op))
    }
}

/// Adds one capture (the STAT lines of one dump, in order) to a
/// statement's plans.
pub(crate) fn add_capture(plans: &mut Vec<Plan>, capture: &[StatLine], plan_hash: i64) {
    if capture.is_empty() {
        return;
    }
    if let Some(p) = plans.iter_mut().find(|p| p.same_shape(capture)) {
        p.captures += 1;
        for (l, s) in p.lines.iter_mut().zip(capture) {
            l.rows_sum += s.cnt;
            l.rows_max = l.rows_max.max(s.cnt);
        }
        return;
    }
    // Depth of each line from its parent chain; ids are small and dense.
    let mut depth_of: Vec<(i64, usize)> = Vec::with_capacity(capture.len());
    let lines = capture
        .iter()
        .map(|s| {
            let depth = depth_of
                .iter()
                .find(|(id, _)| *id == s.pid)
                .map_or(0, |(_, d)| d + 1);
            depth_of.push((s.id, depth));
            PlanLine {
                id: s.id,
                pid: s.pid,
                pos: s.pos,
                obj: s.obj,
                depth,
                op: s.op.clone(),
                rows_first: s.cnt,
                rows_sum: s.cnt,
                rows_max: s.cnt,
            }
        })
        .collect();
    plans.push(Plan {
        plan_hash,
        captures: 1,
        lines,
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_parse_and_malformed_ones_do_not() {
        let s = parse_stat(b"STAT #140472196919200 id=2 cnt=1 pid=1 pos=1 obj=46 op='INDEX UNIQUE SCAN I_USER1 (cr=1 pr=0 pw=0 str=1 time=51 us cost=0 size=0 card=1)'").unwrap();
        assert_eq!(
            (s.cursor, s.id, s.cnt, s.pid, s.obj),
            (140472196919200, 2, 1, 1, 46)
        );
        assert_eq!(op_name(&s.op), "INDEX UNIQUE SCAN I_USER1");
        assert!(parse_stat(b"STAT #1 (cr=0 pr=0 pw=0 str=1 time=29 us)'").is_none());
    }

    #[test]
    fn captures_of_one_shape_add_up_first_avg_max() {
        let mk = |cnt: i64| {
            vec![
                parse_stat(format!("STAT #1 id=1 cnt={cnt} pid=0 pos=1 obj=0 op='SORT AGGREGATE (cr=3 pr=0 pw=0 time=5 us)'").as_bytes()).unwrap(),
                parse_stat(format!("STAT #1 id=2 cnt={} pid=1 pos=1 obj=9 op='TABLE ACCESS FULL T (cr=3 pr=0 pw=0 time=4 us)'", cnt * 10).as_bytes()).unwrap(),
            ]
        };
        let mut plans = Vec::new();
        add_capture(&mut plans, &mk(1), 7);
        add_capture(&mut plans, &mk(4), 7);
        add_capture(&mut plans, &mk(2), 7);
        assert_eq!(plans.len(), 1);
        let p = &plans[0];
        assert_eq!(p.captures, 3);
        assert_eq!(
            (p.lines[1].rows_first, p.rows_avg(1), p.lines[1].rows_max),
            (10, 23, 40)
        );
        assert_eq!((p.lines[0].depth, p.lines[1].depth), (0, 1));
    }
}
