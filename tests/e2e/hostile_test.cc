// Crafted input and unlucky operators: size fields that claim terabytes, zstd bombs, closed
// standard fds, devices and FIFOs as OUT, a full disk on stdout, signals mid-run, an input that
// shrinks while it is read. Every run ends in exit 0 or 2, within a small memory bound, with no
// partial output and no temporary file left behind.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <bit>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "e2e/harness.h"
#include "fixture/perf_data_builder.h"
#include "format/record_type.h"
#include "transform/zstd_stream.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;
using testing::Bytes;
using testing::PerfDataBuilder;

// 128 MiB in the plain build (see tests/CMakeLists.txt).
constexpr uint64_t kMaxRssKib = uint64_t{PDFIX_MAX_RSS_MIB} * 1024;

uint64_t le64_at(const Bytes& b, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b.at(at + i);
  return v;
}

Bytes le64(uint64_t v) {
  Bytes b(8);
  for (int i = 0; i < 8; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
  return b;
}

std::vector<std::string> leftovers(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().filename().string().find(".pdfix-") != std::string::npos) {
      names.push_back(e.path().filename());
    }
  }
  return names;
}

class Hostile : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = temp_dir(); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const Bytes& b, const std::string& name) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
    return path;
  }
  // Every reading verb on a stream and every writing verb refuse `input` within the bound.
  void expect_refused_within_bounds(const std::string& input, const std::string& why) {
    for (const std::string& verb :
         std::vector<std::string>{"info -", "dump -", "fix - " + dir_ + "/out.data"}) {
      Bounded b = bounded("cat " + input + " | " + pdfix() + " " + verb + " >/dev/null");
      EXPECT_EQ(b.status, 2) << verb << ": " << b.err;
      EXPECT_NE(b.err.find(why), std::string::npos) << verb << ": " << b.err;
      EXPECT_GT(b.max_rss_kib, 0U);
      EXPECT_LT(b.max_rss_kib, kMaxRssKib) << verb;
      EXPECT_FALSE(fs::exists(dir_ + "/out.data"));
    }
    EXPECT_EQ(leftovers(dir_), std::vector<std::string>{});
  }
  std::string dir_;
};

TEST_F(Hostile, AStreamedPayloadClaimIsCheckedAsTheBytesArrive) {
  // AUXTRACE: its payload size is the u64 after the header; 2^40 bytes claimed, 48 sent.
  PerfDataBuilder aux;
  aux.pipe_mode().attr({}).comm(1, 1, "a");
  Bytes body = le64(uint64_t{1} << 40);
  body.resize(40, 0);
  aux.raw_record(format::kAuxtrace, 0, body);
  expect_refused_within_bounds(write(aux.build(), "aux.data"), "runs past the end");

  // HEADER_TRACING_DATA: a u32 size of almost 4 GiB.
  PerfDataBuilder tracing;
  tracing.pipe_mode().attr({});
  tracing.raw_record(format::kHeaderTracingData, 0, {0xf0, 0xff, 0xff, 0xff});
  expect_refused_within_bounds(write(tracing.build(), "tracing.data"), "runs past the end");
}

TEST_F(Hostile, CompressedDataCannotClaimUnboundedMemory) {
  // Inside zstd data, an AUXTRACE header that claims a terabyte, then records of zeros.
  PerfDataBuilder claim;
  claim.pipe_mode().attr({}).compress(format::kCompressed, 4096);
  Bytes body = le64(uint64_t{1} << 40);
  body.resize(40, 0);
  claim.raw_record(format::kAuxtrace, 0, body);
  for (int i = 0; i < 64; ++i) claim.raw_record(format::kFinishedRound + 100, 0, Bytes(4096, 0));
  expect_refused_within_bounds(write(claim.build(), "claim.data"), "claims");

  // One COMPRESSED record whose 100 MiB of zeros compress to a few kilobytes.
  transform::ZstdEncoder encoder(1);
  Bytes zstd;
  const Bytes zeros(size_t{1} << 20, 0);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(encoder.encode_flush(zeros, zstd).ok());
  ASSERT_LT(zstd.size(), 60000U);
  PerfDataBuilder bomb;
  bomb.pipe_mode().attr({});
  bomb.raw_record(format::kCompressed, 0, zstd);
  expect_refused_within_bounds(write(bomb.build(), "bomb.data"), "expands beyond");
}

TEST_F(Hostile, ClosedStandardFdsNeverReceiveTheOutput) {
  const std::string in = corpus_files().front().path;
  ASSERT_EQ(sh(pdfix() + " fix - " + dir_ + "/open.data < " + quote(in)).status, 0);
  RunResult r = sh(pdfix() + " fix - " + dir_ + "/closed.data < " + quote(in) + " 2>&-");
  EXPECT_EQ(r.status, 0);
  // The summary went nowhere; the perf.data is what it is with stderr open.
  EXPECT_TRUE(same_file(dir_ + "/open.data", dir_ + "/closed.data"));
  // Without stdout, what a verb prints cannot arrive: that is an error.
  r = sh(pdfix() + " info " + quote(in) + " >&-");
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("cannot write <stdout>"), std::string::npos) << r.err;
}

TEST_F(Hostile, AFullDiskOnStdoutIsAnError) {
  const std::string in = quote(corpus_files().front().path);
  for (const std::string verb : {"info", "dump", "buildid-list", "check", "copy"}) {
    RunResult r =
        sh(pdfix() + " " + verb + " " + in + (verb == "copy" ? " -" : "") + " > /dev/full");
    EXPECT_EQ(r.status, 2) << verb;
    EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << verb << ": " << r.err;
  }
}

TEST_F(Hostile, AFifoOrDeviceIsWrittenNeverReplaced) {
  const std::string in = corpus_files().front().path;
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  RunResult r = sh("cat " + fifo + " > " + dir_ + "/got & " + pdfix() + " copy " + quote(in) + " " +
                   fifo + "; s=$?; wait; exit $s");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_fifo(fifo));
  EXPECT_TRUE(same_file(in, dir_ + "/got"));
  // /dev/null takes the bytes and stays a device (pdfix runs as root in CI).
  r = sh(pdfix() + " fix " + quote(in) + " /dev/null");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(fs::is_character_file("/dev/null"));
}

TEST_F(Hostile, OutIsCheckedBeforeAnythingIsRead) {
  const std::string in = quote(corpus_files().front().path);
  fs::create_directory(dir_ + "/d");
  std::ofstream(dir_ + "/target") << "keep\n";
  fs::create_symlink(dir_ + "/target", dir_ + "/link");
  for (const std::string& out : std::vector<std::string>{"''", dir_ + "/d", dir_ + "/link"}) {
    RunResult r = sh(pdfix() + " copy " + in + " " + out);
    EXPECT_EQ(r.status, 2) << out;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_TRUE(fs::is_empty(dir_ + "/d"));
  EXPECT_TRUE(fs::is_symlink(dir_ + "/link"));
  EXPECT_EQ(fs::file_size(dir_ + "/target"), 5U);
  EXPECT_EQ(leftovers(dir_), std::vector<std::string>{});
}

TEST_F(Hostile, ARegularFileOnStdoutIsLeftEmptyByAFailure) {
  const CorpusFile f = corpus_files().front();
  const std::string cut = dir_ + "/cut.data";
  fs::copy_file(f.path, cut);
  fs::resize_file(cut, fs::file_size(f.path) * 6 / 10);
  RunResult r = sh(pdfix() + " copy " + cut + " - > " + dir_ + "/out.data");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(fs::file_size(dir_ + "/out.data"), 0U);
}

TEST_F(Hostile, AFailureSendsNothingDownAPipe) {
  // 40 MB of good records, then a record of size zero at the very end: a writer that streamed
  // file-mode output would have sent most of it before finding out.
  PerfDataBuilder b;
  b.attr({}).comm(1, 1, "x").mmap(1, 0x400000, 0x1000, 0, "/usr/bin/x");
  for (uint64_t i = 0; i < 1000000; ++i) b.sample(0x400010, 1, 1, i);
  b.comm(1, 1, "last");
  Bytes file = b.build();
  // The data section (offset and size at 40 and 48 of the header): zero the last record's size.
  const uint64_t data = le64_at(file, 40);
  const uint64_t end = data + le64_at(file, 48);
  uint64_t last = data;
  for (uint64_t at = data; at < end; at += file[at + 6] | (file[at + 7] << 8)) last = at;
  file[last + 6] = file[last + 7] = 0;
  const std::string bad = write(file, "bad.data");
  ASSERT_GT(fs::file_size(bad), 32U << 20);
  for (const char* verb : {"copy", "fix", "inject --buildids"}) {
    RunResult r = sh(pdfix() + " " + verb + " " + bad + " - | wc -c");
    EXPECT_NE(r.status, 0) << verb;  // pipefail: pdfix's own status
    EXPECT_EQ(r.out, "0\n") << verb;
    EXPECT_NE(r.err.find(absl::StrCat("offset 0x", absl::Hex(last))), std::string::npos) << r.err;
  }
  EXPECT_EQ(sh(pdfix() + " copy " + bad + " - | cat >/dev/null").status, 2);
}

TEST_F(Hostile, SignalsLeaveNoTemporaryFile) {
  // A stream that stops arriving midway keeps pdfix reading until the signal comes.
  std::string stream;
  for (const CorpusFile& f : corpus_files()) {
    if (f.name.find("pipe") != std::string::npos && !f.must_be_refused) stream = f.path;
  }
  ASSERT_FALSE(stream.empty());
  const std::string fifo = dir_ + "/feed";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // The signal goes once pdfix catches SIGINT (its SigCgt): a command put in the background by
  // sh starts with SIGINT ignored, and a pdfix slow to start (a sanitized build on a busy machine)
  // would ignore the signal, then finish the stream when the writer ends.
  const std::string caught =
      "c=$(awk '/^SigCgt/{print $2}' /proc/$p/status 2>/dev/null); c=${c#????????}; "
      "[ -n \"$c\" ] && [ $((0x$c & 2)) != 0 ]";
  for (const std::string sig : {"TERM", "INT", "HUP"}) {
    const std::string out = dir_ + "/out.data";
    RunResult r =
        sh("{ cat " + quote(stream) + "; exec sleep 30; } > " + fifo + " 2>/dev/null & f=$!; " +
           pdfix() + " fix - " + out + " < " + fifo + " & p=$!; i=0; until " + caught +
           " || [ $i -ge 600 ]; do sleep 0.1; i=$((i + 1)); done; sleep 0.5; kill -" + sig +
           " $p; wait $p; s=$?; kill $f; exit $s");
    EXPECT_GT(r.status, 128) << sig << ": " << r.err;
    EXPECT_FALSE(fs::exists(out)) << sig;
    EXPECT_EQ(leftovers(dir_), std::vector<std::string>{}) << sig;
  }
}

TEST_F(Hostile, AnInputThatShrinksWhileReadEndsInAnErrorNotACrash) {
  // 64 MiB of samples: long enough to be cut while pdfix reads it.
  PerfDataBuilder b;
  b.pipe_mode().attr({});
  for (int i = 0; i < 1000; ++i) b.sample(0x400000 + i, 1, 1, i);
  Bytes one = b.build();
  Bytes big = one;
  const Bytes records(one.begin() + 16, one.end());
  while (big.size() < (uint64_t{64} << 20)) big.insert(big.end(), records.begin(), records.end());
  const std::string in = write(big, "big.data");
  for (int round = 0; round < 3; ++round) {
    fs::resize_file(in, big.size());
    RunResult r = sh(pdfix() + " copy " + in + " " + dir_ + "/out.data & sleep 0.0" +
                     std::to_string(round) + "; truncate -s 4096 " + in + "; wait $!");
    EXPECT_TRUE(r.status == 0 || r.status == 2) << r.status << ": " << r.err;
    if (r.status == 2) {
      EXPECT_FALSE(fs::exists(dir_ + "/out.data"));
    }
    EXPECT_EQ(leftovers(dir_), std::vector<std::string>{});
    fs::remove(dir_ + "/out.data");
    std::ofstream(in, std::ios::binary)
        .write(reinterpret_cast<const char*>(big.data()), static_cast<std::streamsize>(big.size()));
  }
}

TEST_F(Hostile, CopyKeepsOddFeatureTablesByteForByte) {
  for (const CorpusFile& f : corpus_files()) {
    if (f.must_be_refused) continue;
    std::ifstream s(f.path, std::ios::binary);
    Bytes data((std::istreambuf_iterator<char>(s)), std::istreambuf_iterator<char>());
    if (data.size() < 104) continue;
    auto u64 = [&](size_t at) {
      uint64_t v = 0;
      for (int i = 7; i >= 0; --i) v = v << 8 | data[at + i];
      return v;
    };
    // A little-endian file-mode recording: its magic, and a header of the file mode's 104 bytes
    // (a stream's is 16).
    if (std::string(data.begin(), data.begin() + 8) != "PERFILE2" || u64(8) != 104) continue;
    const uint64_t data_end = u64(40) + u64(48);
    size_t features = 0;
    for (size_t i = 72; i < 104; ++i) features += std::popcount(data[i]);
    if (features == 0 || data_end + 16 * features > data.size()) continue;
    // The first feature points into the data section; or the last entry is {0, 0}.
    for (int variant = 0; variant < 2; ++variant) {
      Bytes odd = data;
      const size_t entry = variant == 0 ? data_end : data_end + 16 * (features - 1);
      for (int i = 0; i < 8; ++i) {
        odd[entry + i] = variant == 0 ? static_cast<uint8_t>(u64(32) >> (8 * i)) : 0;
        if (variant == 1) odd[entry + 8 + i] = 0;
      }
      const std::string in = write(odd, "odd.data");
      RunResult r = sh(pdfix() + " copy " + in + " " + dir_ + "/copy.data");
      EXPECT_TRUE(r.status == 0 || r.status == 2) << f.name << ": " << r.err;
      if (r.status == 0) {
        EXPECT_TRUE(same_file(in, dir_ + "/copy.data")) << f.name;
      }
      fs::remove(dir_ + "/copy.data");
    }
  }
}

TEST_F(Hostile, CompressedDataIsWrittenAtPdfixsLevelNotTheInputs) {
  PerfDataBuilder b;
  b.attr({}).compression_level(22).compress(format::kCompressed, 256);
  b.mmap(1, 0x400000, 0x1000, 0, "/nonexistent/app").sample(0x400010, 1, 1, 1);
  const std::string in = write(b.build(), "z22.data");
  const std::string known = " --known-build-ids /nonexistent/app=" + std::string(40, 'a') + " ";
  ASSERT_EQ(sh(pdfix() + " inject --buildids" + known + in + " " + dir_ + "/a.data").status, 0);
  EXPECT_NE(sh(pdfix() + " info " + dir_ + "/a.data").out.find("zstd level 1 "), std::string::npos);
  ASSERT_EQ(sh(pdfix() + " inject --buildids --zstd-level 5" + known + in + " " + dir_ + "/b.data")
                .status,
            0);
  EXPECT_NE(sh(pdfix() + " info " + dir_ + "/b.data").out.find("zstd level 5 "), std::string::npos);
  EXPECT_NE(sh(pdfix() + " info " + in).out.find("zstd level 22 "), std::string::npos);
}

TEST_F(Hostile, NamesThatAreNotUtf8AreEscapedAlike) {
  PerfDataBuilder b;
  b.attr({})
      .comm(1, 1,
            "a\xff\xfe"
            "b")
      .mmap(1, 0x400000, 0x1000, 0, "/opt/\xc3(x");
  const std::string in = write(b.build(), "names.data");
  RunResult json = sh(pdfix() + " dump --json " + in);
  ASSERT_EQ(json.status, 0) << json.err;
  EXPECT_NE(json.out.find(R"("comm":"a\\xff\\xfeb")"), std::string::npos) << json.out;
  EXPECT_NE(json.out.find(R"(/opt/\\xc3(x)"), std::string::npos) << json.out;
  RunResult text = sh(pdfix() + " dump " + in);
  EXPECT_NE(text.out.find(R"(comm=a\xff\xfeb)"), std::string::npos) << text.out;
  EXPECT_EQ(sh(pdfix() + " fix --json " + in + " " + dir_ + "/out.data").status, 0);
}

}  // namespace
}  // namespace pdfix::e2e
