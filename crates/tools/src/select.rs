//! Choosing lines of a trace so that what is chosen is still a valid
//! trace: the header comes first, the context (`*** SESSION ID`, MODULE,
//! ...) in force where the choice starts is repeated, and the PARSING IN
//! CURSOR block of every cursor a chosen line uses is carried along if it
//! was not chosen itself, right before the cursor's first chosen line.
//! `crop` and `merge` differ only in which lines they choose.

use std::borrow::Cow;
use std::ops::Range;

use rustc_hash::{FxHashMap, FxHashSet};
use tracelab_trace::{Call, CallKind, WallClock};

use crate::scan::{self, Field, HeaderFacts, Star, SEPARATOR};

/// The end time of a timed line and the wall clock the reader gave it.
#[derive(Debug, Clone, Copy)]
pub struct Timed {
    pub tim: i64,
    pub wall: Option<WallClock>,
}

/// A line to write: the reader's own line while it is being read (crop
/// writes it with no copy), or a copy (the lines kept for later, those a
/// merge hands to another thread).
#[derive(Debug, Clone)]
pub struct Item<'a> {
    pub text: Cow<'a, [u8]>,
    /// Where its cursor number is (renumbered by a merge).
    pub span: Option<Range<usize>>,
    pub timed: Option<Timed>,
    /// One of the file's header lines (a merge writes one file's only).
    pub header: bool,
}

#[derive(Debug, Default, Clone)]
pub struct Attr {
    pub span: Option<Range<usize>>,
    pub cursor: Option<u64>,
    /// A line of a statement's SQL text (or its END OF STMT).
    pub sql_text: bool,
    pub pic: bool,
    pub context: bool,
    pub header: bool,
}

#[derive(Clone, Copy)]
enum TState {
    Normal,
    Sql(u64),
    Binds(u64),
}

/// What a file's lines have said so far: header, context, statements.
pub struct Tracker {
    header_done: bool,
    pub header: Vec<Vec<u8>>,
    pub facts: HeaderFacts,
    state: TState,
    /// The latest PARSING IN CURSOR block of each cursor (its line, the
    /// text and END OF STMT): bounded by the cursors, not the file.
    blocks: FxHashMap<u64, Vec<Vec<u8>>>,
    sqlids: FxHashMap<u64, Vec<u8>>,
    /// The latest `***` line of each kind, with its line number.
    contexts: Vec<(Vec<u8>, u64, Vec<u8>)>,
    pub values: [Option<String>; 5],
}

impl Tracker {
    pub fn new() -> Tracker {
        Tracker {
            header_done: false,
            header: Vec::new(),
            facts: HeaderFacts::default(),
            state: TState::Normal,
            blocks: FxHashMap::default(),
            sqlids: FxHashMap::default(),
            contexts: Vec::new(),
            values: Default::default(),
        }
    }

    pub fn value(&self, f: Field) -> Option<&str> {
        self.values[f.index()].as_deref()
    }

    pub fn sqlid(&self, cursor: u64) -> Option<&[u8]> {
        self.sqlids.get(&cursor).map(Vec::as_slice)
    }

    /// Reads one line in file order and says where it belongs.
    pub fn observe(&mut self, line: u64, b: &[u8]) -> Attr {
        let mut a = Attr::default();
        match self.state {
            TState::Sql(k) => {
                let ends = b == b"END OF STMT";
                // A text that runs into a trace line lost its END OF STMT
                // (a cut file): the text ends there, as the reader ends it.
                if ends || (scan::cursor_span(b).is_none() && !b.starts_with(b"*** ")) {
                    if let Some(block) = self.blocks.get_mut(&k) {
                        block.push(b.to_vec());
                    }
                    if ends {
                        self.state = TState::Normal;
                    }
                    a.cursor = Some(k);
                    a.sql_text = true;
                    return a;
                }
                self.state = TState::Normal;
            }
            TState::Binds(k) => {
                if b.is_empty() || b[0] == b' ' {
                    a.cursor = Some(k);
                    return a;
                }
                self.state = TState::Normal;
            }
            TState::Normal => {}
        }
        if !self.header_done {
            let trace_line = b.starts_with(b"***")
                || b == SEPARATOR
                || scan::cursor_span(b).is_some()
                || b.starts_with(b"XCTEND ")
                || b.starts_with(b"LOB")
                || b.starts_with(b"APPNAME ");
            if !trace_line {
                self.facts.see(b);
                self.header.push(b.to_vec());
                a.header = true;
                return a;
            }
            self.header_done = true;
        }
        if let Some(span) = scan::cursor_span(b) {
            let k = scan::cursor_id(&b[span.clone()]);
            a.span = Some(span);
            a.cursor = Some(k);
            if scan::is_pic(b) {
                a.pic = true;
                self.blocks.insert(k, vec![b.to_vec()]);
                let id = scan::quoted_field(b, b"sqlid")
                    .map(<[u8]>::to_vec)
                    .or_else(|| scan::int_field(b, b"hv").map(|h| h.to_string().into_bytes()))
                    .unwrap_or_default();
                self.sqlids.insert(k, id);
                self.state = TState::Sql(k);
            } else if b.starts_with(b"BINDS #") {
                self.state = TState::Binds(k);
            }
            return a;
        }
        if let Some(star) = scan::star(b) {
            a.context = true;
            let key: Option<&[u8]> = match star {
                Star::Named(name, value) => {
                    if let Some(f) = Field::of_star(name) {
                        self.values[f.index()] = Some(String::from_utf8_lossy(value).into_owned());
                    }
                    Some(name)
                }
                Star::Stamp => Some(b""),
                Star::Process(_) => Some(b"["),
                Star::Other => None,
            };
            if let Some(key) = key {
                self.keep_context(key, line, b);
            }
        } else if let Some((module, action)) = scan::appname(b) {
            a.context = true;
            self.values[Field::Module.index()] = Some(String::from_utf8_lossy(module).into_owned());
            self.values[Field::Action.index()] = Some(String::from_utf8_lossy(action).into_owned());
            self.keep_context(b"APPNAME", line, b);
        }
        a
    }

    fn keep_context(&mut self, key: &[u8], line: u64, b: &[u8]) {
        match self.contexts.iter_mut().find(|c| c.0 == key) {
            Some(c) => {
                c.1 = line;
                c.2 = b.to_vec();
            }
            None => self.contexts.push((key.to_vec(), line, b.to_vec())),
        }
    }

    /// The context lines in force before `line`, in file order.
    fn contexts_before(&self, line: u64) -> Vec<&[u8]> {
        let mut v: Vec<(u64, &[u8])> = self
            .contexts
            .iter()
            .filter(|c| c.1 < line)
            .map(|c| (c.1, c.2.as_slice()))
            .collect();
        v.sort_by_key(|c| c.0);
        v.into_iter().map(|c| c.1).collect()
    }
}

/// A bound of a crop: a `tim`, a wall-clock time or a line number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    Tim(i64),
    /// µs since 1970 in the trace's local time, as its `***` lines.
    Wall(i64),
    Line(u64),
}

impl Bound {
    fn is_time(self) -> bool {
        !matches!(self, Bound::Line(_))
    }

    /// Where a timed line's end is against this bound (`Less`: before it;
    /// a wall-clock bound in a file without a `***` timestamp before the
    /// line: unknown).
    fn cmp(self, t: &Timed) -> Option<std::cmp::Ordering> {
        match self {
            Bound::Tim(x) => Some(t.tim.cmp(&x)),
            Bound::Wall(x) => t.wall.map(|w| (w.wall_us + (t.tim - w.tim)).cmp(&x)),
            Bound::Line(_) => None,
        }
    }
}

/// Which lines to choose.
#[derive(Debug, Clone)]
pub enum Policy {
    /// The lines from the first call ending at or after `from` (with the
    /// lines before it back to the previous call: its waits, BINDS,
    /// PARSING IN CURSOR) to the last call ending at or before `to`.
    Window {
        from: Option<Bound>,
        to: Option<Bound>,
    },
    /// The lines of the statement's cursors: its PARSING IN CURSOR
    /// blocks, BINDS, calls, waits, STAT lines; and the context lines.
    SqlId(Vec<u8>),
    /// The lines written while the context field had this value.
    Field(Field, String),
}

pub struct Selector<F: FnMut(Item<'_>)> {
    pub tracker: Tracker,
    policy: Policy,
    out: F,
    started: bool,
    stopped: bool,
    /// Untimed lines since the last timed one, kept until the next timed
    /// line says whether they are in the window.
    lead: Vec<(u64, Vec<u8>, Attr)>,
    defined: FxHashSet<u64>,
    last_sep: bool,
    /// The file's first wall-clock anchor (a merge orders files with
    /// different `tim` clocks by it).
    pub first_anchor: Option<WallClock>,
    pub chosen: u64,
}

impl<F: FnMut(Item<'_>)> Selector<F> {
    pub fn new(policy: Policy, out: F) -> Self {
        Selector {
            tracker: Tracker::new(),
            policy,
            out,
            started: false,
            stopped: false,
            lead: Vec::new(),
            defined: FxHashSet::default(),
            last_sep: false,
            first_anchor: None,
            chosen: 0,
        }
    }

    /// One line of the file, in order (the reader hands out every line
    /// with `all_lines`).
    pub fn feed(&mut self, call: &Call<'_>) {
        if self.stopped {
            return;
        }
        if self.first_anchor.is_none() {
            self.first_anchor = call.wall;
        }
        let line = call.line;
        let b = call.text;
        let attr = self.tracker.observe(line, b);
        if attr.pic {
            // Re-parsed where nothing is chosen: the output's statement of
            // this cursor is no longer the file's.
            if let Some(k) = attr.cursor {
                self.defined.remove(&k);
            }
        }
        if attr.header {
            return;
        }
        let timed = if call.kind == CallKind::Line {
            None
        } else {
            call.tim_us().map(|tim| Timed {
                tim,
                wall: call.wall,
            })
        };
        // Taken out for the call (and put back): no clone per line.
        let policy = std::mem::replace(
            &mut self.policy,
            Policy::Window {
                from: None,
                to: None,
            },
        );
        match &policy {
            Policy::Window { from, to } => self.window(line, b, attr, timed, *from, *to),
            Policy::SqlId(id) => {
                let mine = attr
                    .cursor
                    .and_then(|k| self.tracker.sqlid(k))
                    .is_some_and(|s| s == id.as_slice());
                if mine || attr.context {
                    self.emit(line, Cow::Borrowed(b), attr, timed);
                }
            }
            Policy::Field(f, v) => {
                if self.tracker.value(*f) == Some(v.as_str()) {
                    self.emit(line, Cow::Borrowed(b), attr, timed);
                }
            }
        }
        self.policy = policy;
    }

    fn window(
        &mut self,
        line: u64,
        b: &[u8],
        attr: Attr,
        timed: Option<Timed>,
        from: Option<Bound>,
        to: Option<Bound>,
    ) {
        use std::cmp::Ordering::{Greater, Less};
        if matches!(to, Some(Bound::Line(m)) if line > m) {
            self.stopped = true;
            return;
        }
        if matches!(from, Some(Bound::Line(n)) if line < n) {
            return;
        }
        let from_time = from.is_some_and(Bound::is_time);
        let to_time = to.is_some_and(Bound::is_time);
        match timed {
            Some(t) => {
                let before = from_time && from.and_then(|f| f.cmp(&t)).is_none_or(|o| o == Less);
                if before {
                    self.lead.clear();
                    return;
                }
                if to_time && to.and_then(|x| x.cmp(&t)) == Some(Greater) {
                    self.lead.clear();
                    self.stopped = true;
                    return;
                }
                for (l, text, a) in std::mem::take(&mut self.lead) {
                    self.emit(l, Cow::Owned(text), a, None);
                }
                self.emit(line, Cow::Borrowed(b), attr, Some(t));
            }
            None if (from_time && !self.started) || to_time => {
                self.lead.push((line, b.to_vec(), attr));
            }
            None => self.emit(line, Cow::Borrowed(b), attr, None),
        }
    }

    /// Whether no later line can be chosen (a window passed): the rest of
    /// the file need not be read.
    pub fn done(&self) -> bool {
        self.stopped
    }

    /// The end of the file: the lines after the last call are in the
    /// window if nothing ended it.
    pub fn finish(&mut self) {
        if self.stopped || !self.started {
            return;
        }
        for (l, text, a) in std::mem::take(&mut self.lead) {
            self.emit(l, Cow::Owned(text), a, None);
        }
    }

    fn push(&mut self, item: Item<'_>) {
        self.last_sep = *item.text == *SEPARATOR;
        self.chosen += 1;
        (self.out)(item);
    }

    fn separator(&mut self) {
        if !self.last_sep {
            self.push(Item {
                text: Cow::Borrowed(SEPARATOR),
                span: None,
                timed: None,
                header: false,
            });
        }
    }

    fn emit(&mut self, line: u64, text: Cow<'_, [u8]>, attr: Attr, timed: Option<Timed>) {
        if !self.started {
            self.started = true;
            let header: Vec<Vec<u8>> = self.tracker.header.clone();
            for h in header {
                (self.out)(Item {
                    text: Cow::Owned(h),
                    span: None,
                    timed: None,
                    header: true,
                });
            }
            let ctx: Vec<Vec<u8>> = self
                .tracker
                .contexts_before(line)
                .into_iter()
                .map(<[u8]>::to_vec)
                .collect();
            for c in ctx {
                self.push(Item {
                    text: Cow::Owned(c),
                    span: None,
                    timed: None,
                    header: false,
                });
            }
        }
        if let Some(k) = attr.cursor.filter(|k| *k != 0) {
            if !self.defined.contains(&k) {
                if attr.pic {
                    self.defined.insert(k);
                } else if attr.sql_text {
                    // A statement's text cut at its start: the whole block
                    // comes with the cursor's first chosen call.
                    return;
                } else {
                    if let Some(block) = self.tracker.blocks.get(&k).cloned() {
                        self.separator();
                        for l in block {
                            let span = scan::cursor_span(&l).filter(|_| scan::is_pic(&l));
                            self.push(Item {
                                text: Cow::Owned(l),
                                span,
                                timed: None,
                                header: false,
                            });
                        }
                    }
                    self.defined.insert(k);
                }
            }
        }
        if attr.pic {
            self.separator();
        }
        self.push(Item {
            text,
            span: attr.span,
            timed,
            header: false,
        });
    }
}
