// JIT code in a living container, as a user records it: the whole machine (perf record -a -B,
// -k mono, DWARF stacks) while node, the image's own (Debian 13's nodejs), runs with
// --perf-prof --perf-prof-unwinding-info in the container's /tmp, on its overlay. One node exits
// before pdfix runs, one lives on. `fix --unwind --archive` with no options must find both dumps
// and every file of the container that samples hit; then, the container removed and the bundle
// unpacked elsewhere with a fresh HOME, perf names the JS functions and unwinds through them to
// node's own frames, in the container's libnode.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

#include "e2e/harness.h"
#include "e2e/podman_fixture.h"
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

// Per process: samples whose first frame is in fib_NAME, and of those how many reach node::Start.
struct Named {
  size_t leaf = 0;
  size_t to_start = 0;
};

class PodmanJitTest : public PodmanFixture {};

TEST_F(PodmanJitTest, NodeInALivingContainerIsNamedAndUnwoundFromTheBundle) {
  make_base("nodejs");
  const std::string sync = dir_ + "/sync";
  fs::create_directories(sync);
  std::ofstream(sync + "/short.js") << node_work("short", "");
  // V8 keeps the last 2 MiB of its dump in a buffer until the process exits: code enough to fill
  // it brings fib_long's records to the file while the process lives on.
  std::ofstream(sync + "/long.js") << node_work(
      "long",
      "let t = 0;\nfor (let i = 0; i < 6000; i++) t += new Function('x', 'return x + ' + i)(i);\n"
      "require('fs').writeFileSync('/sync/done', String(t));\nsetInterval(() => {}, 1 << 30);\n");
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

  const std::string bundle = dir_ + "/b.tar.zst";
  r = pdfix_run("fix --json --unwind --archive " + quote(bundle) + " " + quote(dir_ + "/in.data") +
                " " + quote(dir_ + "/out.data"));
  ASSERT_EQ(r.status, 0) << r.err << r.out.substr(0, 4000);
  auto json = llvm::json::parse(r.out);
  ASSERT_TRUE(bool(json)) << r.out.substr(0, 2000);
  const llvm::json::Object& fix = *json->getAsObject();
  // Both dumps read on the container's overlay: the exited process's is nowhere else.
  size_t dumps = 0;
  for (const llvm::json::Value& v : *fix.getObject("jit")->getArray("sources")) {
    const llvm::json::Object& src = *v.getAsObject();
    if (src.getString("kind") != "jitdump") continue;
    ++dumps;
    EXPECT_NE(src.getString("found_at").value_or("").find("/merged/tmp/jit-"),
              llvm::StringRef::npos)
        << src.getString("problem").value_or("").str();
  }
  EXPECT_EQ(dumps, 2u) << r.out.substr(0, 4000);
  const llvm::json::Object& archive = *fix.getObject("archive");
  EXPECT_EQ(archive.getArray("unresolved")->size(), 0u) << r.err;
  EXPECT_EQ(archive.getInteger("missing").value_or(-1), 0);

  ASSERT_EQ(sh("podman rm -f -t 0 " + container()).status, 0);
  r = sh("HOME=" + quote(dir_ + "/elsewhere") + " " + pdfix() + " unpack " + quote(bundle) + " " +
         quote(dir_ + "/unpacked"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh("HOME=" + quote(dir_ + "/elsewhere") + " perf --buildid-dir " +
         quote(dir_ + "/unpacked/.debug") + " script -F pid,ip,sym,dso -i " +
         quote(dir_ + "/unpacked/perf.data") + " 2>/dev/null");
  ASSERT_EQ(r.status, 0) << r.err;
  std::map<std::string, Named> by_function;
  size_t container_libnode = 0;
  for (const std::string& block : script_samples(r.out)) {
    std::istringstream frames(block);
    std::string header, first;
    std::getline(frames, header);
    std::getline(frames, first);
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
    EXPECT_GT(by_function[f].leaf, 300u) << f;
    EXPECT_GE(by_function[f].to_start * 10, by_function[f].leaf * 9) << f;
  }
  EXPECT_GT(container_libnode, 600u);
}

}  // namespace
}  // namespace pdfix::e2e
