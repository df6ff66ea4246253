#!/usr/bin/env bash
# pdfix inject --buildids against cp and perf inject -b on the same recordings, in the same run:
# a sample-dense system-wide one (many small records) and a --call-graph dwarf one (few large
# records). Wall-time medians, ratios to cp, and peak RSS.
#
#   bash bench/inject_vs_perf.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=${1:-3}
work=${PDFIX_BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
trap '[ -n "${PDFIX_BENCH_DIR:-}" ] || rm -rf "$work"' EXIT

[ -s "$work/dense.data" ] || record_dense "$work/dense.data"
[ -s "$work/dwarf.data" ] || record_dwarf "$work/dwarf.data"

printf '%-10s %8s %8s %8s %8s %9s %9s %10s %10s\n' recording MiB cp_s pdfix_s perf_s \
  pdfix/cp perf/cp pdfix_rss perf_rss
for name in dense dwarf; do
  in=$work/$name.data
  cat "$in" >/dev/null  # page cache warm for all three
  cp_t=() pdfix_t=() perf_t=() pdfix_m=() perf_m=()
  for ((i = 0; i < runs; i++)); do
    rm -f "$work/out"
    read -r t _ < <(time_of cp "$in" "$work/out")
    rm -f "$work/out"
    cp_t+=("$t")
    read -r t m < <(time_of build/pdfix inject --buildids "$in" "$work/out")
    pdfix_t+=("$t") pdfix_m+=("$m")
    rm -f "$work/out"
    read -r t m < <(time_of perf inject -b -i "$in" -o "$work/out")
    perf_t+=("$t") perf_m+=("$m")
    rm -f "$work/out"
  done
  c=$(printf '%s\n' "${cp_t[@]}" | median)
  p=$(printf '%s\n' "${pdfix_t[@]}" | median)
  f=$(printf '%s\n' "${perf_t[@]}" | median)
  pm=$(printf '%s\n' "${pdfix_m[@]}" | sort -n | tail -n 1)
  fm=$(printf '%s\n' "${perf_m[@]}" | sort -n | tail -n 1)
  printf '%-10s %8d %8s %8s %8s %9s %9s %9dM %9dM\n' "$name" $(($(stat -c %s "$in") / 1048576)) \
    "$c" "$p" "$f" "$(ratio "$p" "$c")" "$(ratio "$f" "$c")" $((pm / 1024)) $((fm / 1024))
done
