#!/usr/bin/env bash
# pdfix on a filesystem that shares blocks between files: an XFS image with reflinks
# (mkfs.xfs -m reflink=1), loop-mounted for the run and torn down after. The dense and the dwarf
# recordings of inject_vs_perf.sh are copied onto it; then cp (coreutils 9 clones: FICLONE),
# pdfix inject --buildids, pdfix fix, pdfix copy and a second pdfix fix (of fix's output) each
# write onto the image, in one hyperfine run per recording. Method "fresh": the output removed and
# dirty pages written back before every run. Times are medians; ratios of the medians to cp's,
# with the ratio of the means in brackets. Needs root (mount) and xfsprogs (scripts/setup.sh).
#
#   bash bench/clone_vs_cp.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=${1:-20}

ensure_recordings

image=$(mktemp -p "${TMPDIR:-/var/tmp}" pdfix-xfs.XXXXXX)
mnt=$(mktemp -d -p "${TMPDIR:-/var/tmp}" pdfix-xfs-mnt.XXXXXX)
cleanup() {
  mountpoint -q "$mnt" && umount "$mnt"
  rm -rf "$image" "$mnt"
  [ -n "${PDFIX_BENCH_DIR:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
need=$(($(stat -c %s "$work/dense.data") + $(stat -c %s "$work/dwarf.data")))
truncate -s $((need * 4 + (512 << 20))) "$image"
mkfs.xfs -q -m reflink=1 "$image"
mount -o loop "$image" "$mnt"

printf '%-6s %5s %6s %9s %7s %7s %9s %11s %11s %11s %11s\n' recording MiB 'cp ms' 'inject ms' \
  'fix ms' 'copy ms' 'refix ms' inject/cp fix/cp copy/cp refix/cp
for name in dense dwarf; do
  in=$mnt/$name.data
  cp "$work/$name.data" "$in"
  build/pdfix fix "$in" "$mnt/fixed.data" 2>/dev/null
  out=$mnt/out.data
  hyperfine -N --style none --warmup 2 --runs "$runs" --export-json "$work/clone-$name.json" \
    --prepare "sh -c 'rm -f $out; sync'" \
    "cp $in $out" "build/pdfix inject --buildids $in $out" "build/pdfix fix $in $out" \
    "build/pdfix copy $in $out" "build/pdfix fix $mnt/fixed.data $out" >/dev/null
  read -r c i f y r ratios < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
med = [x["median"] for x in r]
mean = [x["mean"] for x in r]
print(" ".join(f"{m*1000:.1f}" for m in med),
      " ".join(f"{med[i]/med[0]:.1f}({mean[i]/mean[0]:.1f})" for i in (1, 2, 3, 4)))' \
    "$work/clone-$name.json")
  printf '%-6s %5d %6s %9s %7s %7s %9s %11s %11s %11s %11s\n' "$name" \
    $(($(stat -c %s "$in") / 1048576)) "$c" "$i" "$f" "$y" "$r" $ratios
  # The bytes are the ones the ordinary path writes.
  build/pdfix inject --buildids "$in" "$out" 2>/dev/null
  build/pdfix inject --buildids "$work/$name.data" "$work/ordinary.data" 2>/dev/null
  cmp -s "$out" "$work/ordinary.data" || { echo "$name: cloned output differs" >&2; exit 1; }
  echo "       shared extents of inject's output: $(filefrag -v "$out" | grep -c shared)"
  rm -f "$in" "$out" "$mnt/fixed.data" "$work/ordinary.data"
done
