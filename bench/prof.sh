#!/usr/bin/env bash
# Benchmark for `tracelab prof` against `tracelab skew` on the same file, in
# one run (issue 19: prof at least half of skew's throughput on the 1 GB
# bench trace; memory bounded by the number of statements, not the input).
#
# Usage (from the repository root):
#     bash bench/prof.sh
#     BENCH_GB=0.05 bash bench/prof.sh          # quick dry run on a small input
#
# Environment:
#     BENCH_GB   size of the generated trace in GB (10^9 bytes), default 1.0
#     BENCH_DIR  scratch/output directory, default bench/out (gitignored)
#     BENCH_RUNS timed runs per case (median is reported), default 5
#     BENCH_NO_BUILD=1  time the target/release/tracelab already built
#
# What it does:
#   1. builds the inputs the way bench/skew.sh does (BENCH_PREPARE_ONLY=1:
#      big.trc = the 20 real 19c traces of tests/fixtures/crc-local-force/
#      concatenated to BENCH_GB, quarter.trc = its first quarter), then
#      cargo build --release -p tracelab;
#   2. checks each command once (exit 0 or 1: `skew` ends with a TOTAL row,
#      `prof` with tkprof's "elapsed seconds in trace file" line);
#   3. times `tracelab skew big.trc` and `tracelab prof big.trc` alternately,
#      BENCH_RUNS rounds (so that both see the same machine), output to
#      /dev/null, median wall time and peak RSS (/usr/bin/time -f %M); then
#      prof on quarter.trc for the memory check;
#   4. prints a Markdown table and the goals, also written to
#      $BENCH_DIR/prof-results.md. Goals are informational: the exit status
#      is 0 unless a command fails.
#
# Units: GB = 10^9 bytes, GB/s = input bytes / 10^9 / seconds, MiB = 2^20 bytes.
set -euo pipefail

BENCH_GB=${BENCH_GB:-1.0}
BENCH_DIR=${BENCH_DIR:-bench/out}
BENCH_RUNS=${BENCH_RUNS:-5}
BENCH_TIMEOUT=${BENCH_TIMEOUT:-1800}
TL=target/release/tracelab
TIME=/usr/bin/time

die() { echo "bench/prof.sh: $*" >&2; exit 1; }
log() { echo "==> $*" >&2; }

[[ -f Cargo.toml && -d crates/prof ]] || die "run me from the repository root (bash bench/prof.sh)"
[[ -x $TIME ]] || die "$TIME (GNU time) is required"
[[ $BENCH_RUNS =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer"

log "building the inputs (bench/skew.sh, BENCH_PREPARE_ONLY=1)"
BENCH_GB=$BENCH_GB BENCH_DIR=$BENCH_DIR BENCH_PREPARE_ONLY=1 bash bench/skew.sh
big=$BENCH_DIR/big.trc
quarter=$BENCH_DIR/quarter.trc
[[ -f $big && -f $quarter ]] || die "inputs missing in $BENCH_DIR"
big_bytes=$(stat -c %s "$big")
quarter_bytes=$(stat -c %s "$quarter")

if [[ ${BENCH_NO_BUILD:-0} != 1 ]]; then
    log "cargo build --release -p tracelab"
    cargo build --release -p tracelab
fi
[[ -x $TL ]] || die "$TL was not produced by the build"

WORK=$(mktemp -d "$BENCH_DIR/.prof.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# check NAME LASTLINE-PATTERN CMD...: one run, exit 0/1 and the expected end.
check() {
    local name=$1 want=$2
    shift 2
    local rc=0
    timeout "$BENCH_TIMEOUT" "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
    local last
    last=$(grep -v '^[[:space:]]*$' "$WORK/out" | tail -n 1 || true)
    if ((rc > 1)) || [[ ! $last =~ $want ]]; then
        echo "bench/prof.sh: check failed for $name: exit $rc; last line: ${last:-<none>}" >&2
        cat "$WORK/err" >&2
        exit 1
    fi
    log "ok: $name (exit $rc): $last"
}

# once CMD...: one timed run; prints "seconds rss_kib".
once() {
    local rc=0 t0 t1
    t0=$(date +%s%N)
    timeout "$BENCH_TIMEOUT" "$TIME" -f '%M' -o "$WORK/time" "$@" >/dev/null 2>"$WORK/err" || rc=$?
    t1=$(date +%s%N)
    if ((rc > 1)); then
        echo "bench/prof.sh: '$*' exited $rc" >&2
        cat "$WORK/err" >&2
        exit 1
    fi
    awk -v a="$t0" -v b="$t1" -v m="$(tail -n 1 "$WORK/time")" 'BEGIN { printf "%.3f %s\n", (b - a) / 1e9, m }'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

check "skew big.trc" '^TOTAL \(' "$TL" skew "$big"
check "prof big.trc" 'elapsed seconds in trace file' "$TL" prof "$big"

log "warming the page cache"
cat "$big" "$quarter" >/dev/null

skew_t=() skew_m=() prof_t=() prof_m=() q_t=() q_m=()
for ((r = 1; r <= BENCH_RUNS; r++)); do
    # Alternate which goes first, so that neither always follows the other.
    if ((r % 2)); then order=(skew prof); else order=(prof skew); fi
    for cmd in "${order[@]}"; do
        read -r t m < <(once "$TL" "$cmd" "$big")
        if [[ $cmd == skew ]]; then skew_t+=("$t") skew_m+=("$m"); else prof_t+=("$t") prof_m+=("$m"); fi
        log "round $r: $cmd big.trc ${t}s, peak RSS ${m} KiB"
    done
    read -r t m < <(once "$TL" prof "$quarter")
    q_t+=("$t") q_m+=("$m")
done

S=$(printf '%s\n' "${skew_t[@]}" | median)
P=$(printf '%s\n' "${prof_t[@]}" | median)
Q=$(printf '%s\n' "${q_t[@]}" | median)
SM=$(printf '%s\n' "${skew_m[@]}" | median)
PM=$(printf '%s\n' "${prof_m[@]}" | median)
QM=$(printf '%s\n' "${q_m[@]}" | median)
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
report=$WORK/prof-results.md
{
    echo "## tracelab prof benchmark"
    echo
    printf 'Input: big.trc = %s bytes (%.3f GB), quarter.trc = %s bytes; median of %d alternating rounds, output to /dev/null, page cache warm.\n' \
        "$big_bytes" "$(awk -v b="$big_bytes" 'BEGIN { print b / 1e9 }')" "$quarter_bytes" "$BENCH_RUNS"
    echo
    echo "| case | seconds | GB/s | throughput vs skew | peak RSS MiB |"
    echo "|---|---:|---:|---:|---:|"
    awk -v s="$S" -v b="$big_bytes" -v m="$SM" 'BEGIN { printf "| peer: `tracelab skew big.trc` | %.3f | %.2f | 1.00x (peer) | %.1f |\n", s, b / 1e9 / s, m / 1024 }'
    awk -v p="$P" -v s="$S" -v b="$big_bytes" -v m="$PM" 'BEGIN { printf "| `tracelab prof big.trc` | %.3f | %.2f | %.2fx | %.1f |\n", p, b / 1e9 / p, s / p, m / 1024 }'
    awk -v q="$Q" -v b="$quarter_bytes" -v m="$QM" 'BEGIN { printf "| `tracelab prof quarter.trc` | %.3f | %.2f | | %.1f |\n", q, b / 1e9 / q, m / 1024 }'
    echo
    echo "Runs (s): skew ${skew_t[*]}; prof ${prof_t[*]}; prof quarter ${q_t[*]}"
    echo
    echo "Machine: nproc=$(nproc), CPU: ${cpu:-unknown}, load average $(cut -d' ' -f1-3 /proc/loadavg); $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo
    echo "### Goals (informational)"
    echo
    awk -v p="$P" -v s="$S" 'BEGIN { r = s / p; printf "- prof throughput %.2fx of skew'"'"'s on the same file (goal >= 0.50x): %s\n", r, (r >= 0.5 ? "PASS" : "MISS") }'
    awk -v big="$PM" -v q="$QM" -v bb="$big_bytes" -v qb="$quarter_bytes" 'BEGIN {
        g = (q > 0) ? big / q : 1e9
        printf "- memory bounded by the statements, not the input: peak RSS %.1f MiB on big.trc vs %.1f MiB on quarter.trc (input %.2fx larger, RSS %.2fx; goal <= 1.5x): %s\n",
            big / 1024, q / 1024, bb / qb, g, (g <= 1.5 ? "PASS" : "MISS")
    }'
} >"$report"
cp "$report" "$BENCH_DIR/prof-results.md"
cat "$report"
echo
echo "(written to $BENCH_DIR/prof-results.md)"
