#!/usr/bin/env bash
# Benchmark for `tracelab proxy` on a private PostgreSQL, as ratios against
# direct connections measured in the same round (interleaved rounds):
#   (a) added p50 latency per round trip, no delay: pgbench -S -M prepared
#       -c 1, per-transaction logs, p50 through the proxy minus p50 direct
#       (goal < 50 µs);
#   (b) throughput at 20 clients, pgbench -S -M prepared -c 20 -j 2,
#       through the proxy / direct (goal >= 0.70), with the upstream over
#       TCP (127.0.0.1:port, as the client connects) and over the server's
#       unix socket (a proxy beside the server, as pgbouncer is deployed);
#   (c) the cost of --trace: tps with --trace / tps without, both over TCP
#       (goal >= 0.90).
# When pgbouncer is installed (apt-get install -y pgbouncer), (b) is also
# measured through it, the relay a DBA would name, as a peer: session
# pooling (one server connection per client, a relay like the proxy), one
# instance per upstream (TCP and the unix socket), each run right after the
# proxy's with the same upstream; the medians give proxy / pgbouncer.
# Each proxy (and pgbouncer) run also gives the proxy's CPU per transaction (user + system
# time of the proxy process from /proc, divided by pgbench's transactions;
# the kernel's softirq time for loopback TCP is accounted apart and is not
# in it), and each round the CPU taken by other work on the machine during
# the round ("other load", in CPUs: busy time from /proc/stat minus that of
# pgbench, the server, the proxies and pgbouncer): the ratios depend on it (see docs/performance.md).
#
# Usage (from the repository root):
#     bash bench/proxy.sh                      # 10 s per run, 5 rounds
#     SECONDS_PER_RUN=5 ROUNDS=7 bash bench/proxy.sh
#     THREADS=2 bash bench/proxy.sh            # --threads for the proxies
set -euo pipefail

SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
ROUNDS=${ROUNDS:-5}
CLIENTS=${CLIENTS:-20}
THREADS=${THREADS:-}
OUT=${BENCH_DIR:-bench/out}/proxy
TL=target/release/tracelab

[[ -f Cargo.toml && -d crates/tracelab ]] || { echo "run me from the repository root" >&2; exit 1; }
cargo build --release -q -p tracelab
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/pg" "$OUT/traces" "$OUT"/lat.*
url=$("$TL" db start --dir "$OUT/pg" -c max_connections=100)
json() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$OUT/pg/tracelab-db.json" "$1"; }
port=$(json port)
sock=$(json socket_dir)/.s.PGSQL.$port
bindir=$(json bindir)
pgbench=$bindir/pgbench
[[ -x $pgbench ]] || pgbench=$(command -v pgbench)
postmaster=$(head -1 "$OUT/pg/data/postmaster.pid")
tck=$(getconf CLK_TCK)

pids=(); bouncer_pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -INT "$p" 2>/dev/null || true; done
  # SIGINT would make pgbouncer wait for its clients; SIGTERM stops it now.
  for p in "${bouncer_pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  "$TL" db stop --dir "$OUT/pg" >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Starts a proxy in the background (not in a subshell: its pid is kept);
# sets $proxy_port and $proxy_pid.
start_proxy() {
  local log=$1 upstream=$2; shift 2
  local threads=()
  [[ -n $THREADS ]] && threads=(--threads "$THREADS")
  "$TL" proxy --listen 127.0.0.1:0 --upstream "$upstream" "${threads[@]}" "$@" >/dev/null 2>"$log" &
  proxy_pid=$!
  pids+=("$proxy_pid")
  for _ in $(seq 1 100); do
    grep -q 'listening on' "$log" 2>/dev/null && break
    sleep 0.05
  done
  proxy_port=$(sed -n 's/.*listening on 127.0.0.1:\([0-9]*\),.*/\1/p' "$log" | head -1)
  [[ -n $proxy_port ]] || { echo "the proxy did not start: $(cat "$log")" >&2; exit 1; }
}

start_proxy "$OUT/tcp.log" "127.0.0.1:$port"; tcp=$proxy_port; tcp_pid=$proxy_pid
start_proxy "$OUT/unix.log" "$sock"; unix=$proxy_port; unix_pid=$proxy_pid
start_proxy "$OUT/traced.log" "127.0.0.1:$port" --trace "$OUT/traces"; traced=$proxy_port; traced_pid=$proxy_pid

bouncer=$(command -v pgbouncer || true)
[[ -z $bouncer && -x /usr/sbin/pgbouncer ]] && bouncer=/usr/sbin/pgbouncer
# pgbouncer refuses root: as root it runs as the server's user (setpriv
# execs, so $! is pgbouncer's pid and its CPU can be read).
as_server=()
[[ $(id -u) == 0 ]] && as_server=(setpriv --reuid="$(stat -c %U "$OUT/pg/data")" --regid="$(stat -c %G "$OUT/pg/data")" --init-groups)
# Starts a pgbouncer in the background, session pooling, relaying to $2
# (127.0.0.1 or the server's socket directory); sets $bouncer_port and
# $bouncer_pid. It cannot listen on port 0, so it gets a port the kernel
# just handed out. The server trusts local logins and so does pgbouncer
# (trust still wants the user in its auth_file).
start_bouncer() {
  local name=$1 host=$2 dir=$OUT/bouncer
  local log=$dir/$name.log
  bouncer_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  mkdir -p "$dir"
  echo '"postgres" ""' >"$dir/users.txt"
  cat >"$dir/$name.ini" <<EOF
[databases]
postgres = host=$host port=$port dbname=postgres
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $bouncer_port
unix_socket_dir =
auth_type = trust
auth_file = $dir/users.txt
pool_mode = session
max_client_conn = $((CLIENTS + 10))
default_pool_size = $CLIENTS
log_connections = 0
log_disconnections = 0
EOF
  "${as_server[@]}" "$bouncer" "$dir/$name.ini" >"$log" 2>&1 &
  bouncer_pid=$!
  bouncer_pids+=("$bouncer_pid")
  for _ in $(seq 1 100); do
    grep -q 'listening on 127.0.0.1' "$log" 2>/dev/null && return
    kill -0 "$bouncer_pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "pgbouncer did not start: $(cat "$log")" >&2; exit 1
}
if [[ -n $bouncer ]]; then
  rm -rf "$OUT/bouncer"
  start_bouncer tcp 127.0.0.1; btcp=$bouncer_port; btcp_pid=$bouncer_pid
  start_bouncer unix "$(json socket_dir)"; bunix=$bouncer_port; bunix_pid=$bouncer_pid
fi

"$pgbench" -i -q -s 1 "$url" >/dev/null 2>&1

# CPU ticks used so far by a process (with its reaped children: the
# server's exited backends are in the postmaster's).
ticks() { awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat"; }
# Busy ticks of tasks (user, nice, system) and all ticks, machine-wide.
machine() { awk '/^cpu / { print $2 + $3 + $4, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat; }

# pgbench's own CPU (user + system, s) is appended to $OUT/pb.times (the
# callers run in subshells).
: >"$OUT/pb.times"
pb() {
  local p=$1; shift
  /usr/bin/time -a -f '%U %S' -o "$OUT/pb.times" \
    "$pgbench" -n -S -M prepared -h 127.0.0.1 -p "$p" -U postgres "$@" postgres 2>/dev/null
}
pb_ticks() { awk -v t="$tck" '{ s += ($1 + $2) * t } END { printf "%d", s }' "$OUT/pb.times"; }
# tps of a 20-client run; with a proxy pid, also its CPU µs per
# transaction. Prints "tps cpu".
tps() {
  local p=$1 pid=${2:-} c0=0 c1=0 out
  [[ -n $pid ]] && c0=$(ticks "$pid")
  out=$(pb "$p" -c "$CLIENTS" -j 2 -T "$SECONDS_PER_RUN")
  [[ -n $pid ]] && c1=$(ticks "$pid")
  echo "$out" | awk -v c=$((c1 - c0)) -v t="$tck" '
    /^number of transactions actually processed/ { split($NF, a, "/"); n = a[1] }
    /^tps = / { tps = $3 }
    END { printf "%.0f %.1f\n", tps, n ? c / t / n * 1e6 : 0 }'
}
# p50 of the per-transaction latencies (µs, 3rd column of pgbench's log).
p50() {
  local p=$1 tag=$2
  rm -f "$OUT"/lat."$tag".*
  (cd "$OUT" && pb "$p" -c 1 -T "$SECONDS_PER_RUN" -l --log-prefix="lat.$tag" >/dev/null)
  cat "$OUT"/lat."$tag".* | awk '{ print $3 }' | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}
ours() {
  local s=$(($(pb_ticks) + $(ticks "$postmaster")))
  for p in "${pids[@]}" "${bouncer_pids[@]}"; do s=$((s + $(ticks "$p"))); done
  echo "$s"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }

echo "threads ${THREADS:-default}; proxy CPU in µs per transaction; other load in CPUs"
bh=""; bs=""
if [[ -n $bouncer ]]; then
  echo "peer: $("$bouncer" --version | head -1), session pooling"
  bh=" | tps pgbouncer (TCP up) | (b) TCP | CPU µs/txn | tps pgbouncer (unix up) | (b) unix | CPU µs/txn"
  bs="|---:|---:|---:|---:|---:|---:"
else
  echo "pgbouncer not found: no peer measured (apt-get install -y pgbouncer)"
fi
echo
echo "round | p50 direct µs | p50 proxy µs | (a) added µs | tps direct | tps proxy (TCP up) | (b) TCP | CPU µs/txn | tps proxy (unix up) | (b) unix | CPU µs/txn | tps --trace | (c) trace/no-trace | CPU µs/txn$bh | other load"
echo "---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:$bs|---:"
rt=(); ru=(); rc=(); ct=(); cu=()
bt=(); bu=(); cbt=(); cbu=(); pt=(); pu=()
for r in $(seq 1 "$ROUNDS"); do
  read -r m0 all0 < <(machine); o0=$(ours)
  ld=$(p50 "$port" direct)
  lp=$(p50 "$tcp" proxy)
  read -r td _ < <(tps "$port")
  read -r tt ctt < <(tps "$tcp" "$tcp_pid")
  [[ -n $bouncer ]] && read -r tbt cbtt < <(tps "$btcp" "$btcp_pid")
  read -r tu cuu < <(tps "$unix" "$unix_pid")
  [[ -n $bouncer ]] && read -r tbu cbuu < <(tps "$bunix" "$bunix_pid")
  rm -rf "$OUT/traces"/*
  read -r tx ctx < <(tps "$traced" "$traced_pid")
  sleep 0.2 # the last backends are reaped
  read -r m1 all1 < <(machine); o1=$(ours)
  other=$(awk -v m=$((m1 - m0)) -v o=$((o1 - o0)) -v a=$((all1 - all0)) -v n="$(nproc)" \
    'BEGIN { x = (m - o) / a * n; printf "%.2f", x < 0 ? 0 : x }')
  rt+=("$(ratio "$tt" "$td")"); ru+=("$(ratio "$tu" "$td")"); rc+=("$(ratio "$tx" "$tt")")
  ct+=("$ctt"); cu+=("$cuu")
  brow=""
  if [[ -n $bouncer ]]; then
    bt+=("$(ratio "$tbt" "$td")"); bu+=("$(ratio "$tbu" "$td")"); cbt+=("$cbtt"); cbu+=("$cbuu")
    pt+=("$(ratio "$tt" "$tbt")"); pu+=("$(ratio "$tu" "$tbu")")
    brow=" | $tbt | ${bt[-1]} | $cbtt | $tbu | ${bu[-1]} | $cbuu"
  fi
  echo "$r | $ld | $lp | $((lp - ld)) | $td | $tt | ${rt[-1]} | $ctt | $tu | ${ru[-1]} | $cuu | $tx | ${rc[-1]} | $ctx$brow | $other"
done
median() { printf '%s\n' "$@" | sort -g | awk '{ a[NR] = $1 } END { print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
echo
bm=""
[[ -n $bouncer ]] && bm="; pgbouncer: (b) TCP upstream $(median "${bt[@]}") (CPU $(median "${cbt[@]}") µs/txn), (b) unix upstream $(median "${bu[@]}") (CPU $(median "${cbu[@]}") µs/txn); proxy/pgbouncer TCP upstream $(median "${pt[@]}"), unix upstream $(median "${pu[@]}")"
echo "medians: (b) TCP upstream $(median "${rt[@]}") (proxy CPU $(median "${ct[@]}") µs/txn), (b) unix upstream $(median "${ru[@]}") (proxy CPU $(median "${cu[@]}") µs/txn), (c) trace/no-trace $(median "${rc[@]}")$bm"
echo "clients=$CLIENTS, ${SECONDS_PER_RUN}s per run, $(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
