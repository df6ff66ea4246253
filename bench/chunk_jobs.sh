#!/usr/bin/env bash
# The gate's chunk job, one command a run (bench/gate_rounds.py runs commands, not shell):
#   loop    `pdfix fix -q --store CHUNK OUT/CHUNK` for each chunk, one process each: what a user
#           scripts without follow;
#   follow  `pdfix follow -q --once --store CHUNKS OUT`, one process.
# OUT is emptied first (the same cost in both); HOME holds the store, already filled, as a
# days-long run's is. A chunk fixed with something missing (exit 3: a program of the recording
# upgraded since) is fixed all the same.
#
#   bash bench/chunk_jobs.sh loop|follow PDFIX CHUNKS OUT HOME
set -euo pipefail
job=$1 pdfix=$2 chunks=$3 out=$4 home=$5
rm -rf "$out"
mkdir -p "$out"
case $job in
  loop)
    for c in "$chunks"/perf.data.*; do
      HOME=$home "$pdfix" fix -q --store "$c" "$out/$(basename "$c")" || [ $? = 3 ]
    done
    ;;
  follow) HOME=$home "$pdfix" follow -q --once --store "$chunks" "$out" || [ $? = 3 ] ;;
  *)
    echo "chunk_jobs: loop or follow, not $job" >&2
    exit 2
    ;;
esac
