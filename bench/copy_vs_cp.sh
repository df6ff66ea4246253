#!/usr/bin/env bash
# pdfix copy against cp of the same recording, in the same run, as a ratio of wall times (median
# of several runs, page cache warm for both), with pdfix's peak RSS. Records a large perf.data
# with the machine's perf unless one is given.
#
#   bash bench/copy_vs_cp.sh [RECORDING] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
pdfix=build/pdfix
runs=${2:-5}
work=${PDFIX_BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
trap '[ -n "${PDFIX_BENCH_DIR:-}" ] || rm -rf "$work"' EXIT

input=${1:-}
if [ -z "$input" ]; then
  input=$work/dwarf.data
  echo "== recording a --call-graph dwarf perf.data of at least 300 MB into $input" >&2
  record_dwarf "$input"
fi
size=$(stat -c %s "$input")
echo "== input: $input, $((size / 1048576)) MiB" >&2

cp "$input" "$work/warm" && rm -f "$work/warm"  # page cache warm for both
cp_times=() pdfix_times=() pdfix_rss=()
for ((i = 0; i < runs; i++)); do
  read -r t _ < <(time_of cp "$input" "$work/cp.out")
  cp_times+=("$t")
  read -r t rss < <(time_of "$pdfix" copy "$input" "$work/pdfix.out")
  pdfix_times+=("$t")
  pdfix_rss+=("$rss")
  cmp -s "$input" "$work/pdfix.out" || { echo "pdfix copy output differs" >&2; exit 1; }
  rm -f "$work/cp.out" "$work/pdfix.out"
done
cp_med=$(printf '%s\n' "${cp_times[@]}" | median)
pdfix_med=$(printf '%s\n' "${pdfix_times[@]}" | median)
rss_max=$(printf '%s\n' "${pdfix_rss[@]}" | sort -n | tail -n 1)
ratio=$(ratio "$pdfix_med" "$cp_med")
printf 'input_mib=%d runs=%d cp_s=%s pdfix_copy_s=%s ratio=%s pdfix_peak_rss_mib=%d\n' \
  $((size / 1048576)) "$runs" "$cp_med" "$pdfix_med" "$ratio" $((rss_max / 1024))

if [ -n "${PDFIX_READ_BENCH:-1}" ] && [ -x build/bench/pdfix_read_bench ]; then
  PDFIX_BENCH_INPUT=$input build/bench/pdfix_read_bench --benchmark_min_time=1
fi
