// archive, unpack and fetch at their edges, with no recording of this machine: a foreign
// recording's ids all missing, an unreadable recording, what is not a bundle, a bundle that
// would write outside its directory, and debuginfod servers that are down or absent.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "e2e/harness.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace {
namespace fs = std::filesystem;

std::string foreign(const std::string& name) { return foreign_corpus_dir() + "/" + name; }

TEST(ArchiveInput, ForeignRecordingListsEveryIdMissing) {
  const std::string dir = temp_dir();
  const std::string in = foreign("quipper/perf.data.callgraph-3.4");
  RunResult r = sh(pdfix() + " archive --json " + quote(in) + " " + quote(dir + "/b.tar.zst"));
  ASSERT_EQ(r.status, 0) << r.err;
  const auto summary = parse_object(r.out);
  EXPECT_EQ(int_of(summary, "kept"), 0);
  // perf's own list of the recording's ids, each one missing.
  RunResult perf = sh("perf buildid-list -i " + quote(in) + " | cut -c1-40 | sort -u");
  ASSERT_EQ(perf.status, 0) << perf.err;
  std::string listed;
  const auto* rows = summary.getArray("binaries");
  ASSERT_NE(rows, nullptr);
  std::vector<std::string> ids;
  for (const auto& row : *rows) {
    const auto* o = row.getAsObject();
    ASSERT_NE(o, nullptr);
    EXPECT_TRUE(o->getString("missing").has_value());
    ids.push_back(o->getString("build_id")->str());
  }
  std::sort(ids.begin(), ids.end());
  for (const auto& id : ids) listed += id + "\n";
  EXPECT_EQ(listed, perf.out);
  EXPECT_EQ(int_of(summary, "missing"), static_cast<int64_t>(ids.size()));
  EXPECT_GE(ids.size(), 10U);
  r = sh("tar --zstd -tf " + quote(dir + "/b.tar.zst"));
  EXPECT_EQ(r.out, "perf.data\n");
  r = sh("tar --zstd -xOf " + quote(dir + "/b.tar.zst") + " perf.data | cmp - " + quote(in));
  EXPECT_EQ(r.status, 0) << r.out;
  fs::remove_all(dir);
}

// Nothing in `dir` but what the test put there: no output, no temporary.
void expect_only(const std::string& dir, const std::vector<std::string>& names) {
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) found.push_back(e.path().filename());
  std::sort(found.begin(), found.end());
  std::vector<std::string> want = names;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(found, want);
}

TEST(ArchiveInput, UnreadableRecordingLeavesNoBundle) {
  const std::string dir = temp_dir();
  std::ofstream(dir + "/junk.data") << "this is not a perf.data file, not at all\n";
  for (const std::string& in : {dir + "/junk.data", dir + "/absent.data"}) {
    RunResult r = sh(pdfix() + " archive " + quote(in) + " " + quote(dir + "/b.tar.zst"));
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("pdfix: "), std::string::npos) << r.err;
    expect_only(dir, {"junk.data"});
  }
  fs::remove_all(dir);
}

TEST(UnpackInput, WhatIsNotABundleIsRefused) {
  const std::string dir = temp_dir();
  const std::string in = foreign("quipper/perf.data.callgraph-3.4");
  std::ofstream(dir + "/empty.tar");
  // A tar without perf.data.
  sh("cd " + quote(dir) +
     " && mkdir -p .debug && echo x > .debug/f && tar -cf other.tar .debug && rm -r .debug");
  for (const std::string& bundle : {in, dir + "/empty.tar", dir + "/other.tar"}) {
    RunResult r = sh(pdfix() + " unpack " + quote(bundle) + " " + quote(dir + "/u"));
    EXPECT_EQ(r.status, 2) << bundle;
    EXPECT_NE(r.err.find("not a pdfix bundle"), std::string::npos) << r.err;
    expect_only(dir, {"empty.tar", "other.tar"});
  }
  // A directory with something in it is not overwritten.
  fs::create_directories(dir + "/full");
  std::ofstream(dir + "/full/keep") << "mine";
  sh("cd " + quote(dir) + " && cp " + quote(in) +
     " perf.data && tar -cf ok.tar perf.data && rm perf.data");
  RunResult r = sh(pdfix() + " unpack " + quote(dir + "/ok.tar") + " " + quote(dir + "/full"));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("not an empty directory"), std::string::npos) << r.err;
  expect_only(dir + "/full", {"keep"});
  // An empty one is filled.
  fs::create_directories(dir + "/empty");
  r = sh(pdfix() + " unpack " + quote(dir + "/ok.tar") + " " + quote(dir + "/empty"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_file(dir + "/empty/perf.data", in));
  // A DIR whose parent is reached through a symbolic link (libarchive's guard must not mind).
  fs::create_symlink(dir + "/empty", dir + "/via");
  r = sh(pdfix() + " unpack " + quote(dir + "/ok.tar") + " " + quote(dir + "/via/new"));
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(same_file(dir + "/empty/new/perf.data", in));
  fs::remove_all(dir);
}

// Hostile tars, made with Python's tarfile: every entry that would land outside DIR is refused
// and nothing is written, there or anywhere.
TEST(UnpackInput, NeverWritesOutsideDir) {
  const std::string dir = temp_dir();
  const std::string make = R"PY(
import io, sys, tarfile
out, case = sys.argv[1], sys.argv[2]
def add(t, name, data=b"x", kind=tarfile.REGTYPE, link=""):
    i = tarfile.TarInfo(name); i.type = kind; i.linkname = link; i.size = len(data) if kind == tarfile.REGTYPE else 0
    t.addfile(i, io.BytesIO(data) if kind == tarfile.REGTYPE else None)
with tarfile.open(out, "w") as t:
    add(t, "perf.data")
    if case == "dotdot": add(t, ".debug/../../escaped")
    if case == "absolute": add(t, sys.argv[3] + "/escaped")
    if case == "link-out":
        add(t, ".debug/l", kind=tarfile.SYMTYPE, link="../../..")
    if case == "abs-link":
        add(t, ".debug/l", kind=tarfile.SYMTYPE, link=sys.argv[3])
    if case == "through-link":
        add(t, ".debug/d", kind=tarfile.SYMTYPE, link=".")
        add(t, ".debug/d/f")
    if case == "hardlink": add(t, ".debug/h", kind=tarfile.LNKTYPE, link="/etc/passwd")
    if case == "device": add(t, ".debug/dev", kind=tarfile.CHRTYPE)
    if case == "other-top": add(t, "elsewhere/file")
)PY";
  std::ofstream(dir + "/make.py") << make;
  fs::create_directories(dir + "/outside");
  for (const std::string c : {"dotdot", "absolute", "link-out", "abs-link", "hardlink", "device",
                              "other-top", "through-link"}) {
    const std::string bundle = dir + "/" + c + ".tar";
    RunResult r = sh("python3 " + quote(dir + "/make.py") + " " + quote(bundle) + " " + c + " " +
                     quote(dir + "/outside"));
    ASSERT_EQ(r.status, 0) << r.err;
    r = sh(pdfix() + " unpack " + quote(bundle) + " " + quote(dir + "/in/u"));
    EXPECT_EQ(r.status, 2) << c << ": " << r.err;
    // libarchive's own guard refuses writing through a link that stays inside.
    EXPECT_NE(r.err.find(c == "through-link" ? "cannot unpack" : "not a pdfix bundle"),
              std::string::npos)
        << c << ": " << r.err;
    EXPECT_FALSE(fs::exists(dir + "/in/u")) << c;
    EXPECT_TRUE(fs::is_empty(dir + "/outside")) << c;
    EXPECT_FALSE(fs::exists(dir + "/escaped")) << c;
    if (fs::exists(dir + "/in")) expect_only(dir + "/in", {});
  }
  fs::remove_all(dir);
}

// Each row's outcome, and the set of them.
std::set<std::string> outcomes(const llvm::json::Object& result) {
  std::set<std::string> out;
  if (const auto* rows = result.getArray("binaries")) {
    for (const auto& row : *rows) out.insert(row.getAsObject()->getString("outcome")->str());
  }
  return out;
}

// A server on 127.0.0.1 that answers every request with `code`, stopped with the test. Its port is
// awaited up to 30 s: the sanitizer tests run beside the mutants at the lowest priority.
class StubServer {
 public:
  explicit StubServer(int code) {
    RunResult r =
        sh("python3 -c '\n"
           "import http.server, sys\n"
           "class H(http.server.BaseHTTPRequestHandler):\n"
           "    def do_GET(self):\n"
           "        self.send_response(" +
           std::to_string(code) +
           "); self.end_headers()\n"
           "    def log_message(self, *a): pass\n"
           "s = http.server.HTTPServer((\"127.0.0.1\", 0), H)\n"
           "print(s.server_address[1], flush=True)\n"
           "s.serve_forever()' > " +
           quote(port_file_) + " 2>&1 & echo $!; for i in $(seq 600); do [ -s " +
           quote(port_file_) + " ] && exit 0; sleep 0.05; done; exit 1");
    EXPECT_EQ(r.status, 0) << r.err;
    pid_ = r.out.substr(0, r.out.find('\n'));
    std::ifstream f(port_file_);
    std::string port;
    f >> port;
    url = "http://127.0.0.1:" + port;
  }
  ~StubServer() {
    sh("kill " + pid_);
    fs::remove(port_file_);
  }
  StubServer(const StubServer&) = delete;
  StubServer& operator=(const StubServer&) = delete;
  std::string url;

 private:
  std::string port_file_ = temp_dir() + "/port";
  std::string pid_;
};

// What fetch says and its exit status tell "the servers do not have it" from "no server could be
// asked" (refused, HTTP 5xx) and from "libdebuginfod remembered a miss and asked nobody".
TEST(FetchInput, ServersThatAreDownOrAbsent) {
  const std::string dir = temp_dir();
  const std::string in = foreign("quipper/perf.data.callgraph-3.4");
  const std::string cache = quote(dir + "/c");
  // No server at all is a usage error.
  RunResult r =
      sh("env -u DEBUGINFOD_URLS " + pdfix() + " fetch --buildid-dir " + cache + " " + quote(in));
  EXPECT_EQ(r.status, 2);
  EXPECT_NE(r.err.find("DEBUGINFOD_URLS"), std::string::npos) << r.err;
  auto fetch = [&](const std::string& client, const std::string& urls, const std::string& flags) {
    return sh("DEBUGINFOD_CACHE_PATH=" + quote(dir + "/" + client) + " " + pdfix() + " fetch " +
              flags + " --buildid-dir " + cache + " --debuginfod " + quote(urls) + " " + quote(in));
  };
  // Nothing listens: no server could be asked, which is no fetch done.
  r = fetch("refused", "http://127.0.0.1:9", "--json");
  EXPECT_EQ(r.status, 2) << r.err;
  auto result = parse_object(r.out);
  EXPECT_GE(result.getArray("binaries")->size(), 10U);
  EXPECT_EQ(outcomes(result), std::set<std::string>{"unreachable"}) << r.out;
  r = fetch("refused", "http://127.0.0.1:9", "");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_NE(r.err.find("0 missing, "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("no server could be asked"), std::string::npos) << r.err;
  {
    // A server in trouble (HTTP 503): libdebuginfod says "not found", but it was not asked.
    StubServer down(503);
    r = fetch("503", down.url, "--json");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_EQ(outcomes(parse_object(r.out)), std::set<std::string>{"unreachable"}) << r.out;
    EXPECT_NE(r.out.find("HTTP 503"), std::string::npos) << r.out;
  }
  {
    // A server that answers that it has none: done, and every id is missing; --strict says so in
    // the status.
    StubServer empty(404);
    r = fetch("404", empty.url, "--json");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(outcomes(parse_object(r.out)), std::set<std::string>{"missing"}) << r.out;
    r = fetch("404-strict", empty.url, "--strict");
    EXPECT_EQ(r.status, 3) << r.err;
    // A server down now and a server that answers: the answer counts.
    r = fetch("both", "http://127.0.0.1:9 " + empty.url, "--json");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(outcomes(parse_object(r.out)), std::set<std::string>{"missing"}) << r.out;
  }
  // The 404 server gone, libdebuginfod answers from its memory of the misses: nobody was asked,
  // and the summary says so.
  r = fetch("404", "http://127.0.0.1:9", "");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("remembers an earlier miss in its client cache; no server was asked"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(dir + "/c/.build-id"));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace pdfix::e2e
