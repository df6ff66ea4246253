#!/usr/bin/env python3
"""clang-tidy over translation units, as many at once as there are cores, skipping those it has
passed before in exactly this form.

A unit's form is what clang-tidy sees of it: the unit preprocessed with its own compile command
(every header it includes, no line markers), the compile flags, .clang-tidy and the clang-tidy
version, with the tree's own path taken out: another clone of the same sources has the same form. A unit whose form passed once passes again; any change to the unit, to a
header it includes, to the flags or to the checks is a new form and is checked. On a machine
without the cache (a fresh one), every unit is checked. The cache is a folder of empty files named
by the forms' hashes: $PDFIX_TIDY_CACHE, or ~/.cache/pdfix-tidy.

    scripts/tidy.py [--skip-checks FILE | --only-checks FILE] BUILD_DIR UNIT...

FILE lists checks, one a line ('#' starts a comment): --skip-checks runs .clang-tidy's checks but
those (the lint), --only-checks those alone (scripts/tidy_nightly.sh). The choice is part of a
unit's form.
"""
import concurrent.futures
import hashlib
import json
import os
import shlex
import subprocess
import sys

TIDY = "clang-tidy-19"


def main() -> int:
    args = sys.argv[1:]
    checks = []  # clang-tidy's --checks, when a FILE narrows .clang-tidy's
    if args and args[0] in ("--skip-checks", "--only-checks"):
        listed = [line.split("#")[0].strip() for line in open(args[1])]
        listed = [c for c in listed if c]
        checks = ["--checks=" + (",".join("-" + c for c in listed) if args[0] == "--skip-checks"
                                 else "-*," + ",".join(listed))]
        args = args[2:]
    build, units = args[0], args[1:]
    root = os.getcwd()
    cache = os.environ.get("PDFIX_TIDY_CACHE") or os.path.expanduser("~/.cache/pdfix-tidy")
    os.makedirs(cache, exist_ok=True)
    commands = {}
    for entry in json.load(open(os.path.join(build, "compile_commands.json"))):
        path = os.path.relpath(os.path.join(entry["directory"], entry["file"]), root)
        commands[path] = entry
    version = subprocess.run([TIDY, "--version"], capture_output=True, text=True).stdout
    config = open(".clang-tidy", "rb").read()

    def form(unit: str) -> str:
        entry = commands[unit]
        args = entry.get("arguments") or shlex.split(entry["command"])
        flags, skip = [], False
        for a in args[1:]:
            if skip:
                skip = False
            elif a in ("-o", "-c", "-MF", "-MT", "-MQ"):
                skip = a != "-c"
            elif a.startswith("-M") or a == os.path.join(entry["directory"], entry["file"]) \
                    or a == entry["file"]:
                continue
            else:
                flags.append(a)
        pre = subprocess.run([args[0], *flags, "-E", "-P", os.path.join(root, unit)],
                             cwd=entry["directory"], capture_output=True)
        # Where the tree is does not change a verdict: another clone of the same sources has the
        # same form.
        text = pre.stdout.replace(root.encode(), b"<tree>")
        h = hashlib.sha256()
        for part in (version.encode(), config, " ".join(checks).encode(),
                     " ".join(flags).replace(root, "<tree>").encode(), text):
            h.update(len(part).to_bytes(8, "little"))
            h.update(part)
        # A unit that does not preprocess has no form to remember: clang-tidy says why.
        return h.hexdigest() if pre.returncode == 0 else ""

    def check(unit: str) -> tuple[str, bool, bool, str]:
        key = form(unit)
        if key and os.path.exists(os.path.join(cache, key)):
            return unit, True, True, ""
        r = subprocess.run([TIDY, "-p", build, "--quiet", "--warnings-as-errors=*", *checks, unit],
                           capture_output=True, text=True)
        if r.returncode == 0 and key:
            open(os.path.join(cache, key), "w").close()
        return unit, r.returncode == 0, False, r.stdout

    failed = passed_before = 0
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 1) as pool:
        for unit, ok, before, out in pool.map(check, units):
            passed_before += before
            if not ok:
                failed += 1
                sys.stdout.write(out or f"{unit}: clang-tidy failed\n")
    print(f"clang-tidy: {len(units)} units, {passed_before} passed before in the same form, "
          f"{failed} with findings", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
