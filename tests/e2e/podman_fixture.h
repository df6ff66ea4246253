// A real container runtime for the tests, as a user meets it: podman with runtime runc, an image
// the test makes itself without a registry (Debian 13 by mmdebstrap, imported), a container of it
// run detached without a network, everything removed at the end.
#pragma once

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cctype>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "e2e/harness.h"

namespace pdfix::e2e {

// The README's command for the layers of an image (podman's; docker's differs only in its name).
inline const char* const kLayersFormat =
    "{{.GraphDriver.Data.UpperDir}}{{with .GraphDriver.Data.LowerDir}}:{{.}}{{end}}";

inline std::string dev_of(const struct stat& st) {
  std::ostringstream s;
  s << std::hex << major(st.st_dev) << ":" << minor(st.st_dev);
  return s.str();
}

class PodmanFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    PDFIX_NEEDS_PERF_RECORD();
    for (const char* tool : {"podman", "runc", "mmdebstrap"}) {
      ASSERT_EQ(sh(std::string("command -v ") + tool).status, 0)
          << tool << " is missing: scripts/setup.sh installs it";
    }
    dir_ = temp_dir();
    tag_ = std::filesystem::path(dir_).filename().string();
    for (char& c : tag_) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    env_ = "HOME=" + quote(dir_ + "/home") + " ";
    std::filesystem::create_directories(dir_ + "/home");
  }
  void TearDown() override {
    if (dir_.empty()) return;
    sh("podman rm -f -t 0 " + container() + " >/dev/null 2>&1; podman rmi -f " + image() + " " +
       base() + " >/dev/null 2>&1");
    remove_test_dir(dir_);
  }

  std::string image() const { return "localhost/pdfix-e2e-" + tag_ + ":2"; }
  std::string base() const { return "localhost/pdfix-e2e-" + tag_ + ":1"; }
  std::string container() const { return "pdfix-e2e-" + tag_; }
  RunResult pdfix_run(const std::string& args) const { return sh(env_ + pdfix() + " " + args); }
  // `podman run` of the test's container, detached, by runc, without a network; rlimits this
  // machine's user namespace may not raise are kept as they are.
  std::string run_container() const {
    return "podman run -d --name " + container() +
           " --runtime runc --network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024";
  }
  // Debian 13 with `packages` (another libc and more than this Debian 12 host's), imported as
  // base(). The root is made by mmdebstrap once a week for each set of packages and kept in
  // /var/tmp/pdfix-e2e-rootfs: making it takes most of a minute, for every test that asks,
  // where its import takes seconds. The tests that ask at once wait for the first.
  void make_base(const std::string& packages) {
    const std::string cache = "/var/tmp/pdfix-e2e-rootfs";
    const std::string tar = quote(cache + "/trixie-" + packages + ".tar");
    // mmdebstrap writes the format its output's name ends in.
    const std::string made = quote(cache + "/trixie-" + packages + ".new.tar");
    RunResult r = sh("mkdir -p " + cache + " && exec 9>" + cache + "/lock && flock 9 && " +
                     "if [ -z \"$(find " + tar + " -mtime -7 2>/dev/null)\" ]; then " +
                     "mmdebstrap --quiet --variant=essential --include=" + packages + " trixie " +
                     made + " http://deb.debian.org/debian && mv " + made + " " + tar + "; fi");
    ASSERT_EQ(r.status, 0) << r.err;
    r = sh("podman import -q " + tar + " " + base());
    ASSERT_EQ(r.status, 0) << r.err;
  }
  // The file at `path` in the root the layers make, by overlayfs's own rule (the topmost layer
  // that has it); "" when that is not a regular file.
  static std::string file_in_layers(const std::vector<std::string>& layers,
                                    const std::string& path) {
    struct stat st{};
    for (const std::string& layer : layers) {
      if (lstat((layer + path).c_str(), &st) == 0) return S_ISREG(st.st_mode) ? layer + path : "";
    }
    return "";
  }
  // The image's layers, by the README's command.
  std::string layers(const std::string& of) {
    RunResult r = sh(std::string("podman image inspect --format '") + kLayersFormat + "' " + of);
    EXPECT_EQ(r.status, 0) << r.err;
    return std::string(absl::StripTrailingAsciiWhitespace(r.out));
  }

  std::string dir_;
  std::string tag_;
  std::string env_;
};

}  // namespace pdfix::e2e
