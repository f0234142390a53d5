#!/usr/bin/env bash
# Benchmark for `tracelab proxy` on a private PostgreSQL, as ratios against
# direct connections measured in the same run (interleaved rounds):
#   (a) added p50 latency per round trip, no delay: pgbench -S -M prepared
#       -c 1, per-transaction logs, p50 through the proxy minus p50 direct
#       (goal < 50 µs);
#   (b) throughput at 20 clients, pgbench -S -M prepared -c 20 -j 2,
#       through the proxy / direct (goal >= 0.70);
#   (c) the cost of --trace: tps with --trace / tps without (goal >= 0.90).
#
# Usage (from the repository root):
#     bash bench/proxy.sh                      # 10 s per run, 3 rounds
#     SECONDS_PER_RUN=5 ROUNDS=2 bash bench/proxy.sh
set -euo pipefail

SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-20}
OUT=${BENCH_DIR:-bench/out}/proxy
TL=target/release/tracelab

[[ -f Cargo.toml && -d crates/tracelab ]] || { echo "run me from the repository root" >&2; exit 1; }
cargo build --release -q -p tracelab
mkdir -p "$OUT"
rm -rf "$OUT/pg" "$OUT/traces" "$OUT"/lat.*
url=$("$TL" db start --dir "$OUT/pg" -c max_connections=100)
port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$OUT/pg/tracelab-db.json")
bindir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bindir"])' "$OUT/pg/tracelab-db.json")
pgbench=$bindir/pgbench
[[ -x $pgbench ]] || pgbench=$(command -v pgbench)

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$TL" db stop --dir "$OUT/pg" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Starts a proxy in the background (not in a subshell: its pid is kept);
# sets $proxy_port.
start_proxy() {
  local log=$1; shift
  "$TL" proxy --listen 127.0.0.1:0 --upstream "127.0.0.1:$port" "$@" >/dev/null 2>"$log" &
  pids+=($!)
  for _ in $(seq 1 100); do
    grep -q 'listening on' "$log" 2>/dev/null && break
    sleep 0.05
  done
  proxy_port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\),.*/\1/p' "$log" | head -1)
  [[ -n $proxy_port ]] || { echo "the proxy did not start: $(cat "$log")" >&2; exit 1; }
}

start_proxy "$OUT/plain.log"; plain=$proxy_port
start_proxy "$OUT/traced.log" --trace "$OUT/traces"; traced=$proxy_port

"$pgbench" -i -q -s 1 "$url" >/dev/null 2>&1

pb() { local p=$1; shift; "$pgbench" -n -S -M prepared -h 127.0.0.1 -p "$p" -U postgres "$@" postgres 2>/dev/null; }
tps() { pb "$1" -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" | awk '/^tps = / { print $3; exit }'; }
# p50 of the per-transaction latencies (µs, 3rd column of pgbench's log).
p50() {
  local p=$1 tag=$2
  rm -f "$OUT"/lat."$tag".*
  (cd "$OUT" && pb "$p" -c 1 -T "$SECONDS_PER_RUN" -l --log-prefix="lat.$tag" >/dev/null)
  cat "$OUT"/lat."$tag".* | awk '{ print $3 }' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

echo "round | p50 direct µs | p50 proxy µs | added µs | tps direct | tps proxy | proxy/direct | tps proxy --trace | trace/no-trace"
echo "---|---:|---:|---:|---:|---:|---:|---:|---:"
for r in $(seq 1 "$ROUNDS"); do
  ld=$(p50 "$port" direct)
  lp=$(p50 "$plain" proxy)
  td=$(tps "$port")
  tp=$(tps "$plain")
  rm -rf "$OUT/traces"/*
  tt=$(tps "$traced")
  printf '%s | %s | %s | %s | %s | %s | %.2f | %s | %.2f\n' "$r" "$ld" "$lp" "$((lp - ld))" "$td" "$tp" \
    "$(echo "$tp / $td" | bc -l)" "$tt" "$(echo "$tt / $tp" | bc -l)"
done
echo
echo "clients=$CLIENTS, ${SECONDS_PER_RUN}s per run, $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
