#!/usr/bin/env bash
# The benchmark gate: every verb's speed against its floor and against the build before, measured
# interleaved in the same rounds, on recordings large enough that start-up hides nothing
# (>= 50 MB each).
#
#   bash bench/gate.sh [--short] [--build DIR] [BASE]
#
# Recordings (made once, kept in $PDFIX_BENCH_DIR, /var/tmp/pdfix-bench by default):
#   dense    system-wide, -g -F 20000, two busy shells: many small records
#   sysdwarf system-wide, --call-graph dwarf,8192 -F 999, over a loop of gcc compiles
#   compile  the gcc loop alone, --call-graph dwarf -F 999
# Jobs: copy, inject --buildids, fix (of every recording) against cp, with the header walk
# (bench/header_walk.cc) in the same rounds; unwind (of the DWARF ones) against perf script (perf's
# own unwinding); archive (dense) against perf archive; export (dense, a pprof profile, symbolized)
# against perf report --sort sym; follow of a chunk sequence (perf record -a -g
# --switch-output=2s, 20 chunks or more, bench/chunk_jobs.sh) against a loop of `fix --store` of
# each chunk.
# BASE (a commit, HEAD~1 by default) is built beside this one (the same CMAKE_BUILD_TYPE as build/,
# kept in $PDFIX_BENCH_DIR). --build DIR judges DIR/pdfix instead of build/pdfix (the gate's own
# mutant, bench/gate_mutant.sh, uses it). --short (CI): 10 rounds a job instead of 20.
# The gate's budget, $PDFIX_GATE_BUDGET seconds from its start (8 minutes short, 20 in full, the
# recordings and the base's build included): the jobs it leaves are "not judged: out of time" and
# fail nothing, so that a slow or busy machine cannot take CI past its time.
#
# bench/gate_rounds.py measures and judges: each round runs a job's commands once each, in rotating
# order; ratios are medians of per-round ratios; a job whose floors moved (the floor's spread, or
# that of the walk/cp ratio, over 25%) is "too noisy to judge" and measured again later; a job
# fails only when it is over its limit against the floor and slower than BASE beyond the noise of
# the same rounds. Exits 1 when one fails. bench/README.md keeps the last tables.
set -euo pipefail
# A step that fails under set -e would otherwise end the gate with status 1 and no word.
trap 'echo "gate: line $LINENO failed (status $?): $BASH_COMMAND" >&2' ERR
cd "$(dirname "$0")/.."
started=$EPOCHREALTIME
short=0
this_build=$PWD/build
while [ $# -gt 0 ]; do
  case "$1" in
    --short) short=1 ;;
    --build) this_build=$(realpath "$2") && shift ;;
    *) break ;;
  esac
  shift
done
base=${1:-HEAD~1}
rounds=$([ "$short" = 1 ] && echo 10 || echo 20)
budget=${PDFIX_GATE_BUDGET:-$([ "$short" = 1 ] && echo 480 || echo 1200)}
export PDFIX_BENCH_DIR=${PDFIX_BENCH_DIR:-/var/tmp/pdfix-bench}
mkdir -p "$PDFIX_BENCH_DIR"
source bench/lib.sh
here=$PWD
pdfix=$this_build/pdfix
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
  ["chunks follow"]=0.60 ["dense export"]=0.75
)

gcc_loop() {
  printf '#include <stdio.h>\nint main(void) { puts("hi"); return 0; }\n' >"$work/hello.c"
  for _ in $(seq "${1:-60}"); do gcc -O2 -o "$work/hello" "$work/hello.c"; done
}
# The kept recordings are of this machine's programs: once a package changed (setup upgrades what
# it installs), their maps name files that are gone, and unwind rightly says it could not do all.
# They are recorded anew then.
packages=$(dpkg-query -W -f '${Package} ${Version}\n' | sha256sum | cut -c1-16)
if [ "$(cat "$work/recordings.packages" 2>/dev/null)" != "$packages" ]; then
  rm -rf "$work/dense.data" "$work/sysdwarf.data" "$work/compile.data" "$work/chunks"
fi
# One kept from before the recordings were sized in bytes (up to 900 MB) is recorded anew too.
for r in dense sysdwarf compile; do
  size=$(stat -c %s "$work/$r.data" 2>/dev/null || echo 0)
  [ "$size" -le $((100 << 20)) ] || rm -f "$work/$r.data"
done
# Each sized in bytes (bench/lib.sh's record_sized): the compiles go on until perf stops at the size.
if [ ! -s "$work/dense.data" ]; then record_dense "$work/dense.data"; fi
if [ ! -s "$work/sysdwarf.data" ]; then
  record_sized "$work/sysdwarf.data" 80 -a -F 999 --call-graph dwarf,8192 -- \
    timeout 120 bash -c "$(declare -f gcc_loop); work=$work; gcc_loop 100000"
fi
if [ ! -s "$work/compile.data" ]; then
  record_sized "$work/compile.data" 80 -F 999 --call-graph dwarf -- \
    timeout 120 bash -c "$(declare -f gcc_loop); work=$work; gcc_loop 100000"
fi
ensure_chunks
echo "$packages" >"$work/recordings.packages"

rev=$(git rev-parse --short "$base")
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' build/CMakeCache.txt)
werror=$(sed -n 's/^PDFIX_WERROR:[A-Z]*=//p' build/CMakeCache.txt)
# A worktree of BASE with its build inside it, as build/ is inside this tree: ccache takes paths
# relative to the source tree, and from the build directory, so only what the commits change is
# compiled. Kept for the next run.
tree=$work/base-$rev-${type:-RelWithDebInfo}
built=$tree/build
if [ ! -x "$built/pdfix" ]; then
  echo "gate: building the base, $rev, into $built" >&2
  rm -rf "$tree"
  git worktree prune
  git worktree add -f --detach "$tree" "$rev" >/dev/null 2>&1
  # Built as build/ is, with its flags, so that only the commits differ.
  cmake -S "$tree" -B "$built" -G Ninja -DCMAKE_BUILD_TYPE="${type:-RelWithDebInfo}" \
    -DPDFIX_WERROR="$werror" -DPDFIX_BUILD_BENCH=OFF -DPDFIX_BUILD_TESTS=OFF >/dev/null
  cmake --build "$built" --target pdfix >/dev/null
fi

# A job a line for bench/gate_rounds.py: name | limit | floor | its command | walk | this | base |
# outputs.
out=$work/gate-out.data
tar=$work/gate.tar.zst
jobs=$work/gate-jobs
: >"$jobs"
job() { printf '%s|%s|%s|%s|%s|%s|%s|%s\n' "$@" >>"$jobs"; }
for r in dense sysdwarf compile; do
  in=$work/$r.data
  job "$r copy" "${LIMITS[$r copy]}" cp "cp $in $out" "$walk $in" "$pdfix copy $in $out" \
    "$built/pdfix copy $in $out" "$out"
  job "$r inject" "${LIMITS[$r inject]}" cp "cp $in $out" "$walk $in" \
    "$pdfix inject --buildids -q $in $out" "$built/pdfix inject --buildids -q $in $out" "$out"
  job "$r fix" "${LIMITS[$r fix]}" cp "cp $in $out" "$walk $in" "$pdfix fix -q $in $out" \
    "$built/pdfix fix -q $in $out" "$out"
done
for r in sysdwarf compile; do
  in=$work/$r.data
  job "$r unwind" "${LIMITS[$r unwind]}" "perf script" \
    "perf script -i $in -F comm,tid,time,ip,sym,dso --no-inline" "" "$pdfix unwind -q $in $out" \
    "$built/pdfix unwind -q $in $out" "$out"
done
job "dense archive" "${LIMITS[dense archive]}" "perf archive" "perf archive $work/dense.data" "" \
  "$pdfix archive -q $work/dense.data $tar" "$built/pdfix archive -q $work/dense.data $tar" \
  "$tar $work/dense.data.tar.bz2"

job "dense export" "${LIMITS[dense export]}" "perf report" \
  "perf report -i $work/dense.data --sort sym --stdio -g none" "" \
  "$pdfix export -q $work/dense.data $work/gate-out.pb.gz" \
  "$built/pdfix export -q $work/dense.data $work/gate-out.pb.gz" "$work/gate-out.pb.gz"

# The store a days-long run has filled: every chunk's binaries already in it.
store=$work/gate-chunks-home
rm -rf "$store" "$work/gate-chunks-out"
mkdir -p "$store" "$work/gate-chunks-out"
HOME=$store "$pdfix" follow -q --once --store "$work/chunks" "$work/gate-chunks-out" || [ $? = 3 ]
rm -rf "$work/gate-chunks-out"
chunk_job() { echo "bash $here/bench/chunk_jobs.sh $1 $2 $work/chunks $work/gate-chunks-out $store"; }
job "chunks follow" "${LIMITS[chunks follow]}" "fix --store loop" "$(chunk_job loop "$pdfix")" "" \
  "$(chunk_job follow "$pdfix")" "$(chunk_job follow "$built/pdfix")" ""

echo "gate: $(git rev-parse --short HEAD)$([ "$this_build" = "$here/build" ] || echo " ($this_build)")" \
  "against $rev, $rounds rounds a job, $budget s in all" \
  "($(awk -v a="$started" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", b - a }') s gone on recording and building)" >&2
failed=0
python3 bench/gate_rounds.py "$rounds" "$jobs" \
  "$(awk -v a="$started" -v b="$budget" 'BEGIN { printf "%.1f", a + b }')" || failed=1
rm -rf "$out" "$tar" "$work/gate-out.pb.gz" "$work/dense.data.tar.bz2" "$work/gate-chunks-out" "$store"
echo "gate: $([ "$failed" = 0 ] && echo passed || echo FAILED)" >&2
exit "$failed"
