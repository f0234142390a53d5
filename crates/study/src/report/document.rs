//! The report as one document: the sections push blocks (headings,
//! paragraphs, tables, listings, charts) and know nothing of formats; one
//! renderer per format (`report::render`) writes the document. A new
//! format is a new renderer; a new section pushes the blocks it needs.

/// A table in any format.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub head: Vec<String>,
    pub rows: Vec<Vec<String>>,
    /// Columns aligned left (the others right).
    pub left: usize,
}

/// How the notes under a table are marked: the two kinds the report has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mark {
    /// `* text`: a cell of the table marked * is explained.
    Star,
    /// `note: text`: a remark on the table as a whole.
    Note,
}

/// One piece of the report, in the order it is read.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    /// The report's title and the line under it that says what it holds.
    Title {
        title: String,
        subtitle: String,
    },
    /// The study's `about`, written in Markdown; only HTML shows it (the
    /// text and Markdown reports are read next to the study file).
    About(String),
    /// A heading: 2 a section, 3 a part of one.
    Heading {
        level: usize,
        text: String,
    },
    /// A heading (level 2) with the source it names: in text on one line
    /// with it, in parentheses; elsewhere the source is a paragraph.
    Sourced {
        text: String,
        source: String,
    },
    Paragraph(String),
    /// A table and the notes under it (none: a plain table).
    Table {
        table: Table,
        mark: Mark,
        notes: Vec<String>,
    },
    /// Remarks each prefixed by whose they are (`original: ...`).
    Labelled {
        label: String,
        items: Vec<String>,
    },
    /// Lines laid out as they are (a tally, a log).
    Preformatted(String),
    /// A level-3 caption with a fixed-width listing right under it (a
    /// profile table).
    Listing {
        caption: String,
        text: String,
    },
    /// Fixed-width panels side by side (strace's tables of two levels); a
    /// line starting `* ` is highlighted where the format can.
    Panels(Vec<Vec<String>>),
    /// An SVG chart: only HTML shows charts.
    Chart(String),
}

/// The report: its blocks in order.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Document {
    pub blocks: Vec<Block>,
}

impl Document {
    pub fn push(&mut self, b: Block) {
        self.blocks.push(b);
    }

    pub fn heading(&mut self, level: usize, text: impl Into<String>) {
        self.push(Block::Heading {
            level,
            text: text.into(),
        });
    }

    pub fn paragraph(&mut self, text: impl Into<String>) {
        self.push(Block::Paragraph(text.into()));
    }

    /// A table without notes.
    pub fn table(&mut self, table: Table) {
        self.table_with(table, Mark::Star, Vec::new());
    }

    pub fn table_with(&mut self, table: Table, mark: Mark, notes: Vec<String>) {
        self.push(Block::Table { table, mark, notes });
    }

    pub fn chart(&mut self, svg: String) {
        if !svg.is_empty() {
            self.push(Block::Chart(svg));
        }
    }
}
