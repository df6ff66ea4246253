// PLT stubs in a profile, judged by the binary: a program whose hot loop calls the C library's
// labs through its PLT, recorded by the machine's perf (-g, -B). Every location pdfix export
// puts in one of the program's stubs is named as binutils' objdump names that stub (labs@plt),
// and none is named _init: perf 6.1 names those samples _init, the size-0 symbol before the PLT.
// A kernel sample's user part begins with the interrupted user ip, not a return address: at a
// stub's first byte it is that stub's, not the one before.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {

constexpr char kProgram[] = R"(#include <stdio.h>
#include <stdlib.h>
int main(int argc, char** argv) {
  long s = 0;
  for (long i = 0; i < 300000000L; i++) s += labs(i - argc);
  printf("%ld\n", s);
  return 0;
}
)";

struct Stub {
  uint64_t end = 0;
  std::string name;
};

// objdump's PLT stubs of `path` by address (each ends where the next label begins, or 16 bytes
// on), the PLT's header left out.
std::map<uint64_t, Stub> objdump_stubs(const std::string& path) {
  std::map<uint64_t, Stub> out;
  std::istringstream lines(sh("objdump -d -j .plt -j .plt.got " + quote(path)).out);
  uint64_t last = 0;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    uint64_t address = 0;
    std::string label;
    if (!(f >> std::hex >> address >> label) || !label.ends_with(">:")) continue;
    if (!out.empty() && out[last].end > address) out[last].end = address;
    if (label.ends_with("@plt>:") && !label.starts_with("<*ABS*")) {
      out[address] = {address + 16, label.substr(1, label.size() - 3)};
      last = address;
    }
  }
  return out;
}

TEST(ExportPlt, AStubsSamplesAreNamedAsObjdumpNamesTheStub) {
  PDFIX_NEEDS_PERF_RECORD();
  ASSERT_EQ(sh("command -v go").status, 0) << "golang-go is not installed (scripts/setup.sh)";
  const std::string dir = temp_dir();
  const std::string env = "HOME=" + quote(dir) + " ";
  std::ofstream(dir + "/plt.c") << kProgram;
  RunResult r = sh("gcc -O2 -g -fno-builtin -fno-omit-frame-pointer -o " + quote(dir + "/plt") +
                   " " + quote(dir + "/plt.c"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(env + "perf record -q -B -g -o " + quote(dir + "/in.data") + " " + quote(dir + "/plt") +
         " >/dev/null");
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(env + pdfix() + " export " + quote(dir + "/in.data") + " " + quote(dir + "/out.pb.gz"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::map<uint64_t, Stub> stubs = objdump_stubs(dir + "/plt");
  ASSERT_TRUE(stubs.size() >= 2) << "objdump found no PLT in the program";

  // go tool pprof -raw: "Mappings" lines "N: 0xSTART/0xLIMIT/0xOFFSET FILE ...", "Locations"
  // lines "N: 0xADDRESS M=MAPPING NAME FILE:LINE ...".
  r = sh(env + "go tool pprof -symbolize=none -raw " + quote(dir + "/out.pb.gz") + " 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;
  std::istringstream raw(r.out);
  std::string section;
  std::map<std::string, std::pair<uint64_t, uint64_t>> program_maps;      // id: start, offset
  std::vector<std::tuple<std::string, uint64_t, std::string>> locations;  // mapping, address, name
  for (std::string line; std::getline(raw, line);) {
    if (line == "Mappings" || line == "Locations" || line == "Samples:") section = line;
    std::istringstream f(line);
    std::string id;
    if (!(f >> id) || !id.ends_with(":")) continue;
    if (section == "Mappings") {
      uint64_t start = 0;
      uint64_t limit = 0;
      uint64_t offset = 0;
      char slash = 0;
      std::string file;
      f >> std::hex >> start >> slash >> limit >> slash >> offset >> file;
      if (file == dir + "/plt") program_maps[id.substr(0, id.size() - 1)] = {start, offset};
    } else if (section == "Locations") {
      uint64_t address = 0;
      std::string mapping;
      std::string name;
      f >> std::hex >> address >> mapping >> name;
      if (mapping.starts_with("M=")) locations.emplace_back(mapping.substr(2), address, name);
    }
  }
  ASSERT_FALSE(program_maps.empty()) << r.out;
  size_t in_stubs = 0;
  for (const auto& [mapping, address, name] : locations) {
    auto m = program_maps.find(mapping);
    if (m == program_maps.end()) continue;
    const uint64_t in_file = address - m->second.first + m->second.second;
    EXPECT_NE(name, "_init") << std::hex << in_file;
    auto stub = stubs.upper_bound(in_file);
    if (stub == stubs.begin() || in_file >= std::prev(stub)->second.end) continue;
    ++in_stubs;
    EXPECT_EQ(name, std::prev(stub)->second.name) << std::hex << in_file;
  }
  EXPECT_GT(in_stubs, 0u) << "no sample in the program's PLT: " << r.out;
  remove_test_dir(dir);
}

}  // namespace
}  // namespace pdfix::e2e
