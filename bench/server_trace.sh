#!/usr/bin/env bash
# The cost of tracelab's server tracer (`--server-trace`), as ratios to
# an untraced peer measured in the same run: two private PostgreSQL
# servers with the same settings, one started with --server-trace, and
# interleaved rounds against each:
#   (a) tps at saturation: pgbench -S -M prepared -c 20 -j 2 (pgbench's
#       select-only lookup), traced / untraced (goal >= 0.95);
#   (b) the oltp loop's elapsed time: pgbench's TPC-B-like transaction,
#       -c 1 -t N, traced / untraced (goal <= 1.05);
#   (c) where perf can count system calls (root, or perf_event_paranoid
#       <= 1): the system calls per select-only query of all the servers'
#       processes, traced and untraced, counted by perf's tracepoints
#       (which do not stop the process, as strace does: the tracer's CPU
#       clock is read for real only after the backend was switched out,
#       and a ptrace stop is a switch).
# The load average is printed at the start and the end: the tps ratios
# are only as steady as the machine.
# The traces are removed after each traced run (they grow by ~1 KB per
# transaction per session).
#
# Usage (from the repository root):
#     bash bench/server_trace.sh                     # 10 s per run, 5 rounds
#     SECONDS_PER_RUN=5 ROUNDS=3 bash bench/server_trace.sh
#     TL=target/debug/tracelab bash bench/server_trace.sh   # a debug build
set -euo pipefail

SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
ROUNDS=${ROUNDS:-5}
CLIENTS=${CLIENTS:-20}
OLTP_TX=${OLTP_TX:-2000}
OUT=${BENCH_DIR:-bench/out}/server_trace
TL=${TL:-target/release/tracelab}

[[ -f Cargo.toml && -d crates/tracelab ]] || { echo "run me from the repository root" >&2; exit 1; }
[[ $TL == target/release/tracelab ]] && cargo build --release -q -p tracelab
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/plain" "$OUT/traced" "$OUT/traces"
settings=(-c max_connections=100 -c shared_buffers=128MB)
url_plain=$("$TL" db start --dir "$OUT/plain" "${settings[@]}")
url_traced=$("$TL" db start --dir "$OUT/traced" "${settings[@]}" --server-trace "$OUT/traces")
cleanup() {
  "$TL" db stop --dir "$OUT/plain" >/dev/null 2>&1 || true
  "$TL" db stop --dir "$OUT/traced" >/dev/null 2>&1 || true
}
trap cleanup EXIT
bindir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bindir"])' "$OUT/plain/tracelab-db.json")
pgbench=$bindir/pgbench
[[ -x $pgbench ]] || pgbench=$(command -v pgbench)

for u in "$url_plain" "$url_traced"; do
  "$pgbench" -i -q -s 10 "$u" >/dev/null 2>&1
done
clear_traces() { find "$OUT/traces" -name 'tracelab_server_*.trc' -delete; }

tps() { "$pgbench" -n -S -M prepared -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" "$1" 2>/dev/null \
          | awk '/^tps/ {print $3; exit}'; }
elapsed() { local s e; s=$(date +%s.%N); "$pgbench" -n -c 1 -t "$OLTP_TX" "$1" >/dev/null 2>&1; e=$(date +%s.%N);
            python3 -c "print($e - $s)"; }

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
tps_ratios=(); oltp_ratios=()
for r in $(seq 1 "$ROUNDS"); do
  a=$(tps "$url_plain"); b=$(tps "$url_traced"); clear_traces
  ea=$(elapsed "$url_plain"); eb=$(elapsed "$url_traced"); clear_traces
  ra=$(python3 -c "print(round($b / $a, 3))"); rb=$(python3 -c "print(round($eb / $ea, 3))")
  tps_ratios+=("$ra"); oltp_ratios+=("$rb")
  echo "round $r: select-only tps untraced $a traced $b ratio $ra; oltp ${OLTP_TX} tx elapsed untraced ${ea}s traced ${eb}s ratio $rb"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "median: select-only tps traced/untraced $(median "${tps_ratios[@]}") (goal >= 0.95); oltp elapsed traced/untraced $(median "${oltp_ratios[@]}") (goal <= 1.05)"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"

# (c) System calls per query, 20 clients x 500 select-only queries.
calls=(clock_gettime gettid sendto recvfrom epoll_wait pread64 write)
syscalls() {
  local dir=$1 url=$2 pid events
  pid=$(head -1 "$dir/data/postmaster.pid")
  events=$(printf 'syscalls:sys_enter_%s,' "${calls[@]}")
  perf stat -x, -e "${events%,}" -p "$pid" -o "$OUT/perf.txt" & local perf=$!
  sleep 1
  "$pgbench" -n -S -M prepared -c 20 -j 2 -t 500 "$url" >/dev/null 2>&1
  sleep 0.5; kill -INT "$perf"; wait "$perf" 2>/dev/null || true
  awk -F, '/sys_enter_/ {sub(/.*sys_enter_/, "", $3); printf " %s %.2f", $3, $1 / 10000}' "$OUT/perf.txt"
}
if command -v perf >/dev/null && perf stat -e syscalls:sys_enter_gettid true >/dev/null 2>&1; then
  echo "system calls per query, untraced:$(syscalls "$OUT/plain" "$url_plain")"
  echo "system calls per query, traced:  $(syscalls "$OUT/traced" "$url_traced")"
  clear_traces
fi
