#!/usr/bin/env bash
# pdfix export against what a perf user runs to read the same recording, in the same run: time
# and peak RSS, medians of RUNS runs, page cache warm, the jobs interleaved run by run.
#
#   dense: the gate's sample-dense system-wide -g recording (90 MiB, two busy shells at 20 kHz;
#          a million samples; its distinct stacks depend on what ran, 22,860 in bench/README's
#          figures): `pdfix export` (pprof, symbolized) against
#          `perf report --sort sym --stdio -g none`, and `export --no-symbols` against `pdfix fix`;
#   dwarf: a system-wide --call-graph dwarf recording of 160 MiB (two busy shells): `pdfix export`
#          (unwound on the way, symbolized) against `perf script --no-inline`, which unwinds too.
#
#   bash bench/export_vs_perf.sh [RUNS]     (3 by default; PDFIX_BENCH_DIR keeps the recordings)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=${1:-3}
pdfix=$PWD/build/pdfix

[ -s "$work/dense.data" ] || record_dense "$work/dense.data"
dwarf=$work/export-dwarf.data
if [ ! -s "$dwarf" ]; then
  record_sized "$dwarf" 160 -a --call-graph dwarf -F 999 -- timeout 120 setsid sh -c \
    'trap "trap - TERM; kill 0" TERM; for c in 1 2; do (i=0; while :; do i=$((i+1)); done) & done; wait'
fi

# median FILE: the median of the numbers in FILE, one a line.
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

# measure NAME COMMAND...: appends a run's seconds and peak RSS (KiB) to $work/NAME.{s,rss}.
measure() {
  local name=$1
  shift
  local s rss
  read -r s rss < <(time_of "$@")
  echo "$s" >>"$work/$name.s"
  echo "$rss" >>"$work/$name.rss"
}

row() { printf '%-12s %-38s %9s %9s %9s %9s\n' "$@"; }

# compare RECORDING PDFIX-NAME PDFIX-COMMAND ALT-NAME ALT-COMMAND: one table row.
compare() {
  local rec=$1 ours=$2 cmd=$3 theirs=$4 alt=$5
  rm -f "$work/$ours.s" "$work/$ours.rss" "$work/$theirs.s" "$work/$theirs.rss"
  for _ in $(seq "$runs"); do
    # shellcheck disable=SC2086
    measure "$ours" $cmd
    # shellcheck disable=SC2086
    measure "$theirs" $alt
  done
  local a b ra rb
  a=$(median "$work/$ours.s")
  b=$(median "$work/$theirs.s")
  ra=$(median "$work/$ours.rss")
  rb=$(median "$work/$theirs.rss")
  row "$rec" "$ours / $theirs" "$a / $b" "$(ratio "$a" "$b")" "$((${ra%.*} / 1024)) / $((${rb%.*} / 1024))" \
    "$(ratio "$ra" "$rb")"
}

echo "export against perf, medians of $runs runs (seconds, peak RSS MiB)"
row recording jobs time ratio 'RSS MiB' ratio
compare "dense $(($(stat -c %s "$work/dense.data") >> 20))M" "export" \
  "$pdfix export -q $work/dense.data $work/out.pb.gz" "perf-report" \
  "perf report -i $work/dense.data --sort sym --stdio -g none"
compare "dense" "export--no-symbols" \
  "$pdfix export -q --no-symbols $work/dense.data $work/out.pb.gz" "fix" \
  "$pdfix fix -q $work/dense.data $work/out.data"
compare "dwarf $(($(stat -c %s "$dwarf") >> 20))M" "export" \
  "$pdfix export -q $dwarf $work/out.pb.gz" "perf-script" \
  "perf script --no-inline -F comm,tid,time,ip,sym,dso -i $dwarf"
rm -f "$work/out.pb.gz" "$work/out.data"
