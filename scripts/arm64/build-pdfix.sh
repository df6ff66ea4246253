#!/bin/bash
# Builds pdfix for arm64 in the Debian 12 arm64 root that make-corpus.sh made (under qemu-user, by
# binfmt_misc). The unit tests and a fix of each recording then run in the VM itself
# (PDFIX_IN_VM_ONLY=1 make-corpus.sh): qemu-user gives a chroot no /proc/self/exe and no vdso,
# which the tests read.
#
#   bash scripts/arm64/build-pdfix.sh [WORKDIR]     (root; WORKDIR as for make-corpus.sh)
#
# Needs rsync besides what make-corpus.sh needs. Emulated compilation is slow: an hour on 2 cores
# from scratch.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${1:-/var/tmp/pdfix-arm64}
root=$work/root
[ -x "$root/usr/bin/perf" ] || { echo "no arm64 root in $root: run make-corpus.sh first" >&2; exit 1; }
if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
  mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi

chroot "$root" apt-get update -qq
DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -qq --no-install-recommends \
  cmake ninja-build g++ pkg-config llvm-19-dev libzstd-dev libabsl-dev libgtest-dev libgmock-dev \
  libbenchmark-dev liblzma-dev zlib1g-dev libdebuginfod-dev libcli11-dev libarchive-dev \
  xz-utils zstd > /dev/null

# The sources of HEAD; files that did not change keep their times, so that a rebuild compiles only
# what changed (an hour from scratch under emulation).
src=$root/opt/pdfix
tree=$(mktemp -d)
git -C "$repo" archive HEAD | tar -x -C "$tree"
mkdir -p "$src"
rsync -rc --delete --exclude /build "$tree/" "$src/"
rm -rf "$tree"
chroot "$root" cmake -S /opt/pdfix -B /opt/pdfix/build -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DPDFIX_BUILD_BENCH=OFF -DPDFIX_CCACHE=OFF > /dev/null
chroot "$root" cmake --build /opt/pdfix/build --target pdfix pdfix_unit_tests
chroot "$root" /opt/pdfix/build/pdfix --version
