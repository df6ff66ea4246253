// PLT stubs named as binutils names them: every `name@plt` label objdump prints in the .plt and
// .plt.got of a Debian program and of the C library is the stub PltStubs finds there, over the
// stub's whole entry; the PLT's header, and a stub that binds no symbol, are none.
#include "profile/plt.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "llvm/Object/ObjectFile.h"

namespace pdfix::profile {
namespace {

// objdump's labels in the PLT sections of `path`: address to name.
std::map<uint64_t, std::string> objdump_labels(const std::string& path) {
  std::map<uint64_t, std::string> out;
  FILE* p = popen(("objdump -d -j .plt -j .plt.got '" + path + "' 2>/dev/null").c_str(), "r");
  if (p == nullptr) return out;
  char buf[512];
  while (fgets(buf, sizeof buf, p) != nullptr) {
    std::istringstream line(buf);
    uint64_t address = 0;
    std::string label;
    if (!(line >> std::hex >> address >> label) || !label.starts_with("<") ||
        !label.ends_with(">:")) {
      continue;
    }
    out[address] = label.substr(1, label.size() - 3);
  }
  pclose(p);
  return out;
}

// The path of this process's C library, from its maps.
std::string this_libc() {
  std::ifstream maps("/proc/self/maps");
  for (std::string line; std::getline(maps, line);) {
    const size_t slash = line.find('/');
    if (slash != std::string::npos && line.find("/libc.so.6") != std::string::npos) {
      return line.substr(slash);
    }
  }
  return "";
}

// Each stub objdump names by a symbol is PltStubs's, over its whole entry; a stub whose slot binds
// no symbol (objdump: *ABS*+0x...@plt, glibc's IRELATIVE ones) and the PLT's header are no stub.
void expect_stubs_as_objdump_names_them(const std::string& path) {
  SCOPED_TRACE(path);
  const std::map<uint64_t, std::string> labels = objdump_labels(path);
  ASSERT_GT(labels.size(), 20U) << "objdump (binutils) found no PLT";
  auto file = llvm::object::ObjectFile::createObjectFile(path);
  ASSERT_TRUE(static_cast<bool>(file)) << llvm::toString(file.takeError());
  const PltStubs stubs(*file->getBinary());
  size_t named = 0;
  for (auto it = labels.begin(); it != labels.end(); ++it) {
    const auto& [address, label] = *it;
    // The stub's last byte: the next label, or its section's 8 or 16 bytes, ends it.
    const auto next = std::next(it);
    const uint64_t end =
        next != labels.end() && next->first - address <= 16 ? next->first : address + 8;
    if (!label.ends_with("@plt") || label.starts_with("*ABS*")) {
      EXPECT_EQ(stubs.name_at(address), std::nullopt) << label;
      EXPECT_EQ(stubs.name_at(end - 1), std::nullopt) << label;
      continue;
    }
    ++named;
    EXPECT_EQ(stubs.name_at(address).value_or("(none)"), label) << std::hex << address;
    EXPECT_EQ(stubs.name_at(end - 1).value_or("(none)"), label) << std::hex << end - 1;
  }
  EXPECT_EQ(stubs.size(), named);
  EXPECT_EQ(stubs.name_at(labels.begin()->first - 1), std::nullopt);
}

TEST(PltStubs, EachStubIsNamedAsObjdumpNamesIt) {
  expect_stubs_as_objdump_names_them("/usr/bin/bash");
  const std::string libc = this_libc();
  ASSERT_FALSE(libc.empty());
  expect_stubs_as_objdump_names_them(libc);
}

}  // namespace
}  // namespace pdfix::profile
