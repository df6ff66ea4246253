// No input crashes pdfix: damaged copies of every corpus file are read, copied, dumped, repaired
// (pdfix fix, every pass) and listed (buildid-list --hits, which follows threads, maps and
// callchains), and each run ends with exit status 0 or 2 (never a signal, never a hang), leaving
// no partial output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>

#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

class Robustness : public ::testing::TestWithParam<CorpusFile> {};

TEST_P(Robustness, DamagedCopiesAreReadOrRefusedNeverCrash) {
  const CorpusFile& f = GetParam();
  std::ifstream in(f.path, std::ios::binary);
  const std::string original((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  ASSERT_FALSE(original.empty()) << f.name;
  // Seeded by the file name: the same cases every run, different ones per file.
  std::mt19937_64 rng(std::hash<std::string>{}(f.name));
  const std::string dir = temp_dir();
  for (int round = 0; round < PDFIX_DAMAGED_ROUNDS; ++round) {
    std::string data = original;
    const int edits = 1 + static_cast<int>(rng() % 6);
    for (int k = 0; k < edits; ++k) {
      // Sizes, offsets and counts live in the header and the first records: hit those harder.
      const size_t span = rng() % 2 ? std::min<size_t>(data.size(), 2048) : data.size();
      const size_t pos = rng() % span;
      for (size_t b = pos; b < std::min(data.size(), pos + 1 + rng() % 8); ++b) {
        data[b] = static_cast<char>(rng());
      }
    }
    if (rng() % 4 == 0) data.resize(rng() % data.size());
    const std::string damaged = dir + "/damaged.data";
    std::ofstream(damaged, std::ios::binary) << data;
    for (const std::string verb : {"info", "dump", "copy", "fix", "buildid-list --hits"}) {
      const bool writes = verb == "copy" || verb == "fix";
      const std::string out = writes ? " " + dir + "/out.data" : "";
      RunResult r = sh("timeout 20 " + pdfix() + " " + verb + " " + damaged + out);
      EXPECT_TRUE(r.status == 0 || r.status == 2)
          << verb << " on a damaged " << f.name << " (round " << round << ") ended with "
          << r.status << ": " << r.err;
      if (writes && r.status == 2) {
        EXPECT_FALSE(fs::exists(dir + "/out.data"));
      }
      fs::remove(dir + "/out.data");
    }
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Corpus, Robustness, ::testing::ValuesIn(corpus_files()),
                         [](const auto& info) { return corpus_test_name(info.param); });

}  // namespace
}  // namespace pdfix::e2e
