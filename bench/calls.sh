#!/usr/bin/env bash
# Benchmark for `tracelab calls` (the call model as Parquet), in one run:
#   (a) export throughput on the 1 GB bench trace (goal: >= 0.5 GB/s on 2
#       cores), as one file, as 8 files, and gzip-compressed, with the CPU
#       time it took and its ratio to `wc -l` over the same trace;
#   (b) the Parquet export's size against the trace (and its gzip -1);
#   (c) DuckDB's time for mrskew's default profile over the export against
#       `tracelab skew` (the default profile) over the trace.
#
# Usage (from the repository root):
#     bash bench/calls.sh
#     BENCH_GB=0.05 bash bench/calls.sh          # a quick run
#
# Environment: BENCH_GB (default 1.0), BENCH_DIR (default bench/out),
# BENCH_RUNS timed runs per case, median reported (default 3), BENCH_TL a
# binary to measure instead of building one.
# The input is bench/skew.sh's (BENCH_PREPARE_ONLY=1 builds it): the 20
# real 19c traces of tests/fixtures/crc-local-force/ concatenated to size.
# Needs python3 with duckdb (scripts/test.sh installs it).
# Units: GB = 10^9 bytes; GB/s = uncompressed trace bytes / 10^9 / seconds.
set -euo pipefail

BENCH_GB=${BENCH_GB:-1.0}
BENCH_DIR=${BENCH_DIR:-bench/out}
BENCH_RUNS=${BENCH_RUNS:-3}
# BENCH_TL: measure this binary instead of building target/release/tracelab.
TL=${BENCH_TL:-target/release/tracelab}

die() { echo "bench/calls.sh: $*" >&2; exit 1; }
log() { echo "==> $*" >&2; }

[[ -f Cargo.toml && -d crates/calls ]] || die "run me from the repository root (bash bench/calls.sh)"
python3 -c 'import duckdb' 2>/dev/null || die "needs DuckDB for Python: python3 -m pip install duckdb"

BENCH_GB=$BENCH_GB BENCH_DIR=$BENCH_DIR BENCH_PREPARE_ONLY=1 bash bench/skew.sh
if [[ -z ${BENCH_TL:-} ]]; then
    log "cargo build --release -p tracelab"
    cargo build --release -p tracelab
fi
big=$BENCH_DIR/big.trc
gz=$BENCH_DIR/big.trc.gz
parts=("$BENCH_DIR"/split/part-?.trc)
big_bytes=$(stat -c %s "$big")
WORK=$(mktemp -d "$BENCH_DIR/.calls.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
now() { date +%s%N; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a / b }'; }
ratio1() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a / b }'; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b - a) / 1e9 }'; }

# export NAME INPUT... : BENCH_RUNS exports into a fresh directory; prints
# the median wall time and the median CPU time (user + system), in
# seconds. The last export stays in $WORK/NAME.
export_case() {
    local name=$1; shift
    local -a t=() cpu=()
    for ((run = 1; run <= BENCH_RUNS; run++)); do
        rm -rf "${WORK:?}/$name"
        local rc=0 wall user sys
        { TIMEFORMAT='%R %U %S'; time { "$TL" calls --output "$WORK/$name" "$@" 2>"$WORK/$name.err" || rc=$?; }; } 2>"$WORK/$name.time"
        ((rc <= 1)) || { cat "$WORK/$name.err" >&2; die "tracelab calls $name exited $rc"; }
        read -r wall user sys <"$WORK/$name.time"
        t+=("$wall")
        cpu+=("$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.2f", u + s }')")
    done
    echo "$(printf '%s\n' "${t[@]}" | median) $(printf '%s\n' "${cpu[@]}" | median)"
}

# The peer for throughput, in the same run: `wc -l` reads the trace and
# counts its lines, the least any line-oriented reader does. The ratio
# to it carries from one machine to another better than GB/s does.
wc_case() {
    local -a t=()
    for ((run = 1; run <= BENCH_RUNS; run++)); do
        local t0 t1
        t0=$(now); wc -l "$big" >/dev/null; t1=$(now)
        t+=("$(secs "$t0" "$t1")")
    done
    printf '%s\n' "${t[@]}" | median
}

log "exporting (each case $BENCH_RUNS times)"
s_wc=$(wc_case)
read -r s_big c_big <<<"$(export_case big "$big")"
read -r s_split c_split <<<"$(export_case split "${parts[@]}")"
read -r s_gz c_gz <<<"$(export_case gz "$gz")"
gbps() { awk -v b="$big_bytes" -v s="$1" 'BEGIN { printf "%.2f", b / 1e9 / s }'; }

pq_bytes=$(du -sb "$WORK/big" | cut -f1)
calls_bytes=$(du -sb "$WORK/big/calls" | cut -f1)
gz_bytes=$(stat -c %s "$gz")

# (c) the default profile: tracelab skew over the trace against DuckDB over
# the export (the whole command, Python and DuckDB start-up included, and
# the query alone as DuckDB reports it).
log "default profile: tracelab skew on the trace, DuckDB on the export"
skew_json=$WORK/skew.json
"$TL" skew --json --top=0 "$big" >"$skew_json"
cat >"$WORK/profile.py" <<EOF
import sys, time, duckdb
t0 = time.perf_counter()
con = duckdb.connect()
rows = con.execute("""
    SELECT name, sum(af) AS af_us, count(*) AS calls, min(af), max(af)
    FROM read_parquet('$WORK/big/calls/*/*.parquet', hive_partitioning = true)
    GROUP BY name ORDER BY af_us DESC""").fetchall()
print(f"{time.perf_counter() - t0:.3f}", file=sys.stderr)
for r in rows: print(*r, sep="\t")
EOF
py=(python3 "$WORK/profile.py")
"${py[@]}" >"$WORK/duck.tsv" 2>/dev/null
# The two profiles must agree to the microsecond before they are timed.
python3 - "$skew_json" "$WORK/duck.tsv" <<'EOF' || die "DuckDB's profile differs from skew's"
import json, sys
skew = {r["label"]: (round(r["duration"] * 1e6), r["calls"]) for r in json.load(open(sys.argv[1]))["rows"]}
duck = {}
for line in open(sys.argv[2]):
    name, af, calls, *_ = line.rstrip("\n").split("\t")
    duck[name] = (int(af), int(calls))
if skew != duck:
    print("skew:", skew, "\nduckdb:", duck, file=sys.stderr)
    sys.exit(1)
EOF
skew_t=() duck_t=() duck_q=()
for ((run = 1; run <= BENCH_RUNS; run++)); do
    t0=$(now); "$TL" skew "$big" >/dev/null; t1=$(now); skew_t+=("$(secs "$t0" "$t1")")
    t0=$(now); q=$("${py[@]}" 2>&1 >/dev/null); t1=$(now); duck_t+=("$(secs "$t0" "$t1")"); duck_q+=("$q")
done
s_skew=$(printf '%s\n' "${skew_t[@]}" | median)
s_duck=$(printf '%s\n' "${duck_t[@]}" | median)
s_duckq=$(printf '%s\n' "${duck_q[@]}" | median)
rows=$(python3 -c "import json,sys; print(json.load(open('$skew_json'))['total']['calls'])")

pass() { awk -v v="$1" -v g="$2" 'BEGIN { print (v >= g) ? "PASS" : "MISS" }'; }
{
    echo "## bench/calls.sh: $(awk -v b="$big_bytes" 'BEGIN { printf "%.2f", b / 1e9 }') GB trace, $rows calls at the default depth, $(nproc) cores, median of $BENCH_RUNS"
    echo
    echo "| case | seconds | GB/s of trace | CPU seconds | ratio to wc -l |"
    echo "|---|---:|---:|---:|---:|"
    echo "| peer: \`wc -l big.trc\` | $s_wc | $(gbps "$s_wc") | | 1.0x |"
    echo "| (a) \`tracelab calls big.trc --output DIR\` (one file) | $s_big | **$(gbps "$s_big")** | $c_big | $(ratio1 "$s_big" "$s_wc")x |"
    echo "| (a) the same trace as 8 files | $s_split | $(gbps "$s_split") | $c_split | $(ratio1 "$s_split" "$s_wc")x |"
    echo "| (a) the same trace gzip -1 | $s_gz | $(gbps "$s_gz") | $c_gz | $(ratio1 "$s_gz" "$s_wc")x |"
    echo
    echo "| (b) size | bytes | of the trace |"
    echo "|---|---:|---:|"
    echo "| trace | $big_bytes | 100% |"
    echo "| trace, gzip -1 | $gz_bytes | $(awk -v a="$gz_bytes" -v b="$big_bytes" 'BEGIN { printf "%.1f%%", 100 * a / b }') |"
    echo "| export (calls, statements, files; Parquet, zstd) | $pq_bytes | **$(awk -v a="$pq_bytes" -v b="$big_bytes" 'BEGIN { printf "%.1f%%", 100 * a / b }')** |"
    echo "| of which calls | $calls_bytes | $(awk -v a="$calls_bytes" -v b="$rows" 'BEGIN { printf "%.1f bytes a call", a / b }') |"
    echo
    echo "| (c) the default profile | seconds | ratio to skew |"
    echo "|---|---:|---:|"
    echo "| peer: \`tracelab skew big.trc\` | $s_skew | 1.00x |"
    echo "| DuckDB over the export (python3, import, query) | $s_duck | $(ratio "$s_duck" "$s_skew")x |"
    echo "| DuckDB, the query alone | $s_duckq | $(ratio "$s_duckq" "$s_skew")x |"
    echo
    echo "goal (a) >= 0.5 GB/s: $(pass "$(gbps "$s_big")" 0.5) ($(gbps "$s_big") GB/s)"
} | tee "$BENCH_DIR/calls-results.md"
