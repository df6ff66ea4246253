#!/usr/bin/env bash
# pdfix unwind against perf's own unwinding of the same --call-graph dwarf recording, in one run:
# perf script (-F comm,tid,time,ip,sym,dso --no-inline) and perf report (--stdio --no-inline) both
# unwind every sample's stack copy with the binaries' CFI, as pdfix unwind does once for good.
# Also perf script of pdfix's output (what analysing an unwound archive costs), the sizes, and
# peak RSS. Two recordings: a 4 s run of a -fomit-frame-pointer program (qsort through libc,
# recursion) at 2000 Hz, about 70 MB; a shell loop that forks and execs python3 and ls -R,
# 15 rounds at 999 Hz (many short-lived processes and binaries, each touched briefly); and a
# compile loop, gcc building a small program 60 times at 999 Hz (gcc, cc1, as, collect2 and ld:
# each a process of its own, with its own binaries and exec). hyperfine,
# page cache warm, output removed before each run; medians and ratios of medians.
#
#   bash bench/unwind_vs_perf.sh [RUNS]     (10 by default; PDFIX_BENCH_DIR keeps the recording)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=${1:-10}
pdfix=$PWD/build/pdfix

in=$work/unwind-in.data
if [ ! -s "$in" ]; then
  cat >"$work/qsort.c" <<'C'
#include <stdlib.h>
#include <time.h>
static volatile unsigned sink;
__attribute__((noinline)) static int cmp(const void* a, const void* b) {
  unsigned x = *(const unsigned*)a, y = *(const unsigned*)b;
  for (int i = 0; i < 20; i++) sink += x ^ i;
  return x < y ? -1 : x > y;
}
__attribute__((noinline)) static unsigned recurse(int depth, unsigned* v, int n) {
  if (depth == 0) { qsort(v, n, sizeof *v, cmp); return v[0]; }
  unsigned r = recurse(depth - 1, v, n);
  sink += r;
  return r + depth;
}
int main(void) {
  unsigned* v = malloc(4096 * sizeof *v);
  time_t end = time(NULL) + 4;
  for (int k = 0; time(NULL) < end; k++) {
    for (int i = 0; i < 4096; i++) v[i] = (unsigned)(i * 2654435761u) ^ k;
    recurse(3 + k % 4, v, 4096);
  }
  return sink == 42;
}
C
  gcc -O2 -fomit-frame-pointer -o "$work/qsort" "$work/qsort.c"
  perf record -q --call-graph dwarf -F 2000 -o "$in" -- "$work/qsort" 2>/dev/null
fi
loop=$work/unwind-loop.data
if [ ! -s "$loop" ]; then
  perf record -q --call-graph dwarf -F 999 -o "$loop" -- bash -c 'for i in $(seq 15); do
    python3 -c "sum(range(300000))"; ls -R /usr/share/doc >/dev/null; done' 2>/dev/null
fi

compile=$work/unwind-compile.data
if [ ! -s "$compile" ]; then
  printf '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n' >"$work/hello.c"
  perf record -q --call-graph dwarf -F 999 -o "$compile" -- bash -c "for i in \$(seq 60); do
    gcc -O2 -o '$work/hello' '$work/hello.c'; done" 2>/dev/null
fi

# bench NAME IN: the four commands over IN, and peak RSS of pdfix unwind and perf script.
bench() {
  local name=$1 in=$2 out=$work/unwind-out.data
  "$pdfix" unwind -q "$in" "$out"
  local script="perf script -i $in -F comm,tid,time,ip,sym,dso --no-inline"
  local report="perf report -i $in --stdio --no-inline"
  local script_out="perf script -i $out -F comm,tid,time,ip,sym,dso --no-inline"
  hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$work/unwind.json" \
    --prepare "sh -c 'rm -f $out.tmp; sync'" \
    "$pdfix unwind -q $in $out.tmp" "$script" "$report" "$script_out" >/dev/null
  local pdfix_rss perf_rss
  read -r _ pdfix_rss < <(time_of "$pdfix" unwind -q "$in" "$out.tmp")
  read -r _ perf_rss < <(time_of $script)
  python3 - "$name" "$work/unwind.json" "$(stat -c %s "$in")" "$(stat -c %s "$out")" \
    "$pdfix_rss" "$perf_rss" <<'PY'
import json, sys
name = sys.argv[1]
results = json.load(open(sys.argv[2]))["results"]
size_in, size_out, pdfix_rss, perf_rss = map(int, sys.argv[3:])
med = [r["median"] * 1000 for r in results]
names = ["pdfix unwind", "perf script (IN)", "perf report (IN)", "perf script (OUT)"]
print(f"== {name}: IN {size_in / 2**20:.1f} MiB, OUT {size_out / 2**20:.2f} MiB "
      f"({size_in / size_out:.0f}x smaller)")
for n, m in zip(names, med):
    print(f"{n:<18} {m:8.1f} ms  {m / med[0]:5.2f}x pdfix unwind")
print(f"pdfix unwind / perf script: {med[0] / med[1]:.2f}; / perf report: {med[0] / med[2]:.2f}")
print(f"peak RSS: pdfix unwind {pdfix_rss // 1024} MiB, perf script {perf_rss // 1024} MiB "
      f"({pdfix_rss / perf_rss:.2f}x)")
PY
  rm -f "$out" "$out.tmp"
}

bench "qsort program" "$in"
bench "fork-and-exec shell loop" "$loop"
bench "compile loop (gcc, cc1, as, collect2, ld)" "$compile"
