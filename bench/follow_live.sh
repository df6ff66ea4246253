#!/usr/bin/env bash
# pdfix follow live, against the loop a user scripts without it, on the same chunks at the same
# time: `perf record -a -g --switch-output=2s` over C++ compiles for SECONDS (40 by default) while
#   follow   `pdfix follow -q --store DIR OUT`, one process for the run, and
#   loop     `inotifywait -m -e moved_to DIR | while read c; do pdfix fix -q --store ...; done`
# both take each chunk as perf finishes it, while its processes live (the host's facts asked
# live: mounts, /proc of each process). Each has a store of its own, copied from one filled
# beforehand from the bench's chunk sequence (a days-long run's store holds its binaries). Both
# run under /usr/bin/time (user + system CPU of the process and all it waited for, peak RSS) and
# are stopped once they have fixed every chunk perf wrote. Printed, a round a line: the chunks,
# each one's CPU a chunk and peak RSS, follow's over the loop's, and follow --once's CPU a chunk
# on the same chunks afterwards (their processes gone: what the live facts cost is the
# difference); then the median of the ratios.
#
# With PDFIX_BASELINE=OTHER/pdfix, a third consumer, follow of that build (the build before), takes
# the same chunks at the same time, with a store of its own.
#
#   bash bench/follow_live.sh [ROUNDS [SECONDS]]     (3 rounds of 40 s by default)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
rounds=${1:-3}
seconds=${2:-40}
pdfix=$PWD/build/pdfix
base=${PDFIX_BASELINE:-}
command -v inotifywait >/dev/null || {
  echo "bench: inotifywait (inotify-tools, scripts/setup.sh) is missing" >&2
  exit 1
}

chunks=$work/chunks
ensure_chunks
scratch=$(mktemp -d -p "${TMPDIR:-/var/tmp}")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$scratch"; [ -n "${PDFIX_BENCH_DIR:-}" ] || rm -rf "$work"' EXIT
mkdir -p "$scratch/warm/out" "$scratch/warm/home"
HOME=$scratch/warm/home "$pdfix" follow -q --once --store "$chunks" "$scratch/warm/out" ||
  [ $? = 3 ]
# And the programs of the rounds that the chunk sequence has not seen (this build of pdfix, the
# loop's tools): stored once in a days-long run, not in each round's first chunk.
perf record -q -a -o "$scratch/warm/tools.data" -- sh -c \
  "$pdfix --version; ${base:+$base --version;} inotifywait --help; /usr/bin/time true; sleep 1" \
  >/dev/null 2>&1
HOME=$scratch/warm/home "$pdfix" fix -q --store "$scratch/warm/tools.data" \
  "$scratch/warm/out/tools.data" || [ $? = 3 ]

# fixed DIR: how many chunks DIR holds.
fixed() { find "$1" -maxdepth 1 -name 'perf.data.*' | wc -l; }
# cpu FILE: user + system seconds, and peak RSS KiB, from /usr/bin/time -f '%U %S %M'.
cpu() { awk '{ printf "%.3f %d\n", $1 + $2, $3 }' "$1"; }

printf '| round | chunks | follow CPU a chunk | loop CPU a chunk | follow / loop | follow RSS | loop RSS | follow --once after |\n'
printf '|---|---|---|---|---|---|---|---|\n'
ratios=()
base_ratios=()
for ((r = 0; r < rounds; r++)); do
  at=$scratch/r$r
  mkdir -p "$at/raw" "$at/follow/out" "$at/loop/out"
  for job in follow loop; do cp -a "$scratch/warm/home" "$at/$job/home"; done

  /usr/bin/time -f '%U %S %M' -o "$at/follow.time" \
    env HOME="$at/follow/home" "$pdfix" follow -q --store "$at/raw" "$at/follow/out" &
  follow_time=$!
  if [ -n "$base" ]; then
    mkdir -p "$at/base/out"
    cp -a "$scratch/warm/home" "$at/base/home"
    /usr/bin/time -f '%U %S %M' -o "$at/base.time" \
      env HOME="$at/base/home" "$base" follow -q --store "$at/raw" "$at/base/out" &
    base_time=$!
  fi
  # Watching before perf starts, so that no chunk falls before the watch.
  /usr/bin/time -f '%U %S %M' -o "$at/loop.time" bash -c '
    inotifywait -q -m -e moved_to --format %f "$1" | while read -r c; do
      case $c in perf.data.*)
        HOME=$2/home "$3" fix -q --store "$1/$c" "$2/out/$c" || [ $? = 3 ] ;;
      esac
    done' loop "$at/raw" "$at/loop" "$pdfix" &
  loop_time=$!
  sleep 1
  perf record -q -a -g --switch-output=2s -o "$at/raw/perf.data" -- bash -c \
    'end=$((SECONDS + '"$seconds"')); while [ $SECONDS -lt $end ]; do
       g++ -std=c++20 -O2 -c src/format/records.cc -Isrc -o /dev/null || exit 1; done' \
    2>"$at/perf.log"
  n=$(fixed "$at/raw")
  for ((i = 0; i < 600; i++)); do
    [ "$(fixed "$at/follow/out")" -ge "$n" ] && [ "$(fixed "$at/loop/out")" -ge "$n" ] && break
    sleep 0.1
  done
  [ -z "$base" ] || for ((i = 0; i < 600; i++)); do
    [ "$(fixed "$at/base/out")" -ge "$n" ] && break
    sleep 0.1
  done
  pkill -TERM -P "$follow_time" pdfix
  [ -z "$base" ] || { pkill -TERM -P "$base_time" pdfix; wait "$base_time" || true; }
  pkill -TERM -f "inotifywait -q -m -e moved_to --format %f $at/raw" || true
  wait "$follow_time" "$loop_time" || true
  # The same chunks again, offline (their processes gone), into a copy of the warm store.
  cp -a "$scratch/warm/home" "$at/offline-home"
  mkdir -p "$at/offline"
  /usr/bin/time -f '%U %S %M' -o "$at/offline.time" env HOME="$at/offline-home" "$pdfix" follow \
    -q --once --store "$at/raw" "$at/offline" || [ $? = 3 ]
  read -r os _ < <(cpu "$at/offline.time")
  read -r fs fm < <(cpu "$at/follow.time")
  read -r ls lm < <(cpu "$at/loop.time")
  ratio=$(ratio "$fs" "$ls")
  ratios+=("$ratio")
  if [ -n "$base" ]; then
    read -r bs _ < <(cpu "$at/base.time")
    base_ratios+=("$(ratio "$fs" "$bs")")
  fi
  printf '| %d | %d (follow %d, loop %d) | %.1f ms | %.1f ms | %s | %d MiB | %d MiB | %.1f ms |\n' \
    "$r" "$n" "$(fixed "$at/follow/out")" "$(fixed "$at/loop/out")" \
    "$(awk -v s="$fs" -v n="$n" 'BEGIN { print 1000 * s / n }')" \
    "$(awk -v s="$ls" -v n="$n" 'BEGIN { print 1000 * s / n }')" "$ratio" \
    $((fm / 1024)) $((lm / 1024)) "$(awk -v s="$os" -v n="$n" 'BEGIN { print 1000 * s / n }')"
  rm -rf "$at"
done
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "follow / loop, CPU, the median over rounds: $(printf '%s\n' "${ratios[@]}" | median)"
[ -z "$base" ] ||
  echo "follow / base follow, CPU, the median over rounds: $(printf '%s\n' "${base_ratios[@]}" | median)"
