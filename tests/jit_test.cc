// jitdumps and perf-PID.map files: the parser on dumps written here in either byte order, cut off,
// with every record type; the ELF images read back by LLVM's object reader; the pass over
// synthetic recordings.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "fixture/fake_host.h"
#include "fixture/perf_data_builder.h"
#include "fixture/read_back.h"
#include "format/record_type.h"
#include "format/records.h"
#include "gtest/gtest.h"
#include "io/input.h"
#include "jit/jit_elf.h"
#include "jit/jitdump.h"
#include "jit/perf_map.h"
#include "llvm/DebugInfo/DWARF/DWARFContext.h"
#include "llvm/DebugInfo/DWARF/DWARFDataExtractor.h"
#include "llvm/DebugInfo/DWARF/DWARFDebugFrame.h"
#include "llvm/Object/ELFObjectFile.h"
#include "passes/inject_jit.h"
#include "transform/pipeline.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::PerfDataBuilder;

// Writes a jitdump the way a runtime does, in the byte order asked for.
class DumpWriter {
 public:
  explicit DumpWriter(bool swapped, uint32_t pid = 4242)
      : e_(swapped ? format::Endian::swapped() : format::Endian::host()) {
    bytes_.resize(40);
    e_.put_u32(bytes_.data(), 0x4A695444);
    e_.put_u32(bytes_.data() + 4, 1);
    e_.put_u32(bytes_.data() + 8, 40);
    e_.put_u32(bytes_.data() + 12, 62);
    e_.put_u32(bytes_.data() + 20, pid);
    e_.put_u64(bytes_.data() + 24, 1000);
  }
  DumpWriter& load(uint64_t time, uint64_t addr, uint64_t index, const std::string& name,
                   const Bytes& code) {
    Bytes body = fields({4242, 4243}, {addr, addr, code.size(), index});
    body.insert(body.end(), name.begin(), name.end());
    body.push_back(0);
    body.insert(body.end(), code.begin(), code.end());
    return record(0, time, body);
  }
  DumpWriter& move(uint64_t time, uint64_t from, uint64_t to, uint64_t size, uint64_t index) {
    return record(1, time, fields({4242, 4243}, {to, from, to, size, index}));
  }
  DumpWriter& debug_info(uint64_t time, uint64_t addr,
                         const std::vector<std::pair<uint32_t, std::string>>& lines) {
    Bytes body = fields({}, {addr, lines.size()});
    for (size_t i = 0; i < lines.size(); ++i) {
      Bytes entry = fields({}, {addr + i * 4});
      entry.resize(16);
      e_.put_u32(entry.data() + 8, lines[i].first);
      body.insert(body.end(), entry.begin(), entry.end());
      body.insert(body.end(), lines[i].second.begin(), lines[i].second.end());
      body.push_back(0);
    }
    return record(2, time, body);
  }
  DumpWriter& unwinding(uint64_t time, const Bytes& data, uint64_t hdr_size) {
    Bytes body = fields({}, {data.size(), hdr_size, data.size()});
    body.insert(body.end(), data.begin(), data.end());
    return record(4, time, body);
  }
  DumpWriter& close(uint64_t time) { return record(3, time, {}); }
  const Bytes& bytes() const { return bytes_; }

 private:
  Bytes fields(const std::vector<uint32_t>& u32s, const std::vector<uint64_t>& u64s) const {
    Bytes b(u32s.size() * 4 + u64s.size() * 8);
    size_t at = 0;
    for (uint32_t v : u32s) e_.put_u32(b.data() + (at += 4) - 4, v);
    for (uint64_t v : u64s) e_.put_u64(b.data() + (at += 8) - 8, v);
    return b;
  }
  DumpWriter& record(uint32_t id, uint64_t time, Bytes body) {
    while ((body.size() + 16) % 8 != 0) body.push_back(0);
    Bytes head(16);
    e_.put_u32(head.data(), id);
    e_.put_u32(head.data() + 4, static_cast<uint32_t>(body.size() + 16));
    e_.put_u64(head.data() + 8, time);
    bytes_.insert(bytes_.end(), head.begin(), head.end());
    bytes_.insert(bytes_.end(), body.begin(), body.end());
    return *this;
  }

  format::Endian e_;
  Bytes bytes_;
};

const Bytes kCodeA = {0x55, 0x48, 0x89, 0xe5, 0xc3};
const Bytes kCodeB = {0x90, 0x90, 0xc3};

DumpWriter every_record(bool swapped) {
  DumpWriter w(swapped);
  w.debug_info(2000, 0x7000, {{10, "a.js"}, {11, "\xff"}})
      .unwinding(2100, Bytes(24, 0x11), 8)
      .load(3000, 0x7000, 1, "JS:a", kCodeA)
      .load(4000, 0x7100, 2, "JS:b", kCodeB)
      .move(5000, 0x7100, 0x7200, kCodeB.size(), 2)
      .close(6000);
  return w;
}

class JitDumpTest : public ::testing::TestWithParam<bool> {};

TEST_P(JitDumpTest, ParsesEveryRecordInEitherByteOrder) {
  const DumpWriter w = every_record(GetParam());
  auto d = jit::parse_jitdump(w.bytes());
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->swapped, GetParam());
  EXPECT_EQ(d->pid, 4242u);
  EXPECT_EQ(d->elf_machine, 62u);
  EXPECT_FALSE(d->cut_at.has_value());
  ASSERT_EQ(d->loads.size(), 2u);
  EXPECT_EQ(d->loads[0].name, "JS:a");
  EXPECT_EQ(d->loads[0].code_addr, 0x7000u);
  EXPECT_EQ(d->loads[0].timestamp, 3000u);
  EXPECT_EQ(d->loads[0].tid, 4243u);
  EXPECT_EQ(Bytes(d->loads[0].code.begin(), d->loads[0].code.end()), kCodeA);
  // The unwinding record belongs to the load after it, and to that one only.
  EXPECT_EQ(d->loads[0].unwinding.size(), 24u);
  EXPECT_EQ(d->loads[0].eh_frame_hdr_size, 8u);
  EXPECT_TRUE(d->loads[1].unwinding.empty());
  ASSERT_EQ(d->moves.size(), 1u);
  EXPECT_EQ(d->moves[0].old_code_addr, 0x7100u);
  EXPECT_EQ(d->moves[0].new_code_addr, 0x7200u);
  EXPECT_EQ(d->moves[0].code_index, 2u);
  ASSERT_EQ(d->debug_info.size(), 1u);
  ASSERT_EQ(d->debug_info[0].entries.size(), 2u);
  EXPECT_EQ(d->debug_info[0].entries[1].line, 11u);
  EXPECT_EQ(d->debug_info[0].entries[1].file, "a.js");  // "\xff": the file before
}

TEST_P(JitDumpTest, ACutOffDumpKeepsItsWholeRecords) {
  const Bytes whole = every_record(GetParam()).bytes();
  // Cut inside the second load (after its header).
  auto full = jit::parse_jitdump(whole);
  ASSERT_TRUE(full.ok());
  const auto second = static_cast<size_t>(full->loads[1].code.data() - whole.data());
  const Bytes cut(whole.begin(), whole.begin() + static_cast<ptrdiff_t>(second + 1));
  auto d = jit::parse_jitdump(cut);
  ASSERT_TRUE(d.ok()) << d.status();
  ASSERT_EQ(d->loads.size(), 1u);
  EXPECT_EQ(d->loads[0].name, "JS:a");
  ASSERT_TRUE(d->cut_at.has_value());
  EXPECT_LT(*d->cut_at, cut.size());
}

INSTANTIATE_TEST_SUITE_P(ByteOrder, JitDumpTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Swapped" : "Native"; });

TEST(JitDump, RefusesWhatIsNoDumpAndUnknownVersions) {
  EXPECT_FALSE(jit::parse_jitdump(Bytes(64, 0)).ok());
  EXPECT_FALSE(jit::parse_jitdump(Bytes(8, 0)).ok());
  Bytes v2 = DumpWriter(false).bytes();
  format::Endian::host().put_u32(v2.data() + 4, 2);
  auto d = jit::parse_jitdump(v2);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("version 2"), std::string::npos) << d.status();
}

TEST(JitDump, ItsPidFromItsName) {
  EXPECT_EQ(jit::jitdump_pid("/home/u/jit-1234.dump"), 1234u);
  EXPECT_EQ(jit::jitdump_pid("jit-7.dump"), 7u);
  EXPECT_FALSE(jit::jitdump_pid("/tmp/jit-.dump"));
  EXPECT_FALSE(jit::jitdump_pid("/tmp/jit-12.dump.so"));
  EXPECT_FALSE(jit::jitdump_pid("/tmp/xjit-12.dump"));
}

TEST(PerfMap, ParsesLinesAndSkipsWhatIsNoSymbol) {
  size_t skipped = 0;
  auto s = jit::parse_perf_map(
      "7f0010 20 JS:*fib /a.js:1\n0x7f0100 0x8 Interpreter\nnonsense\n7f0200 10 cut", skipped);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].start, 0x7f0010u);
  EXPECT_EQ(s[0].size, 0x20u);
  EXPECT_EQ(s[0].name, "JS:*fib /a.js:1");
  EXPECT_EQ(s[1].start, 0x7f0100u);
  EXPECT_EQ(s[1].name, "Interpreter");
  EXPECT_EQ(skipped, 2u);  // "nonsense" and the line without its newline
}

// An ELF image as LLVM's object reader opens it (viewing `bytes`).
llvm::Expected<std::unique_ptr<llvm::object::ObjectFile>> object_of(const Bytes& bytes) {
  return llvm::object::ObjectFile::createObjectFile(llvm::MemoryBufferRef(
      llvm::StringRef(reinterpret_cast<const char*>(bytes.data()), bytes.size()), "jit"));
}

// The ELF file of the dump `w` writes.
absl::StatusOr<jit::DumpImage> image_of(const DumpWriter& w) {
  auto d = jit::parse_jitdump(w.bytes());
  if (!d.ok()) return d.status();
  return jit::dump_image(*d);
}

// The ELF file as LLVM's reader sees it: each symbol's value and the bytes at its file offset.
struct ReadElf {
  std::map<std::string, std::pair<uint64_t, uint64_t>> symbols;  // name -> (value, size)
  std::string build_id;
  bool dyn = false;
};
ReadElf read_elf(const Bytes& bytes) {
  ReadElf r;
  auto obj = object_of(bytes);
  EXPECT_TRUE(static_cast<bool>(obj));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return r;
  }
  auto* elf = llvm::dyn_cast<llvm::object::ELF64LEObjectFile>(obj->get());
  EXPECT_NE(elf, nullptr);
  if (elf == nullptr) return r;
  r.dyn = elf->getELFFile().getHeader().e_type == llvm::ELF::ET_DYN;
  for (const auto& sym : elf->symbols()) {
    auto name = sym.getName();
    auto value = sym.getValue();
    if (!name || !value) {
      llvm::consumeError(name.takeError());
      llvm::consumeError(value.takeError());
      continue;
    }
    r.symbols[name->str()] = {*value, llvm::object::ELFSymbolRef(sym).getSize()};
  }
  auto sections = elf->getELFFile().sections();
  if (!sections) {
    llvm::consumeError(sections.takeError());
    return r;
  }
  for (const auto& s : *sections) {
    if (s.sh_type != llvm::ELF::SHT_NOTE) continue;
    llvm::Error err = llvm::Error::success();
    for (const auto& note : elf->getELFFile().notes(s, err)) {
      for (uint8_t b : note.getDesc(4)) r.build_id += absl::StrCat(absl::Hex(b, absl::kZeroPad2));
    }
    llvm::consumeError(std::move(err));
  }
  return r;
}

// The build-id binutils' readelf reads from the file at `path`: a referee written apart from
// pdfix and from LLVM.
std::string readelf_id(const std::string& path) {
  std::string out;
  FILE* p = popen(("readelf -n '" + path + "' 2>/dev/null").c_str(), "r");
  char buf[512];
  while (p != nullptr && fgets(buf, sizeof buf, p) != nullptr) out += buf;
  if (p != nullptr) pclose(p);
  const size_t at = out.find("Build ID: ");
  return at == std::string::npos ? "" : out.substr(at + 10, out.find('\n', at) - at - 10);
}

TEST(JitElf, EveryLoadsCodeAtItsOffsetAndASymbolThere) {
  const DumpWriter w = every_record(false);  // the dump views its bytes
  auto d = jit::parse_jitdump(w.bytes());
  ASSERT_TRUE(d.ok());
  auto image = jit::dump_image(*d);
  ASSERT_TRUE(image.ok()) << image.status();
  ASSERT_EQ(image->offsets.size(), 2u);
  const ReadElf elf = read_elf(image->elf.bytes);
  EXPECT_TRUE(elf.dyn);
  EXPECT_EQ(elf.build_id, image->elf.id.hex());
  ASSERT_TRUE(elf.symbols.contains("JS:a"));
  ASSERT_TRUE(elf.symbols.contains("JS:b"));
  // Addresses are file offsets: a map's pgoff is the symbol's value.
  EXPECT_EQ(elf.symbols.at("JS:a"), std::make_pair(image->offsets[0], uint64_t{kCodeA.size()}));
  EXPECT_EQ(elf.symbols.at("JS:b"), std::make_pair(image->offsets[1], uint64_t{kCodeB.size()}));
  for (size_t i = 0; i < 2; ++i) {
    const Bytes& code = i == 0 ? kCodeA : kCodeB;
    EXPECT_EQ(
        Bytes(image->elf.bytes.begin() + static_cast<ptrdiff_t>(image->offsets[i]),
              image->elf.bytes.begin() + static_cast<ptrdiff_t>(image->offsets[i] + code.size())),
        code);
  }
}

// An .eh_frame as a runtime writes it for code of `code_size` bytes: a CIE, one FDE over the
// code, its address relative to itself with the table at the code's size rounded up to 8; then a
// terminator, then an 8-byte .eh_frame_hdr.
Bytes unwinding_for(uint64_t code_size) {
  const format::Endian e = format::Endian::host();
  Bytes t(24 + 20 + 4 + 8, 0);
  e.put_u32(t.data(), 20);  // CIE: id 0, version 1, "zR", align 1 / -8, RA 16, encoding 0x1b
  const Bytes cie = {1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01};
  std::copy(cie.begin(), cie.end(), t.begin() + 8);
  e.put_u32(t.data() + 24, 16);  // FDE
  e.put_u32(t.data() + 28, 28);  // back to the CIE
  const uint64_t table_at = (code_size + 7) & ~uint64_t{7};
  e.put_u32(t.data() + 32, static_cast<uint32_t>(-static_cast<int64_t>(table_at + 32)));
  e.put_u32(t.data() + 36, static_cast<uint32_t>(code_size));
  return t;
}

TEST(JitElf, EveryLoadsUnwindingTableInOneEhFrameAtItsCode) {
  DumpWriter w(false);
  w.unwinding(2000, unwinding_for(kCodeA.size()), 8)
      .load(3000, 0x7000, 1, "JS:a", kCodeA)
      .unwinding(3500, unwinding_for(kCodeB.size()), 8)
      .load(4000, 0x7100, 2, "JS:b", kCodeB);
  auto image = image_of(w);
  ASSERT_TRUE(image.ok()) << image.status();
  auto obj = object_of(image->elf.bytes);
  ASSERT_TRUE(static_cast<bool>(obj));
  std::optional<llvm::object::SectionRef> eh;
  std::optional<llvm::object::SectionRef> hdr;
  for (const auto& section : (*obj)->sections()) {
    auto name = section.getName();
    if (name && *name == ".eh_frame") eh = section;
    if (name && *name == ".eh_frame_hdr") hdr = section;
  }
  ASSERT_TRUE(eh.has_value()) << "no .eh_frame";
  auto contents = eh->getContents();
  ASSERT_TRUE(static_cast<bool>(contents));
  llvm::DWARFDebugFrame frame(llvm::Triple::x86_64, true, eh->getAddress());
  ASSERT_FALSE(static_cast<bool>(frame.parse(llvm::DWARFDataExtractor(*contents, true, 8))));
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  for (const auto& entry : frame.entries()) {
    if (const auto* fde = llvm::dyn_cast<llvm::dwarf::FDE>(&entry)) {
      ranges.emplace_back(fde->getInitialLocation(), fde->getAddressRange());
    }
  }
  // Each FDE covers its load's code where the file holds it.
  EXPECT_EQ(ranges, (std::vector<std::pair<uint64_t, uint64_t>>{
                        {image->offsets[0], kCodeA.size()}, {image->offsets[1], kCodeB.size()}}));
  // .eh_frame_hdr (what libunwind searches): the .eh_frame's address, then each FDE by the code
  // it covers, relative to the header.
  ASSERT_TRUE(hdr.has_value()) << "no .eh_frame_hdr";
  auto table = hdr->getContents();
  ASSERT_TRUE(static_cast<bool>(table));
  ASSERT_EQ(table->size(), 12u + 2 * 8);
  const format::Endian e = format::Endian::host();
  const auto* h = reinterpret_cast<const uint8_t*>(table->data());
  EXPECT_EQ(h[0], 1);
  EXPECT_EQ(hdr->getAddress() + 4 + static_cast<int32_t>(e.u32(h + 4)), eh->getAddress());
  EXPECT_EQ(e.u32(h + 8), 2u);
  EXPECT_EQ(hdr->getAddress() + static_cast<int32_t>(e.u32(h + 12)), image->offsets[0]);
  EXPECT_EQ(hdr->getAddress() + static_cast<int32_t>(e.u32(h + 20)), image->offsets[1]);
  const uint64_t second_fde = hdr->getAddress() + static_cast<int32_t>(e.u32(h + 24));
  EXPECT_GT(second_fde, eh->getAddress());
  EXPECT_LT(second_fde, eh->getAddress() + eh->getSize());
}

TEST(JitElf, ALoadsLinesAreALineTableAtItsCode) {
  DumpWriter w(false);
  w.debug_info(2000, 0x7000, {{10, "a.js"}, {11, "\xff"}})
      .load(3000, 0x7000, 1, "JS:a", kCodeA)
      .debug_info(3500, 0x7100, {{20, "b.js"}})
      .load(3600, 0x7200, 2, "JS:c", kCodeB)   // another address: the lines are not its
      .load(3700, 0x7100, 3, "JS:d", kCodeB);  // nor of later code at their address
  auto image = image_of(w);
  ASSERT_TRUE(image.ok()) << image.status();
  auto obj = object_of(image->elf.bytes);
  ASSERT_TRUE(static_cast<bool>(obj));
  auto dwarf = llvm::DWARFContext::create(**obj);
  auto line_at = [&](uint64_t address) {
    const llvm::DILineInfo info =
        dwarf->getLineInfoForAddress({address, llvm::object::SectionedAddress::UndefSection},
                                     {llvm::DILineInfoSpecifier::FileLineInfoKind::RawValue,
                                      llvm::DILineInfoSpecifier::FunctionNameKind::None});
    return absl::StrCat(info.FileName, ":", info.Line);
  };
  EXPECT_EQ(line_at(image->offsets[0]), "a.js:10");
  EXPECT_EQ(line_at(image->offsets[0] + 4), "a.js:11");
  EXPECT_EQ(line_at(image->offsets[1]), llvm::DILineInfo().FileName + ":0");
  EXPECT_EQ(line_at(image->offsets[2]), llvm::DILineInfo().FileName + ":0");
}

TEST(JitElf, TheSameDumpGivesTheSameIdAnotherDumpAnother) {
  // Two dumps written apart with the same contents, each parsed on its own.
  const DumpWriter w = every_record(false);
  const DumpWriter twin = every_record(false);
  auto a = jit::parse_jitdump(w.bytes());
  auto a_twin = jit::parse_jitdump(twin.bytes());
  ASSERT_TRUE(a.ok() && a_twin.ok());
  auto first = jit::dump_image(*a);
  auto again = jit::dump_image(*a_twin);
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(first->elf.bytes, again->elf.bytes);
  EXPECT_EQ(readelf_id(testing::write_temp(first->elf.bytes)), first->elf.id.hex());
  DumpWriter other(false);
  other.load(3000, 0x7000, 1, "JS:a", {0x55, 0xc3});
  auto b = jit::parse_jitdump(other.bytes());
  auto second = jit::dump_image(*b);
  ASSERT_TRUE(second.ok());
  EXPECT_NE(first->elf.id.hex(), second->elf.id.hex());
  EXPECT_EQ(first->elf.id.size, 20);
}

TEST(JitElf, ASymbolImageHasEverySymbolAtItsOffset) {
  size_t skipped = 0;
  const std::string text = "7f0000001010 20 fib\n7f0000005000 40 fib\n7f0000003000 8 Stub\n";
  const auto symbols = jit::parse_perf_map(text, skipped);
  auto image = jit::symbol_image(symbols, 62, false);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_EQ(image->base, 0x7f0000001000u);
  const ReadElf elf = read_elf(image->elf.bytes);
  EXPECT_EQ(elf.build_id, image->elf.id.hex());
  EXPECT_EQ(elf.symbols.at("Stub"), std::make_pair(image->offset_of(0x7f0000003000), uint64_t{8}));
  // No code: the file is small however far apart the symbols are.
  EXPECT_LT(image->elf.bytes.size(), 8192u);
}

// The pass over a recording with a marker map of a dump written beside it.
class InjectJitTest : public ::testing::Test {
 protected:
  static constexpr uint32_t kPid = 4242;
  static constexpr uint64_t kLate = 0xf000000000000000;  // after the fixture's trailer time

  void SetUp() override {
    dir_ = testing::write_temp({}, "x");
    // As the kernel names files: no empty components (TMPDIR may end in '/').
    dir_ = std::filesystem::path(dir_.substr(0, dir_.rfind('/'))).lexically_normal();
    cache_ = dir_ + "/cache";
    dump_ = dir_ + "/jit-4242.dump";
  }
  void write(const std::string& path, const Bytes& bytes) {
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
  }
  uint64_t inode(const std::string& path) {
    struct stat st{};
    EXPECT_EQ(stat(path.c_str(), &st), 0);
    return st.st_ino;
  }
  Bytes recording(bool mono, uint64_t ino) {
    PerfDataBuilder b;
    testing::AttrSpec attr{
        .size = 128, .ids = {}, .flags = mono ? 1ULL << 25 : 0, .clockid = mono ? 1 : 0};
    b.attr(attr)
        .mmap2(kPid, 0x7000000, 0x1000, 0, dump_, 8, 1, ino)
        .mmap(kPid, 0x7000, 0x10000, 0x7000, "//anon")
        .sample(0x7002, kPid, kPid, kLate + 10);
    return b.build();
  }
  // Runs the pass; the records of the output.
  testing::ReadBack run(const Bytes& input, passes::InjectJitConfig config = {}) {
    if (config.buildid_dir.empty()) config.buildid_dir = cache_;
    const std::string in_path = testing::write_temp(input);
    auto in = io::open_input(in_path);
    EXPECT_TRUE(in.ok());
    const passes::Common common{.host = &host_};
    auto chain =
        transform::run_pipeline(*in, in_path + ".out",
                                [&] {
                                  transform::PassChain c;
                                  c.push_back(std::make_unique<passes::InjectJit>(config, common));
                                  return c;
                                },
                                {});
    EXPECT_TRUE(chain.ok()) << chain.status();
    pass_report_ = dynamic_cast<const passes::InjectJit&>(*chain->front()).report();
    incomplete_ = dynamic_cast<const passes::InjectJit&>(*chain->front()).incomplete();
    auto back = testing::read_back(in_path + ".out");
    EXPECT_TRUE(back.ok()) << back.status();
    return *back;
  }
  std::vector<format::MmapRecord> maps(const testing::ReadBack& r) {
    std::vector<format::MmapRecord> out;
    for (size_t i = 0; i < r.types.size(); ++i) {
      if (r.types[i] != format::kMmap && r.types[i] != format::kMmap2) continue;
      auto m = format::decode_mmap(r.bytes[i], r.endian, r.trailers[i], 0);
      EXPECT_TRUE(m.ok());
      filenames_.emplace_back(m->filename);
      times_.push_back(r.endian.u64(r.bytes[i].data() + r.bytes[i].size() - r.trailers[i] + 8));
      out.push_back(*m);
    }
    return out;
  }

  testing::FakeHost host_;
  std::string dir_, cache_, dump_;
  passes::JitReport pass_report_;
  bool incomplete_ = false;
  std::vector<std::string> filenames_;
  std::vector<uint64_t> times_;
};

TEST_F(InjectJitTest, EveryLoadAndMoveBecomesAMapOfOneFileAtItsTime) {
  DumpWriter w(false);
  w.load(kLate + 1, 0x7000, 1, "JS:a", kCodeA)
      .load(kLate + 2, 0x7100, 2, "JS:b", kCodeB)
      .move(kLate + 3, 0x7100, 0x7200, kCodeB.size(), 2);
  write(dump_, w.bytes());
  const auto out = maps(run(recording(true, inode(dump_))));
  // The marker and the anonymous map are gone; three maps of the dump's ELF file are there.
  ASSERT_EQ(out.size(), 3u) << (pass_report_.sources.empty() ? ""
                                                             : pass_report_.sources[0].problem);
  EXPECT_FALSE(incomplete_);
  const std::string id = pass_report_.sources.at(0).build_id;
  ASSERT_FALSE(id.empty());
  // The file in the cache, read by readelf (its id) and LLVM (where each load's code is).
  const std::string elf = cache_ + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + "/elf";
  EXPECT_EQ(readelf_id(elf), id);
  const ReadElf written = read_elf(testing::read_file(elf));
  ASSERT_TRUE(written.symbols.contains("JS:a") && written.symbols.contains("JS:b"));
  const uint64_t starts[] = {0x7000, 0x7100, 0x7200};
  const uint64_t pgoffs[] = {written.symbols.at("JS:a").first, written.symbols.at("JS:b").first,
                             written.symbols.at("JS:b").first};
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(filenames_[i], dir_ + "/jitted-4242.so");
    EXPECT_EQ(out[i].start, starts[i]);
    EXPECT_EQ(out[i].pgoff, pgoffs[i]);
    EXPECT_EQ(out[i].pid, kPid);
    EXPECT_TRUE(out[i].has_build_id());
    EXPECT_EQ(format::BuildId::from_bytes({out[i].build_id.data(), out[i].build_id_size})->hex(),
              id);
    EXPECT_EQ(times_[i], kLate + 1 + i);
  }
  EXPECT_EQ(out[0].len, kCodeA.size());
  EXPECT_EQ(pass_report_.anonymous_dropped, 1u);
}

TEST_F(InjectJitTest, ADumpMappedAgainAddsNoMoreMaps) {
  DumpWriter w(false);
  w.load(kLate + 1, 0x7000, 1, "JS:a", kCodeA);
  write(dump_, w.bytes());
  PerfDataBuilder b;
  b.attr({.size = 128, .ids = {}, .flags = 1ULL << 25, .clockid = 1})
      .mmap2(kPid, 0x7000000, 0x1000, 0, dump_, 8, 1, inode(dump_))
      .mmap2(kPid, 0x7100000, 0x1000, 0, dump_, 8, 1, inode(dump_));
  const auto out = maps(run(b.build()));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(filenames_[0], dir_ + "/jitted-4242.so");
  EXPECT_EQ(pass_report_.sources.size(), 1u);
}

TEST_F(InjectJitTest, WithoutMonotonicTimesTheMarkerStaysAndTheRunIsIncomplete) {
  write(dump_, every_record(false).bytes());
  const auto out = maps(run(recording(false, inode(dump_))));
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(filenames_[0], dump_);
  EXPECT_EQ(filenames_[1], "//anon");
  EXPECT_TRUE(incomplete_);
  EXPECT_NE(pass_report_.sources.at(0).problem.find("-k mono"), std::string::npos);
}

TEST_F(InjectJitTest, AnotherFileAtTheDumpsPathIsNotTakenACopyInJitDirIs) {
  write(dump_, every_record(false).bytes());
  const uint64_t recorded = inode(dump_) + 1;  // the mapped inode was another
  const auto left = maps(run(recording(true, recorded)));
  EXPECT_EQ(left.size(), 2u);
  EXPECT_TRUE(incomplete_);
  EXPECT_NE(pass_report_.sources.at(0).problem.find("not the inode mapped"), std::string::npos)
      << pass_report_.sources.at(0).problem;
  // The same bytes copied off the host, as --jit-dir gives them.
  const std::string copies = dir_ + "/copies";
  ASSERT_EQ(mkdir(copies.c_str(), 0700), 0);
  DumpWriter w(false);
  w.load(kLate + 1, 0x7000, 1, "JS:a", kCodeA);
  write(copies + "/jit-4242.dump", w.bytes());
  filenames_.clear();
  // Each --jit-dir is looked in: the copy is in the second.
  const auto found =
      maps(run(recording(true, recorded), {.jit_dirs = {dir_ + "/nothing-here", copies}}));
  ASSERT_EQ(found.size(), 1u);
  EXPECT_FALSE(incomplete_);
  EXPECT_EQ(pass_report_.sources.at(0).found_at, copies + "/jit-4242.dump");
}

TEST_F(InjectJitTest, APerfMapRenamesTheAnonymousMapsItsSymbolsFallIn) {
  const std::string copies = dir_ + "/maps";
  ASSERT_EQ(mkdir(copies.c_str(), 0700), 0);
  const std::string text = "7010 20 JS:*fib\n7100 8 Stub\n";
  write(copies + "/perf-4242.map", Bytes(text.begin(), text.end()));
  PerfDataBuilder b;
  b.attr({})
      .mmap(kPid, 0x7000, 0x1000, 0x7000, "//anon")
      .mmap(kPid, 0x90000, 0x1000, 0x90000, "//anon")     // no symbol in it
      .mmap(kPid + 1, 0x7000, 0x1000, 0x7000, "//anon");  // another process
  const auto out = maps(run(b.build(), {.jit_dirs = {copies}}));
  ASSERT_EQ(out.size(), 3u);
  ASSERT_EQ(pass_report_.sources.size(), 1u);
  const std::string id = pass_report_.sources[0].build_id;
  const std::string elf = cache_ + "/.build-id/" + id.substr(0, 2) + "/" + id.substr(2) + "/elf";
  EXPECT_EQ(readelf_id(elf), id);
  EXPECT_EQ(filenames_[0], "/tmp/jitted-4242-perf-map.so");
  // The map at 0x7000 is placed so that fib, at 0x7010, is where the file's symbol says.
  const ReadElf written = read_elf(testing::read_file(elf));
  ASSERT_TRUE(written.symbols.contains("JS:*fib"));
  EXPECT_EQ(out[0].pgoff + 0x10, written.symbols.at("JS:*fib").first);
  EXPECT_EQ(format::BuildId::from_bytes({out[0].build_id.data(), out[0].build_id_size})->hex(), id);
  EXPECT_EQ(filenames_[1], "//anon");
  EXPECT_EQ(filenames_[2], "//anon");
  EXPECT_EQ(pass_report_.sources[0].maps, 1u);
}

}  // namespace
}  // namespace pdfix
