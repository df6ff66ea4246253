#!/usr/bin/env bash
# The benchmark gate: every verb's speed against the build before and against its floor, in one
# run, on recordings large enough that start-up hides nothing (>= 50 MB each).
#
#   bash bench/gate.sh [--short] [BASE]
#
# Recordings (made once, kept in $PDFIX_BENCH_DIR, /var/tmp/pdfix-bench by default):
#   dense    system-wide, -g -F 20000, two busy shells: many small records
#   sysdwarf system-wide, --call-graph dwarf,8192 -F 999, over a loop of gcc compiles
#   compile  the gcc loop alone, --call-graph dwarf -F 999
# Commands, hyperfine (page cache warm, output removed and written back before each run):
#   copy, inject --buildids, fix (of every recording); unwind (of the DWARF ones); archive (dense);
#   floors: cp, the header walk (bench/header_walk.cc), perf script (of the DWARF ones: perf's own
#   unwinding), perf archive.
# BASE (a commit, HEAD~1 by default) is built beside this one (build-gate/, Release) and run in the
# same rounds. --short (CI): no BASE, 3 runs: the floors' ratios alone.
#
# Exits 1 when this build is slower than BASE by more than the noise measured (the larger of 10% and
# three standard deviations of the two means), or a ratio to its floor passes its limit (LIMITS
# below). Prints one table; bench/README.md keeps the last, with the commit it was measured at.
set -euo pipefail
cd "$(dirname "$0")/.."
short=0
if [ "${1:-}" = "--short" ]; then
  short=1
  shift
fi
base=${1:-HEAD~1}
runs=$([ "$short" = 1 ] && echo 3 || echo 7)
export PDFIX_BENCH_DIR=${PDFIX_BENCH_DIR:-/var/tmp/pdfix-bench}
mkdir -p "$PDFIX_BENCH_DIR"
source bench/lib.sh
here=$PWD
pdfix=$here/build/pdfix
walk=$here/build/bench/pdfix_header_walk
[ -x "$pdfix" ] && [ -x "$walk" ] || {
  echo "gate: build pdfix and pdfix_header_walk first (bash scripts/setup.sh)" >&2
  exit 2
}

# Limits on ratios to the floors, by recording and verb: what the current build must stay under.
# Each is the figure bench/README.md gives, with room for a busy CI machine. On the DWARF
# recordings (60-70 MB) inject and fix prove a hundred binaries' ids, a fixed cost that cp has not.
declare -A LIMITS=(
  ["dense copy"]=1.40 ["dense inject"]=1.60 ["dense fix"]=1.60
  ["sysdwarf copy"]=1.60 ["sysdwarf inject"]=3.60 ["sysdwarf fix"]=3.60
  ["compile copy"]=1.60 ["compile inject"]=3.60 ["compile fix"]=3.60
  ["sysdwarf unwind"]=0.30 ["compile unwind"]=0.30 ["dense archive"]=0.50
)

gcc_loop() {
  printf '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n' >"$work/hello.c"
  for _ in $(seq "${1:-60}"); do gcc -O2 -o "$work/hello" "$work/hello.c"; done
}
if [ ! -s "$work/dense.data" ]; then record_dense "$work/dense.data"; fi
if [ ! -s "$work/sysdwarf.data" ]; then
  perf record -q -a -F 999 --call-graph dwarf,8192 -o "$work/sysdwarf.data" -- \
    bash -c "$(declare -f gcc_loop); work=$work; gcc_loop 120" 2>/dev/null
fi
if [ ! -s "$work/compile.data" ]; then
  perf record -q -F 999 --call-graph dwarf -o "$work/compile.data" -- \
    bash -c "$(declare -f gcc_loop); work=$work; gcc_loop 150" 2>/dev/null
fi
for r in dense sysdwarf compile; do
  size=$(stat -c %s "$work/$r.data")
  [ "$size" -ge $((50 << 20)) ] || {
    echo "gate: $work/$r.data is $((size >> 20)) MB, under 50 MB: remove it to record anew" >&2
    exit 2
  }
done

builds=("$pdfix")
if [ "$short" = 0 ]; then
  rev=$(git rev-parse --short "$base")
  tree=$work/base-$rev
  built=$work/base-$rev-build-$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' build/CMakeCache.txt)
  if [ ! -x "$built/pdfix" ]; then
    rm -rf "$tree" "$built"
    git worktree prune
    git worktree add -f --detach "$tree" "$rev" >/dev/null 2>&1
    # Built as build/ is, so that only the commits differ.
    type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' build/CMakeCache.txt)
    cmake -S "$tree" -B "$built" -G Ninja -DCMAKE_BUILD_TYPE="${type:-RelWithDebInfo}" \
      -DPDFIX_BUILD_BENCH=OFF -DPDFIX_BUILD_TESTS=OFF >/dev/null
    cmake --build "$built" --target pdfix >/dev/null
    git worktree remove --force "$tree"
  fi
  builds+=("$built/pdfix")
fi

# Each job: a name, its floor's name, and the commands (this build's first; {P} is the build).
out=$work/gate-out.data
jobs=()
for r in dense sysdwarf compile; do
  in=$work/$r.data
  jobs+=("$r copy|cp|cp $in $out|{P} copy $in $out")
  jobs+=("$r inject|cp|cp $in $out|{P} inject --buildids -q $in $out")
  jobs+=("$r fix|cp|cp $in $out|{P} fix -q $in $out")
  jobs+=("$r walk|cp|cp $in $out|$walk $in|once")
done
for r in sysdwarf compile; do
  in=$work/$r.data
  jobs+=("$r unwind|perf-script|perf script -i $in -F comm,tid,time,ip,sym,dso --no-inline|{P} unwind -q $in $out")
done
jobs+=("dense archive|perf-archive|perf archive $work/dense.data|{P} archive -q $work/dense.data $work/gate.tar.zst")

failed=0
printf '| recording | verb | this build | floor | ratio | limit |%s\n' \
  "$([ "$short" = 0 ] && echo " base ($rev) | this / base | noise |")"
printf '|---|---|---|---|---|---|%s\n' "$([ "$short" = 0 ] && echo '---|---|---|')"
# measure JOB: one hyperfine run of its commands; prints "ok|FAIL | row |".
measure() {
  local name floor floor_cmd cmd once
  IFS='|' read -r name floor floor_cmd cmd once <<<"$1"
  local commands=("$floor_cmd")
  if [ -n "$once" ]; then
    commands+=("$cmd")
  else
    for b in "${builds[@]}"; do commands+=("${cmd//\{P\}/$b}"); done
  fi
  hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$work/gate.json" \
    --prepare "sh -c 'rm -f $out $work/gate.tar.zst $work/dense.data.tar.bz2; sync'" \
    "${commands[@]}" >/dev/null 2>&1 || {
    echo "FAIL | $name | failed to run |"
    return
  }
  python3 - "$work/gate.json" "$name" "$floor" "${LIMITS[$name]:-}" <<'PY'
import json, math, statistics, sys
res = json.load(open(sys.argv[1]))["results"]
name, floor, limit = sys.argv[2], sys.argv[3], sys.argv[4]
med = [r["median"] for r in res]
# A robust spread (the median absolute deviation, as a standard deviation): one slow run of a VM
# does not widen it.
spread = [1.4826 * statistics.median(abs(t - m) for t in r["times"]) for r, m in zip(res, med)]
ratio = med[1] / med[0]
bad = bool(limit) and ratio > float(limit)
cells = [name.split()[0], name.split()[1], f"{med[1]*1000:.0f} ms", f"{floor} {med[0]*1000:.0f} ms",
         f"{ratio:.2f}", limit or "-"]
if len(med) > 2:
    # Slower than the base beyond the noise: 10%, or three standard errors of the two medians'
    # ratio, whichever is larger.
    n = len(res[1]["times"])
    se = 1.2533 * math.hypot(spread[1] / med[1], spread[2] / med[2]) / math.sqrt(n)
    noise = max(0.10, 3 * se)
    vs = med[1] / med[2]
    bad = bad or vs > 1 + noise
    cells += [f"{med[2]*1000:.0f} ms", f"{vs:.2f}", f"{noise*100:.0f}%"]
print(("FAIL" if bad else "ok") + " | " + " | ".join(cells) + " |")
PY
}

for job in "${jobs[@]}"; do
  read -r verdict row < <(measure "$job")
  # A VM has slow spells: what fails is measured once more, and fails only if it fails again.
  [ "$verdict" = ok ] || read -r verdict row < <(measure "$job")
  echo "$row$([ "$verdict" = FAIL ] && echo ' **over**')"
  [ "$verdict" = ok ] || failed=1
done
rm -f "$out" "$work/gate.tar.zst" "$work/dense.data.tar.bz2"
echo "gate: $(git rev-parse --short HEAD), $runs runs, medians; $([ "$failed" = 0 ] && echo passed || echo FAILED)" >&2
exit "$failed"
