// jitdumps and perf-PID.map files: the parser on dumps written here in either byte order, cut off,
// with every record type; the ELF images read back by LLVM's object reader and readelf.
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "fixture/jit_files.h"
#include "fixture/perf_data_builder.h"
#include "format/record_type.h"
#include "format/records.h"
#include "gtest/gtest.h"
#include "jit/jit_elf.h"
#include "jit/jitdump.h"
#include "jit/perf_map.h"
#include "llvm/DebugInfo/DWARF/DWARFContext.h"
#include "llvm/DebugInfo/DWARF/DWARFDataExtractor.h"
#include "llvm/DebugInfo/DWARF/DWARFDebugFrame.h"
#include "llvm/Object/ELFObjectFile.h"

namespace pdfix {
namespace {

using testing::Bytes;
using testing::DumpWriter;
using testing::every_record;
using testing::image_of;
using testing::kCodeA;
using testing::kCodeB;
using testing::object_of;
using testing::read_elf;
using testing::ReadElf;
using testing::readelf_id;

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

// A marker is the runtime's own map of its dump, executable; a reader's map of a dump (perf
// records it when asked for data maps, as --call-graph dwarf asks) is none, nor is a kernel's.
TEST(JitDump, AMarkerIsAnExecutableUserMapOfADump) {
  format::MmapRecord m{.is_mmap2 = true, .misc = 2, .prot = 5, .filename = "/tmp/jit-12.dump"};
  EXPECT_EQ(jit::marker_pid(m), 12u);
  m.prot = 1;  // PROT_READ: pdfix --jit-dir reading a copy, perf inject -j
  EXPECT_FALSE(jit::marker_pid(m));
  format::MmapRecord v1{.is_mmap2 = false, .misc = 2, .filename = "/tmp/jit-12.dump"};
  EXPECT_EQ(jit::marker_pid(v1), 12u);
  v1.misc = 2 | format::kMiscMmapData;
  EXPECT_FALSE(jit::marker_pid(v1));
  m = {.is_mmap2 = true, .misc = 1, .prot = 5, .filename = "/tmp/jit-12.dump"};  // kernel mode
  EXPECT_FALSE(jit::marker_pid(m));
  m.misc = 2;
  m.filename = "/tmp/jit-12.dumpx";
  EXPECT_FALSE(jit::marker_pid(m));
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

// "file:line" of `address` in a JIT image's line table.
std::string file_and_line(llvm::DWARFContext& dwarf, uint64_t address) {
  const llvm::DILineInfo info =
      dwarf.getLineInfoForAddress({address, llvm::object::SectionedAddress::UndefSection},
                                  {llvm::DILineInfoSpecifier::FileLineInfoKind::RawValue,
                                   llvm::DILineInfoSpecifier::FunctionNameKind::None});
  return absl::StrCat(info.FileName, ":", info.Line);
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
  auto line_at = [&](uint64_t address) { return file_and_line(*dwarf, address); };
  EXPECT_EQ(line_at(image->offsets[0]), "a.js:10");
  EXPECT_EQ(line_at(image->offsets[0] + 4), "a.js:11");
  EXPECT_EQ(line_at(image->offsets[1]), llvm::DILineInfo().FileName + ":0");
  EXPECT_EQ(line_at(image->offsets[2]), llvm::DILineInfo().FileName + ":0");
}

// An empty name ends a DWARF 4 line table's list of files, and V8 gives one now and then: written
// as it is, every file after it (fib's, in a node recording) had no lines.
TEST(JitElf, AFileTheDumpLeftUnnamedLosesNoOtherFilesLines) {
  DumpWriter w(false);
  w.debug_info(2000, 0x7000, {{5, ""}})
      .load(3000, 0x7000, 1, "JS:a", kCodeA)
      .debug_info(3500, 0x7200, {{20, "b.js"}})
      .load(3600, 0x7200, 2, "JS:b", kCodeB);
  auto image = image_of(w);
  ASSERT_TRUE(image.ok()) << image.status();
  auto obj = object_of(image->elf.bytes);
  ASSERT_TRUE(static_cast<bool>(obj));
  std::string warnings;
  auto dwarf = llvm::DWARFContext::create(
      **obj, llvm::DWARFContext::ProcessDebugRelocations::Process, nullptr, "",
      [&](llvm::Error e) { warnings += llvm::toString(std::move(e)); },
      [&](llvm::Error e) { warnings += llvm::toString(std::move(e)); });
  auto line_at = [&](uint64_t address) { return file_and_line(*dwarf, address); };
  EXPECT_EQ(line_at(image->offsets[1]), "b.js:20");
  EXPECT_EQ(line_at(image->offsets[0]), "<unnamed>:5");
  EXPECT_EQ(warnings, "");
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

}  // namespace
}  // namespace pdfix
