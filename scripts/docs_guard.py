#!/usr/bin/env python3
"""The pages a person reads (README.md, tests/README.md, bench/README.md, docs/*.md), checked
without a build (scripts/lint.sh runs it):

- a page is of a sane size and says each paragraph once: a script's broken edit (one paragraph
  pasted between every character of a 22 KB page made it 10.5 MB) shows as a page over 64 KiB or
  as a paragraph said twice;
- no page names a directory of the machine it was written on;
- every relative link reaches a file, and its #anchor a heading of the page (GitHub's anchors:
  lower case, punctuation dropped, spaces as hyphens).

The commands the pages show are checked by running them (tests/e2e/docs_test.cc).

    python3 scripts/docs_guard.py [ROOT]
"""
import os
import re
import sys

MAX_PAGE = 64 << 10
# Short paragraphs (a table's separator, "Measured:") may well repeat.
SHORTEST_CHECKED = 120


def pages(root):
    out = [os.path.join(root, p) for p in ("README.md", "tests/README.md", "bench/README.md")]
    docs = os.path.join(root, "docs")
    out += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith(".md"))
    return out


def anchors_of(path):
    out = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"#+ (.*)", line.rstrip("\n"))
        if m:
            out.add(re.sub(r"[^a-z0-9_\- ]", "", m.group(1).lower()).replace(" ", "-"))
    return out


def check(root):
    bad = []
    paragraphs = links = 0
    for page in pages(root):
        name = os.path.relpath(page, root)
        size = os.path.getsize(page)
        if size > MAX_PAGE:
            bad.append(f"{name}: {size} bytes, over {MAX_PAGE}")
            continue
        text = open(page, encoding="utf-8").read()
        seen = set()
        for paragraph in re.split(r"\n\s*\n", text):
            paragraph = paragraph.strip("\n")
            if len(paragraph) < SHORTEST_CHECKED:
                continue
            paragraphs += 1
            if paragraph in seen:
                bad.append(f"{name} says this paragraph twice:\n{paragraph}")
            seen.add(paragraph)
        for n, line in enumerate(text.split("\n"), 1):
            if "/work/" in line or "`/work`" in line:
                bad.append(f"{name}:{n}: names a directory of one machine: {line}")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if target.startswith("http"):
                continue
            links += 1
            file, _, anchor = target.partition("#")
            path = os.path.normpath(os.path.join(os.path.dirname(page), file)) if file else page
            if not os.path.exists(path):
                bad.append(f"{name} links to {target}: no such file")
            elif anchor and path.endswith(".md") and anchor not in anchors_of(path):
                bad.append(f"{name} links to {target}: no such heading")
    # What the checks saw, lest they pass on nothing.
    if paragraphs < 100 or links < 20:
        bad.append(f"docs guard: only {paragraphs} paragraphs and {links} links seen")
    return bad


if __name__ == "__main__":
    found = check(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    print("\n".join(found), file=sys.stderr)
    sys.exit(1 if found else 0)
