#!/usr/bin/env bash
# Sets pdfix up, checks formatting and lint, runs every test (unit and end-to-end), the mutation
# check, then the unit, corpus and hostile-input tests again under AddressSanitizer and UBSan, and
# every fuzz target briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
PDFIX_WERROR=ON bash scripts/setup.sh
bash scripts/lint.sh
# This machine kind records with perf as root: a test that would skip for want of perf fails.
# (Unset it to run the suite where perf_event_open is refused; those tests then skip, loudly.)
export PDFIX_REQUIRE_PERF=${PDFIX_REQUIRE_PERF:-1}
echo "== running tests" >&2
(cd build && ctest --output-on-failure -j "$(nproc)" --timeout 600)

echo "== mutation check (scripts/mutants.list): every mutant of a trust rule must be killed" >&2
bash scripts/mutants.sh

echo "== sanitizer build (ASan+UBSan, Debug, clang-19) and its tests" >&2
CC=clang-19 CXX=clang++-19 cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DPDFIX_SANITIZE=ON -DPDFIX_BUILD_BENCH=OFF -DPDFIX_WERROR=ON >/dev/null
cmake --build build-asan
build-asan/tests/pdfix_unit_tests --gtest_brief=1
(cd build-asan && ctest --output-on-failure -j "$(nproc)" --timeout 900 \
  -R '^(Foreign|Corpus|Threads)/|^(Hostile|UnpackInput|ArchiveInput|FetchInput)[.]')

echo "== fuzzing, 25 seconds a target" >&2
PDFIX_WERROR=ON bash scripts/fuzz.sh 25
