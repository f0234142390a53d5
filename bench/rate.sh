#!/usr/bin/env bash
# Benchmark for `tracelab run --rate` against `pgbench -R` on the same
# private PostgreSQL: the same statement (`select 1`, prepared), the same
# sessions, the same Poisson arrival rate, interleaved. Both count a paced
# call's latency from when it was due and report the schedule lag (how
# late it started); the goal is tracelab's p50 latency at most 50 µs above
# pgbench's (the driver adds no false latency of its own). pgbench's figures come from its per-transaction log (-l:
# latency and schedule lag of every transaction), tracelab's from its
# HDR histograms (--json).
#
# Usage (from the repository root):
#     bash bench/rate.sh                       # rates 100 and 1000, 2 sessions, 10 s, 3 rounds
#     RATES="1000" ROUNDS=5 SESSIONS=4 bash bench/rate.sh
set -euo pipefail

RATES=${RATES:-"100 1000"}
SESSIONS=${SESSIONS:-2}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
ROUNDS=${ROUNDS:-3}
OUT=${BENCH_DIR:-bench/out}/rate
TL=target/release/tracelab

[[ -f Cargo.toml && -d crates/tracelab ]] || { echo "run me from the repository root" >&2; exit 1; }
cargo build --release -q -p tracelab
mkdir -p "$OUT"
rm -rf "$OUT/pg"
url=$("$TL" db start --dir "$OUT/pg")
trap '"$TL" db stop --dir "$OUT/pg" >/dev/null 2>&1 || true' EXIT
bindir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bindir"])' "$OUT/pg/tracelab-db.json")
pgbench=$bindir/pgbench
[[ -x $pgbench ]] || pgbench=$(command -v pgbench)
echo 'select 1;' >"$OUT/select1.sql"

# Each prints "p50_latency_us p50_lag_us mean_latency_us mean_lag_us".
pg_run() {
  rm -rf "$OUT/log"; mkdir -p "$OUT/log"
  (cd "$OUT/log" && "$pgbench" -n -M prepared -f ../select1.sql -R "$1" -c "$SESSIONS" -j "$SESSIONS" \
    -T "$SECONDS_PER_RUN" -l "$url" >/dev/null 2>&1)
  python3 - "$OUT"/log/pgbench_log.* <<'PY'
import statistics, sys
lat, lag = [], []
for f in sys.argv[1:]:
    for line in open(f):
        p = line.split()
        # client txn latency_us script epoch epoch_us schedule_lag_us
        lat.append(int(p[2])); lag.append(int(p[6]))
print("%d %d %.0f %.0f" % (statistics.median(lat), statistics.median(lag), statistics.mean(lat), statistics.mean(lag)))
PY
}
tl_run() {
  "$TL" run --db "$url" --sql 'select 1' --rate "$1" --sessions "$SESSIONS" \
    --runtime "$SECONDS_PER_RUN" --json >"$OUT/tracelab.json"
  python3 - "$OUT/tracelab.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print("%d %d - -" % (d["latency_us"]["p50"], d["schedule_lag_us"]["p50"]))
PY
}
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

echo "# --rate against pgbench -R: select 1, $SESSIONS sessions, ${SECONDS_PER_RUN} s per run, $ROUNDS rounds, $(nproc) CPUs, $(date -u '+%F %H:%M UTC')"
echo
echo "| rate | round | pgbench p50 latency µs | tracelab p50 latency µs | difference µs | pgbench p50 lag µs | tracelab p50 lag µs | pgbench mean latency µs | pgbench mean lag µs |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
status=0
for rate in $RATES; do
  diffs=()
  for r in $(seq 1 "$ROUNDS"); do
    # Alternate which driver goes first.
    if (( r % 2 )); then p=$(pg_run "$rate"); t=$(tl_run "$rate"); else t=$(tl_run "$rate"); p=$(pg_run "$rate"); fi
    read -r plat plag pmean pmlag <<<"$p"
    read -r tlat tlag _ _ <<<"$t"
    d=$((tlat - plat))
    diffs+=("$d")
    echo "| $rate | $r | $plat | $tlat | $d | $plag | $tlag | $pmean | $pmlag |"
  done
  m=$(median "${diffs[@]}")
  verdict=PASS
  awk -v m="$m" 'BEGIN { exit !(m < 50) }' || { verdict=MISS; status=1; }
  echo "| $rate | **median** | | | **$m** | | | | |"
  echo
  echo "rate $rate: median p50 difference (tracelab - pgbench) $m µs (goal: under 50 µs): $verdict"
  echo
done
exit $status
