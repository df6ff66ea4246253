// Containers and chroots, recorded by the machine's perf as root: a chroot, a two-layer overlayfs
// recorded through and then unmounted, and a live process in its own mount namespace with a tmpfs
// over a host directory. In each, a library has version 1 on the host and version 2, another
// build-id, at the same path inside. Every map must get the id of the file its process really
// mapped, and never the host's id for a container's file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "e2e/harness.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

// Every build-id that the map records of `path` carry in `recording` (one per map record; ""
// for a map without one).
std::vector<std::string> map_ids(const std::string& recording, const std::string& path) {
  std::vector<std::string> ids;
  for (const MapRecord& m : maps_of(recording)) {
    if (m.filename == path) ids.push_back(m.build_id);
  }
  return ids;
}

// perf buildid-list's id for `path` in `recording` ("" when it lists none).
std::string listed_id(const std::string& recording, const std::string& path) {
  RunResult r = sh("perf buildid-list -i " + quote(recording) + " 2>/dev/null");
  EXPECT_EQ(r.status, 0) << r.err;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.size() > 41 && line.substr(41) == path) return line.substr(0, 40);
  }
  return "";
}

class ContainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    dir_ = temp_dir();
    env_ = "HOME=" + quote(dir_ + "/home") + " ";
    fs::create_directories(dir_ + "/home");
    // The library's path, the same on the host and inside; the host's copy is version 1.
    lib_ = dir_ + "/shared/lib/libwork.so";
    build_lib(lib_, "1");
    v1_ = own_id(lib_);
  }
  void TearDown() override {
    if (!dir_.empty()) {
      sh("umount -l " + quote(dir_ + "/merged") + " 2>/dev/null");
      fs::remove_all(dir_);
    }
  }

  // libwork.so at `path`: work() with `variant` in its code, so each variant has its own id.
  void build_lib(const std::string& path, const std::string& variant) {
    fs::create_directories(fs::path(path).parent_path());
    const std::string src = dir_ + "/work" + variant + ".c";
    std::ofstream(src) << "int work_v" << variant << "(int n) { volatile int s = " << variant
                       << "; for (int i = 0; i < n; i++) s += i * i; return s; }\n"
                       << "int work(int n) { return work_v" << variant << "(n); }\n";
    RunResult r = sh("gcc -O1 -fPIC -shared -Wl,--build-id=sha1 -Wl,-soname,libwork.so -o " +
                     quote(path) + " " + src);
    ASSERT_EQ(r.status, 0) << r.err;
  }

  // A root that runs /app against version 2 of the library at lib_'s path, with its own copies
  // of the loader and libc (other inodes than the host's, the same ids). `seconds`: how long
  // /app works (0: a fixed amount of work, about half a second).
  void make_root(const std::string& root, int seconds = 0) {
    build_lib(root + lib_, "2");
    const std::string src = dir_ + "/app.c";
    std::ofstream(src) << "#include <time.h>\nint work(int);\n"
                       << "int main(void) { int s = 0; time_t end = time(0) + " << seconds
                       << "; do { for (int k = 0; k < 400; k++) s += work(200000); } while ("
                       << (seconds > 0 ? "time(0) < end" : "0") << "); return s == 42; }\n";
    RunResult r =
        sh("gcc -O1 -Wl,--build-id=sha1 -o " + quote(root + "/app") + " " + src + " " +
           quote(root + lib_) + " -Wl,-rpath," + quote(fs::path(lib_).parent_path()) +
           " && mkdir -p " + quote(root + "/lib64") + " " + quote(root + "/lib/x86_64-linux-gnu") +
           " && cp -L /lib64/ld-linux-x86-64.so.2 " + quote(root + "/lib64/") +
           " && cp -L /lib/x86_64-linux-gnu/libc.so.6 " + quote(root + "/lib/x86_64-linux-gnu/"));
    ASSERT_EQ(r.status, 0) << r.err;
    v2_ = own_id(root + lib_);
    app_ = own_id(root + "/app");
    ASSERT_NE(v1_, v2_);
  }

  RunResult pdfix_run(const std::string& args) { return sh(env_ + pdfix() + " " + args); }

  // What every scenario must give: the container's library its own id in every map, and the
  // host's id nowhere, in the records nor in perf's reading of the table.
  void expect_container_ids(const std::string& fixed) {
    const std::vector<std::string> lib = map_ids(fixed, lib_);
    ASSERT_FALSE(lib.empty());
    for (const std::string& id : lib) EXPECT_EQ(id, v2_) << "libwork.so in the container";
    EXPECT_EQ(listed_id(fixed, lib_), v2_);
    for (const std::string& id : map_ids(fixed, "/app")) EXPECT_EQ(id, app_) << "/app";
  }
  void expect_no_host_id(const std::string& recording) {
    for (const std::string& id : map_ids(recording, lib_)) EXPECT_NE(id, v1_);
    EXPECT_NE(listed_id(recording, lib_), v1_);
  }

  std::string dir_;
  std::string env_;
  std::string lib_;
  std::string v1_;
  std::string v2_;
  std::string app_;
};

// perf record (no -B) of a chroot files the host's version 1 id for the chroot's library. fix
// takes it out of the table and, with --search, gives every chroot map the chroot file's id;
// the host's maps (chroot(8) before its exec) keep the host's.
TEST_F(ContainerTest, ChrootRecordedWithBuildIds) {
  const std::string root = dir_ + "/root";
  make_root(root);
  const std::string in = dir_ + "/in.data";
  RunResult r = sh(env_ + "perf record -q -o " + quote(in) + " -- chroot " + quote(root) + " /app");
  ASSERT_EQ(r.status, 0) << r.err;
  // The control: perf's table misfiles the host's id for the chroot's file.
  ASSERT_EQ(listed_id(in, lib_), v1_);

  r = pdfix_run("check --search " + quote(root) + " " + quote(in));
  EXPECT_NE(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("the build-id table gives " + lib_ + " " + v1_), std::string::npos) << r.out;

  // Without --search the process is gone: the chroot's maps get no id, and never the host's.
  r = pdfix_run("fix " + quote(in) + " " + quote(dir_ + "/plain.data"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("build-id table entry removed: " + lib_ + " " + v1_), std::string::npos)
      << r.err;
  expect_no_host_id(dir_ + "/plain.data");

  r = pdfix_run("fix --search " + quote(root) + " " + quote(in) + " " +
                quote(dir_ + "/fixed.data"));
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("upgraded, from --search " + root), std::string::npos) << r.err;
  expect_container_ids(dir_ + "/fixed.data");
  const std::string chroot_id = own_id("/usr/sbin/chroot");
  for (const std::string& id : map_ids(dir_ + "/fixed.data", "/usr/sbin/chroot")) {
    EXPECT_TRUE(id == chroot_id || id.empty()) << id;
  }
  EXPECT_EQ(listed_id(dir_ + "/fixed.data", "/usr/sbin/chroot"), chroot_id);
  r = pdfix_run("check --search " + quote(root) + " " + quote(dir_ + "/fixed.data"));
  EXPECT_EQ(r.status, 0) << r.out;
}

// perf record -B of a chroot: no table. --search gives the chroot's maps their ids; the bundle
// that fix --archive makes holds the chroot's own binaries, and perf report of the unpacked
// bundle, with the host's library still version 1, names version 2's function and /app's.
TEST_F(ContainerTest, ChrootRecordedWithoutBuildIdsArchivesTheChrootsBinaries) {
  const std::string root = dir_ + "/root";
  make_root(root);
  const std::string in = dir_ + "/in.data";
  RunResult r =
      sh(env_ + "perf record -q -B -o " + quote(in) + " -- chroot " + quote(root) + " /app");
  ASSERT_EQ(r.status, 0) << r.err;
  r = pdfix_run("fix " + quote(in) + " " + quote(dir_ + "/plain.data"));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_no_host_id(dir_ + "/plain.data");

  r = pdfix_run("fix --search " + quote(root) + " --archive " + quote(dir_ + "/b.tar.zst") + " " +
                quote(in) + " " + quote(dir_ + "/fixed.data"));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_container_ids(dir_ + "/fixed.data");
  r = pdfix_run("unpack " + quote(dir_ + "/b.tar.zst") + " " + quote(dir_ + "/u"));
  ASSERT_EQ(r.status, 0) << r.err;
  r = sh(env_ + "perf --buildid-dir " + quote(dir_ + "/u/.debug") + " report -i " +
         quote(dir_ + "/u/perf.data") + " --stdio --sort dso,sym 2>/dev/null | grep -v '^#'");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("work_v2"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("work_v1"), std::string::npos) << r.out;
}

// A two-layer overlayfs, recorded through as a container runtime mounts it, then unmounted:
// searched by layer, each map is proven by the layer file's device and inode.
TEST_F(ContainerTest, OverlayLayersSearchedAfterUnmount) {
  const std::string lower = dir_ + "/lower", upper = dir_ + "/upper";
  make_root(lower);
  // The library and /app move to a second layer above the base (loader, libc).
  fs::create_directories(upper + fs::path(lib_).parent_path().string());
  fs::rename(lower + lib_, upper + lib_);
  fs::rename(lower + "/app", upper + "/app");
  fs::create_directories(dir_ + "/merged");
  fs::create_directories(dir_ + "/diff");
  fs::create_directories(dir_ + "/work");
  RunResult r =
      sh("mount -t overlay overlay -o lowerdir=" + upper + ":" + lower + ",upperdir=" + dir_ +
         "/diff,workdir=" + dir_ + "/work " + quote(dir_ + "/merged"));
  ASSERT_EQ(r.status, 0) << "the overlay mount is refused: " << r.err;
  const std::string in = dir_ + "/in.data";
  r = sh(env_ + "perf record -q -B -o " + quote(in) + " -- chroot " + quote(dir_ + "/merged") +
         " /app");
  ASSERT_EQ(r.status, 0) << r.err;
  ASSERT_EQ(sh("umount " + quote(dir_ + "/merged")).status, 0);

  r = pdfix_run("fix --search " + quote(upper) + " --search " + quote(lower) + " " + quote(in) +
                " " + quote(dir_ + "/fixed.data"));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_container_ids(dir_ + "/fixed.data");
  const std::string libc = own_id("/lib/x86_64-linux-gnu/libc.so.6");
  for (const std::string& id : map_ids(dir_ + "/fixed.data", "/lib/x86_64-linux-gnu/libc.so.6")) {
    EXPECT_EQ(id, libc);
  }
}

// A process in its own mount namespace, with a tmpfs over a host directory, still running while
// pdfix runs: /proc/PID/root reaches its file, as perf itself does; no --search needed.
TEST_F(ContainerTest, ALiveProcessInItsOwnMountNamespace) {
  const std::string image = dir_ + "/image";
  make_root(image, 30);
  const std::string libdir = fs::path(lib_).parent_path();
  // The process sees version 2 in a tmpfs mounted over the host's directory, in its namespace
  // only; /app runs from the image.
  const std::string pidfile = dir_ + "/pid";
  RunResult r = sh("unshare -m --propagation private sh -c " +
                   quote("mount -t tmpfs tmpfs " + quote(libdir) + " && cp " + quote(image + lib_) +
                         " " + quote(lib_) + " && echo $$ > " + quote(pidfile) + " && exec " +
                         quote(image + "/app")) +
                   " >/dev/null 2>&1 & for i in $(seq 200); do [ -s " + quote(pidfile) +
                   " ] && break; sleep 0.05; done; cat " + quote(pidfile));
  ASSERT_EQ(r.status, 0) << "unshare -m or the tmpfs mount is refused: " << r.err;
  const std::string pid = r.out.substr(0, r.out.find('\n'));
  ASSERT_FALSE(pid.empty());
  const std::string in = dir_ + "/in.data";
  r = sh(env_ + "perf record -q -B -o " + quote(in) + " -p " + pid + " -- sleep 1");
  EXPECT_EQ(r.status, 0) << r.err;
  // The host still has version 1 there.
  EXPECT_EQ(own_id(lib_), v1_);
  r = pdfix_run("fix " + quote(in) + " " + quote(dir_ + "/fixed.data"));
  RunResult killed = sh("kill " + pid);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("upgraded, from /proc/" + pid + "/root"), std::string::npos) << r.err;
  const std::vector<std::string> ids = map_ids(dir_ + "/fixed.data", lib_);
  ASSERT_FALSE(ids.empty());
  for (const std::string& id : ids) EXPECT_EQ(id, v2_);
  EXPECT_EQ(killed.status, 0);
  // Once it is gone, nothing proves the map: no id, and still not the host's.
  sh("for i in $(seq 200); do [ -e /proc/" + pid + "/root/. ] || break; sleep 0.05; done");
  r = pdfix_run("fix " + quote(in) + " " + quote(dir_ + "/later.data"));
  ASSERT_EQ(r.status, 0) << r.err;
  expect_no_host_id(dir_ + "/later.data");
}

}  // namespace
}  // namespace pdfix::e2e
