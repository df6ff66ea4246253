#!/usr/bin/env bash
# pdfix export against Google's perf_to_profile (perf_data_converter), the converter fleets use
# today, on the gate's dense system-wide -g recording (bench/lib.sh): time and peak RSS, medians
# of RUNS runs interleaved, page cache warm; then what each wrote: total samples per event and the
# leaves' distribution by function (pdfix's names as export wrote them; perf_to_profile's as `go
# tool pprof` names its addresses from the binaries here, which is how its users read it).
#
#   bash bench/perf_to_profile.sh SRC [RUNS]
#
# SRC: a checkout of https://github.com/google/perf_data_converter (measured at e2c2da7). It is
# built here, outside pdfix's build, with g++ -O2 against Debian's protobuf, abseil, gflags,
# OpenSSL, libelf and zlib (its Bazel build wants newer ones than Debian 12 has), into the bench
# directory.
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
src=$(realpath "$1")
runs=${2:-3}
pdfix=$PWD/build/pdfix
p2p=$work/perf_to_profile/perf_to_profile

build_perf_to_profile() {
  local out=$work/perf_to_profile
  for pkg in libgflags-dev libssl-dev libelf-dev libprotobuf-dev protobuf-compiler libabsl-dev zlib1g-dev; do
    dpkg -s "$pkg" >/dev/null 2>&1 || apt-get install -y -q "$pkg" >/dev/null
  done
  rm -rf "$out" && mkdir -p "$out/gen" "$out/obj"
  (cd "$src" && protoc -I. --cpp_out="$out/gen" src/profile.proto src/quipper/perf_data.proto \
    src/quipper/perf_parser_options.proto src/quipper/perf_stat.proto)
  local s
  # Its sources but tests, fuzzers and the other programs (quipper, perf_converter, the recorder).
  for s in "$src"/src/*.cc "$src"/src/quipper/*.cc "$src"/src/quipper/base/*.cc \
    "$src"/src/quipper/compat/*.cc "$out"/gen/src/*.cc "$out"/gen/src/quipper/*.cc; do
    case $(basename "$s") in
    *_test.cc | test_*.cc | *fuzzer*.cc | quipper.cc | quipper_lib.cc | perf_converter.cc | perf_recorder.cc) continue ;;
    esac
    echo "$s"
  done | xargs -P "$(nproc)" -I{} sh -c 'g++ -std=c++17 -O2 -DNDEBUG -w -I"$1" -I"$1/src/quipper" \
      -I"$2/gen" -I"$2/gen/src/quipper" -c "$3" -o "$2/obj/$(echo "$3" | md5sum | cut -c1-16).o"' \
    _ "$src" "$out" {}
  g++ -O2 -o "$p2p" "$out"/obj/*.o -lprotobuf -lgflags -lcrypto -lz -lelf -labsl_raw_hash_set \
    -labsl_hash -labsl_city -labsl_low_level_hash -lpthread
}
[ -x "$p2p" ] || build_perf_to_profile

[ -s "$work/dense.data" ] || record_dense "$work/dense.data"
in=$work/dense.data
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
rm -f "$work"/p2p-*.s "$work"/p2p-*.rss
for _ in $(seq "$runs"); do
  read -r s rss < <(time_of "$pdfix" export -q "$in" "$work/ours.pb.gz")
  echo "$s" >>"$work/p2p-ours.s"
  echo "$rss" >>"$work/p2p-ours.rss"
  read -r s rss < <(time_of "$p2p" -i "$in" -o "$work/theirs.pb.gz" -f)
  echo "$s" >>"$work/p2p-theirs.s"
  echo "$rss" >>"$work/p2p-theirs.rss"
done
a=$(median "$work/p2p-ours.s")
b=$(median "$work/p2p-theirs.s")
ra=$(median "$work/p2p-ours.rss")
rb=$(median "$work/p2p-theirs.rss")
echo "export against perf_to_profile, dense $(($(stat -c %s "$in") >> 20)) MiB, medians of $runs runs"
printf '%-32s %9s %9s %9s %9s\n' jobs time ratio 'RSS MiB' ratio
printf '%-32s %9s %9s %9s %9s\n' "export / perf_to_profile" "$a / $b" "$(ratio "$a" "$b")" \
  "$((${ra%.*} / 1024)) / $((${rb%.*} / 1024))" "$(ratio "$ra" "$rb")"

# What each wrote. perf_to_profile makes its first sample type perf's dummy event (pprof's default
# then shows 0 samples): its cpu-clock column is asked for by name. It names nothing, and pprof
# names none of its dense recording's frames from the binaries here either (it shows [dash],
# [libc.so.6]): the leaves are compared by address, which is finer than by function.
go tool pprof -raw -symbolize=none "$work/ours.pb.gz" >"$work/ours.raw" 2>/dev/null
event=$(awk '/\[dflt\]/ { sub("/count\\[dflt\\]", "", $1); print $1; exit }' "$work/ours.raw")
top() { go tool pprof -top -addresses -symbolize=none -nodecount=1000000 -nodefraction=0 -edgefraction=0 "$@" 2>/dev/null |
  awk '/flat%/ { t = 1; next } t && NF >= 6 { print $1 "\t" $6 }'; }
top "$work/ours.pb.gz" >"$work/ours.top"
top -sample_index="${event}_sample" "$work/theirs.pb.gz" >"$work/theirs.top"
awk -F'\t' -v event="$event" '
  FNR == 1 { file++ }
  file == 1 { ours[$2] += $1; a += $1 }
  file == 2 { theirs[$2] += $1; b += $1 }
  END {
    for (f in ours) names[f] = 1
    for (f in theirs) names[f] = 1
    for (f in names) { d = ours[f] / a - theirs[f] / b; d = d < 0 ? -d : d; if (d > worst) { worst = d; at = f }; same += (ours[f] / a < theirs[f] / b ? ours[f] / a : theirs[f] / b) }
    printf "%s samples: export %d, perf_to_profile %d\n", event, a, b
    printf "leaves by address: %.2f%% of the samples alike; the largest difference %.3f%%%s\n", 100 * same, 100 * worst, (worst > 0 ? " (at " at ")" : "")
  }' "$work/ours.top" "$work/theirs.top"
