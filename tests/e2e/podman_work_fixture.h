// The podman tests' program and recordings (e2e/podman_test.cc): a program and its library built
// twice, the host's variant at one path and the container's at the same path in an image's layer,
// both running under a system-wide perf record; and the checks that each map carries its own
// file's id.
#pragma once

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
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "e2e/harness.h"
#include "e2e/podman_fixture.h"

namespace pdfix::e2e {

class PodmanTest : public PodmanFixture {
 protected:
  void SetUp() override {
    PodmanFixture::SetUp();
    prefix_ = dir_ + "/opt";
  }

  // PREFIX/bin/work, which spins in spin_vN and calls work_vN in PREFIX/lib/libwork.so, for four
  // seconds of CPU time (as many samples on a busy machine as on an idle one): each variant has
  // its own ids and function names.
  void build_work(const std::string& root, const std::string& variant) {
    const std::string lib = root + prefix_ + "/lib";
    const std::string bin = root + prefix_ + "/bin";
    std::filesystem::create_directories(lib);
    std::filesystem::create_directories(bin);
    std::ofstream(dir_ + "/lib.c") << "unsigned long work_v" << variant
                                   << "(unsigned long n) { volatile unsigned long s = " << variant
                                   << "; for (unsigned long i = 0; i < n; i++) s += i * i; "
                                      "return s; }\n";
    std::ofstream(dir_ + "/main.c")
        << "#include <time.h>\nunsigned long work_v" << variant << "(unsigned long);\n"
        << "__attribute__((noinline)) unsigned long spin_v" << variant
        << "(unsigned long n) { volatile unsigned long s = 0; for (unsigned long i = 0; i < n; "
           "i++) s += i; return s; }\n"
        << "int main(void) { unsigned long s = 0; while (clock() < 4 * CLOCKS_PER_SEC) "
           "s += spin_v"
        << variant << "(2000000) + work_v" << variant << "(2000000); return s == 42; }\n";
    RunResult r = sh("gcc -O1 -fPIC -shared -Wl,--build-id=sha1 -Wl,-soname,libwork.so -o " +
                     quote(lib + "/libwork.so") + " " + quote(dir_ + "/lib.c") +
                     " && gcc -O1 -Wl,--build-id=sha1 -o " + quote(bin + "/work") + " " +
                     quote(dir_ + "/main.c") + " " + quote(lib + "/libwork.so") + " -Wl,-rpath," +
                     quote(prefix_ + "/lib"));
    ASSERT_EQ(r.status, 0) << r.err;
  }

  // Debian 13 (another libc, perl, gzip and head than this Debian 12 host's) as a first layer,
  // and variant 2 of the program as a second.
  void make_image() {
    make_base("perl-base");
    build_work(dir_ + "/layer", "2");
    std::ofstream(dir_ + "/layer/Containerfile")
        << "FROM " << base() << "\nCOPY " << prefix_.substr(1) << " " << prefix_ << "\n";
    RunResult r =
        sh("cd " + quote(dir_ + "/layer") + " && podman build -q --pull=never --network none -t " +
           image() + " -f Containerfile .");
    ASSERT_EQ(r.status, 0) << r.err;
    // The layer's files carry whole-second mtimes, rounded: up to a second after they were made.
    // A recording begun before that second is over would rightly find them written since it
    // began (seen: born 368.95, the layer's file's mtime 369.0); an image is older than that.
    sh("sleep 1");
  }

  // The same load on the host and in the container, at the same paths; the container starts
  // when the host does, and lives on after.
  void record() {
    std::filesystem::create_directories(dir_ + "/sync");
    std::ofstream(dir_ + "/sync/load.sh")
        << prefix_ << "/bin/work &\n"
        << "perl -e '$e = time + 4; $s = 0; while (time < $e) { $s += $_ for 1..1000 }' &\n"
        << "i=0; while [ $i -lt 30 ]; do head -c 100000 /dev/urandom | gzip -c >/dev/null; "
           "i=$((i+1)); done\nwait\n";
    RunResult r = sh(run_container() + " -v " + quote(dir_ + "/sync") + ":/sync " + image() +
                     " sh -c 'while [ ! -e /sync/go ]; do sleep 0.1; done; sh /sync/load.sh; "
                     "touch /sync/done; exec sleep infinity'");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string sync = quote(dir_ + "/sync");
    const std::string until_done = "while [ ! -e " + sync + "/done ]; do sleep 0.1; done";
    // Both recordings at once, of the same load: one with perf's build-id table, one without.
    r = sh(env_ + "perf record -q -a -B -o " + quote(dir_ + "/inB.data") + " -- sh -c " +
           quote(until_done) + " & " + env_ + "perf record -q -a -o " + quote(dir_ + "/in.data") +
           " -- sh -c " +
           quote("while [ ! -s " + quote(dir_ + "/inB.data") + " ]; do sleep 0.05; done; touch " +
                 sync + "/go; sh " + sync + "/load.sh; " + until_done) +
           "; s=$?; wait $! && exit $s");
    ASSERT_EQ(r.status, 0) << r.err;
  }

  // The file a map was, told apart from the rules under test: a container's map (its device is
  // the container's overlay, as mountinfo showed it while the container lived) is the file at its
  // path in the container's root, by overlayfs's own rule (the topmost layer that has it); a
  // host's is this host's file at the path if that is the inode mapped. "" when there is none.
  std::string truth_file(const MapRecord& m, bool in_container,
                         const std::vector<std::string>& layers) {
    struct stat st{};
    if (!in_container) {
      return stat(m.filename.c_str(), &st) == 0 && st.st_ino == m.ino && dev_of(st) == m.dev
                 ? m.filename
                 : "";
    }
    return file_in_layers(layers, m.filename);
  }
  std::string id(const std::string& path) {
    auto [it, added] = ids_.try_emplace(path);
    if (added) it->second = path.empty() ? "" : own_id(path);
    return it->second;
  }

  // Every map of `out` (pdfix's output for `in`) carries its own file's id, or none where its file
  // is not known (a host file replaced since, one without a build-id). With `container_proven`
  // false (the container gone, no layers given) a container's map may carry none, never another
  // file's. Returns how many of the container's maps carry none.
  int expect_own_ids(const std::string& in, const std::string& out, bool container_proven) {
    const std::vector<MapRecord> before = maps_of(in);
    const std::vector<MapRecord> after = maps_of(out);
    EXPECT_EQ(before.size(), after.size());
    const std::vector<std::string> roots = absl::StrSplit(layers(image()), ':');
    int host = 0;
    int inside = 0;
    int idless_inside = 0;
    for (size_t i = 0; i < before.size() && i < after.size(); ++i) {
      const MapRecord& m = before[i];
      if (m.filename.empty() || m.filename.front() != '/' || m.dev.empty()) continue;
      const bool in_container = m.dev == overlay_dev_;
      (in_container ? inside : host)++;
      // A host file gone since (another test's, recorded by -a) is no longer known.
      if (!in_container && !std::filesystem::exists(m.filename)) continue;
      const std::string own = id(truth_file(m, in_container, roots));
      const std::string& carried = after[i].build_id;
      if (in_container && carried.empty()) ++idless_inside;
      if (in_container && !container_proven && carried.empty()) continue;
      EXPECT_EQ(carried, own) << m.filename << " pid " << m.pid << " dev " << m.dev << " ino "
                              << m.ino
                              << (in_container
                                      ? " (the container's): in the overlay " +
                                            seen(merged_ + m.filename) + "; " + in + " " + seen(in)
                                      : " (the host's)");
    }
    EXPECT_GT(host, 50);
    EXPECT_GT(inside, 50);
    return idless_inside;
  }

  // A second fix writes the same bytes, and check of fix's output finds nothing wrong.
  void expect_settled(const std::string& out, const std::string& options) {
    RunResult r = pdfix_run("fix -q " + options + " " + quote(out) + " " + quote(out + ".again"));
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(same_file(out, out + ".again")) << out;
    r = pdfix_run("check " + options + " " + quote(out));
    // perf -a records the other tests' processes too, whose files may be gone by now: what check
    // finds of them no fix repairs. Of this test's files it finds nothing.
    EXPECT_TRUE(r.status == 0 || r.status == 3) << r.out;
    EXPECT_NE(("\n" + r.out).find("\n0 error(s)"), std::string::npos) << r.out;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
      EXPECT_EQ(line.find("[fixed by"), std::string::npos) << line;
      EXPECT_EQ(line.find(dir_), std::string::npos) << line;
    }
  }

  // How `file` looks now: its inode and times, for a failure's message.
  static std::string seen(const std::string& file) {
    struct statx st{};
    if (statx(AT_FDCWD, file.c_str(), 0, STATX_INO | STATX_MTIME | STATX_BTIME, &st) != 0) {
      return "missing";
    }
    return absl::StrCat("ino ", st.stx_ino, " mtime ", st.stx_mtime.tv_sec, ".",
                        st.stx_mtime.tv_nsec, " born ", st.stx_btime.tv_sec, ".",
                        st.stx_btime.tv_nsec);
  }

  std::string prefix_;
  std::string merged_;  // the container's overlay, mounted, while it lives
  std::map<std::string, std::string> ids_;
  std::string overlay_dev_;  // the container's overlay's device, "maj:min" in hex
};

}  // namespace pdfix::e2e
