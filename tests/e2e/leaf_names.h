// Samples' leaves by binary and function, to judge export's names against perf's: a profile as
// Go's pprof prints it raw (`go tool pprof -symbolize=none -raw`: nothing named by pprof) read
// back, each sample's leaf with its function as perf names a symbol (an inline frame's outermost
// caller); a binary's name as perf prints a DSO; and the aliases of a binary's symbols, names
// that agree when they name one address.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace pdfix::e2e {

struct RawLeaf {
  uint64_t count = 0;
  std::string file;      // the mapping's; "" for none
  std::string function;  // "" when unnamed
};

// The sections of -raw: the samples ("COUNT VALUE...: LOCATION..." after the sample types' line),
// "Locations" ("ID: ADDRESS M=MAPPING NAME FILE:LINE", an inline frame's callers on the lines
// after) and "Mappings" ("ID: START/LIMIT/OFFSET FILE BUILD-ID").
inline std::vector<RawLeaf> raw_leaves(const std::string& raw) {
  std::map<int, int> mapping_of;
  std::map<int, std::string> name_of;
  std::map<int, std::string> file_of;
  std::vector<std::pair<uint64_t, int>> samples;
  std::istringstream lines(raw);
  std::string section;
  int location = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line == "Locations" || line == "Mappings") {
      section = line;
      continue;
    }
    if (line.find("/count") != std::string::npos && line.find("[dflt]") != std::string::npos) {
      section = "Samples";
      continue;
    }
    std::istringstream f(line);
    if (section == "Samples") {
      uint64_t count = 0;
      std::string value;
      int leaf = 0;
      // Each sample type's value, then the locations after the ':'.
      if (!(f >> count)) continue;
      while (f >> value && !value.ends_with(":")) {
      }
      if (f >> leaf) samples.emplace_back(count, leaf);
    } else if (section == "Locations") {
      // A name may hold spaces (operator new, templates): it is what lies between the mapping
      // (or, on an inline frame's caller's line, the indent) and the FILE:LINE before " s=".
      const size_t s_at = line.rfind(" s=");
      const size_t file_at = s_at == std::string::npos ? s_at : line.rfind(' ', s_at - 1);
      std::string id, address, mapping;
      size_t name_at = line.find_first_not_of(' ');
      if (line.find(": 0x") != std::string::npos && f >> id >> address) {
        location = std::stoi(id);
        mapping_of[location] = 0;  // an address no map covers has no M=
        name_at = line.find(address) + address.size() + 1;
        if (f >> mapping && mapping.starts_with("M=")) {
          mapping_of[location] = std::stoi(mapping.substr(2));
          name_at = line.find(mapping, name_at - 1) + mapping.size() + 1;
        }
      }
      name_of[location] = file_at == std::string::npos || file_at <= name_at
                              ? ""
                              : line.substr(name_at, file_at - name_at);
    } else if (section == "Mappings") {
      std::string id, range, file;
      if (f >> id >> range >> file) file_of[std::stoi(id)] = file;
    }
  }
  std::vector<RawLeaf> out;
  for (const auto& [count, leaf] : samples) {
    out.push_back({count, file_of[mapping_of[leaf]], name_of[leaf]});
  }
  return out;
}

// A DSO as perf report prints it: the file's base name, the kernel as [kernel.kallsyms].
inline std::string dso_of(const std::string& file) {
  if (file.starts_with("[")) return file.substr(0, file.find(']') + 1);
  return std::filesystem::path(file).filename();
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
      // A dynamic symbol's version (open64@@GLIBC_2.17) is not its name.
      name = name.substr(0, name.find('@'));
      t.names[address].insert(name);
      t.addresses[name].insert(address);
    }
  }
  // `name`'s class in `dso`, written one way: perf's demangler puts a space between closing
  // template brackets ("> >") where LLVM's does not, and perf shows a dynamic symbol's version
  // (pthread_rwlock_unlock@@GLIBC_2.34); a PLT stub (foo@plt) is code of its own and kept.
  std::string canonical(const std::string& dso, const std::string& name) const {
    std::string plain;
    for (size_t i = 0; i < name.size(); ++i) {
      if (name[i] == ' ' && i > 0 && name[i - 1] == '>' && i + 1 < name.size() &&
          name[i + 1] == '>') {
        continue;
      }
      plain += name[i];
    }
    if (const size_t at = plain.find('@'); at != std::string::npos && !plain.ends_with("@plt")) {
      plain.erase(at);
    }
    auto t = tables_.find(dso);
    if (t == tables_.end()) return plain;
    auto at = t->second.addresses.find(plain);
    if (at == t->second.addresses.end()) return plain;
    std::string least = plain;
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

// The lines of `export --format folded --labels comm,pid` ("comm-PID;root;...;leaf COUNT"), each
// as its pid, leaf frame and count.
struct FoldedLeaf {
  uint32_t pid = 0;
  std::string leaf;
  uint64_t count = 0;
};
inline std::vector<FoldedLeaf> folded_leaves(const std::string& text) {
  std::vector<FoldedLeaf> out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    // A command may hold '-' itself (perf-exec): the pid follows the last one before the frames.
    const size_t semi = line.find(';');
    const size_t space = line.rfind(' ');
    const size_t dash = semi == std::string::npos ? semi : line.rfind('-', semi);
    if (dash == std::string::npos || space == std::string::npos || space < semi) continue;
    const size_t leaf = line.rfind(';', space) + 1;
    out.push_back({static_cast<uint32_t>(std::stoul(line.substr(dash + 1, semi - dash - 1))),
                   line.substr(leaf, space - leaf), std::stoull(line.substr(space + 1))});
  }
  return out;
}

// Samples by (binary, function), perf's and export's: how many of perf's are named alike (each
// name counting the lesser of the two), and a line for each name where export has fewer.
struct Agreement {
  uint64_t agree = 0;
  std::string differ;
};
using LeafCounts = std::map<std::pair<std::string, std::string>, uint64_t>;
inline Agreement agreement(const LeafCounts& perfs, const LeafCounts& ours) {
  Agreement a;
  std::ostringstream differ;
  for (const auto& [key, n] : perfs) {
    auto it = ours.find(key);
    const uint64_t same = it == ours.end() ? 0 : std::min(n, it->second);
    a.agree += same;
    if (same < n)
      differ << key.first << " " << key.second << ": perf " << n << ", ours " << same << "\n";
  }
  a.differ = differ.str();
  return a;
}

}  // namespace pdfix::e2e
