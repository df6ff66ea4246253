#!/bin/bash
# Runs as init in the arm64 VM (make-corpus.sh boots it): records the corpus with the VM's perf,
# writes perf's own answers beside each recording, copies all to the host's 9p share, powers off.
set -u
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -o remount,rw /
mount -t tmpfs tmp /tmp
hostname vm
modprobe 9pnet_virtio && modprobe 9p
mkdir -p /out && mount -t 9p -o trans=virtio,version=9p2000.L out /out
exec >/out/guest.log 2>&1
set -x
W=/root/corpus
rm -rf "$W" && mkdir -p "$W" && cd "$W"
export PERF_BUILDID_DIR=/root/.debug
uname -a > uname.txt
grep -o 'paca\|pacg\|bti' /proc/cpuinfo | sort -u > cpu-features.txt
cat /proc/modules > modules.txt
cp /sys/kernel/notes kernel-notes.bin

ev="-e cpu-clock -F 499"
dwarf="--call-graph dwarf,4096"
# DWARF stacks: the program built with and without branch protection, python3, a fork-and-exec loop.
perf record $ev $dwarf -o dwarf-pac.data /opt/corpus/work-pac 40000
perf record $ev $dwarf -o dwarf-nopac.data /opt/corpus/work-nopac 40000
perf record $ev $dwarf -o dwarf-python.data -- python3 -c '
def f(n): return n if n < 2 else f(n - 1) + f(n - 2)
f(19)'
perf record $ev $dwarf -o dwarf-shell.data -- sh -c \
  'for i in 1 2 3 4 5; do /opt/corpus/work-pac 2000; ls / > /dev/null; done'
# -B: perf collects no build-ids; a file and a pipe; system-wide with kernel modules at work.
io='for i in 1 2 3 4 5 6; do dd if=/dev/zero of=/root/io bs=64k count=64 conv=fsync 2>/dev/null; /opt/corpus/work-nopac 400; done'
perf record -B -a -g $ev -o modules-B.data -- sh -c "$io"
perf record -B -g $ev -o - -- sh -c "$io" > pipe-B.data
perf record -a -g $ev -o modules.data -- sh -c "$io"
if command -v node > /dev/null; then
  perf record -k 1 -g $ev -o jit.data -- node --perf-prof -e '
let s = 0; for (let i = 0; i < 3e6; ++i) s += Math.sqrt(i) * (i & 7); console.log(s)'
fi

for f in *.data; do
  # perf's own answers, made here: names and depths (script), and the build-ids perf collects
  # (inject -b marks the binaries that have samples and files their ids).
  perf script -i "$f" -F comm,tid,time,ip,sym,dso --no-inline > "${f%.data}.script" 2>/dev/null
  perf report -i "$f" --stdio --sort dso,sym --no-children 2> /dev/null | head -200 > "${f%.data}.report"
  perf inject -b -i "$f" -o "$W/ids.tmp" 2>/dev/null && \
    perf buildid-list -i "$W/ids.tmp" > "${f%.data}.buildids" 2>/dev/null
  rm -f "$W/ids.tmp"
  # Every mapped file's own id, read here by binutils: the truth for maps without samples too.
  perf script -i "$f" --show-mmap-events 2>/dev/null | awk '/PERF_RECORD_MMAP/ {print $NF}' |
    grep '^/' | sort -u | while read -r p; do
      id=$(readelf -n "$p" 2>/dev/null | awk '/Build ID/ {print $3; exit}')
      [ -n "$id" ] && echo "$id $p"
    done > "${f%.data}.maps"
done
# pdfix built for arm64 (build-pdfix.sh), run where the recordings were made: this host and boot,
# so every map is proven by device and inode.
pdfix=/opt/pdfix/build/pdfix
if [ -x "$pdfix" ]; then
  mkdir -p pdfix
  (cd /opt/pdfix/build/tests && ./pdfix_unit_tests --gtest_brief=1) > pdfix/unit-tests.log 2>&1
  echo "$? unit tests" >> pdfix/status.txt
  for f in *.data; do
    "$pdfix" fix --json "$f" "pdfix/$f" > "pdfix/${f%.data}.json" 2> "pdfix/${f%.data}.err"
    echo "$? $f" >> pdfix/status.txt
    perf buildid-list -i "pdfix/$f" > "pdfix/${f%.data}.buildids" 2>&1
    rm -f "pdfix/$f"
  done
fi
ls -la /tmp/jit-*.dump ./jit-*.dump 2>/dev/null
mkdir -p jit && cp /tmp/jit-*.dump ./jit-*.dump jit/ 2>/dev/null
cp -a "$W"/. /out/
sync
echo o > /proc/sysrq-trigger
sleep 10
