// JIT code in a living container, as a user records it: the whole machine (perf record -a -B,
// -k mono, DWARF stacks) while node, the image's own (Debian 13's nodejs), runs with
// --perf-prof --perf-prof-unwinding-info in the container's /tmp, on its overlay. One node exits
// before pdfix runs, one lives on. `fix --unwind --archive` with no options must find both dumps
// and every file of the container that samples hit; then, the container removed and the bundle
// unpacked elsewhere with a fresh HOME, perf names the JS functions and unwinds through them to
// node's own frames, in the container's libnode.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "e2e/harness.h"
#include "e2e/podman_fixture.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// fib_<name> for two seconds, then `after`.
std::string node_work(const std::string& name, const std::string& after) {
  return "function fib_" + name + "(n) { return n < 2 ? n : fib_" + name + "(n - 1) + fib_" + name +
         "(n - 2); }\nfunction outer_" + name +
         "() { const end = Date.now() + 2000; let s = 0; while (Date.now() < end) s += fib_" +
         name + "(20); return s; }\nconsole.log(outer_" + name + "() > 0);\n" + after;
}

// fix's JSON report `key` of `report`, on a few lines.
std::string brief(const llvm::json::Object& report, llvm::StringRef key) {
  const llvm::json::Value* v = report.get(key);
  return v == nullptr ? "(none)" : llvm::formatv("{0:1}", *v).str();
}

// The `n` keys of `counts` with the highest counts, a line each.
std::string most_frequent(const std::map<std::string, size_t>& counts, size_t n) {
  std::vector<std::pair<size_t, std::string>> by_count;
  for (const auto& [key, count] : counts) by_count.emplace_back(count, key);
  std::sort(by_count.rbegin(), by_count.rend());
  std::string out;
  for (size_t i = 0; i < std::min(n, by_count.size()); ++i) {
    out += "  " + std::to_string(by_count[i].first) + " " + by_count[i].second + "\n";
  }
  return out;
}

// Per process: samples whose first frame is in fib_NAME, and of those how many reach node::Start.
struct Named {
  size_t leaf = 0;
  size_t to_start = 0;
};

// Of each node process in perf's reading of `data` (perf script with its task and map events):
// its task events, the JIT maps perf took and their first and last times, and its samples whose
// leaf perf placed in no map with their first and last times. What tells a map applied too late,
// or to another process, from one that is missing.
std::string node_digest(const std::string& perf_script_output) {
  struct Digest {
    std::vector<std::string> tasks;
    size_t jit_maps = 0;
    std::string first_map, last_map;
    size_t unplaced = 0;
    std::string first_unplaced, last_unplaced;
  };
  std::map<std::string, Digest> by_pid;
  std::istringstream first(perf_script_output);
  for (std::string line; std::getline(first, line);) {
    std::istringstream words(line);
    std::string comm, pid;
    words >> comm >> pid;
    if (comm == "node") by_pid.try_emplace(pid.substr(0, pid.find('/')));
  }
  std::istringstream lines(perf_script_output);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::string comm, pid, time;
    words >> comm >> pid >> time;
    pid = pid.substr(0, pid.find('/'));
    // A fork or exit is the process's own when it names the process, not a thread, first (perf
    // prints a fork under the parent's pid).
    for (const char* task : {"PERF_RECORD_FORK(", "PERF_RECORD_EXIT("}) {
      const size_t at = line.find(task);
      if (at == std::string::npos) continue;
      const std::string ids =
          line.substr(at + std::strlen(task), line.find(')', at) - at - std::strlen(task));
      const std::string child = ids.substr(0, ids.find(':'));
      auto own = by_pid.find(child);
      if (own != by_pid.end() && ids == child + ":" + child && own->second.tasks.size() < 8) {
        own->second.tasks.push_back(line);
      }
    }
    auto it = by_pid.find(pid);
    if (it == by_pid.end()) continue;
    Digest& d = it->second;
    if (line.find("PERF_RECORD_MMAP2") != std::string::npos) {
      if (line.find("jitted-") == std::string::npos) continue;
      if (d.jit_maps++ == 0) d.first_map = time;
      d.last_map = time;
    } else if (line.find("PERF_RECORD_COMM") != std::string::npos) {
      if (d.tasks.size() < 8) d.tasks.push_back(line);
    } else if (line.find("PERF_RECORD_") != std::string::npos) {
      continue;
    } else if (line.find("[unknown] ([unknown])") != std::string::npos) {
      if (d.unplaced++ == 0) d.first_unplaced = time;
      d.last_unplaced = time;
    }
  }
  std::string out;
  for (const auto& [pid, d] : by_pid) {
    out += "  node " + pid + ": " + std::to_string(d.jit_maps) + " JIT maps " + d.first_map +
           " .. " + d.last_map + "; " + std::to_string(d.unplaced) + " samples in no map " +
           d.first_unplaced + " .. " + d.last_unplaced + "\n";
    for (const std::string& t : d.tasks) out += "    " + t + "\n";
  }
  return out;
}

class PodmanJitTest : public PodmanFixture {
 protected:
  // The container removed, `bundle` unpacked elsewhere with a fresh HOME: perf script -F `fields`
  // of the bundle's recording, from the bundle's cache alone.
  RunResult script_elsewhere(const std::string& bundle, const std::string& fields) {
    RunResult r = sh("podman rm -f -t 0 " + container());
    if (r.status != 0) return r;
    r = sh("HOME=" + quote(dir_ + "/elsewhere") + " " + pdfix() + " unpack " + quote(bundle) + " " +
           quote(dir_ + "/unpacked"));
    if (r.status != 0) return r;
    return sh("HOME=" + quote(dir_ + "/elsewhere") + " perf --buildid-dir " +
              quote(dir_ + "/unpacked/.debug") + " script -F " + fields + " -i " +
              quote(dir_ + "/unpacked/perf.data") + " 2>/dev/null");
  }
};

TEST_F(PodmanJitTest, NodeInALivingContainerIsNamedAndUnwoundFromTheBundle) {
  make_base("nodejs");
  const std::string sync = dir_ + "/sync";
  fs::create_directories(sync);
  std::ofstream(sync + "/short.js") << node_work("short", "");
  // V8 keeps up to 2 MiB of its dump in a buffer until the process exits: new code until the
  // file has grown by more than that brings fib_long's records to it while the process lives on
  // (a fixed 6,000 functions did not always: fib_long's samples then lay in no map, once in ~20
  // CI runs).
  std::ofstream(sync + "/long.js") << node_work(
      "long",
      "const fs = require('fs');\nconst dump = '/tmp/jit-' + process.pid + '.dump';\n"
      "const flushed = fs.statSync(dump).size + (3 << 20);\nlet t = 0;\n"
      "for (let i = 0; i < 400000 && fs.statSync(dump).size < flushed; i += 100) {\n"
      "  for (let k = i; k < i + 100; k++) t += new Function('x', 'return x + ' + k)(k);\n}\n"
      "fs.writeFileSync('/sync/done', String(fs.statSync(dump).size >= flushed));\n"
      "setInterval(() => {}, 1 << 30);\n");
  std::ofstream(sync + "/load.sh")
      << "cd /tmp\nnode --perf-prof --perf-prof-unwinding-info /sync/short.js\n"
      << "exec node --perf-prof --perf-prof-unwinding-info --always-sparkplug /sync/long.js\n";
  RunResult r = sh(run_container() + " -v " + quote(sync) + ":/sync " + base() +
                   " sh -c 'while [ ! -e /sync/go ]; do sleep 0.1; done; exec sh /sync/load.sh'");
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(env_ + "perf record -q -k mono -a -B --call-graph dwarf -F 499 -o " +
         quote(dir_ + "/in.data") + " -- sh -c " +
         quote("touch " + quote(sync) + "/go; while [ ! -e " + quote(sync) +
               "/done ]; do sleep 0.1; done"));
  ASSERT_EQ(r.status, 0) << r.err;
  std::string flushed;
  std::ifstream(sync + "/done") >> flushed;
  ASSERT_EQ(flushed, "true") << "the living node's dump never grew by 3 MiB more: its fib_long "
                                "records may still be in V8's buffer";

  const std::string bundle = dir_ + "/b.tar.zst";
  r = pdfix_run("fix --json --unwind --archive " + quote(bundle) + " " + quote(dir_ + "/in.data") +
                " " + quote(dir_ + "/out.data"));
  auto json = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(json)) << r.status << " " << r.err << r.out.substr(0, 2000);
  const llvm::json::Object& fix = *json->getAsObject();
  // Exit 2 says why in the unwind and jit reports; the archive's list of files (first, and long)
  // does not, and CI shows only the end of a failure's output.
  ASSERT_EQ(r.status, 0) << r.err << "\nunwind: " << brief(fix, "unwind")
                         << "\njit: " << brief(fix, "jit") << "\nerror: " << brief(fix, "error");
  // Both dumps read on the container's overlay: the exited process's is nowhere else.
  size_t dumps = 0;
  for (const llvm::json::Value& v : *fix.getObject("jit")->getArray("sources")) {
    const llvm::json::Object& src = *v.getAsObject();
    if (src.getString("kind") != "jitdump") continue;
    ++dumps;
    EXPECT_NE(src.getString("found_at").value_or("").find("/merged/tmp/jit-"),
              llvm::StringRef::npos)
        << llvm::formatv("{0:1}", v).str();
  }
  EXPECT_EQ(dumps, 2u) << brief(fix, "jit");
  const llvm::json::Object& archive = *fix.getObject("archive");
  EXPECT_EQ(archive.getArray("unresolved")->size(), 0u) << r.err;
  EXPECT_EQ(archive.getInteger("missing").value_or(-1), 0);

  r = script_elsewhere(bundle, "pid,ip,sym,dso");
  ASSERT_EQ(r.status, 0) << r.err;
  std::map<std::string, Named> by_function;
  std::map<std::string, size_t> leaves;  // each first frame's samples: what a failure shows
  size_t container_libnode = 0;
  for (const std::string& block : script_samples(r.out)) {
    std::istringstream frames(block);
    std::string header, first;
    std::getline(frames, header);
    std::getline(frames, first);
    std::istringstream leaf(first);  // "ip sym (dso)": the address left out
    std::string ip, rest;
    leaf >> ip;
    std::getline(leaf, rest);
    ++leaves[rest];
    for (const char* f : {"fib_short", "fib_long"}) {
      if (first.find(std::string(f) + " ") == std::string::npos) continue;
      ++by_function[f].leaf;
      by_function[f].to_start += block.find(" node::Start") != std::string::npos;
    }
    // Debian 13's libnode (this Debian 12 host has libnode.so.108 at most).
    container_libnode +=
        block.find("node::Start (/usr/lib/x86_64-linux-gnu/libnode.so.115)") != std::string::npos;
  }
  for (const char* f : {"fib_short", "fib_long"}) {
    std::cout << "  " << f << ": " << by_function[f].leaf << " samples, " << by_function[f].to_start
              << " unwound to node::Start\n";
    EXPECT_GT(by_function[f].leaf, 300u)
        << f << "; the jit report: " << brief(fix, "jit") << "\nthe most frequent leaves:\n"
        << most_frequent(leaves, 15) << "node's processes as perf read them:\n"
        << node_digest(sh("HOME=" + quote(dir_ + "/elsewhere") + " perf --buildid-dir " +
                          quote(dir_ + "/unpacked/.debug") +
                          " script --show-mmap-events --show-task-events -F comm,pid,tid,time,"
                          "event,ip,sym,dso -i " +
                          quote(dir_ + "/unpacked/perf.data") + " 2>/dev/null")
                           .out);
    EXPECT_GE(by_function[f].to_start * 10, by_function[f].leaf * 9) << f;
  }
  EXPECT_GT(container_libnode, 600u);
}

// A map file (node --perf-basic-prof) of a process that exited while its container lives on: the
// file is in the container's /tmp, on its overlay, named by the host's pid (the container shares
// the host's pid namespace). Nothing but the overlay shows it once the process is gone: `fix
// --archive` with no options must find it there through the overlay the process's files are on,
// and perf name the JS functions from the bundle after the container is removed.
TEST_F(PodmanJitTest, AnExitedProcesssMapFileIsReadOnItsLivingContainersOverlay) {
  make_base("nodejs");
  const std::string sync = dir_ + "/sync";
  fs::create_directories(sync);
  std::ofstream(sync + "/map.js") << node_work("map", "");
  RunResult r = sh(run_container() + " --pid host -v " + quote(sync) + ":/sync " + base() +
                   " sh -c 'while [ ! -e /sync/go ]; do sleep 0.1; done; cd /tmp; node "
                   "--perf-basic-prof /sync/map.js >/sync/node.log 2>&1; echo $? >/sync/status; "
                   "touch /sync/done; exec sleep 3600'");
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(env_ + "perf record -q -a -B -F 499 -o " + quote(dir_ + "/in.data") + " -- sh -c " +
         quote("touch " + quote(sync) + "/go; while [ ! -e " + quote(sync) +
               "/done ]; do sleep 0.1; done"));
  ASSERT_EQ(r.status, 0) << r.err;
  // node's own word first: a node that failed is not pdfix's failure to find its map file.
  ASSERT_EQ(sh("cat " + quote(sync) + "/status").out, "0\n")
      << sh("cat " + quote(sync) + "/node.log").out;

  const std::string bundle = dir_ + "/b.tar.zst";
  r = pdfix_run("fix --json --archive " + quote(bundle) + " " + quote(dir_ + "/in.data") + " " +
                quote(dir_ + "/out.data"));
  ASSERT_EQ(r.status, 0) << r.err << r.out.substr(0, 4000);
  auto json = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(json)) << r.out.substr(0, 2000);
  size_t map_files = 0;
  for (const llvm::json::Value& v : *json->getAsObject()->getObject("jit")->getArray("sources")) {
    const llvm::json::Object& src = *v.getAsObject();
    if (src.getString("kind") != "perf map") continue;
    ++map_files;
    EXPECT_NE(src.getString("found_at").value_or("").find("/merged/tmp/perf-"),
              llvm::StringRef::npos)
        << src.getString("problem").value_or("").str();
    EXPECT_GT(src.getInteger("functions").value_or(0), 0);
  }
  if (map_files != 1u) {
    // Where fix looked (map_files_not_found), the container's /tmp, and what the recording holds
    // of node: its maps, anonymous ones the JIT code, and how many samples; records lost.
    const std::string script =
        "perf script --show-mmap-events -F comm,pid,event -i " + quote(dir_ + "/in.data") + " 2>&1";
    ADD_FAILURE() << map_files << " map files; jit: "
                  << llvm::formatv("{0:2}", llvm::json::Value(llvm::json::Object(
                                                *json->getAsObject()->getObject("jit"))))
                         .str()
                  << "\nthe container's /tmp:\n"
                  << sh("podman exec " + container() + " ls -la --full-time /tmp 2>&1").out
                  << "the recording's start: " << sh("stat -c %w " + quote(dir_ + "/in.data")).out
                  << "node's maps in the recording:\n"
                  << sh(script + " | grep -E '^ *node .*MMAP' | head -60").out
                  << "node's samples: " << sh(script + " | grep -cE '^ *node .*clock'").out
                  << "the recording's records (LOST ones would be listed):\n"
                  << sh("perf report --stats -i " + quote(dir_ + "/in.data") +
                        " 2>&1 | grep -E 'events:' | head -16")
                         .out;
  }

  r = script_elsewhere(bundle, "ip,sym");
  ASSERT_EQ(r.status, 0) << r.err;
  size_t fib = 0;  // one line a sample, without callchains
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);)
    fib += line.find("fib_map") != std::string::npos;
  std::cout << "  fib_map: " << fib << " samples named from the bundle\n";
  EXPECT_GT(fib, 300u);
}

}  // namespace
}  // namespace pdfix::e2e
