#!/usr/bin/env bash
# The cost of tracelab's server tracer inside MariaDB (`--server-trace`
# with `--engine mariadb`), as ratios to an untraced peer measured in the
# same run: one private MariaDB, restarted for each run with the tracer
# or without it, the two kinds of run interleaved (ABBA), as
# bench/server_trace.sh does for PostgreSQL (one server, not two: two
# servers made alike differ by as much as the tracer costs):
#   (a) tps at saturation: 20 sessions of `tracelab run` looking a row up
#       by its primary key (100,000 rows, InnoDB), traced / untraced;
#   (b) the elapsed time of a 1-session loop of INSERT + COMMIT (each
#       commit waits for the redo log's flush), traced / untraced.
# The load average is printed at the start and the end: the ratios are
# only as steady as the machine. The traces are removed after each traced
# run.
#
# Usage (from the repository root):
#     bash bench/server_trace_mariadb.sh                 # 10 s per run, 5 rounds
#     SECONDS_PER_RUN=5 ROUNDS=3 bash bench/server_trace_mariadb.sh
#     SETTINGS="thread_handling=pool-of-threads" bash bench/server_trace_mariadb.sh
#         # the server's settings (db start -c), space-separated: here the
#         # thread pool, traced and untraced alike
set -euo pipefail

SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
ROUNDS=${ROUNDS:-5}
SESSIONS=${SESSIONS:-20}
COMMITS=${COMMITS:-10000}
OUT=${BENCH_DIR:-bench/out}/server_trace_mariadb
TL=${TL:-target/release/tracelab}
settings=()
for s in ${SETTINGS:-}; do settings+=(-c "$s"); done

[[ -f Cargo.toml && -d crates/tracelab ]] || { echo "run me from the repository root" >&2; exit 1; }
[[ $TL == target/release/tracelab ]] && cargo build --release -q -p tracelab
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
dir=$OUT/db
cleanup() { "$TL" db stop --dir "$dir" >/dev/null 2>&1 || true; }
trap cleanup EXIT
cleanup
rm -rf "$dir" "$OUT/traces"
url=$("$TL" db start --engine mariadb --dir "$dir" "${settings[@]}" 2>/dev/null)
port=${url#mysql://root@127.0.0.1:}; port=${port%/tracelab}
client=$(command -v mariadb || command -v mysql)
"$client" --no-defaults -uroot -h127.0.0.1 -P"$port" --protocol=TCP tracelab -e \
  "create table t (id int primary key, v int) engine=innodb;
   insert into t select seq, seq from seq_1_to_100000;
   create table h (id int auto_increment primary key, v int) engine=innodb;"
echo "server: $("$client" --no-defaults -uroot -h127.0.0.1 -P"$port" --protocol=TCP -N -B tracelab -e \
  "select concat(version(), ', thread_handling=', @@thread_handling)")"
python3 -c 'import random; random.seed(1); print("\n".join(str(random.randint(1, 100000)) for _ in range(100000)))' >"$OUT/ids.csv"
clear_traces() { find "$OUT/traces" -name 'tracelab_server_*.trc' -delete 2>/dev/null || true; }
# restart plain|traced: the server restarted without or with the tracer,
# its buffer pool warmed by a second of the lookup; sets $url.
restart() {
  cleanup
  if [[ $1 == traced ]]; then
    url=$("$TL" db start --engine mariadb --dir "$dir" "${settings[@]}" --server-trace "$OUT/traces" 2>/dev/null)
  else
    url=$("$TL" db start --engine mariadb --dir "$dir" "${settings[@]}" 2>/dev/null)
  fi
  tps "$url" 1 >/dev/null
  clear_traces
}
tps() { "$TL" run --db "$1" --sql 'select v from t where id = :id' --binds "$OUT/ids.csv" \
          --sessions "$SESSIONS" --runtime "${2:-$SECONDS_PER_RUN}" --json 2>/dev/null \
          | python3 -c 'import json, sys; print(json.load(sys.stdin)["tps"])'; }
elapsed() { "$TL" run --db "$1" --sql 'insert into h (v) values (:id)' --binds "$OUT/ids.csv" \
              --sessions 1 --transactions "$COMMITS" --json 2>/dev/null \
              | python3 -c 'import json, sys; print(json.load(sys.stdin)["runtime_s"])'; }

echo "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
tps_ratios=(); commit_ratios=()
for r in $(seq 1 "$ROUNDS"); do
  for kind in $( (( r % 2 )) && echo "plain traced" || echo "traced plain"); do
    restart "$kind"
    t=$(tps "$url"); e=$(elapsed "$url")
    if [[ $kind == plain ]]; then
      a=$t ea=$e
      if compgen -G "$OUT/traces/tracelab_server_*.trc" >/dev/null; then
        echo "the untraced run wrote server traces: the restart kept the tracer" >&2; exit 1
      fi
    else
      b=$t eb=$e
      waits=$(cat "$OUT"/traces/tracelab_server_*.trc 2>/dev/null | grep -c "^WAIT .*nam='thd_wait:NET'" || true)
      clear_traces
    fi
  done
  ra=$(python3 -c "print(round($b / $a, 3))"); rb=$(python3 -c "print(round($eb / $ea, 3))")
  tps_ratios+=("$ra"); commit_ratios+=("$rb")
  echo "round $r: lookup tps untraced $a traced $b ratio $ra; $COMMITS commits elapsed untraced ${ea}s traced ${eb}s ratio $rb (NET waits traced: $waits)"
done
echo
echo "$ROUNDS rounds | median ratio | 95 % CI (bootstrap) | single rounds"
echo "---|---:|---:|---:"
python3 bench/median_ci.py "MariaDB lookup tps at $SESSIONS sessions, traced / untraced" "${tps_ratios[@]}"
python3 bench/median_ci.py "MariaDB INSERT + COMMIT loop elapsed, $COMMITS commits, traced / untraced" "${commit_ratios[@]}"
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
