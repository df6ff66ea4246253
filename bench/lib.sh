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

# record_dense FILE: a sample-dense system-wide recording: many small records (about 85 MB).
record_dense() {
  perf record -q -a -g -F 20000 -o "$1" -- sh -c "$(declare -f workload); workload 9000000" \
    2>/dev/null
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
