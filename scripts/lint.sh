#!/usr/bin/env bash
# clang-format and clang-tidy over the sources; any finding fails. Needs a configured build/.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files 'src/*.cc' 'src/*.h' 'tests/*.cc' 'tests/*.h' 'bench/*.cc')
echo "== clang-format" >&2
clang-format-19 --dry-run --Werror "${files[@]}"
echo "== clang-tidy" >&2
mapfile -t units < <(printf '%s\n' "${files[@]}" | grep -E '^src/.*\.cc$')
printf '%s\n' "${units[@]}" |
  xargs -P "$(nproc)" -n 4 clang-tidy-19 -p build --quiet --warnings-as-errors='*' 2>/dev/null
