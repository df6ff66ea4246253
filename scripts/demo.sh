#!/usr/bin/env bash
# Sets pdfix up, then runs its main job, pdfix fix, on a real recording: one made here with
# `perf record -B` (no build-ids at record time) when perf may record, else the small recording
# shipped in corpora/. Builds only pdfix.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh pdfix

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
input=$work/run.data
if perf record -q -B -g -o "$input" -- sh -c 'i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done' \
    2>/dev/null; then
  echo "== recorded $input with perf record -B -g" >&2
else
  input=corpora/sleep-B.data
  echo "== perf may not record here; using the shipped $input" >&2
fi

set -x
build/pdfix info "$input"
build/pdfix fix -v "$input" "$work/fixed.data"
perf script --show-mmap-events -i "$work/fixed.data" 2>/dev/null | grep PERF_RECORD_MMAP | sed -n 1,8p
perf buildid-list -i "$work/fixed.data"
build/pdfix buildid-list "$work/fixed.data"
build/pdfix copy "$input" "$work/copy.data"
cmp "$input" "$work/copy.data"
build/pdfix archive "$work/fixed.data" "$work/run.tar.zst"
build/pdfix unpack "$work/run.tar.zst" "$work/unpacked"
perf --buildid-dir "$work/unpacked/.debug" report -i "$work/unpacked/perf.data" --stdio \
  --sort dso,sym 2>/dev/null | grep -v '^#' | grep -v '^$' | sed -n 1,8p
{ set +x; } 2>/dev/null
echo "== fix gave the maps their build-ids; copy wrote a byte-identical perf.data; archive" \
  "bundled the binaries the ids name, and perf reports the unpacked bundle with them" >&2
