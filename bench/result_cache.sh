#!/usr/bin/env bash
# Benchmark for `tracelab run --result-cache` on a private PostgreSQL:
#  (a) what a cache hit costs: one session doing cached lookups flat out,
#      against the same session uncached, in the same run;
#  (b) the client-result-cache study's remote test: 20 sessions running the
#      HOLIDAY/CHAIR lookup through `tracelab proxy --delay 6ms`, cached
#      against uncached transactions (the original study: 49x).
#
# Usage (from the repository root):
#     bash bench/result_cache.sh                    # 30 s per remote run
#     SECONDS_PER_RUN=10 bash bench/result_cache.sh # quicker
set -euo pipefail

SECONDS_PER_RUN=${SECONDS_PER_RUN:-30}
SESSIONS=${SESSIONS:-20}
DELAY=${DELAY:-6ms}
JITTER=${JITTER:-1ms}   # the original: tc netem delay 6ms 1ms 25%
OUT=${BENCH_DIR:-bench/out}/result_cache
TL=target/release/tracelab
FX=tests/fixtures/crc-workload

[[ -f Cargo.toml && -d crates/tracelab ]] || { echo "run me from the repository root" >&2; exit 1; }
cargo build --release -q -p tracelab
mkdir -p "$OUT"
rm -rf "$OUT/pg"
url=$("$TL" db start --dir "$OUT/pg" -c max_connections=100)
proxy_pid=
cleanup() {
  [[ -n $proxy_pid ]] && kill "$proxy_pid" 2>/dev/null || true
  "$TL" db stop --dir "$OUT/pg" >/dev/null 2>&1 || true
}
trap cleanup EXIT
psql -q -v ON_ERROR_STOP=1 "$url" -f "$FX/schema-postgres.sql" \
  -c "\\copy holiday from $FX/holiday.csv csv" -c "\\copy chair from $FX/chair.csv csv" >/dev/null
sql=$(cat "$FX/query.sql")
binds=$FX/bind-vals-8j53dscbsbqmb.txt
cache=(--result-cache --result-cache-table holiday:force --result-cache-table chair:force
       --result-cache-setup --result-cache-lag 3000 --result-cache-size 1M)
field() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1]))' "$1"; }

echo "## (a) one session, flat out, on the local server"
plain=$("$TL" run --db "$url" --sql "$sql" --binds "$binds" --runtime 5 --json | field 'round(d["tps"])')
hits=$("$TL" run --db "$url" --sql "$sql" --binds "$binds" --runtime 5 --json "${cache[@]}" \
       | field 'round(d["result_cache"]["find_count"] / d["runtime_s"])')
printf 'uncached: %s executions/s; cached: %s hits/s per session; %.0f ns per hit; %.1fx\n' \
  "$plain" "$hits" "$(echo "1000000000 / $hits" | bc -l)" "$(echo "$hits / $plain" | bc -l)"

echo
echo "## (b) $SESSIONS sessions through tracelab proxy --delay $DELAY, ${SECONDS_PER_RUN}s each"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
upstream=$(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(f"{p.hostname}:{p.port}")' "$url")
"$TL" proxy --listen "127.0.0.1:$port" --upstream "$upstream" --delay "$DELAY" --jitter "$JITTER" 2>"$OUT/proxy.log" &
proxy_pid=$!
sleep 1
purl=$(python3 -c 'import sys,urllib.parse as u; p=u.urlparse(sys.argv[1]); print(p._replace(netloc=f"{p.username}@127.0.0.1:{sys.argv[2]}").geturl())' "$url" "$port")
un=$("$TL" run --db "$purl" --sql "$sql" --binds "$binds" --sessions "$SESSIONS" --runtime "$SECONDS_PER_RUN" --json \
     | field 'd["transactions"]')
ca=$("$TL" run --db "$purl" --sql "$sql" --binds "$binds" --sessions "$SESSIONS" --runtime "$SECONDS_PER_RUN" --json "${cache[@]}" \
     | field 'd["transactions"]')
echo "| latency | no cache | cache | ratio |"
echo "|---|---:|---:|---:|"
printf '| %s (proxy) | %s | %s | %.1fx |\n' "$DELAY" "$un" "$ca" "$(echo "$ca / $un" | bc -l)"
echo
echo "$(nproc) cores, $(date -u '+%Y-%m-%d %H:%M UTC')"
