// The arm64 corpus's workload: a call tree to unwind through, with a hot leaf that saves no frame
// (its return address stays in LR) under callers that, built with -mbranch-protection=standard,
// sign the return addresses they save on the stack.
#include <stdlib.h>

__attribute__((noinline)) unsigned long leaf(unsigned long x) {
  for (int i = 0; i < 4000; ++i) x = x * 6364136223846793005UL + 1442695040888963407UL;
  return x;
}

__attribute__((noinline)) unsigned long mid(unsigned long x, int depth) {
  if (depth == 0) return leaf(x);
  const unsigned long r = mid(x + 1, depth - 1);
  return r ^ (r >> 7);
}

__attribute__((noinline)) unsigned long top(unsigned long n) {
  unsigned long acc = 0;
  for (unsigned long i = 0; i < n; ++i) acc += mid(i, (int)(i % 6));
  return acc;
}

int main(int argc, char** argv) {
  const unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 20000;
  return (int)(top(n) & 1);
}
