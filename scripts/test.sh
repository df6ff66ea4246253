#!/usr/bin/env bash
# Sets pdfix up, checks formatting and lint, runs every test (unit and end-to-end), the speed gate,
# the mutation check, then the unit, corpus and hostile-input tests again under AddressSanitizer and
# UBSan, and every fuzz target briefly.
#
# Every phase runs even when one before it failed (a red lint says nothing about the tests, and a
# run that stops at its first red phase hides the others); only a phase whose input is missing (no
# build) is not run. At the end a table gives each phase's status and time; the exit status is 1
# when any phase failed or could not run.
set -uo pipefail
cd "$(dirname "$0")/.."
names=() states=() times=()
# run NAME COMMAND...: one phase, announced with the minutes and seconds since the start.
run() {
  local name=$1 start=$SECONDS
  shift
  printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$name" >&2
  if "$@"; then states+=(passed); else states+=(FAILED); fi
  names+=("$name")
  times+=($((SECONDS - start)))
}
skip() {
  names+=("$1")
  states+=("NOT RUN: $2")
  times+=(0)
}
report() {
  local rc=0 i passed=0
  # A background build left running by an interrupted phase is stopped with the run.
  jobs -p | xargs -r kill 2>/dev/null
  rm -rf "${beside_dir:-}"
  printf '\n| phase | status | time |\n|---|---|---|\n' >&2
  for i in "${!names[@]}"; do
    printf '| %s | %s | %d:%02d |\n' "${names[$i]}" "${states[$i]}" \
      $((times[i] / 60)) $((times[i] % 60)) >&2
    if [ "${states[$i]}" = passed ]; then passed=$((passed + 1)); else rc=1; fi
  done
  printf '| whole run | %s | %d:%02d |\n\n' "$([ $rc = 0 ] && echo passed || echo FAILED)" \
    $((SECONDS / 60)) $((SECONDS % 60)) >&2
  echo "phases: $passed passed, $((${#names[@]} - passed)) failed"
  exit "$rc"
}
trap report EXIT
trap 'skip "the rest" "interrupted"; exit 130' INT TERM

run "setup and build" env PDFIX_WERROR=ON bash scripts/setup.sh
built=${states[0]}

# Phases run beside others at the lowest priority, so that they take only the cores the others
# leave: each step's output goes to $beside_dir/STEP.log, its status and seconds to $beside_dir/STEP.
beside_dir=$(mktemp -d "${TMPDIR:-/tmp}/pdfix-ci.XXXXXX")
step() {
  local name=$1 start=$SECONDS rc=0
  shift
  nice -n 19 "$@" >"$beside_dir/$name.log" 2>&1 || rc=$?
  echo "$rc $((SECONDS - start))" >"$beside_dir/$name"
  return "$rc"
}
# beside_step STEP PID: waits for the step (run by PID), says how long it took in all, prints what
# failed (each failed test's output, then the log's end) when it failed.
beside_step() {
  while [ ! -f "$beside_dir/$1" ] && kill -0 "$2" 2>/dev/null; do sleep 1; done
  local rc=1 took=0
  [ -f "$beside_dir/$1" ] && read -r rc took <"$beside_dir/$1"
  echo "$1: $((took / 60)):$(printf %02d $((took % 60))) in all, beside another phase at first" >&2
  [ "$rc" = 0 ] && return 0
  grep -A 60 -e '[*]Failed' -e 'Timeout' "$beside_dir/$1.log" >&2
  tail -n 60 "$beside_dir/$1.log" >&2
  return 1
}
# The unit, corpus and hostile-input tests again under the sanitizers: the tests that hold no slot
# of the machine (tests/CMakeLists.txt), so they may run beside any other.
sanitizer_tests() {
  build-asan/tests/pdfix_unit_tests --gtest_brief=1 || return 1
  (cd build-asan && ctest --output-on-failure -j "$(nproc)" --timeout 900 \
    -R '^(Foreign|Corpus|Threads)/|^(Hostile|UnpackInput|ArchiveInput|FetchInput)[.]')
}
# Beside the tests, one after the other: the lint, the sanitizer build (ASan+UBSan, clang-19, -O1
# with assertions), then the sanitizer tests. On a new machine the lint's clang-tidy is ten
# minutes of both cores, and the tests leave a core idle for much of theirs (they wait on perf,
# podman and workloads that sleep); on a machine with its caches the three take that idle time,
# where the sanitizer tests beside the mutants used to take 13 minutes and hold the run up by 4.
# What is left of each when the tests end is a phase of its own, before the gate, which measures
# with nothing beside it.
(
  trap - EXIT INT TERM
  step lint bash scripts/lint.sh
  step sanitizer-build bash -c 'CC=clang-19 CXX=clang++-19 cmake -S . -B build-asan -G Ninja \
    -DCMAKE_BUILD_TYPE=Debug -DPDFIX_SANITIZE=ON -DPDFIX_BUILD_BENCH=OFF -DPDFIX_WERROR=ON \
    >/dev/null && cmake --build build-asan' &&
    step sanitizer-tests bash -c "$(declare -f sanitizer_tests); sanitizer_tests"
) &
beside=$!

# This machine kind records with perf as root: a test that would skip for want of perf fails.
# (Unset it to run the suite where perf_event_open is refused; those tests then skip, loudly.)
export PDFIX_REQUIRE_PERF=${PDFIX_REQUIRE_PERF:-1}
# A failed test's output is printed as it ends, among a thousand lines of passing tests; it is
# printed again under ctest's summary, where a reader of the log's end (CI's excerpt) sees it.
failed_outputs() {
  awk '/^[0-9]+\/[0-9]+ Testing: / { if (b ~ /\nTest (Failed|Timeout)/) printf "%s", b; b = "" }
       { b = b $0 "\n" }
       END { if (b ~ /\nTest (Failed|Timeout)/) printf "%s", b }' \
    build/Testing/Temporary/LastTest.log |
    grep -v -e '^\[       OK \]' -e '^\[ RUN      \]' -e '^\[[-=]*\]' -e '^Command:' | tail -n 120
}
tests() { (cd build && ctest --output-on-failure -j "$(nproc)" --timeout 600) || {
  echo "== what the failed tests printed" >&2
  failed_outputs >&2
  return 1
}; }
if [ "$built" = passed ]; then
  run "tests" tests
else
  skip "tests" "no build"
fi
tested=${states[-1]}
run "lint: the rest of it" beside_step lint "$beside"
run "sanitizer build: the rest of it" beside_step sanitizer-build "$beside"
if [ "${states[-1]}" = passed ]; then
  run "sanitizer tests: the rest of them" beside_step sanitizer-tests "$beside"
else
  skip "sanitizer tests: the rest of them" "no sanitizer build"
fi
wait "$beside" 2>/dev/null
# Alone on the machine: each verb against its floor (cp, the header walk, perf script, perf
# archive) and the build before, interleaved, on recordings of >= 50 MB kept in
# /var/tmp/pdfix-bench between runs.
if [ "$built" = passed ]; then
  run "benchmark gate (bench/gate.sh --short)" bash bench/gate.sh --short
else
  skip "benchmark gate (bench/gate.sh --short)" "no build"
fi

# The mutants are judged by one worker a core (a mutant's tests mostly wait on perf), with nothing
# beside them. When the whole suite passed, their baseline only lists the tests each mutant names.
suite_passed=0
[ "$tested" != passed ] || suite_passed=1
run "mutation check (scripts/mutants.list)" env PDFIX_MUTANTS_SUITE_PASSED=$suite_passed \
  bash scripts/mutants.sh
run "fuzzing, 25 seconds a target" env PDFIX_WERROR=ON bash scripts/fuzz.sh 25
