#!/usr/bin/env bash
# clang-format and clang-tidy over the sources, the pages' size, paragraphs and links
# (scripts/docs_guard.py), the layers of src/ (includes and CMake's links) and the size of every
# file; any finding fails. Needs a configured build/.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc')
echo "== clang-format" >&2
clang-format-19 --dry-run --Werror "${files[@]}"
echo "== docs" >&2
python3 scripts/docs_guard.py
echo "== clang-tidy" >&2
mapfile -t units < <(printf '%s\n' "${files[@]}" | grep -E '^src/.*\.cc$')
# A unit that passed before in exactly the same form (scripts/tidy.py) is not checked again. The
# checks that cost most and have found nothing here run nightly (scripts/tidy_nightly.sh).
python3 scripts/tidy.py --skip-checks scripts/tidy_nightly.checks build "${units[@]}"
echo "== layers and file sizes" >&2
# docs/design.md's layers: a folder of src/ includes only its own and those its row of the design's
# table names (what a layer "knows nothing of" is not among them: resolve has no records, so no
# transform; unwind no records or files).
# No source file is over 500 lines. And a file's device and inode are compared in one place,
# resolve::match (src/resolve/file_places.cc), besides io's check that OUT is not IN; an ARCH
# string is read in format/arch.cc only, a .build-id path made in resolve/cache_layout only, and
# where a kernel's image and modules are installed is resolve/kernel_files's alone.
python3 - "${files[@]}" <<'PY'
import re, sys
# The table's rows: | `layer` | owns | knows nothing of | includes |, the last naming layers in
# backquotes ("-" for none).
allowed = {}
for row in open("docs/design.md"):
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    if len(cells) == 4 and re.fullmatch(r"`[a-z]+`", cells[0]):
        allowed[cells[0].strip("`")] = set(re.findall(r"`([a-z]+)`", cells[3]))
if len(allowed) < 10:
    sys.exit("lint: docs/design.md's layer table (layer, owns, knows nothing of, includes) is gone")
bad = []
for path in sys.argv[1:]:
    text = open(path).read()
    if text.count("\n") > 500:
        bad.append(f"{path}: {text.count(chr(10))} lines, over 500")
    if path.startswith("src/") and not path.startswith("src/io/") and \
            path != "src/resolve/file_places.cc":
        for n, line in enumerate(text.split("\n"), 1):
            if re.search(r"\bst_(ino|dev)\b", line):
                bad.append(f"{path}:{n}: a device or inode compared outside resolve::match")
    # One answer each: which architecture an ARCH string names is format/arch.cc's, where a
    # build-id's file lies in a cache or a distribution's debug tree resolve/cache_layout's, and
    # where a kernel release's files are installed resolve/kernel_files's.
    if path.startswith("src/"):
        for n, line in enumerate(text.split("\n"), 1):
            code = line.split("//")[0]
            literals = re.findall(r'"((?:[^"\\]|\\.)*)"', code)
            if path != "src/format/arch.cc" and any(re.fullmatch(
                    r"x86_64|amd64|aarch64|arm64|i[3-6]86|arm|armv.*|ppc(64(le)?)?|s390x?|riscv64|mips",
                    lit) for lit in literals):
                bad.append(f"{path}:{n}: an ARCH string compared outside format/arch.cc")
            if not path.startswith("src/resolve/cache_layout.") and any(
                    ".build-id" in lit.replace(".note.gnu.build-id", "") for lit in literals):
                bad.append(f"{path}:{n}: a .build-id path composed outside resolve/cache_layout")
            if not path.startswith("src/resolve/kernel_files.") and any(
                    "/lib/modules" in lit for lit in literals):
                bad.append(f"{path}:{n}: a kernel's modules searched outside resolve/kernel_files")
    parts = path.split("/")
    if parts[0] != "src" or parts[1] not in allowed:
        continue
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r'#include "([a-z_]+)/', line)
        if m and m.group(1) in allowed and m.group(1) != parts[1] and \
                m.group(1) not in allowed[parts[1]]:
            bad.append(f"{path}:{n}: {parts[1]} includes {m.group(1)}, which docs/design.md's "
                       f"layer table does not allow")
# CMake links each layer's library (the executable for cli) to the layers its files include, no
# more and no fewer: the link graph is the include graph, which the table bounds.
included = {layer: set() for layer in allowed}
for path in sys.argv[1:]:
    parts = path.split("/")
    if parts[0] == "src" and parts[1] in allowed:
        for inc in re.findall(r'^#include "([a-z_]+)/', open(path).read(), re.M):
            if inc in allowed and inc != parts[1]:
                included[parts[1]].add(inc)
cmake = open("CMakeLists.txt").read()
for layer in allowed:
    target = "pdfix" if layer == "cli" else f"pdfix_{layer}"
    m = re.search(r"target_link_libraries\(" + target + r"\s([^)]*)\)", cmake)
    links = set(re.findall(r"\bpdfix_([a-z]+)\b", m.group(1))) if m else set()
    if links != included[layer]:
        bad.append(f"CMakeLists.txt: {target} links {sorted(links)}, but {layer}'s files include "
                   f"{sorted(included[layer])}")
print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
