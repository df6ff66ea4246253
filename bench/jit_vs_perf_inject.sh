#!/usr/bin/env bash
# pdfix fix against perf inject --jit on a node recording with a jitdump (node --perf-prof
# --perf-prof-unwinding-info, perf record -k mono): both read the dump and write the recording
# anew with maps of the JIT code; perf inject --jit writes one ELF file per function and puts each
# in the build-id cache, pdfix one per dump (fix also runs its other passes). The workload runs
# node's JIT over 3,000 generated functions and a recursive and a sorting loop for about 2 s.
# hyperfine, page cache warm, outputs and generated files removed before each run; medians and
# ratios of medians, GNU time's peak RSS, and the files each writes.
#
#   bash bench/jit_vs_perf_inject.sh [RUNS]     (10 by default; PDFIX_BENCH_DIR keeps the recording)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=${1:-10}
pdfix=$PWD/build/pdfix

jit=$work/jit
mkdir -p "$jit"
in=$jit/node.data
if [ ! -s "$in" ]; then
  cat >"$jit/work.js" <<'JS'
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
let t = 0;
for (let i = 0; i < 3000; i++) {
  const f = new Function('x', 'return x * ' + i + ' + (x >> 3) - ' + (i % 7));
  for (let k = 0; k < 3000; k++) t += f(k) & 1;
}
const end = Date.now() + 1000;
while (Date.now() < end) t += fib(20);
const a = []; for (let i = 0; i < 300000; i++) a.push((i * 7919) % 100003);
a.sort((x, y) => x - y);
console.log(t > 0, a[3]);
JS
  (cd "$jit" && perf record -q -k mono -o "$in" -- node --perf-prof --perf-prof-unwinding-info \
    work.js >/dev/null 2>&1)
fi
dump=$(ls "$jit"/jit-*.dump)
home=$jit/home
out=$jit/out.data
injected=$jit/injected.data
clean="sh -c 'rm -rf $home/.debug $out $injected $jit/jitted-*.so; sync'"
fix="env HOME=$home $pdfix fix -q $in $out"
inject="sh -c 'cd $jit && HOME=$home perf inject --jit -i $in -o $injected'"
hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$jit/jit.json" \
  --prepare "$clean" "$fix" "$inject" >/dev/null

eval "$clean"
read -r _ fix_rss < <(time_of env HOME="$home" "$pdfix" fix -q "$in" "$out")
fix_files=$(find "$home/.debug" -path '*jitted*' -name elf | wc -l)
eval "$clean"
read -r _ inject_rss < <(time_of sh -c "cd $jit && HOME=$home perf inject --jit -i $in -o $injected")
inject_files=$(ls "$jit"/jitted-*.so | wc -l)
functions=$("$pdfix" fix -q --json "$in" "$out.2" 2>/dev/null | python3 -c \
  'import json,sys; print(json.load(sys.stdin)["jit"]["sources"][0]["functions"])')
eval "$clean"
rm -f "$out.2"

python3 - "$jit/jit.json" "$(stat -c %s "$in")" "$(stat -c %s "$dump")" "$fix_rss" \
  "$inject_rss" "$fix_files" "$inject_files" "$functions" <<'PY'
import json, sys
results = json.load(open(sys.argv[1]))["results"]
size_in, size_dump, fix_rss, inject_rss, fix_files, inject_files, functions = map(int, sys.argv[2:])
fix, inject = (r["median"] * 1000 for r in results)
print(f"recording {size_in / 2**20:.1f} MiB, jitdump {size_dump / 2**20:.1f} MiB, "
      f"{functions} functions loaded")
print(f"pdfix fix            {fix:8.1f} ms  peak RSS {fix_rss // 1024:4d} MiB  "
      f"{fix_files} ELF file(s)")
print(f"perf inject --jit    {inject:8.1f} ms  peak RSS {inject_rss // 1024:4d} MiB  "
      f"{inject_files} ELF file(s)")
print(f"pdfix fix / perf inject --jit: {fix / inject:.3f} ({inject / fix:.1f}x faster); "
      f"RSS {fix_rss / inject_rss:.2f}x")
PY
