#!/usr/bin/env bash
# Benchmark for `tracelab run` against pgbench on the same private
# PostgreSQL: the same prepared lookup, the same sessions and duration,
# interleaved (5 rounds by default); and tracelab with and without --trace,
# against pgbench with and without its per-transaction log (-l) and with
# and without the server's statement log; then the same ratios from many
# pairs of short runs, with confidence intervals (about 16 minutes in all).
#
# Usage (from the repository root):
#     bash bench/run.sh                 # 20 sessions, 10 s per run, 5 rounds, 20 pairs
#     SESSIONS=8 SECONDS_PER_RUN=5 ROUNDS=2 PAIRS=0 bash bench/run.sh
set -euo pipefail

SESSIONS=${SESSIONS:-20}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
ROUNDS=${ROUNDS:-5}
OUT=${BENCH_DIR:-bench/out}/run
TL=target/release/tracelab

[[ -f Cargo.toml && -d crates/tracelab ]] || { echo "run me from the repository root" >&2; exit 1; }
cargo build --release -q -p tracelab
mkdir -p "$OUT"
rm -rf "$OUT/pg" "$OUT/traces"
url=$("$TL" db start --dir "$OUT/pg" -c max_connections=100)
trap '"$TL" db stop --dir "$OUT/pg" >/dev/null 2>&1 || true' EXIT
bindir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bindir"])' "$OUT/pg/tracelab-db.json")
pgbench=$bindir/pgbench
[[ -x $pgbench ]] || pgbench=$(command -v pgbench)
# pgbench connects as root's OS name by default: name the user.
"$pgbench" -i -q -s 1 "$url" >/dev/null 2>&1
# The statement pgbench -S runs, with its random aid drawn from a bind file
# of 100,000 random accounts (scale 1).
python3 -c 'import random; random.seed(1); print("\n".join(str(random.randint(1,100000)) for _ in range(100000)))' > "$OUT/aids.csv"
sql='SELECT abalance FROM pgbench_accounts WHERE aid = :aid'

# The kernel writes a run's trace or log back to disk some 30 s after the
# run: written back right after each run (before its figures are read, so
# before the next run starts), it lands in no other run's measurement.
settle() { sync; }

# Each run prints "tps cpu_us_per_transaction": the client's CPU (user +
# system, from /usr/bin/time) per transaction is the steadier measure of a
# driver's own cost on a machine whose speed varies from run to run.
pg_run() {
  rm -rf "$OUT/pglog"; mkdir -p "$OUT/pglog"
  /usr/bin/time -f "%U %S" -o "$OUT/time" "$pgbench" -n -S -M prepared -c "${SESS:-$SESSIONS}" -j 2 -T "${SECS:-$SECONDS_PER_RUN}" "$@" "$url" \
    2>/dev/null >"$OUT/pgbench.out"
  settle
  # The server's statement log (below) is emptied after each run.
  : >"$OUT/pg/server.log"
  python3 - "$OUT/pgbench.out" "$OUT/time" <<'PY'
import re, sys
out = open(sys.argv[1]).read()
tps = float(re.search(r"^tps = ([0-9.]+)", out, re.M).group(1))
n = int(re.search(r"actually processed: (\d+)", out).group(1))
u, s = map(float, open(sys.argv[2]).read().split())
print("%.1f %.2f" % (tps, (u + s) * 1e6 / n))
PY
}
tl_run() {
  rm -rf "$OUT/traces"
  /usr/bin/time -f "%U %S" -o "$OUT/time" "$TL" run --db "$url" --sql "$sql" --binds "$OUT/aids.csv" \
    --sessions "${SESS:-$SESSIONS}" --runtime "${SECS:-$SECONDS_PER_RUN}" --json "$@" >"$OUT/tracelab.json"
  settle
  python3 - "$OUT/tracelab.json" "$OUT/time" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
u, s = map(float, open(sys.argv[2]).read().split())
print("%.1f %.2f" % (d["tps"], (u + s) * 1e6 / d["transactions"]))
PY
}

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
lowest() { printf '%.2f' "$(printf '%s\n' "$@" | sort -g | head -1)"; }
highest() { printf '%.2f' "$(printf '%s\n' "$@" | sort -g | tail -1)"; }
# Peers for the trace's cost, in the same rounds: pgbench's own
# per-transaction log (-l, one short line per transaction), and the
# server's own record of every call, PostgreSQL's statement log
# (log_min_duration_statement = 0: a line with the duration and the bind
# value of every execution).
stmt_log() { PGOPTIONS='-c log_min_duration_statement=0' pg_run "$@"; }
echo "round | pgbench tps | tracelab tps | tracelab/pgbench | --trace tps | tracelab again tps | trace/no-trace | again/first (A/A) | pgbench -l tps | -l/pgbench | pgbench, server statement log tps | statement log/pgbench | client CPU µs/txn: pgbench | tracelab | --trace | pgbench -l"
echo "---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:"
rp=(); rt=(); ra=(); rl=(); rs=()
for r in $(seq 1 "$ROUNDS"); do
  # Runs with and without a log or trace swap places every other round, so
  # that a machine whose speed drifts within a round favours neither; the
  # traced run sits between two untraced ones (A B A), and their ratio
  # (A/A) is the noise floor the trace's ratio is read against.
  if (( r % 2 )); then
    read -r p pc < <(pg_run)
    read -r l lc < <(pg_run -l --log-prefix="$OUT/pglog/pgbench_log")
    read -r g _ < <(stmt_log)
    read -r t tc < <(tl_run)
    read -r tt ttc < <(tl_run --trace "$OUT/traces")
    read -r t2 _ < <(tl_run)
  else
    read -r t2 _ < <(tl_run)
    read -r tt ttc < <(tl_run --trace "$OUT/traces")
    read -r t tc < <(tl_run)
    read -r g _ < <(stmt_log)
    read -r l lc < <(pg_run -l --log-prefix="$OUT/pglog/pgbench_log")
    read -r p pc < <(pg_run)
  fi
  rp+=("$(echo "$t / $p" | bc -l)"); rt+=("$(echo "2 * $tt / ($t + $t2)" | bc -l)")
  ra+=("$(echo "$t2 / $t" | bc -l)"); rl+=("$(echo "$l / $p" | bc -l)"); rs+=("$(echo "$g / $p" | bc -l)")
  printf '%s | %s | %s | %.2f | %s | %s | %.2f | %.2f | %s | %.2f | %s | %.2f | %s | %s | %s | %s\n' "$r" "$p" "$t" "${rp[-1]}" \
    "$tt" "$t2" "${rt[-1]}" "${ra[-1]}" "$l" "${rl[-1]}" "$g" "${rs[-1]}" "$pc" "$tc" "$ttc" "$lc"
done
printf 'medians: tracelab/pgbench %.2f, trace/no-trace %.2f (per round %s to %s), A/A %.2f (%s to %s), pgbench -l/pgbench %.2f, statement log/pgbench %.2f\n' \
  "$(median "${rp[@]}")" "$(median "${rt[@]}")" "$(lowest "${rt[@]}")" "$(highest "${rt[@]}")" \
  "$(median "${ra[@]}")" "$(lowest "${ra[@]}")" "$(highest "${ra[@]}")" "$(median "${rl[@]}")" "$(median "${rs[@]}")"
echo

# The same ratios estimated more tightly: on this machine a run's speed
# swings by ±20 % over seconds (the A/A column above), so a few 10 s
# rounds cannot tell 0.90 from 0.95. PAIRS pairs of short runs (A then B,
# B then A in turn), the median of the pairs' ratios and a bootstrap 95 %
# confidence interval of that median. PAIRS=0 skips this part.
PAIRS=${PAIRS:-20}
PAIR_SECONDS=${PAIR_SECONDS:-3}
pairs() { # label, command A, command B (each prints "tps ...")
  local label=$1 a=$2 b=$3 ratios=() x y
  for i in $(seq 1 "$PAIRS"); do
    if (( i % 2 )); then read -r x _ < <($a); read -r y _ < <($b)
    else read -r y _ < <($b); read -r x _ < <($a); fi
    ratios+=("$(echo "$x / $y" | bc -l)")
  done
  python3 bench/median_ci.py "$label" "${ratios[@]}"
}
if (( PAIRS > 0 )); then
  traced() { tl_run --trace "$OUT/traces"; }
  one_traced() { SESS=1 tl_run --trace "$OUT/traces"; }
  one_untraced() { SESS=1 tl_run; }
  echo "$PAIRS pairs of ${PAIR_SECONDS}s runs | median ratio | 95 % CI | single pairs"
  echo "---|---:|---:|---:"
  SECS=$PAIR_SECONDS pairs "tracelab --trace / tracelab, $SESSIONS sessions" traced tl_run
  SECS=$PAIR_SECONDS pairs "tracelab / tracelab (A/A), $SESSIONS sessions" tl_run tl_run
  SECS=$PAIR_SECONDS pairs "tracelab / pgbench, $SESSIONS sessions" tl_run pg_run
  SECS=$PAIR_SECONDS pairs "pgbench, server statement log / pgbench" stmt_log pg_run
  SECS=$PAIR_SECONDS pairs "tracelab --trace / tracelab, 1 session" one_traced one_untraced
fi
rm -rf "$OUT/pglog"
echo
# The trace's own cost, without the run-to-run swings of a saturated
# machine: the same sessions paced at a fixed rate (--rate, well below
# saturation), client CPU per transaction with and without --trace,
# interleaved. At a fixed rate the machine's speed does not feed back into
# the batching of the round trips, so the difference is what tracing costs.
RATE=${RATE:-20000}
paced() { local cpu; read -r _ cpu < <(SECS=5 tl_run --rate "$RATE" "$@"); echo "$cpu"; }
echo
echo "paced at $RATE tps | client CPU µs/txn untraced | --trace | added by the trace"
echo "---|---:|---:|---:"
added=()
for r in $(seq 1 "$ROUNDS"); do
  if (( r % 2 )); then a=$(paced); b=$(paced --trace "$OUT/traces")
  else b=$(paced --trace "$OUT/traces"); a=$(paced); fi
  added+=("$(echo "$b - $a" | bc -l)")
  printf '%s | %s | %s | %.2f\n' "$r" "$a" "$b" "${added[-1]}"
done
printf 'median added by the trace: %.2f µs per transaction\n' "$(median "${added[@]}")"
rm -rf "$OUT/traces"
echo
# Memory stays flat however long the run: latencies go into HDR
# histograms, not lists. Peak RSS of a 2 s run against a run 5 times longer.
rss() { /usr/bin/time -f %M -o "$OUT/rss" "$TL" run --db "$url" --sql "$sql" --binds "$OUT/aids.csv" \
          --sessions "$SESSIONS" --runtime "$1" --json >/dev/null; cat "$OUT/rss"; }
short=$(rss 2); long=$(rss 10)
printf 'peak RSS: %s KiB after 2 s, %s KiB after 10 s (ratio %.2f)\n' "$short" "$long" "$(echo "$long / $short" | bc -l)"
echo "sessions=$SESSIONS, ${SECONDS_PER_RUN}s per run, $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
