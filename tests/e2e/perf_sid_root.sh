#!/bin/sh
# A root with Debian sid's perf (7.2 when this was written) and binutils (perf 7 runs addr2line),
# made by mmdebstrap from Debian's packages, once: DIR/root; and DIR/perf, which runs that perf in
# this host's mount namespace. Several tests may ask at once; the
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
# perf 7 records in a chroot badly: it enters a recorded process's mount namespace, cannot come back
# (util/namespaces.c asserts) and then fails to rename its --switch-output chunks. DIR/perf runs it
# by its own loader and libraries instead, among this host's files.
interp=$(readelf -p .interp "$dir/root/usr/bin/perf" | sed -n 's/^ *\[ *[0-9a-f]*\] *//p')
libs=$(dirname "$(readlink -f "$dir/root$interp")")
printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$dir/root$interp" "$libs" \
  "$dir/root/usr/bin/perf" >"$dir/perf.new"
chmod +x "$dir/perf.new"
mv "$dir/perf.new" "$dir/perf"
