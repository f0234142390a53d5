//! Re-encodes every column of a calls export each way (dictionary, delta,
//! plain) on one thread, to choose the encodings in `columns::ENCODINGS`:
//! `cargo run --release -p tracelab-calls --example encodings -- FILE.parquet
//! [uncompressed]` (the second argument leaves zstd out, to see what it
//! costs and saves column by column). Under callgrind, with
//! `ENCODINGS_RUNS=1` and `--dump-after='*encode_column*'`, each column's
//! each way gets its own instruction count, the same from run to run.
use std::sync::Arc;
use std::time::Instant;

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};

fn main() {
    let path = std::env::args().nth(1).expect("a Parquet file");
    let compression = match std::env::args().nth(2).as_deref() {
        Some("uncompressed") => Compression::UNCOMPRESSED,
        _ => Compression::ZSTD(ZstdLevel::default()),
    };
    let runs: usize = std::env::var("ENCODINGS_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(3);
    let file = std::fs::File::open(&path).unwrap();
    let reader = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .with_batch_size(8192)
        .build()
        .unwrap();
    let batches: Vec<RecordBatch> = reader.map(|b| b.unwrap()).collect();
    let schema = batches[0].schema();
    for (i, f) in schema.fields().iter().enumerate() {
        let s1 = Arc::new(Schema::new(vec![f.as_ref().clone()]));
        let cols: Vec<RecordBatch> = batches
            .iter()
            .map(|b| RecordBatch::try_new(s1.clone(), vec![b.column(i).clone()]).unwrap())
            .collect();
        let int = f.data_type().is_integer()
            || matches!(f.data_type(), arrow_schema::DataType::Timestamp(..));
        let mut out = format!("{:<12}", f.name());
        for way in ["dict", "delta", "plain"] {
            if way == "delta" && !int {
                out.push_str(&format!(" {:>18}", "-"));
                continue;
            }
            let mut b = WriterProperties::builder()
                .set_compression(compression)
                .set_max_row_group_row_count(Some(1024 * 1024))
                .set_write_batch_size(8192)
                .set_statistics_enabled(EnabledStatistics::None)
                .set_dictionary_enabled(way == "dict");
            if way == "delta" {
                b = b.set_encoding(Encoding::DELTA_BINARY_PACKED);
            }
            let props = b.build();
            let mut best = f64::MAX;
            let mut size = 0;
            for _ in 0..runs {
                let t = Instant::now();
                size = encode_column(&s1, &props, &cols);
                best = best.min(t.elapsed().as_secs_f64());
            }
            out.push_str(&format!(" {:>6.0} ms {:>7} kB", best * 1e3, size / 1000));
        }
        println!("{out}");
    }
}

/// One column written whole with `props`: the bytes of the file.
#[inline(never)]
fn encode_column(schema: &Arc<Schema>, props: &WriterProperties, cols: &[RecordBatch]) -> usize {
    let mut buf = Vec::new();
    let mut w = ArrowWriter::try_new(&mut buf, schema.clone(), Some(props.clone())).unwrap();
    for c in cols {
        w.write(c).unwrap();
    }
    w.close().unwrap();
    buf.len()
}
