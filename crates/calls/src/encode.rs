//! The calls table as Parquet, encoded on several threads: Parquet's
//! dictionaries, statistics and zstd cost more than reading the trace, so
//! one writer thread could not keep up with the reader.
//!
//! Each encoder thread owns the column writers of a share of the columns
//! and encodes its share of every batch; at the end of a row group the
//! encoded column chunks go, in column order, to the thread that owns the
//! file. The file holds the same row groups (of [`ROW_GROUP_ROWS`] rows)
//! and the same columns as `ArrowWriter` writes: this is arrow-rs's own
//! low-level API for parallel encoding, not an encoder of ours.

use std::fs::File;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
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

/// Column chunks of one row group from one encoder: (column, chunk).
type Chunks = Vec<(usize, ArrowColumnChunk)>;

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
    std::thread::scope(|s| {
        let (done_tx, done_rx) = sync_channel::<Result<Chunks, String>>(threads);
        let mut work = Vec::with_capacity(threads);
        for k in 0..threads {
            let (tx, rx) = sync_channel::<Work>(2);
            work.push(tx);
            let (factory, schema, done) = (&factory, &schema, done_tx.clone());
            s.spawn(move || encoder(k, threads, factory, schema, rx, done));
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
            chunks.sort_by_key(|(i, _)| *i);
            let mut rg = file_writer.next_row_group().map_err(|e| e.to_string())?;
            for (_, c) in chunks {
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

/// Encoder `k` of `threads`: columns `k`, `k + threads`, ... of every
/// batch, one row group at a time.
fn encoder(
    k: usize,
    threads: usize,
    factory: &ArrowRowGroupWriterFactory,
    schema: &SchemaRef,
    rx: Receiver<Work>,
    done: SyncSender<Result<Chunks, String>>,
) {
    let mine = |row_group: usize| {
        factory.create_column_writers(row_group).map(|writers| {
            writers
                .into_iter()
                .enumerate()
                .filter(|(i, _)| i % threads == k)
                .collect::<Vec<_>>()
        })
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
/// writer).
type Writers = Vec<(usize, ArrowColumnWriter)>;

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
    for (i, w) in writers.iter_mut() {
        for leaf in compute_leaves(&schema.fields()[*i], batch.column(*i))? {
            w.write(&leaf)?;
        }
    }
    Ok(())
}

/// The encoded chunks of a row group's columns.
fn close(writers: Option<Writers>) -> Result<Chunks, ParquetError> {
    writers
        .unwrap_or_default()
        .into_iter()
        .map(|(i, w)| w.close().map(|c| (i, c)))
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
