#!/usr/bin/env bash
# pdfix copy against cp of the same recording, in the same run (hyperfine: page cache warm, output
# removed and dirty pages written back before every run), as a ratio of means, with pdfix's peak
# RSS and the reader's throughput. Records a --call-graph dwarf perf.data of at least 300 MB unless
# one is given.
#
#   bash bench/copy_vs_cp.sh [RECORDING] [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=${2:-20}

input=${1:-$work/dwarf.data}
[ -s "$input" ] || record_dwarf "$input"
out=$work/out.data
hyperfine -N --style none --warmup 2 --runs "$runs" --export-json "$work/copy.json" \
  --prepare "sh -c 'rm -f $out; sync'" "cp $input $out" "build/pdfix copy $input $out" >/dev/null
cmp -s "$input" "$out" || { echo "pdfix copy output differs from its input" >&2; exit 1; }
rm -f "$out"
read -r c cs p ps < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
print(" ".join(f"{x[k]*1000:.1f}" for x in r for k in ("mean", "stddev")))' "$work/copy.json")
read -r _ rss < <(time_of build/pdfix copy "$input" "$out")
rm -f "$out"
printf 'input_mib=%d runs=%d cp_ms=%s±%s pdfix_copy_ms=%s±%s ratio=%s pdfix_peak_rss_mib=%d\n' \
  $(($(stat -c %s "$input") / 1048576)) "$runs" "$c" "$cs" "$p" "$ps" "$(ratio "$p" "$c")" \
  $((rss / 1024))
PDFIX_BENCH_INPUT=$input build/bench/pdfix_read_bench --benchmark_min_time=1
