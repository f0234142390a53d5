#!/usr/bin/env bash
# Wall time of the built-in studies on the private PostgreSQL, for the
# docs/study.md (run times). The acceptance bounds on this machine:
# commit-batch, redo-undo and exec-model --quick < 3 min each;
# result-cache --quick < 5 min (its eight runs last 20 s each);
# trace-overhead --quick < 5 min and full < 30 min.
#
# Usage (from the repository root):
#     bash bench/study.sh              # every study, --quick
#     STUDIES=trace-overhead bash bench/study.sh   # some of them
#     FULL=1 bash bench/study.sh       # the full versions too (tens of minutes)
#     TL=target/debug/tracelab bash bench/study.sh   # without a release build
set -euo pipefail

OUT=${BENCH_DIR:-bench/out}/study
TL=${TL:-target/release/tracelab}

[[ -f Cargo.toml && -d crates/tracelab ]] || { echo "run me from the repository root" >&2; exit 1; }
[[ $TL == target/release/tracelab ]] && cargo build --release -q -p tracelab
rm -rf "$OUT"
mkdir -p "$OUT"

modes=(--quick)
[[ -n ${FULL:-} ]] && modes+=(full)
echo "study | mode | runs | wall s"
echo "---|---|---:|---:"
for study in ${STUDIES:-commit-batch redo-undo exec-model result-cache trace-overhead}; do
  for mode in "${modes[@]}"; do
    args=()
    [[ $mode == --quick ]] && args+=(--quick)
    dir="$OUT/$study${args[*]:+-quick}"
    start=$(date +%s.%N)
    "$TL" study run "$study" "${args[@]}" --out "$dir" > "$dir.txt" 2> "$dir.err"
    end=$(date +%s.%N)
    runs=$(grep -m1 -o '^[0-9]* of [0-9]* runs' "$dir.txt" | cut -d' ' -f1)
    printf '%s | %s | %s | %.0f\n' "$study" "${mode#--}" "$runs" "$(echo "$end - $start" | bc)"
  done
done
