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
//! API for parallel encoding, not an encoder of ours.

use std::fs::File;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::RwLock;
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_schema::{DataType, SchemaRef};
use parquet::arrow::arrow_writer::{
    compute_leaves, ArrowColumnChunk, ArrowColumnWriter, ArrowRowGroupWriterFactory,
};
use parquet::arrow::ArrowWriter;
use parquet::errors::ParquetError;

use crate::error::CallsError;
use crate::sink::{parquet_properties, Encodings, ROW_GROUP_ROWS};

/// What an encoder thread is sent: a batch (all columns; it encodes its
/// own), or the end of the row group.
enum Work {
    Batch(RecordBatch),
    EndRowGroup,
}

/// Column chunks of one row group from one encoder: (column, chunk, time
/// spent encoding it).
type Chunks = Vec<(usize, ArrowColumnChunk, Duration)>;

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
    let props = parquet_properties(enc);
    let writer = ArrowWriter::try_new(file, schema.clone(), Some(props)).map_err(|e| err(&e))?;
    let (mut file_writer, factory) = writer.into_serialized_writer().map_err(|e| err(&e))?;
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
            let (factory, schema, owners, done) = (&factory, &schema, &owners, done_tx.clone());
            s.spawn(move || encoder(k, factory, schema, owners, rx, done));
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
                c.append_to_row_group(&mut rg).map_err(|e| e.to_string())?;
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

/// Encoder `k`: the columns `owners` gives it, of every batch, one row
/// group at a time.
fn encoder(
    k: usize,
    factory: &ArrowRowGroupWriterFactory,
    schema: &SchemaRef,
    owners: &RwLock<Vec<usize>>,
    rx: Receiver<Work>,
    done: SyncSender<Result<Chunks, String>>,
) {
    let mine = |row_group: usize| -> Result<Writers, ParquetError> {
        let owners = owners
            .read()
            .map_err(|_| ParquetError::General("an encoder stopped".into()))?;
        let writers = factory.create_column_writers(row_group)?;
        Ok(writers
            .into_iter()
            .enumerate()
            .filter(|(i, _)| owners[*i] == k)
            .map(|(i, w)| (i, w, Duration::ZERO))
            .collect())
    };
    let mut row_group = 0;
    let mut writers = None;
    for w in rx {
        let step = match w {
            Work::Batch(batch) => {
                encode(&mut writers, || mine(row_group), schema, &batch).map(|_| None)
            }
            Work::EndRowGroup => {
                row_group += 1;
                close(writers.take()).map(Some)
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

/// An encoder's column writers of the row group being built: (column,
/// writer, time spent in it).
type Writers = Vec<(usize, ArrowColumnWriter, Duration)>;

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
    for (i, w, spent) in writers.iter_mut() {
        let t = Instant::now();
        for leaf in compute_leaves(&schema.fields()[*i], batch.column(*i))? {
            w.write(&leaf)?;
        }
        *spent += t.elapsed();
    }
    Ok(())
}

/// The encoded chunks of a row group's columns.
fn close(writers: Option<Writers>) -> Result<Chunks, ParquetError> {
    writers
        .unwrap_or_default()
        .into_iter()
        .map(|(i, w, spent)| {
            let t = Instant::now();
            w.close().map(|c| (i, c, spent + t.elapsed()))
        })
        .collect()
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
