#!/usr/bin/env bash
# The clang-tidy checks the lint leaves out for its time (scripts/tidy_nightly.checks says which
# and why), over every unit of src/, as many at once as there are cores; a unit that passed them
# before in the same form is not checked again. Needs a configured build/. Fails on any finding.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t units < <(git ls-files 'src/*.cc')
python3 scripts/tidy.py --only-checks scripts/tidy_nightly.checks build "${units[@]}"
