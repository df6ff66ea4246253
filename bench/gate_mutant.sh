#!/usr/bin/env bash
# The gate's own mutant: does bench/gate.sh still catch a slow pdfix on a busy machine?
#
#   bash bench/gate_mutant.sh [BASE]
#
# Builds HEAD with a deliberate slowdown in the record path (the reader spins a while on every
# record it frames, whether it skips it or hands it to a pass: $PDFIX_GATE_MUTANT_SPIN iterations,
# about 1.5x the time of `copy` of the dense recording) into $PDFIX_BENCH_DIR/gate-mutant-build.
# Then, with `stress-ng --cpu 1` beside it on this 2-core machine (the neighbour issue #72 names),
# runs the short gate twice: HEAD against BASE (HEAD~1 by default; must pass) and the mutant against HEAD (must fail).
# Exits 0 when both verdicts are as they must be.
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-HEAD~1}
export PDFIX_BENCH_DIR=${PDFIX_BENCH_DIR:-/var/tmp/pdfix-bench}
spin=${PDFIX_GATE_MUTANT_SPIN:-60}
# The mutant's worktree, with its build inside it as build/ is inside this tree (ccache then
# compiles only reader.cc anew), kept for the next run.
tree=$PDFIX_BENCH_DIR/gate-mutant
built=$tree/build
type=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' build/CMakeCache.txt)
werror=$(sed -n 's/^PDFIX_WERROR:[A-Z]*=//p' build/CMakeCache.txt)
command -v stress-ng >/dev/null || {
  echo "gate_mutant: stress-ng is missing (apt-get install stress-ng)" >&2
  exit 2
}

# Built once for a commit and spin.
stamp="$(git rev-parse HEAD) $spin"
if [ "$(cat "$built/.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -rf "$tree"
  git worktree prune
  git worktree add -f --detach "$tree" HEAD >/dev/null 2>&1
  slow="{ volatile int spin = 0; while (spin < $spin) { spin = spin + 1; } }"
  sed -i -e "s|^    (\*r)->part = part_;\$|    (*r)->part = part_; $slow|" \
    -e "s|^    pos += hdr.size;\$|    pos += hdr.size; $slow|" "$tree/src/transform/reader.cc"
  [ "$(grep -c 'volatile int spin' "$tree/src/transform/reader.cc")" = 2 ] || {
    echo "gate_mutant: the slowdown no longer applies to src/transform/reader.cc" >&2
    exit 2
  }
  cmake -S "$tree" -B "$built" -G Ninja -DCMAKE_BUILD_TYPE="${type:-RelWithDebInfo}" \
    -DPDFIX_WERROR="$werror" -DPDFIX_BUILD_BENCH=OFF -DPDFIX_BUILD_TESTS=OFF >/dev/null
  cmake --build "$built" --target pdfix >"$tree/build.log" 2>&1 || {
    tail -n 30 "$tree/build.log" >&2
    exit 2
  }
  echo "$stamp" >"$built/.stamp"
fi

stress-ng --cpu 1 --timeout 3600 --quiet &
stress=$!
trap 'kill "$stress" 2>/dev/null; wait "$stress" 2>/dev/null' EXIT
sleep 2
status=0
echo "== the landed build against the one before, stress-ng --cpu 1 beside it" >&2
if bash bench/gate.sh --short "$base"; then
  echo "gate_mutant: HEAD passed, as it must" >&2
else
  echo "gate_mutant: HEAD FAILED on a busy machine" >&2
  status=1
fi
echo "== the mutant (spin $spin) against HEAD, stress-ng --cpu 1 beside it" >&2
if bash bench/gate.sh --short --build "$built" HEAD; then
  echo "gate_mutant: the slow build PASSED: the gate no longer catches it" >&2
  status=1
else
  echo "gate_mutant: the slow build failed, as it must" >&2
fi
exit "$status"
