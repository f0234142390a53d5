#!/usr/bin/env bash
# The cost of tracelab's server tracer (`--server-trace`), as ratios to
# an untraced peer measured in the same run: one private PostgreSQL
# cluster, restarted for each run with --server-trace or without it, and
# the two kinds of run interleaved (ABBA):
#   (a) tps at saturation: pgbench -S -M prepared -c 20 -j 2 (pgbench's
#       select-only lookup), traced / untraced (goal >= 0.95);
#   (b) the oltp loop's elapsed time: pgbench's TPC-B-like transaction,
#       -c 1 -t N, traced / untraced (goal <= 1.05);
#   (b2) the same transaction as one CALL of a PL/pgSQL procedure (the
#       five statements inside it, traced as dep=1 calls), -c 1 -t N,
#       traced / untraced (goal <= 1.05);
#   (c) where perf can count system calls (root, or perf_event_paranoid
#       <= 1): the system calls per select-only query of all the servers'
#       processes, traced and untraced, counted by perf's tracepoints
#       (which do not stop the process, as strace does: the tracer's CPU
#       clock is read for real only after the backend was preempted, and
#       a ptrace stop is a switch).
# One cluster, not two: two clusters made alike still differ (where their
# WAL lands on the disk, where their shared memory lands), and by as much
# as the tracer costs: with two, traced on x against untraced on y and
# then the other way round, select-only's rounds split into two groups
# ~15 % apart (medians ~0.97 and ~0.84, 2026-11-28). A restart lays the
# shared memory out anew each run, so what differs between runs of one
# cluster is noise both kinds share, not a bias of one side. After each
# restart a second of the lookup fills the shared buffers again (from the
# OS page cache), unmeasured.
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
rm -rf "$OUT/x" "$OUT/y" "$OUT/db" "$OUT/plain" "$OUT/traced" "$OUT/traces"
settings=(-c max_connections=100 -c shared_buffers=128MB)
dir=$OUT/db
cleanup() { "$TL" db stop --dir "$dir" >/dev/null 2>&1 || true; }
trap cleanup EXIT
# The settings go into postgresql.conf at the first start; the restarts
# only choose whether the tracer is loaded.
url=$("$TL" db start --dir "$dir" "${settings[@]}")
bindir=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["bindir"])' "$dir/tracelab-db.json")
pgbench=$bindir/pgbench
[[ -x $pgbench ]] || pgbench=$(command -v pgbench)

# (b2)'s procedure: pgbench's TPC-B-like transaction, its statements
# inside PL/pgSQL, and the pgbench script that calls it.
cat >"$OUT/tpcb_proc.sql" <<'SQL'
CREATE PROCEDURE tl_tpcb(p_aid int, p_bid int, p_tid int, p_delta int) LANGUAGE plpgsql AS $$
DECLARE bal int;
BEGIN
  UPDATE pgbench_accounts SET abalance = abalance + p_delta WHERE aid = p_aid;
  SELECT abalance INTO bal FROM pgbench_accounts WHERE aid = p_aid;
  UPDATE pgbench_tellers SET tbalance = tbalance + p_delta WHERE tid = p_tid;
  UPDATE pgbench_branches SET bbalance = bbalance + p_delta WHERE bid = p_bid;
  INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (p_tid, p_bid, p_aid, p_delta, CURRENT_TIMESTAMP);
END $$;
SQL
cat >"$OUT/tpcb_call.pgbench" <<'PGB'
\set aid random(1, 100000 * :scale)
\set bid random(1, 1 * :scale)
\set tid random(1, 10 * :scale)
\set delta random(-5000, 5000)
CALL tl_tpcb(:aid, :bid, :tid, :delta);
PGB
psql=$bindir/psql
[[ -x $psql ]] || psql=$(command -v psql)
"$pgbench" -i -q -s 10 "$url" >/dev/null 2>&1
"$psql" -q -X -v ON_ERROR_STOP=1 -f "$OUT/tpcb_proc.sql" "$url" >/dev/null
clear_traces() { find "$OUT/traces" -name 'tracelab_server_*.trc' -delete 2>/dev/null || true; }
# restart plain|traced: the cluster restarted without or with the tracer,
# its shared buffers filled again; sets $url.
restart() {
  cleanup
  if [[ $1 == traced ]]; then
    url=$("$TL" db start --dir "$dir" --server-trace "$OUT/traces" 2>/dev/null)
  else
    url=$("$TL" db start --dir "$dir" 2>/dev/null)
  fi
  "$pgbench" -n -S -M prepared -c "$CLIENTS" -j 2 -T 1 "$url" >/dev/null 2>&1
  clear_traces
}

tps() { "$pgbench" -n -S -M prepared -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN" "$1" 2>/dev/null \
          | awk '/^tps/ {print $3; exit}'; }
elapsed() { local s e; s=$(date +%s.%N); "$pgbench" -n -c 1 -t "$OLTP_TX" "$1" >/dev/null 2>&1; e=$(date +%s.%N);
            python3 -c "print($e - $s)"; }
elapsed_proc() { local s e; s=$(date +%s.%N); "$pgbench" -n -M prepared -s 10 -c 1 -t "$OLTP_TX" -f "$OUT/tpcb_call.pgbench" "$1" >/dev/null 2>&1; e=$(date +%s.%N);
            python3 -c "print($e - $s)"; }

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
tps_ratios=(); oltp_ratios=(); proc_ratios=()
for r in $(seq 1 "$ROUNDS"); do
  # Untraced first in odd rounds, traced first in even ones (ABBA), so
  # that what a run leaves behind (the kernel writing back its WAL, a
  # warm cache) weighs on each side alike.
  for kind in $( (( r % 2 )) && echo "plain traced" || echo "traced plain"); do
    restart "$kind"
    t=$(tps "$url"); e=$(elapsed "$url"); p=$(elapsed_proc "$url")
    if [[ $kind == plain ]]; then
      a=$t ea=$e pa=$p
      if compgen -G "$OUT/traces/tracelab_server_*.trc" >/dev/null; then
        echo "the untraced run wrote server traces: the restart kept the tracer" >&2; exit 1
      fi
    else
      b=$t eb=$e pb=$p
      dep1=$(cat "$OUT"/traces/tracelab_server_*.trc 2>/dev/null | grep -c '^EXEC .*dep=1' || true)
      clear_traces
    fi
  done
  ra=$(python3 -c "print(round($b / $a, 3))"); rb=$(python3 -c "print(round($eb / $ea, 3))")
  rc=$(python3 -c "print(round($pb / $pa, 3))")
  tps_ratios+=("$ra"); oltp_ratios+=("$rb"); proc_ratios+=("$rc")
  echo "round $r: select-only tps untraced $a traced $b ratio $ra; oltp ${OLTP_TX} tx elapsed untraced ${ea}s traced ${eb}s ratio $rb; PL/pgSQL oltp elapsed untraced ${pa}s traced ${pb}s ratio $rc (dep=1 EXEC lines $dep1)"
done
echo
echo "$ROUNDS rounds | median ratio | 95 % CI (bootstrap) | single rounds"
echo "---|---:|---:|---:"
python3 bench/median_ci.py "select-only tps at $CLIENTS sessions, traced / untraced (goal >= 0.95)" "${tps_ratios[@]}"
python3 bench/median_ci.py "oltp loop elapsed, $OLTP_TX tx, traced / untraced (goal <= 1.05)" "${oltp_ratios[@]}"
python3 bench/median_ci.py "the same as one PL/pgSQL CALL, dep=1 traced, traced / untraced (goal <= 1.05)" "${proc_ratios[@]}"
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
  restart plain
  echo "system calls per query, untraced:$(syscalls "$dir" "$url")"
  restart traced
  echo "system calls per query, traced:  $(syscalls "$dir" "$url")"
  clear_traces
fi
