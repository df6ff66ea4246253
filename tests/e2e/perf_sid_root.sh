#!/bin/sh
# A root with Debian sid's perf (7.2 when this was written) and binutils (perf 7 runs addr2line),
# made by mmdebstrap from Debian's packages, once: DIR/root. Several tests may ask at once; the
# first makes it under a lock, the others wait. sid's Release file may be past its Valid-Until
# on a mirror that is not refreshed: the date is not checked, the signatures are.
#   sh tests/e2e/perf_sid_root.sh DIR
set -eu
dir=$1
mkdir -p "$dir"
exec 9>"$dir/lock"
flock 9
if [ ! -x "$dir/root/usr/bin/perf" ]; then
  rm -rf "$dir/new"
  mkdir "$dir/new"
  mmdebstrap --quiet --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' \
    --include=linux-perf,binutils sid - http://deb.debian.org/debian | tar -x -C "$dir/new"
  chroot "$dir/new" perf --version >/dev/null
  mkdir "$dir/new/b" # where a test binds its directory
  mv "$dir/new" "$dir/root"
fi
# perf 7 gives addr2line a second a lookup and then drops the inline frames it was asked for: on a
# machine busy with a build, two runs of one report differ. A minute is never reached.
printf '[core]\n\taddr2line-timeout = 60000\n' >"$dir/root/etc/perfconfig"
