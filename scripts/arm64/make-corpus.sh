#!/bin/bash
# Remakes corpora/arm64: boots Debian 12 arm64 in qemu-system-aarch64 (TCG, -cpu max: pointer
# authentication on), records with the VM's perf 6.1 (guest.sh), and keeps the recordings, perf's
# own answers made in the VM, and slim copies of the binaries they map as a sysroot.
#
#   bash scripts/arm64/make-corpus.sh [WORKDIR]     (root; WORKDIR defaults to /var/tmp/pdfix-arm64)
#
# Needs: qemu-system-arm qemu-user-static binfmt-support mmdebstrap arch-test e2fsprogs, and a
# built pdfix (build/pdfix) for the slim copies. About 30 minutes on 2 cores the first time (the
# root), 4 after; CI never runs it. After build-pdfix.sh, PDFIX_IN_VM_ONLY=1 boots the VM again
# to run that arm64 pdfix there on fresh recordings, and keeps only what it said
# (corpora/arm64/pdfix-in-vm).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
work=${1:-/var/tmp/pdfix-arm64}
corpus=$repo/corpora/arm64
pdfix=${PDFIX:-$repo/build/pdfix}
mkdir -p "$work"

if [ ! -e /proc/sys/fs/binfmt_misc/register ]; then
  mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi
update-binfmts --enable qemu-aarch64 2> /dev/null || true

root=$work/root
if [ ! -x "$root/usr/bin/perf" ]; then
  rm -rf "$root"
  mmdebstrap --arch=arm64 --variant=minbase \
    --include=linux-image-arm64,linux-perf,gcc,libc6-dev,python3,kmod,nodejs,binutils,procps,e2fsprogs,udev \
    bookworm "$root" http://deb.debian.org/debian
fi

# The workload, built in the arm64 root by its own gcc, with and without branch protection.
mkdir -p "$root/opt/corpus"
cp "$here/work.c" "$root/opt/corpus/work.c"
chroot "$root" gcc -O2 -g -fno-omit-frame-pointer -mbranch-protection=standard \
  -o /opt/corpus/work-pac /opt/corpus/work.c
chroot "$root" gcc -O2 -g -fno-omit-frame-pointer -mbranch-protection=none \
  -o /opt/corpus/work-nopac /opt/corpus/work.c
install -m 0755 "$here/guest.sh" "$root/opt/corpus/guest.sh"

image=$work/root.img
rm -f "$image"
mkfs.ext4 -q -L root -d "$root" "$image" "$(($(du -sm "$root" | cut -f1) + 2048))M"
out=$work/out
rm -rf "$out" && mkdir -p "$out"
kernel=$(ls "$root"/boot/vmlinuz-* | sort -V | tail -1)
initrd=$(ls "$root"/boot/initrd.img-* | sort -V | tail -1)
# sve=off: with SVE, perf 6.1 asks for the VG register in --call-graph dwarf samples, which Linux
# 6.1 refuses for software events (EOPNOTSUPP); pointer authentication stays on.
timeout 3600 qemu-system-aarch64 -M virt -cpu max,pauth-impdef=on,sve=off -smp 2 -m 3072 -nographic \
  -kernel "$kernel" -initrd "$initrd" \
  -append "root=LABEL=root rw console=ttyAMA0 init=/opt/corpus/guest.sh" \
  -drive "file=$image,format=raw,if=virtio" \
  -virtfs "local,path=$out,mount_tag=out,security_model=none" \
  -no-reboot > "$work/console.log" 2>&1
if [ ! -s "$out/dwarf-pac.data" ]; then
  tail -n 30 "$work/console.log" "$out/guest.log"
  exit 1
fi

# With pdfix built for arm64 in the root (build-pdfix.sh), the VM fixed its recordings too. With
# PDFIX_IN_VM_ONLY=1 only what pdfix said there is kept: the committed recordings stay.
if [ "${PDFIX_IN_VM_ONLY:-}" = 1 ]; then
  [ -d "$out/pdfix" ] || { echo "no pdfix ran in the VM: run build-pdfix.sh first" >&2; exit 1; }
  rm -rf "$corpus/pdfix-in-vm" && cp -r "$out/pdfix" "$corpus/pdfix-in-vm"
  cat "$corpus/pdfix-in-vm/status.txt"
  exit 0
fi

# What is committed: the recordings, perf's answers, and the recording host's files as a sysroot.
rm -rf "$corpus" && mkdir -p "$corpus"
cp "$out"/*.data "$out"/*.report "$out"/*.buildids "$out"/*.maps "$corpus/"
# perf script's text of every sample: the names and depths the VM's perf gave, compressed.
for f in "$out"/*.script; do xz -9 -c "$f" > "$corpus/$(basename "$f").xz"; done
cp "$out"/uname.txt "$out"/cpu-features.txt "$out"/modules.txt "$out"/kernel-notes.bin "$corpus/"
cp -r "$out"/jit "$corpus/"
# The JIT recording beside its dump: without --jit-dir, fix rightly exits 3 on it, so the tests
# that run every recording of corpora/ with plain options leave jit/ out.
mv "$corpus"/jit.* "$corpus/jit/"
[ -d "$out/pdfix" ] && cp -r "$out/pdfix" "$corpus/pdfix-in-vm"

# Slim copies (symbols, unwind tables, notes; no code) of every file the recordings map, as pdfix
# stores them (node's, for the JIT recording, are left out: 80 MB for one test that needs none),
# then whole copies of the binaries in the DWARF samples' chains, whose code the call-site referee
# reads.
kernel_id=$(od -An -tx1 -v "$out/kernel-notes.bin" | tr -d ' \n' |
  sed -n 's/.*040000001400000003000000474e5500\(.\{40\}\).*/\1/p')
store=$work/store
rm -rf "$store" && mkdir -p "$store"
for f in "$out"/dwarf-*.data "$out"/modules*.data "$out"/pipe-B.data; do
  "$pdfix" fix -q --sysroot "$root" --known-build-ids "[kernel.kallsyms]=$kernel_id" \
    --store --slim --buildid-dir "$store" "$f" "$work/fixed.data"
done
rm -f "$work/fixed.data"
sysroot=$work/sysroot
rm -rf "$sysroot"
# perf's cache layout (PATH/ID/elf) back into a tree of the recording host's paths.
(cd "$store" && find . -path ./.build-id -prune -o -name elf -type f -print) |
  while read -r elf; do
    path=${elf#.}
    path=${path%/*/elf}
    mkdir -p "$sysroot$(dirname "$path")"
    cp --sparse=always "$store/$elf" "$sysroot$path"
  done
cat "$out"/dwarf-*.script | sed -n 's/.* (\(\/.*\))$/\1/p' | sort -u | while read -r path; do
  cp "$root$path" "$sysroot$path"
done
tar -cJSf "$corpus/sysroot.tar.xz" -C "$sysroot" .
du -sh "$corpus"
