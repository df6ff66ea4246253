# Shared by the bench scripts: their work directory, timing with peak RSS, and the recordings
# they use.

# $PDFIX_BENCH_DIR keeps recordings between runs; otherwise a temporary directory, removed at exit.
work=${PDFIX_BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
trap '[ -n "${PDFIX_BENCH_DIR:-}" ] || rm -rf "$work"' EXIT

# Prints "<seconds> <peak RSS KiB>" for a command (its own output discarded). Dirty pages of the
# previous run are written back first, so no command pays for another's writeback.
time_of() {
  local rss
  rss=$(mktemp)
  sync
  local start=$EPOCHREALTIME
  /usr/bin/time -f '%M' -o "$rss" "$@" >/dev/null 2>&1
  local end=$EPOCHREALTIME
  echo "$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }') $(cat "$rss")"
  rm -f "$rss"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

# Two busy CPUs for a few seconds.
workload() { sh -c 'for c in 1 2; do (i=0; while [ $i -lt '"${1:-3000000}"' ]; do i=$((i+1)); done) & done; wait'; }

# record_dwarf FILE [HZ]: a --call-graph dwarf recording (8 KiB of stack a sample): a few hundred
# MB at the default 4000 Hz, about 75 MB at 1800.
record_dwarf() {
  perf record -q --call-graph dwarf -F "${2:-4000}" -o "$1" -- \
    sh -c "$(declare -f workload); workload" 2>/dev/null
}

# record_sized FILE MB PERF_RECORD_OPTION... -- COMMAND...: a recording of MB megabytes (MiB) on
# any machine. Sized in seconds, the same recording was 85 MB on one machine of this kind and
# 305 MB on another (900 MB for a DWARF one), and copying it ten times a round made cp itself
# swing by half. perf stops at the size (--max-size) and ends the command, which should outlast
# it: its status is then the command's SIGTERM, and what tells success is the size. Under 50 MB
# (the gate's floor) it fails, saying why.
record_sized() {
  local file=$1 mb=$2
  shift 2
  rm -f "$file"
  perf record -q --max-size="${mb}M" -o "$file" "$@" 2>"$file.log" || true
  local size
  size=$(stat -c %s "$file" 2>/dev/null || echo 0)
  if [ "$size" -lt $((50 << 20)) ]; then
    echo "bench: $file is $((size >> 20)) MB, under 50 MB: perf record $*" >&2
    tail -n 20 "$file.log" >&2
    rm -f "$file"
    return 1
  fi
  rm -f "$file.log"
}

# record_dense FILE: a sample-dense system-wide recording: many small records (90 MiB). The load,
# two busy shells, is a session of its own, so that perf's TERM to the first (at the size) ends
# both; two minutes at most.
record_dense() {
  record_sized "$1" 90 -a -g -F 20000 -- timeout 120 setsid sh -c \
    'trap "trap - TERM; kill 0" TERM; for c in 1 2; do (i=0; while :; do i=$((i+1)); done) & done; wait'
}

# The dense and the dwarf recordings in $work, recorded unless kept from an earlier run.
ensure_recordings() {
  [ -s "$work/dense.data" ] || record_dense "$work/dense.data"
  [ -s "$work/dwarf.data" ] || record_dwarf "$work/dwarf.data"
}

# A chunk sequence in $work/chunks, recorded unless kept: `perf record -a -g --switch-output=2s`
# over 45 s of C++ compiles (by time, not by count, so that a fast machine makes as many chunks as
# a slow one), 20 chunks or more. A workload that fails says so: under `set -e` a silent non-zero
# perf record would end the caller with no word.
ensure_chunks() {
  if [ "$(find "$work/chunks" -name 'perf.data.*' 2>/dev/null | wc -l)" -lt 20 ]; then
    rm -rf "$work/chunks"
    mkdir -p "$work/chunks"
    perf record -q -a -g --switch-output=2s -o "$work/chunks/perf.data" -- bash -c \
      'end=$((SECONDS + 45)); while [ $SECONDS -lt $end ]; do
         g++ -std=c++20 -O2 -c src/format/records.cc -Isrc -o /dev/null || exit 1; done' \
      2>"$work/chunks.log" || {
      echo "bench: recording the chunk sequence failed:" >&2
      tail -n 20 "$work/chunks.log" >&2
      return 1
    }
  fi
}
