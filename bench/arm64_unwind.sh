#!/usr/bin/env bash
# pdfix unwind of the arm64 corpus's --call-graph dwarf recordings (corpora/arm64, recorded in a
# Debian 12 arm64 VM) on this x86-64 host, with the corpus's sysroot, against perf script of the
# same files here: what an analysis host that receives raw arm64 recordings has. perf 6.1 reads
# them but cannot unwind them ("unwind: target platform=arm64 is not supported"): its time is
# reading and naming without user callchains, so the ratio is an upper bound of pdfix's cost over
# perf's reading. The times in the VM itself are emulated (TCG) and not compared. hyperfine, page
# cache warm; medians, ratios of medians, and peak RSS.
#
#   bash bench/arm64_unwind.sh [RUNS]     (10 by default)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=${1:-10}
pdfix=$PWD/build/pdfix
corpus=$PWD/corpora/arm64
sysroot=$work/arm64-sysroot
rm -rf "$sysroot" && mkdir -p "$sysroot"
tar -xJSf "$corpus/sysroot.tar.xz" -C "$sysroot"

for name in dwarf-pac dwarf-python dwarf-shell; do
  in=$corpus/$name.data out=$work/arm64-unwound.data
  unwind="$pdfix unwind -q --sysroot $sysroot $in $out"
  script="perf script -i $in --symfs $sysroot -F comm,tid,time,ip,sym,dso --no-inline"
  hyperfine -N --style none --warmup 2 --runs "$runs" --export-json "$work/arm64.json" \
    --prepare "rm -f $out" "$unwind" "$script" > /dev/null
  read -r _ pdfix_rss < <(time_of $unwind)
  read -r _ perf_rss < <(time_of $script)
  python3 - "$name" "$work/arm64.json" "$(stat -c %s "$in")" "$pdfix_rss" "$perf_rss" <<'PY'
import json, sys
name, path = sys.argv[1], sys.argv[2]
size, pdfix_rss, perf_rss = map(int, sys.argv[3:])
pdfix, perf = (r["median"] * 1000 for r in json.load(open(path))["results"])
print(f"{name} ({size / 2**20:.1f} MiB): pdfix unwind {pdfix:.1f} ms, perf script {perf:.1f} ms "
      f"({pdfix / perf:.2f}x); peak RSS {pdfix_rss // 1024} MiB vs {perf_rss // 1024} MiB "
      f"({pdfix_rss / perf_rss:.2f}x)")
PY
done
