#!/usr/bin/env bash
# Benchmark for `tracelab skew` (the Rust re-implementation of Method R's mrskew).
#
# Usage (from the repository root):
#     bash bench/skew.sh
#     BENCH_GB=0.05 bash bench/skew.sh          # quick dry run on a small input
#
# Environment:
#     BENCH_GB   size of the generated trace in GB (10^9 bytes), default 1.0
#     BENCH_DIR  scratch/output directory, default bench/out (gitignored)
#     BENCH_RUNS timed runs per case (median is reported), default 3
#     BENCH_PREPARE_ONLY=1  only build the input files (no cargo build, no timing)
#     BENCH_TL   the tracelab binary to time, default target/release/tracelab
#                (built first); when set, it is used as it is, not built: to
#                compare two builds, run the script once for each, alternately
#
# What it does:
#   1. cargo build --release -p tracelab
#   2. builds $BENCH_DIR/big.trc (>= BENCH_GB GB) by concatenating the 20 real
#      19c traces in tests/fixtures/crc-local-force/ over and over (whole trace
#      files only, so every copy stays a valid trace), plus big.trc.gz (gzip -1),
#      split/part-{0..7}.trc (split -n l/8) and quarter.trc (first 1/4 of big.trc,
#      cut at a line boundary).  Existing files of the right size are reused.
#   3. checks every tracelab command once (exit 0 or 1, last line `TOTAL (`),
#      then times each case BENCH_RUNS times (median wall time, peak RSS from
#      /usr/bin/time -f %M) against `wc -l` on the same input.
#   4. prints a Markdown table + goal PASS/MISS lines, also written to
#      $BENCH_DIR/results.md.  Goals are informational: the exit status is 0
#      unless a command fails.
#
# Units: GB = 10^9 bytes, GB/s = uncompressed input bytes / 10^9 / seconds,
# MiB = 2^20 bytes.
set -euo pipefail

BENCH_GB=${BENCH_GB:-1.0}
BENCH_DIR=${BENCH_DIR:-bench/out}
BENCH_RUNS=${BENCH_RUNS:-3}
# Hard limit per command so a hung binary cannot block the benchmark forever.
BENCH_TIMEOUT=${BENCH_TIMEOUT:-1800}

FIXTURES=tests/fixtures/crc-local-force
TL=${BENCH_TL:-target/release/tracelab}
TIME=/usr/bin/time

die() { echo "bench/skew.sh: $*" >&2; exit 1; }
log() { echo "==> $*" >&2; }

[[ -f Cargo.toml && -d crates/tracelab ]] || die "run me from the repository root (bash bench/skew.sh)"
[[ -x $TIME ]] || die "$TIME (GNU time) is required"
[[ $BENCH_RUNS =~ ^[1-9][0-9]*$ ]] || die "BENCH_RUNS must be a positive integer"
target_bytes=$(awk -v gb="$BENCH_GB" 'BEGIN { if (gb + 0 <= 0) exit 1; printf "%.0f", gb * 1e9 }') \
    || die "BENCH_GB must be a positive number (got '$BENCH_GB')"

mkdir -p "$BENCH_DIR"
WORK=$(mktemp -d "$BENCH_DIR/.tmp.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

fsize() { stat -c %s "$1"; }

PREPARE_ONLY=${BENCH_PREPARE_ONLY:-0}

# ---------------------------------------------------------------- 1. build
if [[ $PREPARE_ONLY != 1 && -z ${BENCH_TL:-} ]]; then
    log "cargo build --release -p tracelab"
    cargo build --release -p tracelab
    [[ -x $TL ]] || die "$TL was not produced by the build"
elif [[ $PREPARE_ONLY != 1 ]]; then
    [[ -x $TL ]] || die "BENCH_TL=$TL is not an executable"
fi

# ---------------------------------------------------------------- 2. inputs
shopt -s nullglob
fixtures=("$FIXTURES"/*.trc.gz)
shopt -u nullglob
((${#fixtures[@]} > 0)) || die "no fixtures in $FIXTURES"

# One "round" = the text of all fixture traces, each ending in a newline.
round=$BENCH_DIR/round.trc
round_tmp=$WORK/round.trc
for f in "${fixtures[@]}"; do
    gzip -dc "$f"
done >"$round_tmp"
if [[ -f $round ]] && cmp -s "$round" "$round_tmp"; then
    rm -f "$round_tmp"
else
    mv "$round_tmp" "$round"
fi
round_bytes=$(fsize "$round")
copies=$(((target_bytes + round_bytes - 1) / round_bytes))
big=$BENCH_DIR/big.trc
big_bytes_want=$((copies * round_bytes))

rebuilt=0
if [[ -f $big && $(fsize "$big") -eq $big_bytes_want && ! $round -nt $big ]]; then
    log "reusing $big ($big_bytes_want bytes, $copies copies of ${#fixtures[@]} traces)"
else
    log "building $big: $copies copies of ${#fixtures[@]} traces ($round_bytes bytes each) = $big_bytes_want bytes"
    for ((i = 0; i < copies; i++)); do
        cat "$round"
    done >"$big.tmp"
    mv "$big.tmp" "$big"
    rebuilt=1
fi
big_bytes=$(fsize "$big")

gz=$BENCH_DIR/big.trc.gz
if [[ $rebuilt -eq 0 && -s $gz && ! $big -nt $gz ]]; then
    log "reusing $gz"
else
    log "building $gz (gzip -1)"
    gzip -1 -c "$big" >"$gz.tmp"
    mv "$gz.tmp" "$gz"
fi

splitdir=$BENCH_DIR/split
split_stamp=$splitdir/.source-size
if [[ $rebuilt -eq 0 && -f $split_stamp && $(<"$split_stamp") == "$big_bytes" && ! $big -nt $split_stamp ]]; then
    log "reusing $splitdir/part-*.trc"
else
    log "splitting $big into 8 parts (split -n l/8)"
    rm -rf "$splitdir"
    mkdir -p "$splitdir"
    split -n l/8 -d -a 1 --additional-suffix=.trc "$big" "$splitdir/part-"
    echo "$big_bytes" >"$split_stamp"
fi
parts=("$splitdir"/part-?.trc)
((${#parts[@]} == 8)) || die "expected 8 split parts, found ${#parts[@]}"
parts_bytes=0
for p in "${parts[@]}"; do parts_bytes=$((parts_bytes + $(fsize "$p"))); done
((parts_bytes == big_bytes)) || die "split parts total $parts_bytes bytes, big.trc has $big_bytes"

quarter=$BENCH_DIR/quarter.trc
quarter_stamp=$BENCH_DIR/.quarter-source-size
if [[ $rebuilt -eq 0 && -f $quarter && -f $quarter_stamp && $(<"$quarter_stamp") == "$big_bytes" && ! $big -nt $quarter ]]; then
    log "reusing $quarter"
else
    log "building $quarter (first 1/4 of big.trc, cut at a line boundary)"
    head -c $((big_bytes / 4)) "$big" >"$quarter.tmp"
    if [[ $(tail -c 1 "$quarter.tmp" | od -An -c | tr -d ' ') != '\n' ]]; then
        partial=$(tail -n 1 "$quarter.tmp" | wc -c)   # bytes of the cut, unterminated last line
        truncate -s "-$partial" "$quarter.tmp"
    fi
    mv "$quarter.tmp" "$quarter"
    echo "$big_bytes" >"$quarter_stamp"
fi
quarter_bytes=$(fsize "$quarter")
log "inputs: big.trc $big_bytes B, big.trc.gz $(fsize "$gz") B, split/ 8 parts, quarter.trc $quarter_bytes B"
if [[ $PREPARE_ONLY == 1 ]]; then
    log "BENCH_PREPARE_ONLY=1: inputs ready in $BENCH_DIR, stopping before the build and timing"
    exit 0
fi

# ---------------------------------------------------------------- 3. measure
# Every case: a name, a peer-case name (for the ratio column, empty for peers),
# the uncompressed input bytes, the exit codes accepted, and the command.
declare -A SECS RSS BYTES PEER
ORDER=()

# check NAME CMD... : run a tracelab command once, require exit 0/1 and a
# table ending in `TOTAL (`; doubles as a warm-up run.
check() {
    local name=$1
    shift
    local out=$WORK/check.out err=$WORK/check.err rc=0
    timeout "$BENCH_TIMEOUT" "$@" >"$out" 2>"$err" || rc=$?
    local last
    last=$(grep -v '^[[:space:]]*$' "$out" | tail -n 1 || true)
    if ((rc > 1)) || [[ $last != 'TOTAL ('* ]]; then
        {
            echo "bench/skew.sh: check failed for $name: exit $rc; last line: ${last:-<no output>}"
            echo "command: $*"
            echo "--- stderr ---"
            cat "$err"
            echo "--- last 5 lines of stdout ---"
            tail -n 5 "$out"
        } >&2
        exit 1
    fi
    local nwarn
    nwarn=$(grep -c '' "$err" || true)
    log "ok: $name (exit $rc, $nwarn stderr lines): $last"
}

# measure NAME PEER BYTES MAXRC CMD... : BENCH_RUNS timed runs, stdout to /dev/null.
measure() {
    local name=$1 peer=$2 bytes=$3 maxrc=$4
    shift 4
    local tfile=$WORK/time.out err=$WORK/measure.err
    local -a walls=() rsss=()
    local run t0 t1 rc
    for ((run = 1; run <= BENCH_RUNS; run++)); do
        rc=0
        t0=$(date +%s%N)
        timeout "$BENCH_TIMEOUT" "$TIME" -f '%e %M' -o "$tfile" "$@" >/dev/null 2>"$err" || rc=$?
        t1=$(date +%s%N)
        if ((rc > maxrc)); then
            echo "bench/skew.sh: '$*' exited $rc during timing" >&2
            cat "$err" >&2
            exit 1
        fi
        # Wall time from date(1) (ns resolution; %e only has 10 ms resolution).
        walls+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", (b - a) / 1e9 }')")
        rsss+=("$(awk 'END { print $2 }' "$tfile")")
    done
    SECS[$name]=$(printf '%s\n' "${walls[@]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    RSS[$name]=$(printf '%s\n' "${rsss[@]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    BYTES[$name]=$bytes
    PEER[$name]=$peer
    ORDER+=("$name")
    log "$(printf '%-48s median %7ss  runs: %s  peak RSS KiB: %s' "$name" "${SECS[$name]}" "${walls[*]}" "${rsss[*]}")"
}

# Command lines (arrays, so `$sqlid` etc. stay literal).
cmd_a=("$TL" skew "$big")
# shellcheck disable=SC2016  # literal mrskew expressions, not shell expansions
cmd_b=("$TL" skew '--group=$sqlid' '--where=$af<1' "$big")
cmd_c=("$TL" skew --rc=p10.rc '--name=message from client' "$big")
cmd_d=("$TL" skew "$gz")
cmd_e=("$TL" skew "${parts[@]}")
cmd_q=("$TL" skew "$quarter")

log "checking the tracelab commands (exit 0/1 and a TOTAL row)"
check "(a) default" "${cmd_a[@]}"
check "(b) group/where" "${cmd_b[@]}"
check "(c) p10.rc + name" "${cmd_c[@]}"
check "(d) gzip" "${cmd_d[@]}"
check "(e) 8 files" "${cmd_e[@]}"
check "(a) on quarter.trc" "${cmd_q[@]}"

log "warming the page cache"
cat "$big" "$gz" "${parts[@]}" "$quarter" >/dev/null

log "timing ($BENCH_RUNS runs per case, median)"
P_BIG='peer: wc -l big.trc'
P_GZ='peer: gzip -dc big.trc.gz | wc -l'
P_SPLIT='peer: wc -l split/*.trc (8 files)'
P_Q='peer: wc -l quarter.trc'
A='(a) tracelab skew big.trc'
Q='(a) tracelab skew quarter.trc'
measure "$P_BIG" "" "$big_bytes" 0 wc -l "$big"
measure "$A" "$P_BIG" "$big_bytes" 1 "${cmd_a[@]}"
measure "(b) --group='\$sqlid' --where='\$af<1'" "$P_BIG" "$big_bytes" 1 "${cmd_b[@]}"
measure "(c) --rc=p10.rc --name='message from client'" "$P_BIG" "$big_bytes" 1 "${cmd_c[@]}"
# shellcheck disable=SC2016  # $1 is expanded by the inner bash
measure "$P_GZ" "" "$big_bytes" 0 bash -o pipefail -c 'gzip -dc "$1" | wc -l' _ "$gz"
measure "(d) tracelab skew big.trc.gz" "$P_GZ" "$big_bytes" 1 "${cmd_d[@]}"
measure "$P_SPLIT" "" "$big_bytes" 0 wc -l "${parts[@]}"
measure "(e) tracelab skew split/*.trc (8 files)" "$P_SPLIT" "$big_bytes" 1 "${cmd_e[@]}"
measure "$P_Q" "" "$quarter_bytes" 0 wc -l "$quarter"
measure "$Q" "$P_Q" "$quarter_bytes" 1 "${cmd_q[@]}"

# ---------------------------------------------------------------- 4. report
cpu=$(awk -F': *' '/^model name/ { print $2; exit }' /proc/cpuinfo)
report=$WORK/results.md
{
    echo "## tracelab skew benchmark"
    echo
    printf 'Input: big.trc = %s bytes (%.3f GB; %d copies of the %d traces in %s), quarter.trc = %s bytes, big.trc.gz = %s bytes (gzip -1). Median of %d runs, output to /dev/null, page cache warm.\n' \
        "$big_bytes" "$(awk -v b="$big_bytes" 'BEGIN { print b / 1e9 }')" "$copies" "${#fixtures[@]}" "$FIXTURES" \
        "$quarter_bytes" "$(fsize "$gz")" "$BENCH_RUNS"
    echo
    echo "| case | seconds | GB/s | ratio to wc -l | peak RSS MiB |"
    echo "|---|---:|---:|---:|---:|"
    for name in "${ORDER[@]}"; do
        peer=${PEER[$name]}
        if [[ -n $peer ]]; then
            ratio=$(awk -v t="${SECS[$name]}" -v w="${SECS[$peer]}" 'BEGIN { if (w > 0) printf "%.2fx", t / w; else print "n/a" }')
        else
            ratio="1.00x (peer)"
        fi
        awk -v n="$name" -v s="${SECS[$name]}" -v b="${BYTES[$name]}" -v r="$ratio" -v k="${RSS[$name]}" \
            'BEGIN { gsub(/\|/, "\\|", n); printf "| %s | %.3f | %s | %s | %.1f |\n", n, s, (s > 0 ? sprintf("%.2f", b / 1e9 / s) : "inf"), r, k / 1024 }'
    done
    echo
    echo "Machine: nproc=$(nproc), CPU: ${cpu:-unknown}; date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
    echo
    echo "### Goals (informational)"
    echo
    for name in "$A" "(b) --group='\$sqlid' --where='\$af<1'" "(c) --rc=p10.rc --name='message from client'"; do
        awk -v n="$name" -v s="${SECS[$name]}" -v b="${BYTES[$name]}" -v w="${SECS[${PEER[$name]}]}" 'BEGIN {
            gbs = (s > 0) ? b / 1e9 / s : 1e9; r = (w > 0) ? s / w : 1e9
            printf "- %s: throughput %.2f GB/s (goal >= 1 GB/s): %s; %.2fx wc -l (goal <= 4x): %s\n",
                n, gbs, (gbs >= 1 ? "PASS" : "MISS"), r, (r <= 4 ? "PASS" : "MISS")
        }'
    done
    awk -v big="${RSS[$A]}" -v q="${RSS[$Q]}" -v bb="$big_bytes" -v qb="$quarter_bytes" 'BEGIN {
        g = (q > 0) ? big / q : 1e9
        printf "- memory flat in input size: peak RSS %.1f MiB on big.trc vs %.1f MiB on quarter.trc (input %.2fx larger, RSS %.2fx; goal <= 1.5x): %s\n",
            big / 1024, q / 1024, bb / qb, g, (g <= 1.5 ? "PASS" : "MISS")
    }'
} >"$report"
cp "$report" "$BENCH_DIR/results.md"
cat "$report"
echo
echo "(written to $BENCH_DIR/results.md)"
