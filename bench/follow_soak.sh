#!/usr/bin/env bash
# pdfix follow for CHUNKS chunks (2000 by default) of a real `perf record -a -F 4000
# --switch-output=16K` (perf 6.1 switches by size; no time unit below a second) over short
# processes, with `--store --remove-raw`: follow's RSS, open descriptors, journal size and CPU a
# chunk sampled twice a second along the run, written as CSV and drawn as an SVG of four panels
# against the chunks fixed. Flat lines are the claim; tests/e2e/follow_soak_test.cc asserts the
# same over 1,000 chunks with two SIGKILLs and a container.
#
#   bash bench/follow_soak.sh [CHUNKS [SVG]]     (SVG: bench/follow_soak.svg)
set -euo pipefail
cd "$(dirname "$0")/.."
source bench/lib.sh
chunks=${1:-2000}
svg=${2:-bench/follow_soak.svg}
pdfix=$PWD/build/pdfix
at=$(mktemp -d -p "${TMPDIR:-/var/tmp}")
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$at"' EXIT
mkdir -p "$at/raw" "$at/out" "$at/home"

HOME=$at/home "$pdfix" follow -q --store --remove-raw "$at/raw" "$at/out" &
follow=$!
perf record -q -a -F 4000 --switch-output=16K -o "$at/raw/perf.data" -- sh -c \
  "while [ ! -e $at/stop ]; do ls -R /usr/lib >/dev/null; gzip -c /etc/services >/dev/null; done" \
  2>"$at/perf.log" &
recorder=$!

csv=$at/soak.csv
echo "chunks,rss_kib,fds,journal_bytes,cpu_seconds" >"$csv"
hz=$(getconf CLK_TCK)
while :; do
  sleep 0.5
  kill -0 "$follow" 2>/dev/null || {
    echo "bench: follow exited" >&2
    exit 1
  }
  n=$(find "$at/out" -maxdepth 1 -name 'perf.data.*' | wc -l)
  rss=$(awk '/^VmRSS:/ { print $2 }' "/proc/$follow/status")
  fds=$(find "/proc/$follow/fd" -mindepth 1 -maxdepth 1 | wc -l)
  journal=$(stat -c %s "$at/out/.pdfix-follow-journal")
  # utime and stime: fields 14 and 15, counted after the parenthesised command.
  cpu=$(sed 's/.*) //' "/proc/$follow/stat" | awk -v hz="$hz" '{ printf "%.2f", ($12 + $13) / hz }')
  echo "$n,$rss,$fds,$journal,$cpu" >>"$csv"
  [ "$n" -lt "$chunks" ] || break
done
touch "$at/stop"
wait "$recorder" || true
kill -TERM "$follow"
wait "$follow" || true
cp "$csv" "${svg%.svg}.csv"

python3 - "$csv" "$svg" <<'EOF'
import csv, sys
rows = [r for r in csv.DictReader(open(sys.argv[1]))]
x = [int(r["chunks"]) for r in rows]
cpu = [float(r["cpu_seconds"]) for r in rows]
# CPU a chunk over the last ten samples, in ms.
per = [0.0] * len(rows)
for i in range(len(rows)):
    j = max(0, i - 10)
    per[i] = 1000 * (cpu[i] - cpu[j]) / (x[i] - x[j]) if x[i] > x[j] else 0.0
panels = [("RSS (MiB)", [int(r["rss_kib"]) / 1024 for r in rows]),
          ("open descriptors", [int(r["fds"]) for r in rows]),
          ("journal (KiB)", [int(r["journal_bytes"]) / 1024 for r in rows]),
          ("CPU a chunk (ms, last 5 s)", per)]
w, h, pad = 560, 150, 40
out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h * 4}" '
       'font-family="sans-serif" font-size="11">']
for k, (title, ys) in enumerate(panels):
    top = k * h
    ymax = max(max(ys) * 1.2, 1e-9)
    xmax = max(x[-1], 1)
    pts = " ".join(f"{pad + (w - 2 * pad) * xi / xmax:.1f},{top + h - 25 - (h - 50) * yi / ymax:.1f}"
                   for xi, yi in zip(x, ys))
    out.append(f'<text x="{pad}" y="{top + 15}">{title}: 0 to {ymax:.1f}, '
               f'chunks 0 to {xmax}</text>')
    out.append(f'<rect x="{pad}" y="{top + 25}" width="{w - 2 * pad}" height="{h - 50}" '
               'fill="none" stroke="#999"/>')
    out.append(f'<polyline points="{pts}" fill="none" stroke="#c33" stroke-width="1.5"/>')
out.append("</svg>")
open(sys.argv[2], "w").write("\n".join(out) + "\n")
EOF
awk -F, 'NR > 1 { n = $1; if (n >= 10 && !a) a = $0; z = $0 } END { print "at chunk 10 or so: " a; print "at the end:        " z }' "$csv"
echo "chunks,rss_kib,fds,journal_bytes,cpu_seconds; plot: $svg, data: ${svg%.svg}.csv"
