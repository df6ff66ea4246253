// Read throughput: how fast the reader walks a recording's records, with and without opening
// zstd-compressed data. The input is $PDFIX_BENCH_INPUT (any perf.data; copy_vs_cp.sh records a
// large one), so the figure is for a real recording.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>

#include "io/input.h"
#include "transform/open_session.h"

namespace {

void read_all(benchmark::State& state, bool expand) {
  const char* path = std::getenv("PDFIX_BENCH_INPUT");
  if (path == nullptr) {
    state.SkipWithError("set PDFIX_BENCH_INPUT to a perf.data");
    return;
  }
  uint64_t bytes = 0;
  uint64_t records = 0;
  for (auto _ : state) {
    auto in = pdfix::io::open_input(path);
    if (!in.ok()) {
      state.SkipWithError(std::string(in.status().message()).c_str());
      return;
    }
    auto session = pdfix::transform::open_session(*in);
    if (!session.ok()) {
      state.SkipWithError(std::string(session.status().message()).c_str());
      return;
    }
    auto reader = pdfix::transform::make_reader(*in, *session, {.expand_compressed = expand});
    while (true) {
      auto r = reader->next();
      if (!r.ok() || !r->has_value()) break;
      benchmark::DoNotOptimize((*r)->header.type);
      ++records;
    }
    bytes += reader->position();
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["records/s"] =
      benchmark::Counter(static_cast<double>(records), benchmark::Counter::kIsRate);
}

void BM_ReadRecords(benchmark::State& state) { read_all(state, false); }
void BM_ReadRecordsDecompressed(benchmark::State& state) { read_all(state, true); }

BENCHMARK(BM_ReadRecords)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReadRecordsDecompressed)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
