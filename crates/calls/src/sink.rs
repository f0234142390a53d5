//! Writing a table: Parquet (zstd, dictionary-encoded names, row groups
//! sized for scans), CSV or JSON lines (see [`crate::text`]), from Arrow
//! batches.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use parquet::schema::types::ColumnPath;

use crate::error::CallsError;
use crate::text::{CsvWriter, JsonlWriter};

/// Rows per Parquet row group: about a million, the size DuckDB and Spark
/// scan well (DuckDB reads row groups in parallel, Spark splits files at
/// row groups); a 1 GB trace gives four or five.
pub const ROW_GROUP_ROWS: usize = 1024 * 1024;

/// Output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Parquet,
    Csv,
    Jsonl,
}

impl Format {
    pub fn extension(self) -> &'static str {
        match self {
            Format::Parquet => "parquet",
            Format::Csv => "csv",
            Format::Jsonl => "jsonl",
        }
    }

    /// The format a file name's extension says, if any.
    pub fn of_path(p: &Path) -> Option<Format> {
        match p.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "parquet" | "pq" => Some(Format::Parquet),
            "csv" => Some(Format::Csv),
            "jsonl" | "ndjson" | "json" => Some(Format::Jsonl),
            _ => None,
        }
    }
}

enum Inner {
    Parquet(ArrowWriter<File>),
    Csv(CsvWriter<BufWriter<File>>),
    Jsonl(JsonlWriter<BufWriter<File>>),
}

/// One table being written to one file.
pub struct TableWriter {
    path: PathBuf,
    inner: Inner,
}

/// How a table's columns are encoded in Parquet; a column named in no
/// list gets a dictionary (RLE_DICTIONARY, falling back to plain when the
/// dictionary outgrows its page).
#[derive(Debug, Clone, Copy, Default)]
pub struct Encodings<'a> {
    /// Columns written as plain values (zstd still compresses them).
    pub plain: &'a [&'a str],
    /// Integer columns written as DELTA_BINARY_PACKED.
    pub delta: &'a [&'a str],
    /// Columns that get row-group statistics (all when empty).
    pub stats: &'a [&'a str],
}

pub(crate) fn parquet_properties(enc: Encodings<'_>) -> WriterProperties {
    let stats = enc.stats;
    let mut b = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::default()))
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_write_batch_size(8192)
        .set_dictionary_enabled(true)
        // Statistics (min/max per row group) only where engines prune by
        // them; computing them for every column costs more than it saves.
        .set_statistics_enabled(if stats.is_empty() {
            EnabledStatistics::Chunk
        } else {
            EnabledStatistics::None
        });
    for c in enc.plain.iter().chain(enc.delta) {
        b = b.set_column_dictionary_enabled(ColumnPath::from(*c), false);
    }
    for c in enc.delta {
        b = b.set_column_encoding(ColumnPath::from(*c), Encoding::DELTA_BINARY_PACKED);
    }
    for c in stats {
        b = b.set_column_statistics_enabled(ColumnPath::from(*c), EnabledStatistics::Chunk);
    }
    b.build()
}

impl TableWriter {
    /// Creates `path` for batches of `schema`, encoded in Parquet as
    /// `enc` says.
    pub fn create(
        path: &Path,
        format: Format,
        schema: &Arc<Schema>,
        enc: Encodings<'_>,
    ) -> Result<TableWriter, CallsError> {
        let err = |e: &dyn std::fmt::Display| CallsError::write(path, e);
        let file = File::create(path).map_err(|e| err(&e))?;
        let inner = match format {
            Format::Parquet => Inner::Parquet(
                ArrowWriter::try_new(file, schema.clone(), Some(parquet_properties(enc)))
                    .map_err(|e| err(&e))?,
            ),
            Format::Csv => Inner::Csv(CsvWriter::new(BufWriter::with_capacity(1 << 20, file))),
            Format::Jsonl => {
                Inner::Jsonl(JsonlWriter::new(BufWriter::with_capacity(1 << 20, file)))
            }
        };
        Ok(TableWriter {
            path: path.to_path_buf(),
            inner,
        })
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<(), CallsError> {
        let r = match &mut self.inner {
            Inner::Parquet(w) => w.write(batch).map_err(|e| e.to_string()),
            Inner::Csv(w) => w.write(batch),
            Inner::Jsonl(w) => w.write(batch),
        };
        r.map_err(|e| CallsError::write(&self.path, &e))
    }

    /// Writes what is buffered and the file's footer.
    pub fn finish(self) -> Result<(), CallsError> {
        let path = self.path;
        let r = match self.inner {
            Inner::Parquet(w) => w.close().map(|_| ()).map_err(|e| e.to_string()),
            Inner::Csv(w) => w.finish().map(drop),
            Inner::Jsonl(w) => w.finish().map(drop),
        };
        r.map_err(|e| CallsError::write(&path, &e))
    }
}
