#!/usr/bin/env bash
# Installs everything pdfix needs from Debian's packages and builds it into build/: every target,
# or only those named (bash scripts/setup.sh pdfix). Safe to run again: apt-get skips what is
# installed and the build is incremental.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  cmake ninja-build g++ pkg-config ccache
  llvm-19-dev libzstd-dev libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  liblzma-dev zlib1g-dev libdebuginfod-dev libcli11-dev libarchive-dev libprotobuf-dev protobuf-compiler
  linux-perf debuginfod hotspot xfsprogs zstd xz-utils gzip python3 hyperfine time
  nodejs openjdk-17-jdk-headless podman runc mmdebstrap golang-go libc6-dbg stress-ng
  man-db bsdextrautils strace inotify-tools
  clang-format-19 clang-tidy-19 clang-19 lld-19 libfuzzer-19-dev libclang-rt-19-dev
)

as_root=()
[ "$(id -u)" = 0 ] || as_root=(sudo)
echo "== installing build and test dependencies (apt-get)" >&2
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends \
  "${packages[@]}" >/dev/null

echo "== building pdfix into build/" >&2
# PDFIX_WERROR=ON (scripts/test.sh, CI) makes every warning an error.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPDFIX_WERROR="${PDFIX_WERROR:-OFF}" \
  >/dev/null
if [ $# -gt 0 ]; then cmake --build build --target "$@"; else cmake --build build; fi
