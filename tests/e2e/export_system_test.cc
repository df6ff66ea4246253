// pdfix export of a system-wide recording (`perf record -a -g`, no build-id cache: -B): kernel
// frames, the host's libraries (named from their Debian debug files' symbols) and stripped
// programs. Go's pprof reads the profile (-raw, nothing symbolized by pprof), and each sample's
// leaf, by binary and function, agrees with `perf report --sort dso,sym` on >= 99% of the
// samples. Names agree when they name one address in the binary's symbols (perf and LLVM pick
// different aliases of a libc function: readdir, __GI___readdir64); an address perf shows in
// hex is one pdfix leaves unnamed. This machine's kernel has no modules (all built in): module
// frames are the unit tests' (Kallsyms).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

constexpr char kSpin[] = R"(#include <stdio.h>
__attribute__((noinline)) double spin_wide(double x) {
  for (int i = 0; i < 40000000; i++) x = x * 1.0000001 + 0.5 / (x + 1.0);
  return x;
}
int main(void) { printf("%f\n", spin_wide(1)); return 0; }
)";

// A DSO as perf report prints it: the file's base name, the kernel as [kernel.kallsyms].
std::string dso_of(const std::string& file) {
  if (file.starts_with("[")) return file.substr(0, file.find(']') + 1);
  return fs::path(file).filename();
}

// Each name's alias class in one binary's symbols: the least name sharing an address with it.
class Aliases {
 public:
  // `nm`-style lines ("ADDRESS TYPE NAME"), all the binary's symbol tables.
  void add(const std::string& dso, const std::string& nm) {
    std::istringstream lines(nm);
    Table& t = tables_[dso];
    for (std::string line; std::getline(lines, line);) {
      std::istringstream f(line);
      std::string address, type, name;
      if (!(f >> address >> type >> name)) continue;
      t.names[address].insert(name);
      t.addresses[name].insert(address);
    }
  }
  std::string canonical(const std::string& dso, const std::string& name) const {
    auto t = tables_.find(dso);
    if (t == tables_.end()) return name;
    auto at = t->second.addresses.find(name);
    if (at == t->second.addresses.end()) return name;
    std::string least = name;
    for (const std::string& address : at->second) {
      least = std::min(least, *t->second.names.at(address).begin());
    }
    return least;
  }

 private:
  struct Table {
    std::map<std::string, std::set<std::string>> names;      // by address
    std::map<std::string, std::set<std::string>> addresses;  // by name
  };
  std::map<std::string, Table> tables_;
};

TEST(ExportSystemTest, EverySamplesLeafIsNamedAsPerfReportNamesIt) {
  PDFIX_NEEDS_PERF_RECORD();
  ASSERT_EQ(sh("command -v go").status, 0) << "golang-go is not installed (scripts/setup.sh)";
  const std::string dir = temp_dir();
  const std::string env = "HOME=" + quote(dir) + " ";
  std::ofstream(dir + "/spin.c") << kSpin;
  RunResult r = sh("gcc -O2 -g -fno-omit-frame-pointer -o " + quote(dir + "/spin") + " " +
                   quote(dir + "/spin.c"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(env + "perf record -q -a -g -B -o " + quote(dir + "/in.data") + " -- sh -c " +
         quote(quote(dir + "/spin") +
               " >/dev/null & find /usr/lib >/dev/null; ls -lR /usr/share/doc >/dev/null; wait"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(env + pdfix() + " export -q " + quote(dir + "/in.data") + " " + quote(dir + "/out.pb.gz"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(env + "go tool pprof -symbolize=none -raw " + quote(dir + "/out.pb.gz") + " 2>&1");
  ASSERT_EQ(r.status, 0) << r.out;

  // pprof -raw: the samples ("COUNT VALUE: LOCATION..."), the locations ("ID: ADDRESS M=MAPPING
  // NAME FILE:LINE", an inline frame's caller on the lines after), the mappings ("ID:
  // START/LIMIT/OFFSET FILE ID").
  std::map<int, int> mapping_of;
  std::map<int, std::string> name_of;  // the outermost function: perf's symbol
  std::map<int, std::string> file_of;
  std::vector<std::pair<uint64_t, int>> leaves;
  std::istringstream lines(r.out);
  std::string section;
  int location = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line == "Locations" || line == "Mappings" || line.starts_with("cpu-clock")) {
      section = line.starts_with("cpu-clock") ? "Samples" : line;
      continue;
    }
    std::istringstream f(line);
    if (section == "Samples") {
      uint64_t count = 0;
      std::string value;
      int leaf = 0;
      if (f >> count >> value >> leaf && value.ends_with(":")) leaves.emplace_back(count, leaf);
    } else if (section == "Locations") {
      std::string id, address, mapping, name;
      if (line.find(": 0x") != std::string::npos && f >> id >> address >> mapping) {
        location = std::stoi(id);
        mapping_of[location] = std::stoi(mapping.substr(2));
        name_of[location] = f >> name ? name : "";
      } else if (f >> name) {
        name_of[location] = name;  // a caller of an inline frame
      }
    } else if (section == "Mappings") {
      std::string id, range, file;
      if (f >> id >> range >> file) file_of[std::stoi(id)] = file;
    }
  }
  ASSERT_FALSE(leaves.empty()) << r.out.substr(0, 2000);

  // The symbols of each binary the samples' leaves lie in: the kernel's kallsyms, the others'
  // own and their debug files' (by build-id, as Debian's -dbg packages lay them out).
  Aliases aliases;
  std::set<std::string> files;
  for (const auto& [id, file] : file_of) files.insert(file);
  for (const std::string& file : files) {
    if (file.starts_with("[kernel.kallsyms]")) {
      aliases.add("[kernel.kallsyms]", sh("cat /proc/kallsyms").out);
      continue;
    }
    if (file.starts_with("[") || !fs::exists(file)) continue;
    std::string nm = sh("nm -a --defined-only " + quote(file) + " 2>/dev/null").out +
                     sh("nm -D --defined-only " + quote(file) + " 2>/dev/null").out;
    const std::string id = own_id(file);
    const std::string debug = "/usr/lib/debug/.build-id/" + id.substr(0, 2) + "/" +
                              id.substr(std::min<size_t>(2, id.size())) + ".debug";
    if (id.size() > 2 && fs::exists(debug)) {
      nm += sh("nm -a --defined-only " + quote(debug) + " 2>/dev/null").out;
    }
    aliases.add(dso_of(file), nm);
  }

  std::map<std::pair<std::string, std::string>, uint64_t> ours;  // (dso, function): samples
  uint64_t ours_total = 0;
  for (const auto& [count, leaf] : leaves) {
    const std::string dso = dso_of(file_of[mapping_of[leaf]]);
    ours[{dso, aliases.canonical(dso, name_of[leaf])}] += count;
    ours_total += count;
  }
  r = sh("perf report -i " + quote(dir + "/in.data") +
         " --stdio --no-children --sort dso,sym -F sample,dso,sym -q -g none 2>/dev/null");
  ASSERT_EQ(r.status, 0);
  std::map<std::pair<std::string, std::string>, uint64_t> perfs;
  uint64_t total = 0;
  std::istringstream report(r.out);
  // "  COUNT  DSO  [k] NAME": a DSO's name may hold spaces ("memfd:x (deleted)").
  const std::regex row(R"(^\s*(\d+)\s+(.*\S)\s+\[(.)\]\s+(.*)$)");
  for (std::string line; std::getline(report, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    const uint64_t n = std::stoull(m[1]);
    std::string name = m[4];
    // An address perf could not name is one pdfix leaves unnamed.
    if (name.starts_with("0x")) name.clear();
    perfs[{m[2], aliases.canonical(m[2], name)}] += n;
    total += n;
  }
  uint64_t agree = 0;
  std::ostringstream differ;
  for (const auto& [key, n] : perfs) {
    auto it = ours.find(key);
    const uint64_t same = it == ours.end() ? 0 : std::min(n, it->second);
    agree += same;
    if (same < n)
      differ << key.first << " " << key.second << ": perf " << n << ", ours " << same << "\n";
  }
  std::cout << agree << " of " << total << " samples' leaves named as perf names them\n";
  EXPECT_EQ(ours_total, total);
  EXPECT_GE(agree * 100, total * 99) << agree << " of " << total << " samples named alike\n"
                                     << differ.str();
  // The kernel's frames are many of them, named; the program's own function too.
  uint64_t kernel = 0;
  for (const auto& [key, n] : ours)
    kernel += key.first == "[kernel.kallsyms]" && !key.second.empty() ? n : 0;
  EXPECT_GT(kernel * 10, total) << kernel << " of " << total;
  EXPECT_GT((ours[{"spin", "spin_wide"}]) * 10, total);
  remove_test_dir(dir);
}

}  // namespace
}  // namespace pdfix::e2e
