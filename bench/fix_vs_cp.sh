#!/usr/bin/env bash
# pdfix fix, inject and copy against cp, on XFS with reflinks (mkfs.xfs -m reflink=1, where cp
# clones the whole file) and on ext4, each a loop-mounted image (needs root; torn down after), on
# the dense shape and on a --call-graph dwarf recording of about 75 MB. In the same run: a second
# fix of fix's own output, the header walk (bench/header_walk.cc: every record header of the data
# section and nothing else, by pread in 256 KiB chunks and through a mapping) as the floor for any
# tool that frames the recording, and start-up (pdfix --version against cp --version).
#
# Paired runs: each round runs every command once, in turn, so that the machine's drifts hit all
# of them alike; the figures are medians over the rounds, and ratios of medians to cp's. Method
# "fresh": OUT removed and dirty pages written back (sync) before every run. Each recording is
# copied onto the image, its cached pages dropped and read back once, as a recording is cached
# after perf wrote it. The outputs on the two filesystems are compared byte for byte.
#
#   bash bench/fix_vs_cp.sh [ROUNDS]     (10 by default; PDFIX_BENCH_DIR keeps the recordings)
#
# PDFIX_BASELINE=OTHER/pdfix adds that build's fix to every round (column "base"), to compare two
# versions of pdfix in one run.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
rounds=${1:-10}
pdfix=$PWD/build/pdfix
walk=$PWD/build/bench/pdfix_header_walk
base=${PDFIX_BASELINE:-}

[ -s "$work/dense.data" ] || record_dense "$work/dense.data"
[ -s "$work/dwarf75.data" ] || record_dwarf "$work/dwarf75.data" 1800

images=()
mounts=()
cleanup() {
  for m in "${mounts[@]}"; do mountpoint -q "$m" && umount "$m"; done
  rm -rf "${images[@]}" "${mounts[@]}"
  [ -n "${PDFIX_BENCH_DIR:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
need=$(($(stat -c %s "$work/dense.data") + $(stat -c %s "$work/dwarf75.data")))
for fs in xfs ext4; do
  image=$(mktemp -p "${TMPDIR:-/var/tmp}" "pdfix-$fs.XXXXXX")
  mnt=$(mktemp -d -p "${TMPDIR:-/var/tmp}" "pdfix-$fs-mnt.XXXXXX")
  images+=("$image")
  mounts+=("$mnt")
  truncate -s $((need * 5 + (512 << 20))) "$image"
  if [ "$fs" = xfs ]; then mkfs.xfs -q -m reflink=1 "$image"; else mkfs.ext4 -q -F "$image"; fi
  mount -o loop "$image" "$mnt"
done

# One round: every command of "$@" once, in turn, timed by hyperfine (no shell between), each
# after `rm -f $out; sync`; appends "<command index> <ms>" lines to $times.
round() {
  local json=$work/round.json
  hyperfine -N --runs 1 --style none --export-json "$json" --prepare "sh -c 'rm -f $out; sync'" \
    "$@" >/dev/null 2>&1
  python3 -c '
import json, sys
for i, r in enumerate(json.load(open(sys.argv[1]))["results"]):
    print(i, r["times"][0] * 1000)' "$json" >>"$times"
}

# Start-up, paired the same way.
out=$work/none.data
times=$work/startup.txt
: >"$times"
for ((r = 0; r < rounds * 3; r++)); do round "cp --version" "$pdfix --version"; done
python3 - "$times" <<'PY'
import statistics, sys
runs = {}
for line in open(sys.argv[1]):
    i, t = line.split()
    runs.setdefault(int(i), []).append(float(t))
cp, pdfix = statistics.median(runs[0]), statistics.median(runs[1])
print(f"start-up: cp --version {cp:.2f} ms, pdfix --version {pdfix:.2f} ms ({pdfix - cp:+.2f} ms)")
PY

printf '%-5s %-7s %4s %6s %6s %7s %6s %6s %6s %7s %6s  %7s %7s %7s %7s %7s %7s %5s\n' fs shape \
  MiB 'cp' fix inject copy refix walk 'walk-mm' base fix/cp inj/cp copy/cp refix/cp walk/cp \
  base/cp 'RSS'
for i in 0 1; do
  fs=$([ $i = 0 ] && echo xfs || echo ext4)
  mnt=${mounts[$i]}
  for shape in dense dwarf75; do
    in=$mnt/$shape.data
    out=$mnt/out.data
    fixed=$mnt/fixed.data
    cp "$work/$shape.data" "$in"
    python3 -c 'import os, sys; fd = os.open(sys.argv[1], os.O_RDONLY); os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)' "$in"
    cat "$in" >/dev/null
    "$pdfix" fix -q "$in" "$fixed"
    times=$work/times-$fs-$shape.txt
    : >"$times"
    for ((r = 0; r < rounds; r++)); do
      round "cp $in $out" "$pdfix fix -q $in $out" "$pdfix inject -q --buildids $in $out" \
        "$pdfix copy $in $out" "$pdfix fix -q $fixed $out" "$walk $in" "$walk --mmap $in" \
        ${base:+"$base fix -q $in $out"}
    done
    rm -f "$out"
    rss=$( (/usr/bin/time -f '%M' "$pdfix" fix -q "$in" "$out") 2>&1 | tail -1)
    cp "$out" "$work/$fs-$shape.out"
    python3 - "$times" "$fs" "$shape" "$(($(stat -c %s "$in") / 1048576))" "$rss" <<'PY'
import statistics, sys
times, fs, shape, mib, rss = sys.argv[1:]
cols = ["cp", "fix", "inject", "copy", "refix", "walk", "walk-mm", "base"]
runs = {}
for line in open(times):
    i, t = line.split()
    runs.setdefault(cols[int(i)], []).append(float(t))
runs.setdefault("base", [float("nan")])
med = {c: statistics.median(v) for c, v in runs.items()}
ratios = [med[c] / med["cp"] for c in ("fix", "inject", "copy", "refix", "walk", "base")]
print(f"{fs:<5} {shape:<7} {mib:>4} " + " ".join(f"{med[c]:6.1f}" for c in cols) + "  " +
      " ".join(f"{r:6.2f}x" for r in ratios) + f" {int(rss) // 1024:4d}M")
PY
    rm -f "$in" "$out" "$fixed"
  done
done
for shape in dense dwarf75; do
  cmp -s "$work/xfs-$shape.out" "$work/ext4-$shape.out" ||
    { echo "$shape: fix's output on XFS differs from ext4's" >&2; exit 1; }
  rm -f "$work/xfs-$shape.out" "$work/ext4-$shape.out"
done
echo "(milliseconds, medians of $rounds paired rounds; fix's outputs on XFS and ext4 are identical)"
