#!/usr/bin/env bash
# Usage: scripts/fuzz.sh [SECONDS]    (default 60 per target)
# Builds pdfix with clang-19, AddressSanitizer, UBSan and libFuzzer into build-asan/, then runs each
# fuzz target of tests/fuzz for SECONDS, as many at once as there are cores, with a 512 MiB RSS
# limit, so that a memory bomb is a finding too. Seeds: the recordings under 200 KB of corpora/ and
# ../shared/corpora/foreign; for fuzz_unpack, two small tars shaped like a bundle; for
# fuzz_slim_elf, small ELF programs and libraries of this machine.
# Fails on any finding, whose input is kept in build-asan/fuzz-findings/; prints each target's
# executions, executions per second and coverage.
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
targets=(read pass inspect features unpack slim_elf)
CC=clang-19 CXX=clang++-19 cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DPDFIX_SANITIZE=ON -DPDFIX_BUILD_BENCH=OFF -DPDFIX_WERROR="${PDFIX_WERROR:-OFF}" >/dev/null
cmake --build build-asan --target "${targets[@]/#/fuzz_}"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/seeds" build-asan/fuzz-findings
n=0
while IFS= read -r f; do
  cp "$f" "$work/seeds/$((n++))-$(basename "$f")"
done < <(find corpora ../shared/corpora/foreign -type f -size -200k -name '*data*' 2>/dev/null | sort)

# Bundles for fuzz_unpack: plain tars of a recording, a cache entry and its link (what
# pdfix archive writes, less the compression, so that mutations reach the entries).
mkdir -p "$work/tree/.debug/.build-id/ab" "$work/tree/.debug/usr/bin/x/abcd" "$work/tar-seeds"
cp corpora/sleep-B.data "$work/tree/perf.data" 2>/dev/null || echo x >"$work/tree/perf.data"
echo elf >"$work/tree/.debug/usr/bin/x/abcd/elf"
ln -s ../../usr/bin/x/abcd "$work/tree/.debug/.build-id/ab/cd"
tar -C "$work/tree" -cf "$work/tar-seeds/bundle.tar" perf.data .debug
tar -C "$work/tree" --format=gnu -cf "$work/tar-seeds/gnu.tar" .debug perf.data

# ELF files for fuzz_slim_elf: a program, a library, a relocatable object (as a module is).
mkdir -p "$work/elf-seeds"
cp /usr/bin/true "$work/elf-seeds/program"
cp /usr/lib/x86_64-linux-gnu/libdl.so.2 "$work/elf-seeds/library"
printf 'int f(int x) { return x + 1; }\n' >"$work/f.c"
cc -g -c -o "$work/elf-seeds/object.o" "$work/f.c"

# One target a core at a time: each still fuzzes for SECONDS on a core of its own.
fuzz() {
  local t=$1 seeds=$work/seeds
  mkdir -p "$work/$t"
  [ "$t" != unpack ] || seeds=$work/tar-seeds
  [ "$t" != slim_elf ] || seeds=$work/elf-seeds
  if build-asan/tests/fuzz/"fuzz_$t" -max_total_time="$secs" -rss_limit_mb=512 -timeout=20 \
    -max_len=262144 -dict=tests/fuzz/perf.dict -artifact_prefix=build-asan/fuzz-findings/"$t"- \
    "$work/$t" "$seeds" >"$work/$t.log" 2>&1; then
    echo ok >"$work/$t.status"
  else
    echo finding >"$work/$t.status"
  fi
}
for t in "${targets[@]}"; do
  while [ "$(jobs -rp | wc -l)" -ge "$(nproc)" ]; do wait -n || true; done
  fuzz "$t" &
done
wait

failed=0
for t in "${targets[@]}"; do
  log="$work/$t.log"
  if [ "$(cat "$work/$t.status" 2>/dev/null)" = ok ]; then
    done_line=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$log" | tail -1)
    echo "fuzz_$t: $(sed -E 's/^#([0-9]+).*cov: ([0-9]+).*exec\/s: ([0-9]+).*/\1 runs, \3 exec\/s, coverage \2 edges/' <<<"$done_line")"
  else
    echo "fuzz_$t: FINDING (input kept in build-asan/fuzz-findings/)" >&2
    grep -E -A40 'ERROR|runtime error|out-of-memory|timeout' "$log" | head -60 >&2
    failed=1
  fi
done
exit "$failed"
