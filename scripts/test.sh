#!/usr/bin/env bash
# Sets pdfix up, checks formatting and lint, runs every test (unit and end-to-end), the mutation
# check, then the unit, corpus and hostile-input tests again under AddressSanitizer and UBSan, and
# every fuzz target briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each phase is announced with the minutes and seconds since the start, so that a slow one shows.
phase() { printf '== [%d:%02d] %s\n' $((SECONDS / 60)) $((SECONDS % 60)) "$*" >&2; }
# A background build left running by a failed phase is stopped with the run.
trap 'rc=$?; jobs -p | xargs -r kill 2>/dev/null; phase "done (exit $rc)"; exit $rc' EXIT
phase "setup and build"
PDFIX_WERROR=ON bash scripts/setup.sh
phase "lint"
bash scripts/lint.sh
# This machine kind records with perf as root: a test that would skip for want of perf fails.
# (Unset it to run the suite where perf_event_open is refused; those tests then skip, loudly.)
export PDFIX_REQUIRE_PERF=${PDFIX_REQUIRE_PERF:-1}
phase "tests"
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 600)

# Before anything runs beside it: each verb against its floor (cp, the header walk, perf script,
# perf archive) on recordings of >= 50 MB, kept in /var/tmp/pdfix-bench between runs.
phase "benchmark gate, short form (bench/gate.sh --short)"
bash bench/gate.sh --short

# The mutants rebuild and test one at a time, mostly on one core: the sanitizer build (ASan+UBSan,
# Debug, clang-19) takes the other, at the lowest priority so that it never holds a mutant up.
phase "mutation check (scripts/mutants.list): every mutant of a trust rule must be killed;" \
  "the sanitizer build alongside"
CC=clang-19 CXX=clang++-19 cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DPDFIX_SANITIZE=ON -DPDFIX_BUILD_BENCH=OFF -DPDFIX_WERROR=ON >/dev/null
nice -n 19 cmake --build build-asan >build-asan/build.log 2>&1 &
asan_build=$!
bash scripts/mutants.sh
phase "sanitizer build: the rest of it"
if ! wait "$asan_build"; then
  tail -n 60 build-asan/build.log >&2
  exit 1
fi
phase "sanitizer tests"
build-asan/tests/pdfix_unit_tests --gtest_brief=1
(cd build-asan && ctest --output-on-failure -j "$(nproc)" --timeout 900 \
  -R '^(Foreign|Corpus|Threads)/|^(Hostile|UnpackInput|ArchiveInput|FetchInput)[.]')

phase "fuzzing, 25 seconds a target"
PDFIX_WERROR=ON bash scripts/fuzz.sh 25
