#!/usr/bin/env bash
# pdfix follow on a real chunk sequence against a standalone `pdfix fix` of each chunk, against
# what a user scripts without follow (a loop of `pdfix fix --store`), and against cp of the chunks,
# in the same rounds.
#
# The chunks: `perf record -a -g --switch-output=2s` over C++ compiles for 45 s (kept in
# $work/chunks between runs with PDFIX_BENCH_DIR). A days-long run's store already holds its
# binaries: every job that stores starts from a copy of one store filled once by follow ("warm",
# copied before the clock starts), but follow-cold, which fills an empty one. Each round, in an
# order that rotates, runs:
#   cp           every chunk into an empty directory;
#   plain        `pdfix fix -q CHUNK OUT` for every chunk, no store: a standalone fix of each;
#   loop         `pdfix fix -q --store CHUNK OUT` for every chunk, one process each (warm);
#   follow       `pdfix follow -q --once --store CHUNKS OUT`, one process (warm);
#   many         `pdfix fix -q --store CHUNK... OUT`, one process (warm);
#   follow-cold  follow into an empty store: the first chunk stores the binaries;
#   base         follow (warm) with PDFIX_BASELINE=OTHER/pdfix, when given: the build before.
# Printed: each one's median seconds and peak RSS, and the medians of the per-round ratios; then
# follow's peak RSS over the first 5 chunks and over the first 20 (flat: what a run holds does not
# grow with its chunks), and the stores follow filled from empty (whole binaries, and --slim)
# against the sum of one bundle a chunk (`pdfix fix --archive`, what a loop without follow keeps)
# and against follow --archive's chain of bundles.
#
#   bash bench/follow_vs_fix.sh [ROUNDS]     (5 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
rounds=${1:-5}
pdfix=$PWD/build/pdfix
base=${PDFIX_BASELINE:-}

chunks=$work/chunks
ensure_chunks
n=$(find "$chunks" -name 'perf.data.*' | wc -l)
size=$(du -sm "$chunks" | cut -f1)
echo "$n chunks, $size MB, $rounds rounds" >&2

scratch=$(mktemp -d -p "${TMPDIR:-/var/tmp}")
trap 'rm -rf "$scratch"; [ -n "${PDFIX_BENCH_DIR:-}" ] || rm -rf "$work"' EXIT

warm=$scratch/warm
mkdir -p "$warm/out" "$warm/home"
HOME=$warm/home "$pdfix" follow -q --once --store "$chunks" "$warm/out" || [ $? = 3 ]

run_cp() { mkdir -p "$1/out" && cp "$chunks"/perf.data.* "$1/out/"; }
run_plain() {
  for c in "$chunks"/perf.data.*; do
    HOME=$1/home "$pdfix" fix -q "$c" "$1/out/$(basename "$c")" || [ $? = 3 ]
  done
}
run_loop() {
  for c in "$chunks"/perf.data.*; do
    HOME=$1/home "$pdfix" fix -q --store "$c" "$1/out/$(basename "$c")" || [ $? = 3 ]
  done
}
run_follow() {
  HOME=$2/home "$1" follow -q --once --store "$chunks" "$2/out" || [ $? = 3 ]
}
run_many() {
  HOME=$1/home "$pdfix" fix -q --store "$chunks"/perf.data.* "$1/out" || [ $? = 3 ]
}
export -f run_cp run_plain run_loop run_follow run_many
export chunks pdfix

jobs=(cp plain loop follow many follow-cold)
[ -n "$base" ] && jobs+=(base)
declare -A secs rss
for ((r = 0; r < rounds; r++)); do
  for ((k = 0; k < ${#jobs[@]}; k++)); do
    job=${jobs[$(((k + r) % ${#jobs[@]}))]}
    at=$scratch/$job
    rm -rf "$at"
    mkdir -p "$at/out" "$at/home"
    case $job in
      loop | follow | many | base) cp -a "$warm/home/." "$at/home/" ;;
    esac
    case $job in
      cp) read -r s m < <(time_of bash -c "run_cp $at") ;;
      plain) read -r s m < <(time_of bash -c "run_plain $at") ;;
      loop) read -r s m < <(time_of bash -c "run_loop $at") ;;
      follow | follow-cold) read -r s m < <(time_of bash -c "run_follow $pdfix $at") ;;
      many) read -r s m < <(time_of bash -c "run_many $at") ;;
      base) read -r s m < <(time_of bash -c "run_follow $base $at") ;;
    esac
    secs[$job]+="$s "
    rss[$job]+="$m "
  done
done

median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
# The median over rounds of job A's seconds over job B's, round by round.
ratio_of() {
  paste <(echo "${secs[$1]}" | tr ' ' '\n' | grep .) <(echo "${secs[$2]}" | tr ' ' '\n' | grep .) |
    awk '{ printf "%.3f\n", $1 / $2 }' | median
}
printf '| job | median s | peak RSS MiB | / cp | / loop | / plain |\n|---|---|---|---|---|---|\n'
for job in "${jobs[@]}"; do
  printf '| %s | %s | %s | %s | %s | %s |\n' "$job" "$(echo "${secs[$job]}" | median)" \
    "$(echo "${rss[$job]}" | median | awk '{ printf "%.0f", $1 / 1024 }')" \
    "$(ratio_of "$job" cp)" "$(ratio_of "$job" loop)" "$(ratio_of "$job" plain)"
done

[ -z "$base" ] || echo "follow / base, the median of per-round ratios: $(ratio_of follow base)"

# What a run holds, at chunk 5 and at chunk 20: follow over the first 5 and over the first 20.
for k in 5 20; do
  at=$scratch/first-$k
  mkdir -p "$at/in" "$at/out" "$at/home"
  cp -a "$warm/home/." "$at/home/"
  find "$chunks" -name 'perf.data.*' | sort | head -n "$k" | xargs cp -t "$at/in"
  read -r _ m < <(time_of bash -c "HOME=$at/home $pdfix follow -q --once --store $at/in $at/out || [ \$? = 3 ]")
  echo "follow's peak RSS over the first $k chunks: $((m / 1024)) MiB"
done

# Each binary stored once: the store follow filled from empty, against a bundle a chunk.
mkdir -p "$scratch/bundles/out" "$scratch/bundles/home"
for c in "$chunks"/perf.data.*; do
  name=$(basename "$c")
  HOME=$scratch/bundles/home "$pdfix" fix -q --archive "$scratch/bundles/$name.tar.zst" "$c" \
    "$scratch/bundles/out/$name" || [ $? = 3 ]
done
# A store of slim copies, as the bundles hold by default (the store's default is whole binaries,
# for perf annotate).
mkdir -p "$scratch/slim/out" "$scratch/slim/home"
HOME=$scratch/slim/home "$pdfix" follow -q --once --store --slim "$chunks" "$scratch/slim/out" ||
  [ $? = 3 ]
bundles=$(find "$scratch/bundles" -maxdepth 1 -name '*.tar*' -printf '%s\n' | awk '{ s += $1 } END { print s }')
echo "$n bundles, one a chunk (slim, zstd): $((bundles / 1048576)) MiB"
# follow --archive: a bundle a chunk, each binary in one of them.
mkdir -p "$scratch/chain/out" "$scratch/chain/home" "$scratch/chain/b"
read -r s m < <(time_of bash -c "HOME=$scratch/chain/home $pdfix follow -q --once --archive $scratch/chain/b $chunks $scratch/chain/out || [ \$? = 3 ]")
chain=$(find "$scratch/chain/b" -name '*.tar.zst' -printf '%s\n' | awk '{ s += $1 } END { print s }')
echo "$n bundles of follow --archive (a chain: each binary in one): $((chain / 1048576)) MiB," \
  "$(ratio "$chain" "$bundles")x the bundles one a chunk; $s s, peak RSS $((m / 1024)) MiB"
# On disk, not apparent sizes: a slim copy keeps its sections' offsets and leaves holes.
for kind in warm slim; do
  store=$(du -s -B1 "$scratch/$kind/home/.debug" | cut -f1)
  echo "store filled by follow ($kind: $([ $kind = slim ] && echo slim || echo whole) binaries," \
    "on disk): $((store / 1048576)) MiB, $(ratio "$store" "$bundles")x the bundles"
done
