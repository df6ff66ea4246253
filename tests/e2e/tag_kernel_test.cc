// pdfix tag-kernel and pdfix fix on real recordings, judged by the machine's perf.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "e2e/harness.h"
#include "fixture/chain.h"
#include "fixture/perf_data_builder.h"
#include "format/feature.h"
#include "format/record_type.h"
#include "format/records.h"
#include "io/input.h"
#include "transform/pipeline.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

constexpr const char* kVmlinux = "/usr/lib/debug/boot/vmlinux-test";
constexpr uint64_t kFooStart = 0xffffffffc0000000;

// Makes a recording look as old and third-party tools leave them: the kernel's table entry filed
// under a vmlinux path, behind an out-of-tree module "[foo]" (with a module map in the data).
class MangleTable : public transform::Pass {
 public:
  std::string_view name() const override { return "mangle"; }
  bool wants(uint32_t type) const override { return type == format::kMmap; }
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& s,
                       transform::RecordSink& out) override {
    if (auto st = out.emit(r); !st.ok()) return st;
    auto m = format::decode_mmap(r.bytes, s.endian(), s.trailer_size(r), r.offset);
    if (!m.ok() || !m->filename.starts_with("[kernel.kallsyms]")) return absl::OkStatus();
    // "[foo]" right after the kernel map, as perf writes module maps, with the same zero trailer.
    format::MmapRecord foo = *m;
    foo.start = kFooStart;
    foo.len = 0x1000;
    foo.pgoff = 0;
    foo.filename = "[foo]";
    const std::vector<uint8_t> id(20, 0xf0);
    auto rec =
        format::encode_mmap2_with_build_id(foo, id, r.bytes.last(s.trailer_size(r)), s.endian());
    // Back to a plain MMAP2 with dev/ino zero: the module's id is only in the table.
    rec[4] = static_cast<uint8_t>(format::kCpuModeKernel);
    rec[5] = 0;
    std::fill(rec.begin() + 40, rec.begin() + 64, 0);
    buf_ = rec;
    transform::RecordRef added = r;
    added.bytes = buf_;
    added.header = format::read_record_header(s.endian(), buf_.data());
    added.original = false;
    added.map = nullptr;
    return out.emit(added);
  }
  absl::Status finish(const transform::Session& s, transform::RecordSink& /*out*/,
                      transform::FeatureEdits& edits) override {
    auto f = s.feature(format::kFeatBuildId);
    if (!f) return absl::NotFoundError("no build-id table");
    auto entries = format::decode_build_id_table(*f);
    if (!entries.ok()) return entries.status();
    std::vector<uint8_t> table = format::encode_build_id_entry(
        0, format::kCpuModeKernel, -1, std::vector<uint8_t>(20, 0xf0), "[foo]", s.endian());
    for (const auto& e : *entries) {
      std::string name = e.filename == "[kernel.kallsyms]" ? kVmlinux : e.filename;
      auto entry = format::encode_build_id_entry(0, e.misc & format::kCpuModeMask, e.pid,
                                                 {e.id.data(), e.id_size}, name, s.endian());
      table.insert(table.end(), entry.begin(), entry.end());
    }
    edits.replace[format::kFeatBuildId] = std::move(table);
    return absl::OkStatus();
  }

 private:
  std::vector<uint8_t> buf_;
};

std::string perf_report(const std::string& path) {
  return sh("perf report --stdio --sort dso,sym -i " + quote(path) + " 2>/dev/null | grep -v '^#'")
      .out;
}

std::string kernel_lines(const std::string& report) {
  std::istringstream in(report);
  std::string l, out;
  while (std::getline(in, l)) {
    if (l.find("[k]") != std::string::npos) out += l + "\n";
  }
  return out;
}

// `id path` lines of perf buildid-list.
std::map<std::string, std::string> perf_buildids(const std::string& path) {
  std::map<std::string, std::string> by_name;
  // "%-40s %s": the id is blank for a DSO without one.
  std::istringstream in(sh("perf buildid-list -i " + quote(path) + " 2>/dev/null").out);
  for (std::string line; std::getline(in, line);) {
    if (line.size() > 41) by_name[line.substr(41)] = line.substr(0, line.find(' '));
  }
  return by_name;
}

class TagKernelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    rec_ = dir_ + "/rec.data";
    RunResult r = sh("perf record -o " + quote(rec_) +
                     " -- dd if=/dev/zero of=/dev/null bs=64k count=20000 2>&1");
    ASSERT_EQ(r.status, 0) << r.out;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  std::string mangle(const std::string& out) {
    auto in = io::open_input(rec_);
    EXPECT_TRUE(in.ok());
    EXPECT_TRUE(transform::run_pipeline(*in, out, testing::chain_of(MangleTable()), {}).ok());
    return out;
  }
  std::string dir_, rec_;
};

TEST_F(TagKernelTest, KernelFiledUnderVmlinuxBehindAModuleIsTaggedAgain) {
  const std::string kernel_id = perf_buildids(rec_).at("[kernel.kallsyms]");
  const std::string mangled = mangle(dir_ + "/mangled.data");
  // The damage is real: perf takes [foo]'s id for the kernel and loses the kernel's symbols.
  ASSERT_FALSE(perf_buildids(mangled).contains("[kernel.kallsyms]"));
  ASSERT_NE(kernel_lines(perf_report(mangled)), kernel_lines(perf_report(rec_)));
  ASSERT_NE(kernel_lines(perf_report(rec_)), "");

  const std::string out = dir_ + "/tagged.data";
  RunResult r = sh(pdfix() + " tag-kernel " + quote(mangled) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("host kernel tagged " + kernel_id), std::string::npos) << r.err;
  auto ids = perf_buildids(out);
  EXPECT_EQ(ids["[kernel.kallsyms]"], kernel_id);
  EXPECT_EQ(ids[kVmlinux], kernel_id);  // the pathname is kept
  std::string foo_id;
  for (int i = 0; i < 20; ++i) foo_id += "f0";
  EXPECT_EQ(ids["[foo]"], foo_id);
  EXPECT_EQ(perf_report(out), perf_report(rec_));
  // The kernel map now carries the kernel's id itself.
  EXPECT_NE(sh("perf script --show-mmap-events -i " + quote(out) + " | grep kallsyms")
                .out.find("<" + kernel_id + ">"),
            std::string::npos);

  // Tagged once is tagged: a second run writes the same bytes.
  const std::string again = dir_ + "/again.data";
  ASSERT_EQ(sh(pdfix() + " tag-kernel " + quote(out) + " " + quote(again)).status, 0);
  EXPECT_TRUE(same_file(out, again));
}

TEST_F(TagKernelTest, UndecidableTableIsLeftAlone) {
  // Without the [foo] map in the data nothing says which of two kernel entries is the kernel.
  class TableOnly : public MangleTable {
   public:
    bool wants(uint32_t) const override { return false; }
  };
  auto in = io::open_input(rec_);
  ASSERT_TRUE(in.ok());
  const std::string mangled = dir_ + "/mangled.data";
  ASSERT_TRUE(transform::run_pipeline(*in, mangled, testing::chain_of(TableOnly()), {}).ok());
  const std::string out = dir_ + "/out.data";
  RunResult r = sh(pdfix() + " tag-kernel " + quote(mangled) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("undecided"), std::string::npos) << r.err;
  EXPECT_TRUE(same_file(mangled, out));
}

TEST_F(TagKernelTest, FixOnARecordingMadeWithoutBuildIds) {
  const std::string bare = dir_ + "/bare.data";
  ASSERT_EQ(sh("perf record -B -o " + quote(bare) +
               " -- dd if=/dev/zero of=/dev/null bs=64k count=20000 2>&1")
                .status,
            0);
  const std::string out = dir_ + "/fixed.data";
  RunResult r = sh(pdfix() + " fix " + quote(bare) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("fix-module-sizes:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pdfix inject:"), std::string::npos) << r.err;
  // Every exec map of dd and the kernel map carry ids, and perf lists them.
  std::string maps = sh("perf script --show-mmap-events -i " + quote(out) +
                        " | grep -E 'PERF_RECORD_MMAP2? .*(r-xp|kallsyms)'")
                         .out;
  std::istringstream lines(maps);
  std::string l;
  int with_id = 0;
  while (std::getline(lines, l)) {
    EXPECT_TRUE(std::regex_search(l, std::regex("<[0-9a-f]{40}>"))) << l;
    ++with_id;
  }
  EXPECT_GE(with_id, 3);
  EXPECT_EQ(perf_buildids(out).at("[kernel.kallsyms]"),
            perf_buildids(rec_).at("[kernel.kallsyms]"));
  EXPECT_EQ(perf_report(out), perf_report(bare));
  // fix on its own output changes nothing.
  const std::string again = dir_ + "/again.data";
  ASSERT_EQ(sh(pdfix() + " fix " + quote(out) + " " + quote(again)).status, 0);
  EXPECT_TRUE(same_file(out, again));
}

TEST_F(TagKernelTest, FixThroughAPipe) {
  const std::string out = dir_ + "/fixed.data";
  RunResult r =
      sh("perf record -B -o - -- dd if=/dev/zero of=/dev/null bs=64k count=20000 "
         "2>/dev/null | " +
         pdfix() + " fix - - > " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  std::string kernel =
      sh("perf script --show-mmap-events -i - < " + quote(out) + " | grep 'kallsyms'").out;
  EXPECT_TRUE(std::regex_search(kernel, std::regex("<[0-9a-f]{40}>"))) << kernel;
}

// perf 6.12.0 wrote each entry's size as ALIGN(36 + name + 1, 8) and 36 bytes more than that.
TEST(TagKernel, RepairsA6120Table) {
  testing::PerfDataBuilder b;
  b.attr({});
  b.string_feature(3, "host").string_feature(6, "x86_64");
  b.mmap(0xffffffff, 0xffffffff81000000, 0x1000000, 0xffffffff81000000, "[kernel.kallsyms]_text",
         1);
  b.comm(5, 5, "x");
  // Build the broken table by hand and put it in place of a fresh one.
  auto broken_entry = [](const std::string& name, uint8_t fill, uint16_t misc) {
    const size_t size = (36 + name.size() + 1 + 7) / 8 * 8;
    testing::Bytes e(36 + size, 0);
    e[4] = static_cast<uint8_t>(misc & 0xff);
    e[5] = static_cast<uint8_t>(misc >> 8);
    e[6] = static_cast<uint8_t>(size & 0xff);
    e[7] = static_cast<uint8_t>(size >> 8);
    std::fill_n(e.begin() + 8, 4, 0xff);
    std::fill_n(e.begin() + 12, 20, fill);
    e[32] = 20;
    std::copy(name.begin(), name.end(), e.begin() + 36);
    return e;
  };
  testing::Bytes table = broken_entry("[kernel.kallsyms]", 0x11, 0x8001);
  testing::Bytes lib = broken_entry("/usr/lib/libfoo.so", 0x22, 0x8002);
  table.insert(table.end(), lib.begin(), lib.end());
  b.build_id_entry(0x8001, -1, testing::Bytes(20, 0x11), "[kernel.kallsyms]");
  const testing::Bytes file = b.build();
  // The builder wrote a correct table as the last feature; swap it for the broken one.
  auto h = format::parse_file_header(file);
  ASSERT_TRUE(h.ok());
  auto features = format::parse_feature_table(file, *h);
  ASSERT_TRUE(features.ok());
  const auto& bid = features->front();
  ASSERT_EQ(bid.id, format::kFeatBuildId);
  testing::Bytes fixed(file.begin(), file.begin() + static_cast<ptrdiff_t>(bid.section.offset));
  fixed.insert(fixed.end(), table.begin(), table.end());
  fixed.insert(fixed.end(), file.begin() + static_cast<ptrdiff_t>(bid.section.end()), file.end());
  // Later sections move by the size difference.
  const int64_t delta = static_cast<int64_t>(table.size()) - static_cast<int64_t>(bid.section.size);
  const uint64_t table_at = h->data.end();
  for (size_t i = 0; i < features->size(); ++i) {
    uint8_t* p = fixed.data() + table_at + 16 * i;
    if (i == 0) {
      h->endian.put_u64(p + 8, table.size());
    } else {
      h->endian.put_u64(p, h->endian.u64(p) + static_cast<uint64_t>(delta));
    }
  }
  const std::string in = testing::write_temp(fixed);
  ASSERT_EQ(sh("perf buildid-list -i " + quote(in) + " 2>&1").out.find("libfoo"),
            std::string::npos);  // perf 6.1 cannot read it

  const std::string out = fs::path(in).parent_path() / "out.data";
  RunResult r = sh(pdfix() + " tag-kernel " + quote(in) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("repaired"), std::string::npos) << r.err;
  auto ids = perf_buildids(out);
  EXPECT_EQ(ids["[kernel.kallsyms]"], std::string(40, '1'));
  EXPECT_EQ(ids["/usr/lib/libfoo.so"], std::string(40, '2'));
}

}  // namespace
}  // namespace pdfix::e2e

namespace pdfix::e2e {
namespace {

// A HEADER_BUILD_ID record's body: pid, id, id size, padding, name.
testing::Bytes build_id_body(const format::Endian& e, int32_t pid, uint8_t fill,
                             const std::string& name) {
  testing::Bytes body(28 + (name.size() + 1 + 63) / 64 * 64, 0);
  e.put_u32(body.data(), static_cast<uint32_t>(pid));
  std::fill_n(body.begin() + 4, 20, fill);
  body[24] = 20;
  std::copy(name.begin(), name.end(), body.begin() + 28);
  return body;
}

std::string hex_of(uint8_t fill) {
  static const char* digits = "0123456789abcdef";
  std::string one{digits[fill >> 4], digits[fill & 15]};
  std::string out;
  for (int i = 0; i < 20; ++i) out += one;
  return out;
}

TEST(TagKernel, GuestsKeepTheirNamesAndPids) {
  testing::PerfDataBuilder b;
  b.attr({});
  b.string_feature(3, "host").string_feature(6, "x86_64");
  b.mmap(0xffffffff, 0xffffffff81000000, 0x1000000, 0xffffffff81000000, "[kernel.kallsyms]_text",
         1);
  b.mmap(1234, 0xffffffff81000000, 0x1000000, 0xffffffff81000000, "[guest.kernel.kallsyms.1234]",
         4);
  b.build_id_entry(0x8001, -1, testing::Bytes(20, 0x11), "/usr/lib/debug/boot/vmlinux-6.1");
  b.build_id_entry(0x8004, 1234, testing::Bytes(20, 0x22), "/srv/guest/vmlinux");
  const std::string in = testing::write_temp(b.build());
  const std::string out = fs::path(in).parent_path() / "out.data";
  RunResult r = sh(pdfix() + " tag-kernel " + quote(in) + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("guest 1234 kernel tagged"), std::string::npos) << r.err;
  // perf lists the host's and the guest's DSOs.
  const std::string listed = sh("perf buildid-list -i " + quote(out) + " 2>/dev/null").out;
  for (const std::string& line :
       {hex_of(0x11) + " [kernel.kallsyms]", hex_of(0x11) + " /usr/lib/debug/boot/vmlinux-6.1",
        hex_of(0x22) + " [guest.kernel.kallsyms.1234]", hex_of(0x22) + " /srv/guest/vmlinux"}) {
    EXPECT_NE(listed.find(line), std::string::npos) << line << "\n" << listed;
  }
}

TEST(TagKernel, StreamGetsAnAlignedTagRecordInEitherByteOrder) {
  for (auto order : {std::endian::little, std::endian::big}) {
    SCOPED_TRACE(order == std::endian::big ? "big-endian" : "little-endian");
    testing::PerfDataBuilder b(order);
    // No sample_id trailer: perf then takes the maps as they come, before the sample it queues.
    b.pipe_mode().attr({.sample_id_all = false});
    b.string_feature(3, "host").string_feature(6, "x86_64");
    // As perf inject writes a stream: the ids first. An out-of-tree module, then the kernel
    // under its vmlinux path.
    b.raw_record(67, 0x8001, build_id_body(b.endian(), -1, 0xf0, "[foo]"));
    b.raw_record(67, 0x8001, build_id_body(b.endian(), -1, 0x11, "/boot/vmlinux-6.1"));
    b.mmap(0xffffffff, 0xffffffff81000000, 0x1000000, 0xffffffff81000000, "[kernel.kallsyms]_text",
           1);
    b.mmap(0xffffffff, 0xffffffffc0000000, 0x1000, 0, "[foo]", 1);
    b.comm(7, 7, "x").sample(0xffffffff81000100, 7, 7, 100, 1);
    const std::string in = testing::write_temp(b.build());
    // Before: perf files the kernel under its vmlinux path; nothing is [kernel.kallsyms].
    EXPECT_EQ(sh("perf buildid-list -i - < " + quote(in) + " 2>/dev/null").out.find("[kernel"),
              std::string::npos);
    const std::string out = fs::path(in).parent_path() / "out.data";
    RunResult r = sh("cat " + quote(in) + " | " + pdfix() + " tag-kernel - - > " + quote(out));
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string listed = sh("perf buildid-list -i - < " + quote(out) + " 2>&1").out;
    EXPECT_NE(listed.find(hex_of(0x11) + " [kernel.kallsyms]"), std::string::npos)
        << listed << r.err << sh(pdfix() + " dump " + quote(out)).out;
    // Every HEADER_BUILD_ID record keeps the stream 8-aligned, the added one included.
    const std::string dump = sh(pdfix() + " dump " + quote(out) + " | grep BUILD_ID").out;
    static const std::regex size(R"(size=(\d+))");
    int records = 0;
    for (std::sregex_iterator it(dump.begin(), dump.end(), size), end; it != end; ++it) {
      EXPECT_EQ(std::stoi((*it)[1]) % 8, 0) << dump;
      ++records;
    }
    EXPECT_EQ(records, 3) << dump;
  }
}

}  // namespace
}  // namespace pdfix::e2e
