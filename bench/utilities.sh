#!/usr/bin/env bash
# Benchmark for the trace utilities (`tracelab ls`, `nl`, `crop`, `merge`),
# as ratios to peers timed in the same run: `wc -l` on the same input (how
# fast the bytes can be read at all) and `tracelab skew` (the reader's own
# speed with a profile on top).
#
# Usage (from the repository root):
#     bash bench/utilities.sh
#     BENCH_GB=0.05 BENCH_RUNS=1 bash bench/utilities.sh   # quick dry run
#
# Environment:
#     BENCH_GB   size of the generated trace in GB (10^9 bytes), default 0.5
#     BENCH_DIR  scratch/output directory, default bench/out (gitignored)
#     BENCH_RUNS timed runs per case (median is reported), default 3
#     BENCH_TL   the tracelab binary, default target/release/tracelab (built
#                first); when set, used as it is
#
# Input: $BENCH_DIR/utils.trc, the 20 real 19c traces of
# tests/fixtures/crc-local-force/ concatenated over and over (whole files),
# and its two halves (cut at a line) for merge. Output goes to /dev/null:
# what is timed is reading, choosing and formatting.
set -euo pipefail

BENCH_GB=${BENCH_GB:-0.5}
BENCH_DIR=${BENCH_DIR:-bench/out}
BENCH_RUNS=${BENCH_RUNS:-3}
FIXTURES=tests/fixtures/crc-local-force
TL=${BENCH_TL:-target/release/tracelab}

die() { echo "bench/utilities.sh: $*" >&2; exit 1; }
[[ -f Cargo.toml && -d crates/tools ]] || die "run me from the repository root"
target=$(awk -v gb="$BENCH_GB" 'BEGIN { printf "%.0f", gb * 1e9 }')
mkdir -p "$BENCH_DIR"

if [[ -z ${BENCH_TL:-} ]]; then
    cargo build --release -p tracelab >&2
fi
[[ -x $TL ]] || die "$TL is not an executable"

big=$BENCH_DIR/utils.trc
if [[ ! -f $big || $(stat -c %s "$big") -lt $target ]]; then
    : > "$big"
    while [[ $(stat -c %s "$big") -lt $target ]]; do
        for f in "$FIXTURES"/*.trc.gz; do gzip -dc "$f" >> "$big"; done
    done
fi
lines=$(wc -l < "$big")
half=$((lines / 2))
head -n "$half" "$big" > "$BENCH_DIR/utils-1.trc"
# The second half as a file of the same process: the first file's header
# first (as Oracle starts a continued file).
{ head -n 24 "$big"; tail -n +"$((half + 1))" "$big"; } > "$BENCH_DIR/utils-2.trc"
bytes=$(stat -c %s "$big")

# Median wall seconds of BENCH_RUNS runs of "$@".
timed() {
    local t=()
    for _ in $(seq "$BENCH_RUNS"); do
        local s e
        s=$(date +%s.%N)
        "$@" > /dev/null 2>&1 || true
        e=$(date +%s.%N)
        t+=("$(echo "$e - $s" | bc -l)")
    done
    printf '%s\n' "${t[@]}" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

wc_s=$(timed wc -l "$big")
skew_s=$(timed "$TL" skew "$big")
declare -A case
case[ls]=$(timed "$TL" ls "$big")
case[nl]=$(timed "$TL" nl "$big")
case[crop]=$(timed "$TL" crop "$big" --from "line:$((lines / 4))" --to "line:$((3 * lines / 4))")
case[merge]=$(timed "$TL" merge --by service "$BENCH_DIR/utils-1.trc" "$BENCH_DIR/utils-2.trc")

{
    echo "| command | GB/s | x wc -l | x tracelab skew |"
    echo "|---|---|---|---|"
    printf '| wc -l | %.2f | 1.00 | |\n' "$(echo "$bytes / 1e9 / $wc_s" | bc -l)"
    printf '| tracelab skew | %.2f | %.2f | 1.00 |\n' "$(echo "$bytes / 1e9 / $skew_s" | bc -l)" "$(echo "$skew_s / $wc_s" | bc -l)"
    for c in ls nl crop merge; do
        s=${case[$c]}
        printf '| tracelab %s | %.2f | %.2f | %.2f |\n' "$c" "$(echo "$bytes / 1e9 / $s" | bc -l)" "$(echo "$s / $wc_s" | bc -l)" "$(echo "$s / $skew_s" | bc -l)"
    done
    echo
    echo "Input: $bytes bytes, $lines lines; median of $BENCH_RUNS runs; load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
} | tee "$BENCH_DIR/utilities.md"
