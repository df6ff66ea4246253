#!/usr/bin/env bash
# pdfix inject --buildids and pdfix fix (every repair pass) against cp and perf inject -b on the
# same recordings, in the same run:
# a sample-dense system-wide one (many small records) and a --call-graph dwarf one (few large
# records). hyperfine times each command with the page cache warm, by two methods:
#   fresh:    the output removed and dirty pages written back before every run (rm -f OUT; sync);
#   existing: the output left from the run before, its writeback still pending (nothing between
#             runs), as when a script runs one command after another.
# Times are medians (this kind of VM has outliers of +50% now and then); ratios are of the
# medians, with the ratio of the means in brackets. Peak RSS from one more run.
# Two more commands in the same run give pdfix's floor on this machine: reading the recording
# once (dd bs=256K to /dev/null: what framing it costs at least) and pdfix's start-up alone
# (pdfix --version).
#
#   bash bench/inject_vs_perf.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
runs=${1:-20}

ensure_recordings

printf '%-8s %-8s %5s %7s %9s %7s %8s %7s %8s %13s %13s %14s %9s %8s\n' recording method MiB \
  'cp ms' 'inject ms' 'fix ms' 'perf ms' 'read ms' 'start ms' inject/cp fix/cp perf/cp pdfix_rss \
  perf_rss
for name in dense dwarf; do
  in=$work/$name.data
  out=$work/out.data
  for method in fresh existing; do
    prepare="sh -c 'rm -f $out; sync'"
    [ "$method" = fresh ] || prepare=true
    hyperfine -N --style none --warmup 2 --runs "$runs" --export-json "$work/$name.json" \
      --prepare "$prepare" \
      "cp $in $out" "build/pdfix inject --buildids $in $out" "build/pdfix fix $in $out" \
      "perf inject -b -i $in -o $out" "dd if=$in of=/dev/null bs=256K status=none" \
      "build/pdfix --version" >/dev/null
    read -r c p x f rd st pr xr fr < <(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["results"]
med = [x["median"] for x in r]
mean = [x["mean"] for x in r]
print(" ".join(f"{m*1000:.1f}" for m in med),
      " ".join(f"{med[i]/med[0]:.2f}({mean[i]/mean[0]:.2f})" for i in (1, 2, 3)))' \
      "$work/$name.json")
    rm -f "$out"
    read -r _ pm < <(time_of build/pdfix inject --buildids "$in" "$out")
    rm -f "$out"
    read -r _ fm < <(time_of perf inject -b -i "$in" -o "$out")
    rm -f "$out"
    printf '%-8s %-8s %5d %7s %9s %7s %8s %7s %8s %13s %13s %14s %8dM %7dM\n' "$name" \
      "$method" $(($(stat -c %s "$in") / 1048576)) "$c" "$p" "$x" "$f" "$rd" "$st" "$pr" "$xr" \
      "$fr" $((pm / 1024)) $((fm / 1024))
  done
done
