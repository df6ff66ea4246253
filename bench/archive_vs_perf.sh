#!/usr/bin/env bash
# pdfix archive against perf archive on the same recordings, in the same run: time, bundle bytes
# and peak RSS.
#
# Two recordings, each made here with perf's build-id cache filled by perf record itself (what
# `perf buildid-cache` would add), then fixed by pdfix so that every map has its id:
#   system: perf record -a -g of a few seconds of shell and Python work;
#   libllvm: perf record -g of llvm-objdump-19 -d /usr/bin/perf, whose time is in Debian's 129 MB
#            libLLVM (and which maps some 50 libraries).
# perf archive packs the binaries that samples hit from that cache, whole (tar.bz2, the recording
# not included); pdfix archive packs the recording and every binary it names (or only those hit,
# --hits) from the files themselves (tar.zst): slim copies by default, whole ones with
# --with-code. hyperfine times each with the page cache warm, the output removed before each run;
# medians. Sizes: perf's bundle plus the recording beside it, against pdfix's one file.
#
#   bash bench/archive_vs_perf.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=${1:-10}

# record NAME COMMAND...: $work/NAME.data.fixed, with its own perf cache at $work/NAME-cache.
record() {
  local name=$1
  shift
  local rec=$work/$name.data
  if [ ! -s "$rec.fixed" ]; then
    rm -rf "$work/$name-cache"
    perf --buildid-dir "$work/$name-cache" record -q -g "$@" >/dev/null 2>&1
    build/pdfix fix "$rec" "$rec.fixed" 2>/dev/null
  fi
}

row() {
  printf '%-30s %9s %10s %12s %12s %10s %9s\n' "$@"
}

# compare NAME: the table for $work/NAME.data.fixed.
compare() {
  local name=$1 rec=$work/$1.data.fixed
  export PERF_BUILDID_DIR=$work/$name-cache
  hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$work/$name.json" \
    --prepare "rm -f $rec.tar.bz2 $work/$name-*.tar.zst" \
    "perf archive $rec" \
    "build/pdfix archive --hits $rec $work/$name-hits.tar.zst" \
    "build/pdfix archive $rec $work/$name-all.tar.zst" \
    "build/pdfix archive --with-code $rec $work/$name-code.tar.zst" >/dev/null
  local times
  read -r -a times < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
print(" ".join("%.0f" % (x["median"] * 1000) for x in r))' "$work/$name.json")
  local data perf_bundle perf_rss
  data=$(stat -c %s "$rec")
  read -r _ perf_rss < <(time_of perf archive "$rec")
  perf_bundle=$(stat -c %s "$rec.tar.bz2")
  local perf_total=$((perf_bundle + data))
  echo "$name: recording $((data / 1024)) KiB; times are medians of $runs runs"
  row command 'time ms' 'time/perf' 'bundle KiB' 'bytes/perf' 'RSS MiB' binaries
  row "perf archive (+perf.data)" "${times[0]}" 1.00 $((perf_total / 1024)) 1.00 \
    $((perf_rss / 1024)) "$(tar -tf "$rec.tar.bz2" 2>/dev/null | grep -c -E '/(elf|kallsyms|vdso)$' || true)"
  local i=1 what
  for what in "hits:--hits" "all:" "code:--with-code"; do
    local file=$work/$name-${what%%:*}.tar.zst flags=${what#*:}
    local bytes rss
    # shellcheck disable=SC2086
    read -r _ rss < <(time_of build/pdfix archive $flags "$rec" "$file")
    bytes=$(stat -c %s "$file")
    row "pdfix archive ${flags:-(slim)}" "${times[$i]}" "$(ratio "${times[$i]}" "${times[0]}")" \
      $((bytes / 1024)) "$(ratio "$bytes" "$perf_total")" $((rss / 1024)) \
      "$(zstd -dc "$file" | tar -tf - | grep -c -E '/(elf|kallsyms|vdso|debug)$' || true)"
    i=$((i + 1))
  done
  echo "slim / with code, bytes: $(ratio "$(stat -c %s "$work/$name-all.tar.zst")" \
    "$(stat -c %s "$work/$name-code.tar.zst")")"
  rm -f "$rec.tar.bz2"
  echo
}

record system -a -F 2000 -o "$work/system.data" -- sh -c \
  "$(declare -f workload); workload 2000000; python3 -c 'sum(i*i for i in range(3000000))'"
record libllvm -o "$work/libllvm.data" -- llvm-objdump-19 -d /usr/bin/perf
compare system
compare libllvm
