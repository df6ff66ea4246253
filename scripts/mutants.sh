#!/usr/bin/env bash
# Mutation check of the rules that matter (scripts/mutants.list): each mutant is applied to a
# scratch copy of the tree, rebuilt incrementally, and the tests named for it are run; a mutant
# that no test kills is a survivor. The tests are first run on the unmutated tree: a kill counts
# only for tests that pass there. Fails if any mutant survives, no longer applies, or has tests
# that fail without it, and prints them.
# The scratch build is unoptimised (-O0, no debug info), made with clang-19 and lld, its test
# programs linked with LLVM's shared library (pdfix keeps the archives) and their tests listed only
# when ctest asks: fast to compile and to relink after each mutant, and as good a judge.
#
#   bash scripts/mutants.sh [NAME-SUBSTRING]
#
# PDFIX_MUTANTS_DIR=DIR keeps the scratch copies and their builds there between runs (for writing
# a mutant and its test: only what changed is copied and rebuilt).
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
# Mutants are judged by as many workers as there are cores (PDFIX_MUTANT_JOBS), each in a scratch
# copy of its own: a mutant's tests mostly wait on perf and one core, so two at once halve the
# phase, and ccache makes the second copy's build a copy of the first's.
jobs=${PDFIX_MUTANT_JOBS:-$(nproc)}
for ((w = 0; w < jobs; w++)); do
  copy=$scratch/w$w
  mkdir -p "$copy"
  # A file is copied when its content differs, not by its time: a mutant applied and undone in
  # the kept copy leaves it newer than a later edit here.
  git ls-files -z | while IFS= read -r -d '' f; do
    cmp -s "$f" "$copy/$f" || cp --parents "$f" "$copy"
  done
  echo "== building scratch copy $copy" >&2
  cmake -S "$copy" -B "$copy/build" -G Ninja -DCMAKE_BUILD_TYPE=None \
    -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld \
    -DCMAKE_CXX_FLAGS='-O0 -g0' -DPDFIX_STATIC_ABSL=OFF -DPDFIX_BUILD_BENCH=OFF \
    -DPDFIX_TESTS_LLVM_SHARED=ON -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST \
    -DPDFIX_FOREIGN_CORPUS="$repo/../shared/corpora/foreign" >/dev/null
  ninja -C "$copy/build" pdfix pdfix_unit_tests pdfix_e2e_tests >/dev/null
done

python3 - "$scratch" "$repo/scripts/mutants.list" "$only" "$jobs" <<'PY'
import concurrent.futures, fnmatch, os, queue, re, subprocess, sys, threading, time
root, listing, only, jobs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
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
survivors, broken, unjudged = [], [], []
env = dict(os.environ, PDFIX_REQUIRE_PERF="1")
selected = [m for m in mutants if not only or only in m["name"]]
binaries = {"unit": "pdfix_unit_tests", "e2e": "pdfix_e2e_tests"}

# A kill is a test that passes on the unmutated tree and fails with the mutant: a refused perf, a
# missing tool or a flaky test would otherwise "kill" every mutant it judges. Each kind's filters
# run once at baseline, shared out among the workers' copies (the tests are as safe beside each
# other as ctest runs them), and each test's outcome is read from GoogleTest's lines.
# CI runs the whole suite first (scripts/test.sh): when it passed there, the baseline is only a
# listing, which still finds a filter that runs no test, and the two minutes of e2e tests run
# again at baseline are saved.
suite_passed = os.environ.get("PDFIX_MUTANTS_SUITE_PASSED") == "1"


def baseline(binary, filters, w):
    listing = ["--gtest_list_tests"] if suite_passed else []
    run = subprocess.run([f"{root}/w{w}/build/tests/{binary}", *listing,
                          "--gtest_filter=" + ":".join(filters)],
                         capture_output=True, text=True, env=env, timeout=1800)
    if suite_passed:
        # "Suite.\n  Test  # GetParam() = ..." lines, written as the lines of a passing run.
        suite, names = "", []
        for line in run.stdout.splitlines():
            if not line.startswith(" "):
                suite = line.split("#")[0].strip()
            elif line.strip():
                names.append(f"[       OK ] {suite}{line.split('#')[0].strip()}")
        run.stdout = "\n".join(names) + "\n"
    return run


passing = set()
for kind, binary in binaries.items():
    filters = sorted({m["test"].split(" ", 1)[1] for m in selected
                      if m["test"].split(" ", 1)[0] == kind})
    if not filters:
        continue
    start = time.time()
    shares = [filters[w::jobs] for w in range(jobs) if filters[w::jobs]]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(shares)) as pool:
        runs = list(pool.map(baseline, [binary] * len(shares), shares, range(len(shares))))
    stdout = "".join(r.stdout for r in runs)
    stderr = "".join(r.stderr for r in runs)
    ok = set(re.findall(r"^\[       OK \] (\S+)", stdout, re.M))
    failed = set(re.findall(r"^\[  FAILED  \] ([^\s,]+)", stdout, re.M))
    for f in filters:
        matched = {t for t in ok | failed
                   if any(fnmatch.fnmatchcase(t, p) for p in f.split(":"))}
        if matched and not matched & failed:
            passing.add(f"{kind} {f}")
        else:
            why = "fails" if matched & failed else "runs no test"
            print(f"BASELINE {why}: {kind} {f} {sorted(matched & failed)}", flush=True)
            # What the failing test said: CI keeps no other record of it.
            for t in sorted(matched & failed):
                said = re.search(r"^\[ RUN      \] " + re.escape(t) + r"\n(.*?)^\[  FAILED  \] "
                                 + re.escape(t), stdout, re.M | re.S)
                print(said.group(1)[-4000:] if said else stderr[-4000:], flush=True)
    print(f"baseline: {len(filters)} {kind} filters in {time.time() - start:.1f}s"
          f"{' (listed: the suite passed)' if suite_passed else ''}", flush=True)

copies = queue.Queue()
for w in range(jobs):
    copies.put(f"{root}/w{w}")
lock = threading.Lock()


def say(line):
    with lock:
        print(line, flush=True)


def judge(m):
    scratch = copies.get()
    try:
        return judge_in(m, scratch)
    finally:
        copies.put(scratch)


def judge_in(m, scratch):
    path = os.path.join(scratch, m["file"])
    original = open(path).read()
    if original.count(m["from"]) != 1:
        say(f"NO LONGER APPLIES  {m['name']}  ({m['file']})")
        return "broken"
    kind, filt = m["test"].split(" ", 1)
    binary = binaries[kind]
    if m["test"] not in passing:
        say(f"NOT JUDGED         {m['name']}  (its tests fail without it)")
        return "unjudged"
    # Unit tests link the code under test; e2e tests run the pdfix binary.
    targets = [binary] if kind == "unit" else ["pdfix", binary]
    start = time.time()
    try:
        open(path, "w").write(original.replace(m["from"], m["to"]))
        built = subprocess.run(["ninja", "-C", f"{scratch}/build", *targets],
                               capture_output=True, text=True)
        if built.returncode != 0:
            say(f"DOES NOT BUILD     {m['name']}\n{built.stdout[-2000:]}")
            return "broken"
        run = subprocess.run([f"{scratch}/build/tests/{binary}", f"--gtest_filter={filt}"],
                             capture_output=True, text=True, env=env, timeout=600)
        # A filter that matches nothing passes: that is a survivor too.
        ran = "[==========]" in run.stdout and " 0 tests " not in run.stdout
        killed = run.returncode != 0 and ran
        say(f"{'killed  ' if killed else 'SURVIVED'}  {time.time() - start:5.1f}s  {m['name']}")
        return "killed" if killed else "survivor"
    finally:
        open(path, "w").write(original)


with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
    verdicts = list(pool.map(judge, selected))
for m, v in zip(selected, verdicts):
    if v == "survivor":
        survivors.append(m["name"])
    elif v == "broken":
        broken.append(m["name"])
    elif v == "unjudged":
        unjudged.append(m["name"])
total = len(selected)
print(f"{total - len(survivors) - len(broken) - len(unjudged)} of {total} mutants killed")
for s in survivors:
    print(f"survivor: {s}")
for s in unjudged:
    print(f"not judged (its tests fail on the unmutated tree): {s}")
sys.exit(1 if survivors or broken or unjudged else 0)
PY
