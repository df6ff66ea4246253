// pdfix export of a real recording, read by independent readers: a C program built -O2 -g whose
// hot function is inlined into two callers, recorded by the machine's perf with frame-pointer
// callchains (-g) and without a build-id cache (-B). Go's pprof (go tool pprof -symbolize=none:
// the names judged are pdfix's) reads the pprof profile; its function names agree with `perf
// report --sort sym` on the sample weight; the inline chains are those llvm-symbolizer shows;
// folded stacks total perf's sample count.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "e2e/export_fixture.h"
#include "e2e/harness.h"
#include "llvm/Support/JSON.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"
#include "profile.pb.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

TEST_F(ExportTest, GoPprofNamesTheSampleWeightAsPerfReportDoes) {
  const std::string out = dir_ + "/hot.pb.gz";
  RunResult r = pdfix_run("export " + quote(dir_ + "/in.data") + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(sh("stat -c %a " + quote(out)).out, "600\n");
  // The same recording makes the same bytes; every binary it sampled is here (--strict).
  r = pdfix_run("export -q --strict " + quote(dir_ + "/in.data") + " " +
                quote(dir_ + "/again.pb.gz"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_file(out, dir_ + "/again.pb.gz"));
  // perf names the event cpu-clock with its modifiers; pprof's default is that event.
  r = pprof("-top -noinlines -nodecount=1000000 -nodefraction=0 -edgefraction=0", out);
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("Type: cpu-clock"), std::string::npos) << r.out;
  // pprof's first mapping is the program profiled, not the kernel: its name heads the report.
  EXPECT_TRUE(r.out.starts_with("File: hot\n")) << r.out;
  const std::map<std::string, uint64_t> ours = pprof_flat(r.out);
  r = sh("perf report -i " + quote(dir_ + "/in.data") +
         " --stdio --no-children --sort sym -F sample,sym -q -g none 2>/dev/null");
  ASSERT_EQ(r.status, 0);
  const std::map<std::string, uint64_t> perfs = perf_by_symbol(r.out);
  const auto [agree, total] = named_alike(perfs, ours);
  uint64_t ours_total = 0;
  for (const auto& [name, n] : ours) ours_total += n;
  EXPECT_EQ(ours_total, total);
  EXPECT_GE(agree * 100, total * 99) << agree << " of " << total << " samples named alike";
  EXPECT_GT(ours.count("left_caller") + ours.count("right_caller"), 1u);
  // Kernel frames are named too: perf's [k] symbols are among pprof's functions (when the
  // busy program was sampled in the kernel at all: export_system_test's recording always is).
  size_t kernel = 0;
  size_t kernel_named = 0;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t k = line.find("[k] ");
    if (k == std::string::npos) continue;
    ++kernel;
    if (ours.count(line.substr(k + 4)) > 0) ++kernel_named;
  }
  if (kernel > 0) {
    EXPECT_GT(kernel_named, 0u) << r.out;
  }
}

TEST_F(ExportTest, BothCallersInlineChainsAreThoseTheSymbolizerShowsAndFoldedTotalsPerfs) {
  RunResult r = pdfix_run("export --format folded " + quote(dir_ + "/in.data") + " -");
  ASSERT_EQ(r.status, 0) << r.err;
  uint64_t total = 0;
  std::map<std::string, uint64_t> chains;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    const uint64_t n = std::stoull(line.substr(space + 1));
    total += n;
    for (const char* chain : {";left_caller;hot_kernel ", ";right_caller;hot_kernel "}) {
      if (line.find(chain) != std::string::npos) chains[chain] += n;
    }
    EXPECT_TRUE(line.starts_with("hot;") || line.starts_with("perf")) << line;
  }
  EXPECT_EQ(total, perf_stats(dir_ + "/in.data")["SAMPLE"]);
  for (const auto& [chain, n] : chains) EXPECT_GT(n * 3, total) << chain;
  EXPECT_EQ(chains.size(), 2u) << r.out.substr(0, 3000);
  // The chain is the binary's: llvm-symbolizer --inlining, at an address of left_caller's
  // loop, names hot_kernel inlined into left_caller.
  r = sh("nm " + quote(dir_ + "/hot") + " | awk '/ left_caller$/ {print $1}'");
  ASSERT_EQ(r.status, 0);
  const uint64_t start = std::stoull(r.out, nullptr, 16);
  bool inlined = false;
  for (uint64_t off = 0; off < 64 && !inlined; off += 4) {
    std::ostringstream at;
    at << "0x" << std::hex << start + off;
    const RunResult s =
        sh("llvm-symbolizer-19 --inlining --obj=" + quote(dir_ + "/hot") + " " + at.str());
    inlined =
        s.out.starts_with("hot_kernel\n") && s.out.find("\nleft_caller\n") != std::string::npos;
  }
  EXPECT_TRUE(inlined) << "llvm-symbolizer shows no hot_kernel inlined into left_caller";
  // pprof shows the inline frame as such.
  const RunResult exported =
      pdfix_run("export -q " + quote(dir_ + "/in.data") + " " + quote(dir_ + "/hot.pb.gz"));
  ASSERT_EQ(exported.status, 0) << exported.err;
  r = pprof("-traces", dir_ + "/hot.pb.gz");
  EXPECT_NE(r.out.find("hot_kernel (inline)\n             left_caller"), std::string::npos)
      << r.out.substr(0, 3000);
}

// A --call-graph dwarf recording is unwound on the way, as `pdfix unwind` unwinds it: the leaf
// weights are perf report's of unwind's output, and the stacks run from _start to the inline
// frame, through main (which frame pointers skip: the callers are leaves that keep none).
TEST_F(ExportTest, ADwarfRecordingExportsItsWholeStacks) {
  const std::string in = dir_ + "/dwarf.data";
  RunResult r = sh(env_ + "perf record -q -B --call-graph dwarf -o " + quote(in) + " " +
                   quote(dir_ + "/hot") + " >/dev/null");
  ASSERT_EQ(r.status, 0) << r.err;
  r = pdfix_run("export -q " + quote(in) + " " + quote(dir_ + "/dwarf.pb.gz"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = pprof("-top -noinlines -nodecount=1000000 -nodefraction=0 -edgefraction=0",
            dir_ + "/dwarf.pb.gz");
  ASSERT_EQ(r.status, 0) << r.out;
  const std::map<std::string, uint64_t> ours = pprof_flat(r.out);
  r = pdfix_run("unwind -q " + quote(in) + " " + quote(dir_ + "/unwound.data"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh("perf report -i " + quote(dir_ + "/unwound.data") +
         " --stdio --no-children --sort sym -F sample,sym -q -g none 2>/dev/null");
  ASSERT_EQ(r.status, 0);
  uint64_t total = 0;
  uint64_t agree = 0;
  for (const auto& [name, n] : perf_by_symbol(r.out)) {
    total += n;
    auto it = ours.find(name);
    agree += it == ours.end() ? 0 : std::min(n, it->second);
  }
  EXPECT_GT(total, 1000u);
  EXPECT_GE(agree * 100, total * 99) << agree << " of " << total << " samples named alike";
  r = pdfix_run("export -q --format folded " + quote(in) + " -");
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* chain : {";main;left_caller;hot_kernel ", ";main;right_caller;hot_kernel "}) {
    EXPECT_NE(r.out.find(chain), std::string::npos) << chain << "\n" << r.out.substr(0, 3000);
  }
  EXPECT_NE(r.out.find("hot;_start;"), std::string::npos) << r.out.substr(0, 3000);
}

namespace otlp = opentelemetry::proto::profiles::v1development;

// Each sample as (sample type, the file and address of each frame, leaf first) with its value:
// what two encodings of one profile must agree on.
using Canonical =
    std::map<std::pair<std::string, std::vector<std::pair<std::string, uint64_t>>>, int64_t>;

Canonical canonical(const perftools::profiles::Profile& p) {
  Canonical out;
  const auto& str = p.string_table();
  std::map<uint64_t, std::pair<std::string, uint64_t>> location;
  std::map<uint64_t, std::string> mapping;
  for (const auto& m : p.mapping()) mapping[m.id()] = str[static_cast<int>(m.filename())];
  for (const auto& l : p.location()) location[l.id()] = {mapping[l.mapping_id()], l.address()};
  for (const auto& s : p.sample()) {
    std::vector<std::pair<std::string, uint64_t>> frames;
    for (const uint64_t id : s.location_id()) frames.push_back(location.at(id));
    for (int v = 0; v < s.value_size(); ++v) {
      if (s.value(v) == 0) continue;
      const auto& t = p.sample_type(v);
      out[{str[static_cast<int>(t.type())] + "/" + str[static_cast<int>(t.unit())], frames}] +=
          s.value(v);
    }
  }
  return out;
}

// The same of OTLP profiles, checking as it goes what the specification requires of the
// dictionary: each table's entry 0 its zero value, and every index in range.
Canonical canonical(const otlp::ProfilesDictionary& d, const otlp::ScopeProfiles& scope) {
  Canonical out;
  const auto& str = d.string_table();
  EXPECT_EQ(str.at(0), "");
  EXPECT_EQ(d.mapping_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.location_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.function_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.attribute_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.stack_table(0).ByteSizeLong(), 0u);
  EXPECT_EQ(d.link_table(0).trace_id(), std::string(16, '\0'));
  EXPECT_EQ(d.link_table(0).span_id(), std::string(8, '\0'));
  const auto in = [](int index, int size) { return index >= 0 && index < size; };
  for (const auto& m : d.mapping_table()) {
    EXPECT_TRUE(in(m.filename_strindex(), str.size()));
    for (const int a : m.attribute_indices()) EXPECT_TRUE(in(a, d.attribute_table_size()));
  }
  for (const auto& f : d.function_table()) {
    EXPECT_TRUE(in(f.name_strindex(), str.size()) && in(f.filename_strindex(), str.size()));
  }
  for (const auto& a : d.attribute_table()) EXPECT_TRUE(in(a.key_strindex(), str.size()));
  for (const auto& l : d.location_table()) {
    EXPECT_TRUE(in(l.mapping_index(), d.mapping_table_size()));
    for (const auto& line : l.lines())
      EXPECT_TRUE(in(line.function_index(), d.function_table_size()));
  }
  for (const auto& st : d.stack_table()) {
    for (const int l : st.location_indices()) EXPECT_TRUE(in(l, d.location_table_size()));
  }
  for (const auto& p : scope.profiles()) {
    const std::string type =
        str.at(p.sample_type().type_strindex()) + "/" + str.at(p.sample_type().unit_strindex());
    for (const auto& s : p.samples()) {
      if (!in(s.stack_index(), d.stack_table_size())) {
        ADD_FAILURE() << "stack index " << s.stack_index() << " out of range";
        continue;
      }
      for (const int a : s.attribute_indices()) EXPECT_TRUE(in(a, d.attribute_table_size()));
      std::vector<std::pair<std::string, uint64_t>> frames;
      for (const int l : d.stack_table(s.stack_index()).location_indices()) {
        const auto& loc = d.location_table(l);
        frames.emplace_back(loc.mapping_index() == 0
                                ? ""
                                : str.at(d.mapping_table(loc.mapping_index()).filename_strindex()),
                            loc.address());
      }
      for (const int64_t v : s.values()) out[{type, frames}] += v;
    }
  }
  return out;
}

// OTLP profiles as opentelemetry-proto v1.11.0 defines them: protoc decodes the file against the
// vendored .proto files, the dictionary keeps the specification's rules, and its samples are the
// pprof export's, stack by stack, with the mappings' build-ids.
TEST_F(ExportTest, OtlpProfilesDecodeKeepTheDictionaryRulesAndAreThePprofExports) {
  const std::string otlp_file = dir_ + "/hot.otlp";
  const std::string pprof_file = dir_ + "/hot.pb.gz";
  RunResult r =
      pdfix_run("export -q --format otlp " + quote(dir_ + "/in.data") + " " + quote(otlp_file));
  ASSERT_EQ(r.status, 0) << r.err;
  r = pdfix_run("export -q " + quote(dir_ + "/in.data") + " " + quote(pprof_file));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string protos = source_dir() + "/third_party/opentelemetry-proto";
  r = sh("protoc -I " + quote(protos) +
         " --decode=opentelemetry.proto.collector.profiles.v1development."
         "ExportProfilesServiceRequest "
         "opentelemetry/proto/collector/profiles/v1development/profiles_service.proto < " +
         quote(otlp_file));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string id = own_id(dir_ + "/hot");
  EXPECT_NE(r.out.find("key_strindex"), std::string::npos);
  EXPECT_NE(r.out.find("string_value: \"" + id + "\""), std::string::npos) << r.out.substr(0, 2000);

  opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest request;
  ASSERT_TRUE(request.ParseFromString(sh("cat " + quote(otlp_file)).out));
  ASSERT_EQ(request.resource_profiles_size(), 1);
  ASSERT_EQ(request.resource_profiles(0).scope_profiles_size(), 1);
  const Canonical from_otlp =
      canonical(request.dictionary(), request.resource_profiles(0).scope_profiles(0));
  perftools::profiles::Profile pprof;
  ASSERT_TRUE(pprof.ParseFromString(sh("gzip -dc " + quote(pprof_file)).out));
  const Canonical from_pprof = canonical(pprof);
  EXPECT_EQ(from_otlp.size(), from_pprof.size());
  EXPECT_TRUE(from_otlp == from_pprof);
  int64_t samples = 0;
  for (const auto& [k, v] : from_otlp) samples += k.first.ends_with("/count") ? v : 0;
  EXPECT_EQ(static_cast<uint64_t>(samples), perf_stats(dir_ + "/in.data")["SAMPLE"]);
}

// node's JIT code, recorded by perf (`perf record RECORD node FLAG`): how many samples' leaf is
// fib_js, of how many, in export's folded stacks; and in perf report of `pdfix fix`'s output,
// given the cache fix filled with the ELF files it made of node's JIT code.
struct JitLeaves {
  uint64_t fib = 0;
  uint64_t total = 0;
  uint64_t perf_fib = 0;
};
JitLeaves jit_leaves(const std::string& dir, const std::string& env, const std::string& record,
                     const std::string& flag) {
  JitLeaves out;
  std::ofstream(dir + "/fib.js")
      << "function fib_js(n) { return n < 2 ? n : fib_js(n - 1) + fib_js(n - 2); }\n"
         "const end = Date.now() + 1500; let s = 0;\n"
         "while (Date.now() < end) s += fib_js(20);\nconsole.log(s > 0);\n";
  const std::string in = dir + "/node.data";
  // In the test's directory: node writes its jitdump and leaves its isolate-*.log where it runs.
  RunResult r = sh("cd " + quote(dir) + " && " + env + "perf record -q -B -g " + record + " -o " +
                   quote(in) + " node " + flag + " " + quote(dir + "/fib.js") + " >/dev/null");
  EXPECT_EQ(r.status, 0) << r.err;
  r = sh(env + pdfix() + " export -q --format folded " + quote(in) + " -");
  EXPECT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    const uint64_t n = std::stoull(line.substr(line.rfind(' ') + 1));
    out.total += n;
    const std::string stack = line.substr(0, line.rfind(' '));
    out.fib += stack.substr(stack.rfind(';') + 1).starts_with("JS:*fib_js") ? n : 0;
  }
  r = sh(env + pdfix() + " fix -q " + quote(in) + " " + quote(dir + "/node-fixed.data"));
  EXPECT_EQ(r.status, 0) << r.err;
  r = sh(env + "perf report -i " + quote(dir + "/node-fixed.data") +
         " --stdio --no-children --sort sym -F sample,sym -q -g none 2>/dev/null");
  EXPECT_EQ(r.status, 0);
  for (const auto& [name, n] : perf_by_symbol(r.out)) {
    out.perf_fib += name.starts_with("JS:*fib_js") ? n : 0;
  }
  // node leaves its /tmp/perf-PID.map when it exits; the test's runs would pile them up.
  r = sh("perf script -F comm,pid -i " + quote(in) +
         " 2>/dev/null | awk '$1 == \"node\" { print $2; exit }'");
  if (const std::string pid = r.out.substr(0, r.out.find('\n')); !pid.empty()) {
    fs::remove("/tmp/perf-" + pid + ".map");
  }
  return out;
}

// node --perf-basic-prof: its JIT code's samples are named from /tmp/perf-PID.map, which export
// makes an ELF file in the build-id cache as fix does; perf report of fix's output names them
// alike (node's own frames aside, the leaf function of every sample agrees).
TEST_F(ExportTest, NodesJitFramesAreNamedFromItsMapFile) {
  ASSERT_EQ(sh("command -v node").status, 0) << "nodejs is not installed (scripts/setup.sh)";
  const JitLeaves l = jit_leaves(dir_, env_, "", "--perf-basic-prof");
  EXPECT_GT(l.fib * 2, l.total) << l.fib << " of " << l.total;
  EXPECT_EQ(l.fib, l.perf_fib);
}

// node --perf-prof: the same from its jitdump (perf record -k mono, the clock jitdumps carry).
TEST_F(ExportTest, NodesJitFramesAreNamedFromItsJitdump) {
  ASSERT_EQ(sh("command -v node").status, 0) << "nodejs is not installed (scripts/setup.sh)";
  const JitLeaves l = jit_leaves(dir_, env_, "-k mono", "--perf-prof");
  EXPECT_GT(l.fib * 2, l.total) << l.fib << " of " << l.total;
  EXPECT_EQ(l.fib, l.perf_fib);
}

// A Go program (no GNU build-id) is named from its own file, proven by its inode on the
// recording's host, as perf names it with the file in place; deleted, its frames keep their
// addresses: no other file at its path is taken for it.
TEST_F(ExportTest, AGoProgramWithoutABuildIdIsNamedFromTheFileItsInodeProves) {
  build_go_fib(dir_ + "/gofib", "7");
  ASSERT_EQ(own_id(dir_ + "/gofib"), "");
  const std::string in = dir_ + "/go.data";
  RunResult r = sh(env_ + "perf record -q -B -g -o " + quote(in) + " " + quote(dir_ + "/gofib") +
                   " 35 >/dev/null");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto leaf_share = [&](const std::string& function) {
    const RunResult e = pdfix_run("export -q --format folded " + quote(in) + " -");
    EXPECT_EQ(e.status, 0) << e.err;
    uint64_t total = 0;
    uint64_t hits = 0;
    std::istringstream lines(e.out);
    for (std::string line; std::getline(lines, line);) {
      const uint64_t n = std::stoull(line.substr(line.rfind(' ') + 1));
      const std::string stack = line.substr(0, line.rfind(' '));
      total += n;
      hits += stack.substr(stack.rfind(';') + 1) == function ? n : 0;
    }
    return std::pair(hits, total);
  };
  r = sh("perf report -i " + quote(in) +
         " --stdio --no-children --sort sym -F sample,sym -q -g none 2>/dev/null");
  const uint64_t perfs = perf_by_symbol(r.out)["main.fib_v7"];
  const auto [named, total] = leaf_share("main.fib_v7");
  EXPECT_GT(named * 2, total);
  EXPECT_EQ(named, perfs);
  // Another file at the path (the program rebuilt): not the inode mapped, so nothing named.
  build_go_fib(dir_ + "/gofib", "8");
  EXPECT_EQ(leaf_share("main.fib_v7").first, 0u);
  EXPECT_EQ(leaf_share("main.fib_v8").first, 0u);
}

TEST_F(ExportTest, WithoutSymbolsTheProfileKeepsAddressesAndTheBuildIds) {
  const std::string out = dir_ + "/raw.pb.gz";
  RunResult r =
      pdfix_run("export --no-symbols --json " + quote(dir_ + "/in.data") + " " + quote(out));
  ASSERT_EQ(r.status, 0) << r.err;
  const llvm::json::Object summary = parse_object(r.out);
  EXPECT_EQ(summary.getInteger("locations_named").value_or(-1), 0);
  EXPECT_GT(summary.getInteger("samples").value_or(0), 0);
  r = pprof("-raw", out);
  ASSERT_EQ(r.status, 0) << r.out;
  const std::string id = own_id(dir_ + "/hot");
  ASSERT_FALSE(id.empty());
  EXPECT_NE(r.out.find(id), std::string::npos) << r.out.substr(0, 3000);
  EXPECT_EQ(r.out.find("left_caller"), std::string::npos);
}

TEST_F(ExportTest, WhatIsNoRecordingIsRefusedAndNoProfileAppears) {
  std::ofstream(dir_ + "/not.data") << "not a perf.data file at all, only text\n";
  const RunResult r =
      pdfix_run("export " + quote(dir_ + "/not.data") + " " + quote(dir_ + "/out.pb.gz"));
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("not.data"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ + "/out.pb.gz"));
}

}  // namespace
}  // namespace pdfix::e2e
