#!/usr/bin/env bash
# clang-format and clang-tidy over the sources, the layers of src/ and the size of every file; any
# finding fails. Needs a configured build/.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc')
echo "== clang-format" >&2
clang-format-19 --dry-run --Werror "${files[@]}"
echo "== clang-tidy" >&2
mapfile -t units < <(printf '%s\n' "${files[@]}" | grep -E '^src/.*\.cc$')
# A unit that passed before in exactly the same form (scripts/tidy.py) is not checked again.
python3 scripts/tidy.py build "${units[@]}"
echo "== layers and file sizes" >&2
# docs/design.md's layers, lowest first: a folder of src/ includes only its own and those below it.
# No source file is over 500 lines. And a file's device and inode are compared in one place,
# resolve::match (src/resolve/file_places.cc), besides io's check that OUT is not IN.
python3 - "${files[@]}" <<'PY'
import re, sys
order = "format io transform resolve unwind jit store passes inspect cli".split()
rank = {d: i for i, d in enumerate(order)}
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
    parts = path.split("/")
    if parts[0] != "src" or parts[1] not in rank:
        continue
    for n, line in enumerate(text.split("\n"), 1):
        m = re.match(r'#include "([a-z_]+)/', line)
        if m and m.group(1) in rank and rank[m.group(1)] > rank[parts[1]]:
            bad.append(f"{path}:{n}: {parts[1]} includes {m.group(1)}, a layer above it")
print("\n".join(bad), file=sys.stderr)
sys.exit(1 if bad else 0)
PY
