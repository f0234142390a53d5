//! The calls table as Parquet, encoded on several threads: Parquet's
//! dictionaries, statistics and zstd cost more than reading the trace, so
//! one writer thread could not keep up with the reader.
//!
//! Each encoder thread owns the column writers of a share of the columns
//! and encodes its share of every batch; at the end of a row group the
//! encoded column chunks go, in column order, to the thread that owns the
//! file. The shares are balanced by cost, not by count: the bind values'
//! list costs as much to encode as eight integer columns, and an encoder
//! with more than its share holds the reader up while the others wait.
//! The first row group is shared by an estimate from the column types,
//! each later one by the time every column took in the row group before.
//!
//! The file holds the same row groups (of [`ROW_GROUP_ROWS`] rows) and the
//! same columns as `ArrowWriter` writes: this is arrow-rs's own low-level
//! API for parallel encoding, not an encoder of ours. A string column of
//! one value in a full row group (the file's path and name) is encoded
//! once a file and its chunk copied into the later row groups, with the
//! same API's `append_column` (see [`Same`]): the bytes are those the
//! encoder would have written again.

use std::fs::File;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch};
use arrow_schema::{DataType, SchemaRef};
use bytes::Bytes;
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::column::writer::ColumnCloseResult;
use parquet::errors::ParquetError;
use parquet::file::properties::WriterPropertiesPtr;
use parquet::file::writer::{SerializedRowGroupWriter, TrackedWrite};
use parquet::schema::types::{SchemaDescPtr, SchemaDescriptor, Type};

use crate::columns::repeated;
use crate::error::CallsError;
use crate::sink::{parquet_properties, Encodings, ROW_GROUP_ROWS};

/// What an encoder thread is sent: a batch (all columns; it encodes its
/// own), or the end of the row group.
enum Work {
    Batch(RecordBatch),
    EndRowGroup,
}

/// A column chunk of a row group: encoded, or the bytes of a chunk encoded
/// before (a column that holds one value in every row, see [`Same`]).
enum Chunk {
    Encoded(ArrowColumnChunk),
    Copied(Bytes, ColumnCloseResult),
}

/// Column chunks of one row group from one encoder: (column, chunk, time
/// spent encoding it).
type Chunks = Vec<(usize, Chunk, Duration)>;

/// Which encoder encodes each column: the columns, costliest first, each
/// to the encoder with the least cost so far (longest processing time
/// first, within a third of the best split).
fn share(costs: &[f64], threads: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..costs.len()).collect();
    order.sort_by(|&a, &b| costs[b].total_cmp(&costs[a]));
    let mut load = vec![0.0f64; threads];
    let mut owner = vec![0; costs.len()];
    for i in order {
        let k = (0..threads)
            .min_by(|&a, &b| load[a].total_cmp(&load[b]))
            .unwrap_or(0);
        load[k] += costs[i];
        owner[i] = k;
    }
    owner
}

/// What a column is expected to cost before any has been timed, from the
/// encodings measured on the 1 GB bench trace: a list of strings about
/// eight integer columns, a string column about two.
fn estimated_cost(t: &DataType) -> f64 {
    match t {
        DataType::List(_) => 8.0,
        DataType::Utf8 => 2.0,
        _ => 1.0,
    }
}

/// Writes the batches `rx` delivers to `path` as Parquet, encoded on
/// `threads` threads, in row groups of [`ROW_GROUP_ROWS`].
pub fn write_parquet(
    path: &Path,
    schema: SchemaRef,
    enc: Encodings<'_>,
    threads: usize,
    rx: Receiver<RecordBatch>,
) -> Result<(), CallsError> {
    write_row_groups(path, schema, enc, threads, ROW_GROUP_ROWS, rx)
}

fn write_row_groups(
    path: &Path,
    schema: SchemaRef,
    enc: Encodings<'_>,
    threads: usize,
    row_group_rows: usize,
    rx: Receiver<RecordBatch>,
) -> Result<(), CallsError> {
    let err = |e: &dyn std::fmt::Display| CallsError::write(path, e);
    let file = File::create(path).map_err(|e| err(&e))?;
    let props = Arc::new(parquet_properties(enc));
    let writer = ArrowWriter::try_new(file, schema.clone(), Some(props.as_ref().clone()))
        .map_err(|e| err(&e))?;
    let (mut file_writer, factory) = writer.into_serialized_writer().map_err(|e| err(&e))?;
    let ctx = EncoderContext {
        factory: &factory,
        schema: &schema,
        parquet: Arc::new(file_writer.schema_descr().clone()),
        props,
        row_group_rows,
    };
    let columns = schema.fields().len();
    // Every column of the calls table is one Parquet leaf (the binds'
    // list too): column i's writer is writer i.
    let leaves = factory.create_column_writers(0).map_err(|e| err(&e))?.len();
    if leaves != columns {
        return Err(err(&format!(
            "{columns} columns but {leaves} Parquet leaves: a nested column needs its own encoder"
        )));
    }
    let threads = threads.clamp(1, columns);
    let costs: Vec<f64> = schema
        .fields()
        .iter()
        .map(|f| estimated_cost(f.data_type()))
        .collect();
    // Written by the file's thread between row groups, while every encoder
    // waits for the next row group's first batch.
    let owners = RwLock::new(share(&costs, threads));
    std::thread::scope(|s| {
        let (done_tx, done_rx) = sync_channel::<Result<Chunks, String>>(threads);
        let mut work = Vec::with_capacity(threads);
        for k in 0..threads {
            let (tx, rx) = sync_channel::<Work>(2);
            work.push(tx);
            let (ctx, owners, done) = (&ctx, &owners, done_tx.clone());
            s.spawn(move || encoder(k, ctx, owners, rx, done));
        }
        drop(done_tx);
        // The file's thread: cuts the stream of batches into row groups,
        // hands every batch to every encoder, and appends the chunks.
        let mut rows = 0usize;
        let mut end_row_group = |work: &[SyncSender<Work>]| -> Result<(), String> {
            for tx in work {
                tx.send(Work::EndRowGroup)
                    .map_err(|_| "an encoder stopped".to_string())?;
            }
            let mut chunks = Vec::with_capacity(columns);
            for _ in 0..threads {
                chunks.extend(done_rx.recv().map_err(|e| e.to_string())??);
            }
            chunks.sort_by_key(|(i, _, _)| *i);
            if threads > 1 {
                let spent: Vec<f64> = chunks.iter().map(|(_, _, t)| t.as_secs_f64()).collect();
                if let Ok(mut o) = owners.write() {
                    *o = share(&spent, threads);
                }
            }
            let mut rg = file_writer.next_row_group().map_err(|e| e.to_string())?;
            for (_, c, _) in chunks {
                match c {
                    Chunk::Encoded(c) => c.append_to_row_group(&mut rg),
                    Chunk::Copied(bytes, close) => rg.append_column(&bytes, close),
                }
                .map_err(|e| e.to_string())?;
            }
            rg.close().map_err(|e| e.to_string())?;
            Ok(())
        };
        let result = (|| -> Result<(), String> {
            for mut batch in rx {
                while batch.num_rows() > 0 {
                    let take = batch.num_rows().min(row_group_rows - rows);
                    let part = batch.slice(0, take);
                    batch = batch.slice(take, batch.num_rows() - take);
                    for tx in &work {
                        tx.send(Work::Batch(part.clone()))
                            .map_err(|_| "an encoder stopped".to_string())?;
                    }
                    rows += take;
                    if rows == row_group_rows {
                        end_row_group(&work)?;
                        rows = 0;
                    }
                }
            }
            if rows > 0 {
                end_row_group(&work)?;
            }
            Ok(())
        })();
        drop(work);
        // An encoder's own error says more than "an encoder stopped".
        let first_error = done_rx.iter().find_map(Result::err);
        result.map_err(|e| first_error.unwrap_or(e))
    })
    .map_err(|e| err(&e))?;
    file_writer.close().map_err(|e| err(&e))?;
    Ok(())
}

/// What every encoder of a file shares.
struct EncoderContext<'a> {
    factory: &'a ArrowRowGroupWriterFactory,
    schema: &'a SchemaRef,
    /// The file's Parquet schema.
    parquet: SchemaDescPtr,
    props: WriterPropertiesPtr,
    /// Rows of a full row group.
    row_group_rows: usize,
}

/// Encoder `k`: the columns `owners` gives it, of every batch, one row
/// group at a time.
fn encoder(
    k: usize,
    ctx: &EncoderContext<'_>,
    owners: &RwLock<Vec<usize>>,
    rx: Receiver<Work>,
    done: SyncSender<Result<Chunks, String>>,
) {
    let mine = |row_group: usize| -> Result<Writers, ParquetError> {
        let owners = owners
            .read()
            .map_err(|_| ParquetError::General("an encoder stopped".into()))?;
        let writers = ctx.factory.create_column_writers(row_group)?;
        Ok(writers
            .into_iter()
            .enumerate()
            .filter(|(i, _)| owners[*i] == k)
            .map(|(i, w)| Column {
                i,
                writer: w,
                spent: Duration::ZERO,
                same: Same::Unknown,
            })
            .collect())
    };
    let mut row_group = 0;
    let mut writers = None;
    let mut copies = Copies::default();
    for w in rx {
        let step = match w {
            Work::Batch(batch) => {
                encode(&mut writers, || mine(row_group), ctx.schema, &batch).map(|_| None)
            }
            Work::EndRowGroup => {
                row_group += 1;
                close(writers.take(), ctx, &mut copies).map(Some)
            }
        };
        match step {
            Ok(None) => {}
            Ok(Some(chunks)) => {
                if done.send(Ok(chunks)).is_err() {
                    return;
                }
            }
            Err(e) => {
                let _ = done.send(Err(e.to_string()));
                return;
            }
        }
    }
}

/// Whether a string column has held one value in every row of the row
/// group so far: the file's path and name and the session are the same
/// in every row of a file, and Parquet's dictionary still hashes each of
/// them (a tenth of the encoding). Such a column is encoded once, at the
/// end of the row group, and a full row group's chunk once per file: the
/// later ones copy its bytes (arrow-rs's own API for copying encoded
/// chunks, `append_column`).
enum Same {
    /// No batch yet.
    Unknown,
    /// Every row so far: the value (None: null) and the rows.
    Value(Option<String>, usize),
    /// Values differ, or the column is not a string: encoded as it comes.
    Mixed,
}

/// The one value of every row of a string array (None: all null), or
/// nothing when the values differ. A comparison of its bytes, where the
/// dictionary hashes every value.
fn one_value(a: &dyn Array) -> Option<Option<&str>> {
    let s = a.as_string_opt::<i32>()?;
    let n = s.len();
    if n == 0 {
        return None;
    }
    match s.null_count() {
        0 => {}
        c if c == n => return Some(None),
        _ => return None,
    }
    let first = s.value(0);
    let len = first.len() as i64;
    let offsets = s.value_offsets();
    let base = i64::from(offsets[0]);
    let lengths_equal = offsets
        .iter()
        .enumerate()
        .all(|(j, &o)| i64::from(o) - base == j as i64 * len);
    if !lengths_equal {
        return None;
    }
    let bytes = &s.values()[base as usize..offsets[n] as usize];
    let same = len == 0
        || bytes
            .chunks_exact(len as usize)
            .all(|c| c == first.as_bytes());
    same.then_some(Some(first))
}

/// Encoded chunks of full row groups of one value, by column and value.
type Copies = HashMap<(usize, Option<String>), (Bytes, ColumnCloseResult)>;

/// A column writer of the row group being built.
struct Column {
    i: usize,
    writer: ArrowColumnWriter,
    /// Time spent encoding it.
    spent: Duration,
    same: Same,
}

impl Column {
    fn write(&mut self, schema: &SchemaRef, array: &ArrayRef) -> Result<(), ParquetError> {
        for leaf in compute_leaves(&schema.fields()[self.i], array)? {
            self.writer.write(&leaf)?;
        }
        Ok(())
    }

    /// Writes the rows of one value held back so far; the column is mixed
    /// from then on.
    fn write_held(&mut self, schema: &SchemaRef) -> Result<(), ParquetError> {
        if let Same::Value(v, n) = std::mem::replace(&mut self.same, Same::Mixed) {
            self.write_copies(schema, v.as_deref(), n)?;
        }
        Ok(())
    }

    /// Writes `n` rows of `v`, a batch's worth at a time: a row group of
    /// a long path built whole would take a hundred megabytes.
    fn write_copies(
        &mut self,
        schema: &SchemaRef,
        v: Option<&str>,
        n: usize,
    ) -> Result<(), ParquetError> {
        let piece = repeated(v, n.min(crate::BATCH_ROWS));
        let mut left = n;
        while left > 0 {
            let take = left.min(piece.len());
            self.write(schema, &piece.slice(0, take))?;
            left -= take;
        }
        Ok(())
    }
}

/// An encoder's column writers of the row group being built.
type Writers = Vec<Column>;

/// Encodes the encoder's columns of `batch`, with writers made by `new`
/// at a row group's first batch.
fn encode(
    writers: &mut Option<Writers>,
    new: impl FnOnce() -> Result<Writers, ParquetError>,
    schema: &SchemaRef,
    batch: &RecordBatch,
) -> Result<(), ParquetError> {
    let writers = match writers {
        Some(w) => w,
        None => writers.insert(new()?),
    };
    for c in writers.iter_mut() {
        let t = Instant::now();
        let array = batch.column(c.i);
        let one = match &c.same {
            Same::Mixed => None,
            _ => one_value(array.as_ref()),
        };
        match (&mut c.same, one) {
            (Same::Unknown, Some(v)) => c.same = Same::Value(v.map(str::to_string), array.len()),
            (Same::Value(held, n), Some(v)) if held.as_deref() == v => *n += array.len(),
            _ => {
                // Leaves the column mixed for the rest of the row group.
                c.write_held(schema)?;
                c.write(schema, array)?;
            }
        }
        c.spent += t.elapsed();
    }
    Ok(())
}

/// The encoded chunks of a row group's columns; a full row group's column
/// of one value is encoded once and copied after.
fn close(
    writers: Option<Writers>,
    ctx: &EncoderContext<'_>,
    copies: &mut Copies,
) -> Result<Chunks, ParquetError> {
    writers
        .unwrap_or_default()
        .into_iter()
        .map(|mut c| {
            let t = Instant::now();
            let chunk = match std::mem::replace(&mut c.same, Same::Mixed) {
                Same::Value(v, n) if n == ctx.row_group_rows => {
                    let key = (c.i, v);
                    let (bytes, close) = match copies.get(&key) {
                        Some(copy) => copy.clone(),
                        None => {
                            c.write_copies(ctx.schema, key.1.as_deref(), n)?;
                            let copy = chunk_bytes(c.writer.close()?, ctx, c.i)?;
                            copies.insert(key, copy.clone());
                            copy
                        }
                    };
                    Chunk::Copied(bytes, close)
                }
                held => {
                    c.same = held;
                    c.write_held(ctx.schema)?;
                    Chunk::Encoded(c.writer.close()?)
                }
            };
            Ok((c.i, chunk, c.spent + t.elapsed()))
        })
        .collect()
}

/// The bytes of an encoded chunk of column `i` and where its pages are
/// in them, for `append_column`: the chunk is laid out in a row group of
/// a one-column file in memory (the chunk keeps its pages to itself).
fn chunk_bytes(
    chunk: ArrowColumnChunk,
    ctx: &EncoderContext<'_>,
    i: usize,
) -> Result<(Bytes, ColumnCloseResult), ParquetError> {
    let close = chunk.close().clone();
    // The chunk holds its data pages first and its dictionary last, and
    // is laid out dictionary first.
    let meta = &close.metadata;
    let dictionary = meta
        .dictionary_page_offset()
        .map_or(0, |d| meta.compressed_size() - d);
    let close = close.update_dictionary_location(dictionary as usize)?;
    let field = ctx.parquet.root_schema().get_fields()[i].clone();
    let one = Type::group_type_builder(ctx.parquet.root_schema().name())
        .with_fields(vec![field])
        .build()?;
    let descr = Arc::new(SchemaDescriptor::new(Arc::new(one)));
    let mut sink = TrackedWrite::new(Vec::new());
    let mut rg = SerializedRowGroupWriter::new(descr, ctx.props.clone(), &mut sink, 0, None);
    chunk.append_to_row_group(&mut rg)?;
    drop(rg);
    let bytes = Bytes::from(sink.into_inner()?);
    if bytes.len() as i64 != close.metadata.compressed_size() {
        return Err(ParquetError::General(format!(
            "a copied column chunk has {} bytes, its metadata says {}",
            bytes.len(),
            close.metadata.compressed_size()
        )));
    }
    Ok((bytes, close))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::types::Int64Type;
    use arrow_array::{Array, Int64Array, ListArray, StringArray};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    use std::sync::Arc;

    fn batch(schema: &SchemaRef, from: i64, n: i64) -> RecordBatch {
        let ids = Int64Array::from_iter((from..from + n).map(|i| (i % 3 != 0).then_some(i)));
        let names = StringArray::from_iter_values((from..from + n).map(|i| format!("n{}", i % 5)));
        let lists = ListArray::from_iter_primitive::<Int64Type, _, _>(
            (from..from + n).map(|i| Some((0..i % 4).map(Some).collect::<Vec<_>>())),
        );
        let cols: Vec<Arc<dyn Array>> = vec![Arc::new(ids), Arc::new(names), Arc::new(lists)];
        RecordBatch::try_new(schema.clone(), cols).unwrap()
    }

    /// The bind values' list and the string columns are spread so that
    /// the encoders get equal work, not equal counts: here 12 and 12,
    /// where taking columns in turn gives 16 and 8.
    #[test]
    fn columns_are_shared_by_cost() {
        let mut costs = vec![8.0, 2.0, 2.0, 2.0, 2.0];
        costs.extend([1.0; 8]);
        let owners = share(&costs, 2);
        let load = |k: usize| -> f64 {
            (0..costs.len())
                .filter(|&i| owners[i] == k)
                .map(|i| costs[i])
                .sum()
        };
        assert_eq!((load(0), load(1)), (12.0, 12.0));
        let in_turn = |k: usize| -> f64 { costs.iter().skip(k).step_by(2).sum() };
        assert_eq!((in_turn(0), in_turn(1)), (16.0, 8.0));
        assert_eq!(share(&costs, 1), vec![0; costs.len()]);
    }

    /// Columns of one value (the file's path, an all-null session) are
    /// encoded once and copied into the later full row groups; a column
    /// whose value changes in a row group, or from one row group to the
    /// next, is encoded as it comes. Every row reads back as it was sent.
    #[test]
    fn columns_of_one_value_read_back_whole() {
        use arrow_schema::{DataType, Field, Schema};
        let schema: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("file", DataType::Utf8, false),
            Field::new("session", DataType::Utf8, true),
            Field::new("name", DataType::Utf8, false),
            Field::new("id", DataType::Int64, false),
        ]));
        // Scale 1: row groups of 10 rows; scale 2,000: of 20,000, held
        // rows written back in several pieces.
        for (scale, threads) in [(1i64, 1), (1, 2), (2000, 2)] {
            let rows = |from: i64, n: i64| -> RecordBatch {
                let file = StringArray::from_iter_values((0..n).map(|_| "/t/a.trc"));
                // Null until row 25, then one value.
                let session = StringArray::from_iter(
                    (from..from + n).map(|i| (i >= 25 * scale).then_some("7.9")),
                );
                // One value until row 14, then one a row.
                let name = StringArray::from_iter_values((from..from + n).map(|i| {
                    if i < 14 * scale {
                        "x".to_string()
                    } else {
                        format!("n{i}")
                    }
                }));
                let id = Int64Array::from_iter_values(from..from + n);
                let cols: Vec<Arc<dyn Array>> = vec![
                    Arc::new(file),
                    Arc::new(session),
                    Arc::new(name),
                    Arc::new(id),
                ];
                RecordBatch::try_new(schema.clone(), cols).unwrap()
            };
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.parquet");
            let (tx, rx) = sync_channel(4);
            let mut sent = Vec::new();
            let mut from = 0;
            for n in [4i64, 6, 3, 7, 10, 5, 5, 2, 4] {
                sent.push(rows(from, n * scale));
                from += n * scale;
            }
            let feed = sent.clone();
            let h = std::thread::spawn(move || feed.into_iter().for_each(|b| tx.send(b).unwrap()));
            let enc = Encodings {
                plain: &["session"],
                delta: &[],
                stats: &["file"],
            };
            let group = 10 * scale as usize;
            write_row_groups(&path, schema.clone(), enc, threads, group, rx).unwrap();
            h.join().unwrap();
            let builder =
                ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap())
                    .unwrap();
            let meta = builder.metadata().clone();
            let groups: Vec<i64> = meta.row_groups().iter().map(|g| g.num_rows()).collect();
            assert_eq!(groups, [10, 10, 10, 10, 6].map(|g| g * scale));
            // The copied chunks keep their statistics.
            for g in meta.row_groups() {
                let stats = g.column(0).statistics().expect("file has statistics");
                assert_eq!(stats.min_bytes_opt(), Some(&b"/t/a.trc"[..]));
            }
            let back: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
            let whole =
                |b: &[RecordBatch]| arrow_select::concat::concat_batches(&schema, b).unwrap();
            assert_eq!(
                whole(&back),
                whole(&sent),
                "scale {scale}, {threads} threads"
            );
        }
    }

    #[test]
    fn one_value_compares_lengths_and_bytes() {
        let of = |v: &[Option<&str>]| -> Option<Option<String>> {
            one_value(&StringArray::from(v.to_vec())).map(|o| o.map(str::to_string))
        };
        assert_eq!(of(&[Some("ab"), Some("ab")]), Some(Some("ab".into())));
        assert_eq!(of(&[None, None]), Some(None));
        assert_eq!(of(&[Some(""), Some("")]), Some(Some(String::new())));
        // The same bytes cut in other places are other values.
        assert_eq!(of(&[Some("ab"), Some("a"), Some("bab")]), None);
        assert_eq!(of(&[Some("ab"), None]), None);
        assert_eq!(of(&[Some("ab"), Some("ac")]), None);
        // A slice is judged by its own rows.
        let a = StringArray::from(vec!["a", "b", "b"]);
        assert_eq!(one_value(&a.slice(1, 2)), Some(Some("b")));
        assert_eq!(one_value(&Int64Array::from(vec![1, 1])), None);
    }

    /// Batches that straddle row groups, on several threads: the rows
    /// read back in order, in row groups of the size asked.
    #[test]
    fn row_groups_cut_across_batches_keep_every_row_in_order() {
        use arrow_schema::{DataType, Field, Schema};
        let item = Arc::new(Field::new("item", DataType::Int64, true));
        let schema: SchemaRef = Arc::new(Schema::new(vec![
            Field::new("id", DataType::Int64, true),
            Field::new("name", DataType::Utf8, false),
            Field::new("list", DataType::List(item), true),
        ]));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        let (tx, rx) = sync_channel(4);
        let sizes = [7i64, 3, 12, 1, 9];
        let mut sent = Vec::new();
        let mut from = 0;
        for n in sizes {
            sent.push(batch(&schema, from, n));
            from += n;
        }
        let feed = sent.clone();
        let h = std::thread::spawn(move || feed.into_iter().for_each(|b| tx.send(b).unwrap()));
        let enc = Encodings {
            plain: &[],
            delta: &["id"],
            stats: &["name"],
        };
        write_row_groups(&path, schema.clone(), enc, 2, 10, rx).unwrap();
        h.join().unwrap();
        let builder =
            ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&path).unwrap()).unwrap();
        let groups: Vec<i64> = builder
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        assert_eq!(groups, vec![10, 10, 10, 2]);
        let back: Vec<RecordBatch> = builder.build().unwrap().map(Result::unwrap).collect();
        let whole = |b: &[RecordBatch]| arrow_select::concat::concat_batches(&schema, b).unwrap();
        assert_eq!(whole(&back), whole(&sent));
    }
}
