// A real container runtime, as a user meets it: podman (runtime runc) runs an image this test
// makes itself, with no registry (Debian 13 from mmdebstrap, imported, and a second layer with a
// program and its library), while the host runs its own copies at the same paths: its own
// libc.so.6, /usr/bin/perl, gzip and head, and the program and library built differently. perf
// records the whole machine, with and without -B, and pdfix is run with the container alive,
// then removed. Every map must carry the id of its own file or none, never the other's.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "e2e/harness.h"
#include "e2e/leaf_names.h"
#include "e2e/podman_work_fixture.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

TEST_F(PodmanTest, HostAndContainerMapDifferentFilesAtTheSamePaths) {
  build_work("", "1");
  make_image();
  record();
  const std::string in = dir_ + "/in.data";
  const std::string in_b = dir_ + "/inB.data";
  const std::string merged =
      std::string(absl::StripTrailingAsciiWhitespace(sh("podman mount " + container()).out));
  merged_ = merged;
  struct stat overlay{};
  ASSERT_EQ(stat(merged.c_str(), &overlay), 0) << merged;
  overlay_dev_ = dev_of(overlay);
  // The control: the same paths are other files inside.
  for (const std::string& path : std::vector<std::string>{
           "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/perl", prefix_ + "/lib/libwork.so"}) {
    ASSERT_NE(own_id(path), own_id(merged + path)) << path;
  }

  // Alive: the overlay is mounted, and proves every container map, those of processes that have
  // exited included, with no option.
  for (const std::string& recording : {in, in_b}) {
    SCOPED_TRACE(recording);
    const std::string out = recording + ".alive";
    RunResult r = pdfix_run("fix " + quote(recording) + " " + quote(out));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("from the mounted overlay at " + merged), std::string::npos) << r.err;
    EXPECT_EQ(expect_own_ids(recording, out, true), 0) << r.err;
    expect_settled(out, "");
  }

  ASSERT_EQ(sh("podman rm -f -t 0 " + container()).status, 0);
  // The image's layers, all of them, by one command; a one-layer image gives one directory.
  const std::string image_layers = layers(image());
  EXPECT_NE(image_layers.find(':'), std::string::npos) << image_layers;
  const std::string base_layers = layers(base());
  EXPECT_EQ(base_layers.find(':'), std::string::npos) << base_layers;
  EXPECT_TRUE(fs::is_directory(base_layers + "/usr/bin")) << base_layers;
  const std::string search = "--search " + quote(image_layers);
  const std::vector<std::string> image_roots = absl::StrSplit(image_layers, ':');

  // The same recording read as if on another host of the same name: no inode proves anything,
  // and perf's table is left as it was, no entry taken out and none copied into the maps.
  {
    const std::string out = dir_ + "/elsewhere.data";
    RunResult r = sh("unshare -u sh -c " + quote("hostname pdfix-elsewhere && " + env_ + pdfix() +
                                                 " fix " + quote(in) + " " + quote(out)));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.err.find("not proven here (recorded on "), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("build-id table entry removed"), std::string::npos) << r.err;
    const std::string listed = sh("perf buildid-list -i " + quote(out) + " 2>/dev/null").out;
    std::istringstream before(sh("perf buildid-list -i " + quote(in) + " 2>/dev/null").out);
    for (std::string line; std::getline(before, line);) {
      EXPECT_NE(listed.find(line), std::string::npos) << line;
    }
    for (const MapRecord& m : maps_of(out)) {
      if (m.filename.starts_with("/usr/")) {
        EXPECT_EQ(m.build_id, "") << m.filename;
      }
    }
  }

  for (const std::string& recording : {in, in_b}) {
    SCOPED_TRACE(recording);
    // Removed, no layers given: no container map gets an id, none gets the host's; check and
    // --strict say so, and name --search.
    const std::string plain = recording + ".plain";
    RunResult r = pdfix_run("fix " + quote(recording) + " " + quote(plain));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_GT(expect_own_ids(recording, plain, false), 50);
    r = pdfix_run("fix -q " + quote(plain) + " " + quote(plain + ".again"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(same_file(plain, plain + ".again"));
    r = pdfix_run("check " + quote(plain));
    EXPECT_NE(r.out.find("\n0 error(s)"), std::string::npos) << r.out;
    r = pdfix_run("check " + quote(recording));
    EXPECT_EQ(r.status, 3) << r.out;
    EXPECT_NE(r.out.find("libc.so.6: samples hit maps of it that carry no build-id, and fix proves "
                         "none"),
              std::string::npos)
        << r.out;
    // Which of the resolver's reasons comes first varies with the recording; each names --search.
    EXPECT_NE(r.out.find("root or layers with --search"), std::string::npos) << r.out;
    r = pdfix_run("fix --strict --archive " + quote(recording + ".strict.tar.zst") + " " +
                  quote(recording) + " " + quote(recording + ".strict"));
    EXPECT_EQ(r.status, 3) << r.err;

    // With the image's layers: every map proven, both files of each shared path in the bundle.
    const std::string out = recording + ".fixed";
    const std::string bundle = recording + ".tar.zst";
    r = pdfix_run("fix --strict " + search + " --archive " + quote(bundle) + " " +
                  quote(recording) + " " + quote(out));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(expect_own_ids(recording, out, true), 0) << r.err;
    expect_settled(out, search);
    RunResult listed = sh("tar -tf " + quote(bundle));
    RunResult hits = pdfix_run("buildid-list --hits " + quote(out));
    ASSERT_EQ(hits.status, 0) << hits.err;
    for (const std::string& path :
         std::vector<std::string>{"/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/bin/perl",
                                  prefix_ + "/lib/libwork.so", prefix_ + "/bin/work"}) {
      const std::string host_id = own_id(path);
      std::string inside_id;
      for (const std::string& root : image_roots) {
        if (fs::exists(root + path)) {
          inside_id = own_id(root + path);
          break;
        }
      }
      ASSERT_FALSE(inside_id.empty()) << path;
      for (const std::string& id : {host_id, inside_id}) {
        EXPECT_NE(listed.out.find(absl::StrCat(".debug", path, "/", id, "/elf")), std::string::npos)
            << path << " " << id << "\n"
            << listed.out;
        EXPECT_NE(hits.out.find(absl::StrCat(id, " ", path)), std::string::npos) << path << "\n"
                                                                                 << hits.out;
      }
    }
    // perf reads the two files at one path as two DSOs, as pdfix lists them. Only the shared
    // paths are compared: the recording is system-wide, and what else ran meanwhile (another
    // test's JIT, whose anonymous code perf names by a /tmp/perf-PID.map it finds at report time)
    // is not this test's.
    const std::string shared = "grep -E ' (/usr/lib/x86_64-linux-gnu/libc.so.6|/usr/bin/perl|" +
                               prefix_ + "/lib/libwork.so|" + prefix_ + "/bin/work)$' | sort";
    RunResult perf_hits =
        sh("perf buildid-list --with-hits -i " + quote(out) + " 2>/dev/null | " + shared);
    RunResult pdfix_hits = sh(pdfix() + " buildid-list --hits " + quote(out) + " | " + shared);
    EXPECT_EQ(std::count(perf_hits.out.begin(), perf_hits.out.end(), '\n'), 8) << perf_hits.out;
    EXPECT_EQ(perf_hits.out, pdfix_hits.out);

    // The bundle, unpacked elsewhere: perf names the container's functions for the container's
    // samples and the host's for the host's.
    const std::string unpacked = recording + ".u";
    ASSERT_EQ(pdfix_run("unpack " + quote(bundle) + " " + quote(unpacked)).status, 0);
    std::map<uint32_t, std::string> work_variant;  // pid -> the work program's id
    std::map<uint32_t, std::string> perl_of;       // pid -> its perl's id
    for (const MapRecord& m : maps_of(out)) {
      if (m.filename == prefix_ + "/bin/work") work_variant[m.pid] = m.build_id;
      if (m.filename == "/usr/bin/perl") perl_of[m.pid] = m.build_id;
    }
    // The container's perl is stripped: its dynamic symbols are all a report can name.
    std::string inside_perl;
    for (const std::string& root : image_roots) {
      if (fs::exists(root + "/usr/bin/perl")) inside_perl = root + "/usr/bin/perl";
    }
    std::set<std::string> inside_symbols;
    std::istringstream nm(
        sh("nm -D --defined-only " + quote(inside_perl) + " | awk '{print $3}'").out);
    for (std::string sym; std::getline(nm, sym);) inside_symbols.insert(sym);
    ASSERT_GT(inside_symbols.size(), 100U);
    r = sh(env_ + "perf --buildid-dir " + quote(unpacked + "/.debug") + " script -i " +
           quote(unpacked + "/perf.data") + " -F pid,ip,sym,dso 2>/dev/null");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string v1 = own_id(prefix_ + "/bin/work");
    std::map<std::string, int> named;  // "host spin_v1", "container work_v2", ...
    int perl_named = 0;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream f(line);
      uint32_t pid = 0;
      std::string ip;
      std::string sym;
      std::string dso;
      f >> pid >> ip >> sym >> dso;
      if (auto p = perl_of.find(pid); p != perl_of.end() && p->second == id(inside_perl) &&
                                      dso == "(/usr/bin/perl)" && sym != "[unknown]") {
        ++perl_named;
        // perf names PLT stubs itself, from the relocations.
        EXPECT_TRUE(inside_symbols.contains(sym) || sym.ends_with("@plt"))
            << "the container's perl has no " << sym;
      }
      auto w = work_variant.find(pid);
      if (w == work_variant.end() || (!sym.ends_with("_v1") && !sym.ends_with("_v2"))) continue;
      ++named[(w->second == v1 ? "host " : "container ") + sym];
    }
    EXPECT_GT(named["host spin_v1"], 100);
    EXPECT_GT(named["host work_v1"], 100);
    EXPECT_GT(named["container spin_v2"], 100);
    EXPECT_GT(named["container work_v2"], 100);
    EXPECT_EQ(named["host spin_v2"] + named["host work_v2"], 0);
    EXPECT_EQ(named["container spin_v1"] + named["container work_v1"], 0);
    EXPECT_GT(perl_named, 20);

    // export, the container removed, with the image's layers: each process's samples named from
    // its own file, as perf names them from the bundle, sample for sample.
    r = pdfix_run("export -q --format folded --labels comm,pid " + search + " " + quote(recording) +
                  " " + quote(recording + ".folded"));
    ASSERT_EQ(r.status, 0) << r.err;
    std::map<std::string, int> exported;  // as `named`
    for (const FoldedLeaf& l : folded_leaves(sh("cat " + quote(recording + ".folded")).out)) {
      auto w = work_variant.find(l.pid);
      if (w == work_variant.end() || (!l.leaf.ends_with("_v1") && !l.leaf.ends_with("_v2"))) {
        continue;
      }
      exported[(w->second == v1 ? "host " : "container ") + l.leaf] += static_cast<int>(l.count);
    }
    std::erase_if(named, [](const auto& kv) { return kv.second == 0; });
    EXPECT_EQ(exported, named);
  }
}

// Go programs have no build-id: the host's and the container's at one path are told apart by
// their inodes and contents alone. With the container alive and no option, fix --archive keeps
// both, each in a root of its own; with the container removed and the host's program deleted,
// the command unpack prints for each root names its processes' samples with their own file's
// function, as perf does with each file in place.
TEST_F(PodmanTest, GoProgramsAtOnePathAreKeptApart) {
  ASSERT_EQ(sh("command -v go").status, 0) << "golang-go is missing: scripts/setup.sh installs it";
  const std::string program = prefix_ + "/bin/gofib";
  build_go_fib(program, "1");
  build_go_fib(dir_ + "/layer" + program, "2");
  make_image();
  const std::string sync = quote(dir_ + "/sync");
  fs::create_directories(dir_ + "/sync");
  RunResult r = sh(run_container() + " -v " + sync + ":/sync " + image() +
                   " sh -c 'while [ ! -e /sync/go ]; do sleep 0.1; " + "done; " + program +
                   " 38 >/dev/null; touch /sync/done; exec sleep infinity'");
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string in = dir_ + "/in.data";
  r = sh(env_ + "perf record -q -a -B -o " + quote(in) + " -- sh -c " +
         quote("touch " + sync + "/go; " + quote(program) + " 38 >/dev/null; while [ ! -e " + sync +
               "/done ]; do sleep 0.1; done"));
  ASSERT_EQ(r.status, 0) << r.err;
  const std::string merged =
      std::string(absl::StripTrailingAsciiWhitespace(sh("podman mount " + container()).out));
  ASSERT_TRUE(fs::exists(merged + program)) << merged;

  // Which processes ran which file, by the inode their maps name.
  struct stat host_file{};
  struct stat inside_file{};
  ASSERT_EQ(stat(program.c_str(), &host_file), 0);
  ASSERT_EQ(stat((merged + program).c_str(), &inside_file), 0);
  std::set<uint32_t> host_pids;
  std::set<uint32_t> inside_pids;
  for (const MapRecord& m : maps_of(in)) {
    if (m.filename != program) continue;
    if (m.ino == host_file.st_ino && m.dev == dev_of(host_file)) host_pids.insert(m.pid);
    if (m.ino == inside_file.st_ino && m.dev == dev_of(inside_file)) inside_pids.insert(m.pid);
  }
  ASSERT_EQ(host_pids.size(), 1U);
  ASSERT_EQ(inside_pids.size(), 1U);
  // perf with each file in place: the host's at its path, the container's under its root.
  const auto named = [&](const std::string& command, const std::string& sym) {
    RunResult s = sh(env_ + command + " 2>/dev/null | grep -c " + quote(sym));
    return std::stoul(s.out.empty() ? "0" : s.out);
  };
  const std::string script = "perf script -F pid,ip,sym -i " + quote(in);
  const size_t host_here =
      named(script + " --pid " + std::to_string(*host_pids.begin()), "main.fib_v1");
  const size_t inside_here =
      named(script + " --symfs " + quote(merged) + " --pid " + std::to_string(*inside_pids.begin()),
            "main.fib_v2");
  ASSERT_GT(host_here, 200U);
  ASSERT_GT(inside_here, 200U);

  const std::string bundle = dir_ + "/go.tar.zst";
  r = pdfix_run("fix --strict --archive " + quote(bundle) + " " + quote(in) + " " +
                quote(dir_ + "/out.data"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("2 without a build-id, kept by path"), std::string::npos) << r.err;
  ASSERT_EQ(sh("podman rm -f -t 0 " + container()).status, 0);
  // Removed: the host's program is still proven, the container's no longer, and check does not
  // say both are kept; with the image's layers both are again.
  r = pdfix_run("check " + quote(in));
  EXPECT_EQ(r.status, 3) << r.out;
  EXPECT_NE(r.out.find(program + ": samples hit maps of it that carry no build-id, and fix proves "
                                 "none"),
            std::string::npos)
      << r.out;
  r = pdfix_run("fix --strict --archive " + quote(dir_ + "/removed.tar.zst") + " " + quote(in) +
                " " + quote(dir_ + "/removed.data"));
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_NE(r.err.find("1 without a build-id, kept by path"), std::string::npos) << r.err;
  r = pdfix_run("fix --strict --search " + quote(layers(image())) + " --archive " +
                quote(dir_ + "/searched.tar.zst") + " " + quote(in) + " " +
                quote(dir_ + "/searched.data"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("2 without a build-id, kept by path"), std::string::npos) << r.err;
  fs::remove(program);

  fs::create_directories(dir_ + "/fresh");
  env_ = "HOME=" + quote(dir_ + "/fresh") + " ";
  r = pdfix_run("unpack " + quote(bundle) + " " + quote(dir_ + "/u"));
  ASSERT_EQ(r.status, 0) << r.err;
  std::vector<std::string> reports;
  for (absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    if (absl::StartsWith(line, "perf ")) reports.emplace_back(line);
  }
  ASSERT_EQ(reports.size(), 2U) << r.out;
  size_t host_named = 0;
  size_t inside_named = 0;
  for (std::string command : reports) {
    SCOPED_TRACE(command);
    command.replace(command.find(" report "), 8, " script -F pid,ip,sym ");
    const size_t v1 = named(command, "main.fib_v1");
    const size_t v2 = named(command, "main.fib_v2");
    // One root, one file: its processes are named with that file's function only.
    EXPECT_TRUE(v1 == 0 || v2 == 0) << v1 << " and " << v2;
    host_named += v1;
    inside_named += v2;
  }
  std::cout << "host main.fib_v1 named on " << host_named << " of " << host_here
            << " samples; the container's main.fib_v2 on " << inside_named << " of " << inside_here
            << "\n";
  EXPECT_GE(host_named * 100, host_here * 95) << host_named << " of " << host_here;
  EXPECT_GE(inside_named * 100, inside_here * 95) << inside_named << " of " << inside_here;
}

}  // namespace
}  // namespace pdfix::e2e
