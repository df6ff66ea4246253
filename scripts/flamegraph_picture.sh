#!/usr/bin/env bash
# The README's picture of `pdfix export`: a C program (-O2 -g; its hot loop inlined into two
# callers, a qsort with a nested comparator) recorded by this machine's perf with -g, exported,
# and shown as go tool pprof's flame graph (pprof's web UI, nothing symbolized by pprof:
# -symbolize=none), screenshot by headless Chromium.
#
#   bash scripts/flamegraph_picture.sh [PNG]     (docs/img/export-flamegraph.png by default)
#
# Needs perf, gcc, golang-go and chromium (apt-get install chromium; not part of setup.sh: only
# this picture uses it).
set -euo pipefail
cd "$(dirname "$0")/.."
png=$(realpath -m "${1:-docs/img/export-flamegraph.png}")
for tool in perf gcc go chromium; do
  command -v "$tool" >/dev/null || { echo "flamegraph_picture: $tool is missing" >&2; exit 2; }
done
dir=$(mktemp -d)
pprof=
trap '[ -z "$pprof" ] || kill "$pprof" 2>/dev/null; rm -rf "$dir"' EXIT
cat >"$dir/shapes.c" <<'C'
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
static inline __attribute__((always_inline)) double hot_kernel(double x, int n) {
  for (int i = 0; i < n; i++) x = x * 1.0000001 + 0.5 / (x + 1.0);
  return x;
}
__attribute__((noinline)) double left_caller(int n) { return hot_kernel(1.0, n); }
__attribute__((noinline)) double right_caller(int n) { return hot_kernel(2.0, n) * 2; }
__attribute__((noinline)) double sorting(int n) {
  double* v = malloc(sizeof(double) * n);
  for (int i = 0; i < n; i++) v[i] = sin(i);
  int cmp(const void* a, const void* b) {
    double d = *(const double*)a - *(const double*)b;
    return (d > 0) - (d < 0);
  }
  qsort(v, n, sizeof(double), cmp);
  double s = v[n / 2];
  free(v);
  return s;
}
int main(int argc, char** argv) {
  volatile int n = 2000000;
  double s = 0;
  for (int r = 0; r < 40; r++) s += left_caller(n + argc) + right_caller(n - argc) + sorting(200000);
  printf("%f\n", s);
  return 0;
}
C
gcc -O2 -g -fno-omit-frame-pointer -o "$dir/shapes" "$dir/shapes.c" -lm
perf record -q -g -o "$dir/in.data" "$dir/shapes" >/dev/null 2>&1
build/pdfix export -q "$dir/in.data" "$dir/profile.pb.gz"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
HOME=$dir go tool pprof -http="127.0.0.1:$port" -no_browser -symbolize=none "$dir/profile.pb.gz" \
  >"$dir/pprof.log" 2>&1 &
pprof=$!
for _ in $(seq 50); do
  curl -fs "http://127.0.0.1:$port/ui/flamegraph" >/dev/null && break
  sleep 0.2
done
# The flame graph is drawn by script: the virtual time lets it finish before the shot.
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --virtual-time-budget=8000 \
  --window-size=1100,380 --screenshot="$png" "http://127.0.0.1:$port/ui/flamegraph" >/dev/null 2>&1
echo "flamegraph_picture: $png"
