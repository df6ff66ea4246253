#!/usr/bin/env bash
# pdfix archive against perf archive on the same recording, in the same run: time and bundle size.
#
# The recording: perf record -a -g of a few seconds of shell and Python work, made here, with
# perf's build-id cache filled by perf record itself (what `perf buildid-cache` would add), then
# fixed by pdfix so that every map has its id. perf archive packs the binaries that samples hit
# from that cache (tar.bz2, the recording not included); pdfix archive packs the recording and
# every binary it names (or only those hit, --hits) from the files themselves (tar.zst).
# hyperfine times each with the page cache warm, the output removed before each run; medians.
# Sizes: perf's bundle plus the recording beside it, against pdfix's one file.
#
#   bash bench/archive_vs_perf.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=${1:-10}

rec=$work/archive.data
cache=$work/perf-cache
if [ ! -s "$rec.fixed" ]; then
  rm -rf "$cache"
  perf --buildid-dir "$cache" record -q -a -g -F 2000 -o "$rec" -- sh -c \
    "$(declare -f workload); workload 2000000; python3 -c 'sum(i*i for i in range(3000000))'" \
    2>/dev/null
  build/pdfix fix "$rec" "$rec.fixed" 2>/dev/null
fi

export PERF_BUILDID_DIR=$cache
hyperfine -N --style none --warmup 1 --runs "$runs" --export-json "$work/archive.json" \
  --prepare "rm -f $rec.fixed.tar.bz2 $work/all.tar.zst $work/hits.tar.zst" \
  "perf archive $rec.fixed" \
  "build/pdfix archive $rec.fixed $work/all.tar.zst" \
  "build/pdfix archive --hits $rec.fixed $work/hits.tar.zst" >/dev/null
perf archive "$rec.fixed" >/dev/null 2>&1
build/pdfix archive "$rec.fixed" "$work/all.tar.zst" 2>/dev/null
build/pdfix archive --hits "$rec.fixed" "$work/hits.tar.zst" 2>/dev/null

read -r perf_ms all_ms hits_ms < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
print(" ".join("%.0f" % (x["median"] * 1000) for x in r))' "$work/archive.json")
data=$(stat -c %s "$rec.fixed")
perf_bundle=$(stat -c %s "$rec.fixed.tar.bz2")
all=$(stat -c %s "$work/all.tar.zst")
hits=$(stat -c %s "$work/hits.tar.zst")
count() { tar -tf "$1" 2>/dev/null | grep -c -E '/(elf|kallsyms|vdso)$' || true; }

echo "recording: $((data / 1024)) KiB; times are medians of $runs runs"
printf '%-26s %9s %10s %14s %12s %13s\n' command 'time ms' binaries 'bundle KiB' '+perf.data' \
  'size/perf'
printf '%-26s %9s %10s %14s %12s %13s\n' "perf archive" "$perf_ms" "$(count "$rec.fixed.tar.bz2")" \
  $((perf_bundle / 1024)) $(((perf_bundle + data) / 1024)) 1.00
printf '%-26s %9s %10s %14s %12s %13s\n' "pdfix archive --hits" "$hits_ms" "$(count "$work/hits.tar.zst")" \
  $((hits / 1024)) $((hits / 1024)) "$(ratio "$hits" $((perf_bundle + data)))"
printf '%-26s %9s %10s %14s %12s %13s\n' "pdfix archive" "$all_ms" "$(count "$work/all.tar.zst")" \
  $((all / 1024)) $((all / 1024)) "$(ratio "$all" $((perf_bundle + data)))"
read -r _ rss < <(time_of build/pdfix archive "$rec.fixed" "$work/rss.tar.zst")
rm -f "$work/rss.tar.zst"
echo "pdfix archive peak RSS: $((rss / 1024)) MiB"
echo "time pdfix archive --hits / perf archive: $(ratio "$hits_ms" "$perf_ms");" \
  "pdfix archive / perf archive: $(ratio "$all_ms" "$perf_ms")"
rm -f "$rec.fixed.tar.bz2"
