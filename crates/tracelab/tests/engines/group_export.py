"""Grouped sums, counts, minima and maxima of `af` over a `tracelab calls`
export, computed by DuckDB or by PySpark (local mode), for
crates/tracelab/tests/calls_engines.rs to compare with `tracelab skew --json`.

usage: python3 group_export.py duckdb|spark CASES.json

CASES.json: [{"id": ..., "calls": PATH, "layout": "dir"|"file", "format":
"parquet"|"csv"|"jsonl", "where": SQL, "group": {"duckdb": SQL, "spark": SQL}}]
prints {id: [[group, sum_af, calls, min_af, max_af], ...]} as JSON.
A missing engine exits 3 with the command that installs it.
"""
import json
import os
import sys

INSTALL = "pip install duckdb pyspark  (scripts/test.sh installs them)"


def missing(engine, err):
    print(f"group_export.py: {engine} is not installed ({err}): {INSTALL}", file=sys.stderr)
    sys.exit(3)


def duckdb_rows(cases):
    try:
        import duckdb
    except ImportError as e:
        missing("duckdb", e)
    con = duckdb.connect()
    out = {}
    for c in cases:
        path, fmt = c["calls"], c.get("format", "parquet")
        if c["layout"] == "dir":
            src = f"read_parquet('{path}/calls/*/*.parquet', hive_partitioning = true)"
        elif fmt == "csv":
            src = f"read_csv('{path}', header = true)"
        elif fmt == "jsonl":
            src = f"read_json('{path}', format = 'newline_delimited')"
        else:
            src = f"read_parquet('{path}')"
        sql = f"""
            SELECT CAST({c['group']['duckdb']} AS VARCHAR) AS g,
                   CAST(sum(af) AS BIGINT), count(*), min(af), max(af)
            FROM {src} WHERE {c['where']} GROUP BY ALL"""
        out[c["id"]] = [list(r) for r in con.execute(sql).fetchall()]
    return out


def spark_rows(cases):
    try:
        from pyspark.sql import SparkSession, functions as F
    except ImportError as e:
        missing("pyspark", e)
    # Loopback only: the driver listens on 127.0.0.1, not on the machine's
    # interface address Spark would pick.
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .appName("tracelab-calls-test")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    out = {}
    frames = {}
    try:
        for c in cases:
            # Each export is read once and kept in memory for its cases.
            path = c["calls"] + ("/calls" if c["layout"] == "dir" else "")
            if path not in frames:
                frames[path] = spark.read.parquet(path).cache()
            df = frames[path]
            rows = (
                df.where(F.expr(c["where"]))
                .groupBy(F.expr(c["group"]["spark"]).cast("string").alias("g"))
                .agg(F.sum("af"), F.count(F.lit(1)), F.min("af"), F.max("af"))
                .collect()
            )
            out[c["id"]] = [list(r) for r in rows]
    finally:
        spark.stop()
    return out


def main():
    engine, cases_file = sys.argv[1], sys.argv[2]
    with open(cases_file) as f:
        cases = json.load(f)
    rows = duckdb_rows(cases) if engine == "duckdb" else spark_rows(cases)
    json.dump(rows, sys.stdout)


if __name__ == "__main__":
    main()
