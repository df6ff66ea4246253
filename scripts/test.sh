#!/usr/bin/env bash
# Sets pdfix up, checks formatting and lint, and runs every test (unit and end-to-end).
set -euo pipefail
cd "$(dirname "$0")/.."
PDFIX_WERROR=ON bash scripts/setup.sh
bash scripts/lint.sh
echo "== running tests" >&2
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 600
