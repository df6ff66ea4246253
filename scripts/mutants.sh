#!/usr/bin/env bash
# Mutation check of the rules that matter (scripts/mutants.list): each mutant is applied to a
# scratch copy of the tree, rebuilt incrementally, and the tests named for it are run; a mutant
# that no test kills is a survivor. Fails if any survives (or no longer applies), and prints them.
# The scratch build is unoptimised (-O0, no debug info) and made with clang-19 and lld: fast to
# compile and to relink after each mutant, and as good a judge.
#
#   bash scripts/mutants.sh [NAME-SUBSTRING]
#
# PDFIX_MUTANTS_DIR=DIR keeps the scratch copy and its build there between runs (for writing a
# mutant and its test: only what changed is copied and rebuilt).
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
only=${1:-}
if [ -n "${PDFIX_MUTANTS_DIR:-}" ]; then
  scratch=$PDFIX_MUTANTS_DIR
  mkdir -p "$scratch"
else
  scratch=$(mktemp -d -p "${TMPDIR:-/var/tmp}" pdfix-mutants.XXXXXX)
  trap 'rm -rf "$scratch"' EXIT
fi
git ls-files -z | xargs -0 cp -u --parents -t "$scratch"

echo "== building a scratch copy in $scratch" >&2
cmake -S "$scratch" -B "$scratch/build" -G Ninja -DCMAKE_BUILD_TYPE=None \
  -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld \
  -DCMAKE_CXX_FLAGS='-O0 -g0' -DPDFIX_STATIC_ABSL=OFF -DPDFIX_BUILD_BENCH=OFF \
  -DPDFIX_FOREIGN_CORPUS="$repo/../shared/corpora/foreign" >/dev/null
ninja -C "$scratch/build" pdfix pdfix_unit_tests pdfix_e2e_tests >/dev/null

python3 - "$scratch" "$repo/scripts/mutants.list" "$only" <<'PY'
import os, subprocess, sys, time
scratch, listing, only = sys.argv[1], sys.argv[2], sys.argv[3]
mutants, block = [], {}
for line in open(listing).read().split("\n") + [""]:
    if line.startswith("#"):
        continue
    if not line.strip():
        if block:
            mutants.append(block)
        block = {}
        continue
    key, _, value = line.partition(": ")
    block[key] = value.replace("\\n", "\n")
survivors, broken = [], []
env = dict(os.environ, PDFIX_REQUIRE_PERF="1")
for m in mutants:
    if only and only not in m["name"]:
        continue
    path = os.path.join(scratch, m["file"])
    original = open(path).read()
    if original.count(m["from"]) != 1:
        broken.append(m["name"])
        print(f"NO LONGER APPLIES  {m['name']}  ({m['file']})", flush=True)
        continue
    kind, filt = m["test"].split(" ", 1)
    binary = {"unit": "pdfix_unit_tests", "e2e": "pdfix_e2e_tests"}[kind]
    # Unit tests link the code under test; e2e tests run the pdfix binary.
    targets = [binary] if kind == "unit" else ["pdfix", binary]
    start = time.time()
    try:
        open(path, "w").write(original.replace(m["from"], m["to"]))
        built = subprocess.run(["ninja", "-C", f"{scratch}/build", *targets],
                               capture_output=True, text=True)
        if built.returncode != 0:
            broken.append(m["name"])
            print(f"DOES NOT BUILD     {m['name']}\n{built.stdout[-2000:]}", flush=True)
            continue
        run = subprocess.run([f"{scratch}/build/tests/{binary}", f"--gtest_filter={filt}"],
                             capture_output=True, text=True, env=env, timeout=600)
        # A filter that matches nothing passes: that is a survivor too.
        ran = "[==========]" in run.stdout and " 0 tests " not in run.stdout
        killed = run.returncode != 0 and ran
        if not killed:
            survivors.append(m["name"])
        print(f"{'killed  ' if killed else 'SURVIVED'}  {time.time() - start:5.1f}s  {m['name']}",
              flush=True)
    finally:
        open(path, "w").write(original)
total = len([m for m in mutants if not only or only in m["name"]])
print(f"{total - len(survivors) - len(broken)} of {total} mutants killed")
for s in survivors:
    print(f"survivor: {s}")
sys.exit(1 if survivors or broken else 0)
PY
