#include "e2e/harness.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "llvm/Support/JSON.h"

namespace pdfix::e2e {
namespace fs = std::filesystem;

namespace {
std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}
}  // namespace

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

std::string pdfix() { return quote(pdfix_binary()); }

namespace {

// The directories temp_dir() made for the running test, removed when it ends: a test stopped by
// a failed ASSERT, or one that never calls remove_test_dir, leaves nothing behind (a machine that
// runs the suite all day filled its disk with them).
class TestDirs : public ::testing::EmptyTestEventListener {
 public:
  static TestDirs& of_this_run() {
    // GoogleTest owns its listeners and calls them until the program ends.
    static TestDirs* const dirs = [] {
      auto* d = new TestDirs;
      ::testing::UnitTest::GetInstance()->listeners().Append(d);
      return d;
    }();
    return *dirs;
  }
  void add(const std::string& dir) { dirs_.insert(dir); }
  void forget(const std::string& dir) { dirs_.erase(dir); }
  void OnTestEnd(const ::testing::TestInfo& /*info*/) override {
    const std::set<std::string> left = std::move(dirs_);
    dirs_.clear();
    for (const std::string& dir : left) remove_test_dir(dir);
  }

 private:
  std::set<std::string> dirs_;
};

}  // namespace

std::string temp_dir() {
  // Canonical, as the kernel writes paths into map records.
  std::string t = (fs::path(::testing::TempDir()) / "pdfix-e2e-XXXXXX").lexically_normal();
  if (mkdtemp(t.data()) == nullptr) ADD_FAILURE() << "mkdtemp";
  TestDirs::of_this_run().add(t);
  return t;
}

void remove_test_dir(const std::string& dir) {
  if (dir.empty()) return;
  TestDirs::of_this_run().forget(dir);
  if (std::getenv("PDFIX_E2E_KEEP") != nullptr && ::testing::Test::HasFailure()) {
    std::cerr << "PDFIX_E2E_KEEP: the failed test's files are kept in " << dir << "\n";
    return;
  }
  fs::remove_all(dir);
}

void build_app(const std::string& where, const std::string& variant) {
  fs::create_directories(where);
  std::ofstream(where + "/work.c") << "int work(int n) { volatile int s = " << variant
                                   << "; for (int i = 0; i < n; i++) s += i * i; return s; }\n";
  std::ofstream(where + "/main.c")
      << "int work(int);\n__attribute__((noinline)) int spin_v" << variant
      << "(int n) { volatile int s = 0; for (int i = 0; i < n; i++) s += i; return s; }\n"
      << "int main(void) { int s = spin_v" << variant
      << "(20000000); for (int k = 0; k < 300; k++) s += work(200000 + " << variant
      << "); return s == 42; }\n";
  RunResult r = sh("cd " + quote(where) +
                   " && gcc -O1 -fPIC -shared -Wl,--build-id=sha1 -o libwork.so work.c"
                   " && gcc -O1 -Wl,--build-id=sha1 -o app main.c -L. -lwork -Wl,-rpath," +
                   quote(where));
  EXPECT_EQ(r.status, 0) << r.err;
}

void build_go_fib(const std::string& path, const std::string& variant) {
  const std::string src = path + ".src";
  fs::create_directories(src);
  std::ofstream(src + "/fib.go") << "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\n"
                                 << "func fib_v" << variant << "(n int) int {\n\tif n < 2 {\n"
                                 << "\t\treturn n\n\t}\n\treturn fib_v" << variant
                                 << "(n-1) + fib_v" << variant << "(n-2)\n}\n\n"
                                 << "func main() {\n\tn := 32\n\tif len(os.Args) > 1 {\n"
                                 << "\t\tfmt.Sscan(os.Args[1], &n)\n\t}\n\tfmt.Println(fib_v"
                                 << variant << "(n))\n}\n";
  RunResult r =
      sh("cd " + quote(src) + " && HOME=" + quote(src) + " GOCACHE=" + quote(src + "/cache") +
         " GO111MODULE=off go build -o " + quote(path) + " fib.go");
  EXPECT_EQ(r.status, 0) << r.err;
  fs::remove_all(src);
}

std::string own_id(const std::string& path) {
  RunResult r = sh("readelf -n " + quote(path) + " | sed -n 's/.*Build ID: //p'");
  EXPECT_EQ(r.status, 0) << r.err;
  return r.out.substr(0, r.out.find('\n'));
}

std::vector<std::string> script_samples(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream lines(text + "\n");
  std::string block;
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) {
      block += line + "\n";
    } else if (!block.empty()) {
      out.push_back(std::move(block));
      block.clear();
    }
  }
  return out;
}

llvm::json::Object parse_object(const std::string& text) {
  auto v = llvm::json::parse(text);
  if (!v) {
    ADD_FAILURE() << llvm::toString(v.takeError()) << "\n" << text;
    return {};
  }
  if (auto* o = v->getAsObject()) return std::move(*o);
  ADD_FAILURE() << "not a JSON object: " << text;
  return {};
}

int64_t int_of(const llvm::json::Object& o, std::string_view key) {
  auto v = o.getInteger(llvm::StringRef(key));
  EXPECT_TRUE(v.has_value()) << key;
  return v.value_or(-1);
}

std::vector<llvm::json::Object> records_of(const std::string& recording) {
  RunResult r = sh(pdfix() + " dump --json " + quote(recording));
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<llvm::json::Object> out;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    auto v = llvm::json::parse(line);
    if (!v) {
      llvm::consumeError(v.takeError());
      continue;
    }
    if (llvm::json::Object* o = v->getAsObject()) out.push_back(std::move(*o));
  }
  return out;
}

std::vector<MapRecord> maps_of(const std::string& recording) {
  std::vector<MapRecord> maps;
  for (const llvm::json::Object& o : records_of(recording)) {
    const std::string type = o.getString("type").value_or("").str();
    if (type != "MMAP" && type != "MMAP2") continue;
    maps.push_back({o.getString("filename").value_or("").str(),
                    static_cast<uint32_t>(o.getInteger("pid").value_or(0)),
                    o.getString("dev").value_or("").str(),
                    static_cast<uint64_t>(o.getInteger("ino").value_or(0)),
                    o.getString("build_id").value_or("").str()});
  }
  return maps;
}

RunResult sh(const std::string& command) {
  const std::string dir = temp_dir();
  const std::string out = dir + "/out", err = dir + "/err";
  // Distributions set DEBUGINFOD_URLS (Debian's desktops do): a test asks only the 127.0.0.1
  // server it starts itself, naming it in its own command.
  const std::string line = "env -u DEBUGINFOD_URLS bash -o pipefail -c " + quote(command) + " >" +
                           out + " 2>" + err + " </dev/null";
  int raw = std::system(line.c_str());
  RunResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  fs::remove_all(dir);
  return r;
}

namespace {
// What the last probe of perf record printed, for the failure message.
std::string& probe_error() {
  static std::string error;
  return error;
}
}  // namespace

Bounded bounded(const std::string& command) {
  RunResult r = sh("/usr/bin/time -f 'maxrss=%M' timeout 60 bash -c " + quote(command));
  Bounded b{r.status, 0, r.out, r.err};
  const auto at = r.err.rfind("maxrss=");
  if (at != std::string::npos) b.max_rss_kib = std::stoull(r.err.substr(at + 7));
  return b;
}

bool perf_can_record() {
  // A refusal is for good (paranoid setting, no PMU, a container); a passing failure is not, so
  // one failed probe is tried again before perf is judged unusable.
  static const bool ok = [] {
    for (int attempt = 0; attempt < 3; ++attempt) {
      const std::string dir = temp_dir();
      // -B: whether perf_event_open is allowed, not perf's end of run. perf 6.1 aborts there
      // while another session records build-ids in its maps ("assertion failed at
      // util/build-id.c:1010", then "stack smashing detected": tests/CMakeLists.txt keeps such
      // tests apart), which is no refusal.
      RunResult r = sh("perf record -q -B -o " + dir + "/probe.data -- true");
      fs::remove_all(dir);
      if (r.status == 0) return true;
      probe_error() = r.err;
      sh("sleep 0.5");
    }
    return false;
  }();
  return ok;
}

std::string perf_refusal() { return probe_error(); }

bool perf_required() {
  const char* v = std::getenv("PDFIX_REQUIRE_PERF");
  return v != nullptr && std::string(v) == "1";
}

std::map<std::string, uint64_t> perf_stats(const std::string& path) {
  std::map<std::string, uint64_t> counts;
  RunResult r = sh("perf report --stats -i " + quote(path));
  if (r.status != 0) return counts;
  // Only the "Aggregated stats" block: per-event blocks follow it and repeat SAMPLE.
  std::istringstream lines(r.out);
  std::string line;
  bool in_block = false;
  static const std::regex row(R"(^\s*(\w+) events:\s+(\d+))");
  while (std::getline(lines, line)) {
    if (line.find("Aggregated stats") != std::string::npos) {
      in_block = true;
      continue;
    }
    if (in_block && line.find(" stats:") != std::string::npos) break;
    std::smatch m;
    if (in_block && std::regex_search(line, m, row)) counts[m[1]] = std::stoull(m[2]);
  }
  return counts;
}

std::map<std::string, uint64_t> pdfix_counts(const std::string& path) {
  std::map<std::string, uint64_t> counts;
  RunResult r = sh(pdfix() + " info --json " + quote(path));
  EXPECT_EQ(r.status, 0) << r.err;
  // "record_counts": { "NAME": n, ... } — a flat object of integers.
  auto start = r.out.find("\"record_counts\"");
  if (start == std::string::npos) return counts;
  auto end = r.out.find('}', start);
  static const std::regex entry(R"xx("(\w+)":\s*(\d+))xx");
  std::string block = r.out.substr(start, end - start);
  for (std::sregex_iterator it(block.begin(), block.end(), entry), e; it != e; ++it) {
    counts[(*it)[1]] = std::stoull((*it)[2]);
  }
  return counts;
}

std::vector<CorpusFile> corpus_files() {
  std::vector<CorpusFile> files;
  for (const std::string& root : {foreign_corpus_dir(), corpus_dir()}) {
    if (!fs::exists(root)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root)) {
      const std::string name = e.path().filename();
      // A JIT recording kept beside its dump (jit/): fix exits 3 on it without --jit-dir.
      if (!e.is_regular_file() ||
          (name.find(".data") == std::string::npos && name.find("perf.data") != 0) ||
          e.path().parent_path().filename() == "jit") {
        continue;
      }
      const bool refused =
          name == "invalid_perf.data" || name.find("corrupted") != std::string::npos;
      const std::string rel = fs::relative(e.path(), fs::path(root).parent_path()).string();
      const bool perf_reads = !refused && !rel.starts_with("foreign/linux-perf-data/sleep") &&
                              name != "perf.data.piped.intel_pt-4.14";
      const bool zstd =
          name.find("zstd") != std::string::npos || name.find("compressed") != std::string::npos;
      const bool hotspot_reads = !refused && !zstd && name.find("intel_pt") == std::string::npos;
      files.push_back({rel, e.path().string(), refused, perf_reads, hotspot_reads});
    }
  }
  std::sort(files.begin(), files.end(), [](auto& a, auto& b) { return a.name < b.name; });
  return files;
}

std::vector<CorpusFile> accepted_corpus_files() {
  std::vector<CorpusFile> files = corpus_files();
  std::erase_if(files, [](const CorpusFile& f) { return f.must_be_refused; });
  return files;
}

std::vector<CorpusFile> perf_read_corpus_files() {
  std::vector<CorpusFile> files = corpus_files();
  std::erase_if(files, [](const CorpusFile& f) { return !f.perf_reads; });
  return files;
}

std::vector<CorpusFile> hotspot_read_corpus_files() {
  std::vector<CorpusFile> files = corpus_files();
  std::erase_if(files, [](const CorpusFile& f) { return !f.hotspot_reads; });
  return files;
}

std::string hotspot_perfparser() {
  return sh("ls /usr/lib/*/libexec/hotspot-perfparser 2>/dev/null | head -1 | tr -d '\\n'").out;
}

std::map<std::string, uint64_t> hotspot_stats(const std::string& path) {
  std::map<std::string, uint64_t> counts;
  const std::string parser = hotspot_perfparser();
  if (parser.empty()) return counts;
  RunResult r = sh(quote(parser) + " --print-stats --input " + quote(path) + " 2>/dev/null");
  static const std::regex row(R"(^(samples|mmaps): (\d+)$)");
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    std::smatch m;
    if (std::regex_match(line, m, row)) counts[m[1]] = std::stoull(m[2]);
  }
  if (counts["samples"] == 0 && counts["mmaps"] == 0) counts.clear();
  return counts;
}

std::string corpus_test_name(const CorpusFile& f) {
  std::string n = f.name;
  for (char& c : n) {
    if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return n;
}

std::string line_diff(const std::string& a, const std::string& b, size_t limit) {
  const auto lines = [](const std::string& text) {
    std::multiset<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) out.insert(line);
    return out;
  };
  const std::multiset<std::string> left = lines(a), right = lines(b);
  std::vector<std::string> only_left, only_right;
  std::set_difference(left.begin(), left.end(), right.begin(), right.end(),
                      std::back_inserter(only_left));
  std::set_difference(right.begin(), right.end(), left.begin(), left.end(),
                      std::back_inserter(only_right));
  std::string out = absl::StrCat(only_left.size(), " line(s) only in the first, ",
                                 only_right.size(), " only in the second\n");
  size_t shown = 0;
  for (const auto& [sign, side] : {std::pair{"- ", &only_left}, std::pair{"+ ", &only_right}}) {
    for (const std::string& line : *side) {
      if (shown++ == limit) return out + "...\n";
      absl::StrAppend(&out, sign, line, "\n");
    }
  }
  return out;
}

bool same_file(const std::string& a, const std::string& b) {
  return fs::exists(a) && fs::exists(b) && slurp(a) == slurp(b);
}

std::string perf_sid_root() {
  const std::string dir = "/var/tmp/pdfix-perf-sid";
  RunResult r = sh("sh " + quote(source_dir() + "/tests/e2e/perf_sid_root.sh") + " " + quote(dir));
  EXPECT_EQ(r.status, 0) << "cannot make a root with Debian sid's perf: " << r.err;
  return r.status == 0 ? dir + "/root" : "";
}

RunResult in_sid_root(const std::string& dir, const std::string& command) {
  const std::string root = perf_sid_root();
  if (root.empty()) return {2, "", "no root with Debian sid's perf"};
  return sh("unshare -m sh -c " + quote("mount --bind " + quote(dir) + " " + quote(root + "/b") +
                                        " && chroot " + quote(root) + " sh -c " + quote(command)));
}

std::string perf_sid_command() {
  const std::string root = perf_sid_root();
  return root.empty() ? "" : fs::path(root).parent_path().string() + "/perf";
}

Background::~Background() {
  // Each runs in a session of its own (setsid): its group goes too, what its shell started with
  // it (a pdfix under a test's `sh -c`).
  for (const std::string& pid : pids_) sh("kill -KILL -- -" + pid + " " + pid + " 2>/dev/null");
}

std::string Background::start(const std::string& command, const std::string& log) {
  RunResult r = sh("setsid " + command + " >" + quote(dir_ + "/" + log) + " 2>" +
                   quote(dir_ + "/" + log + ".err") + " & echo $!");
  EXPECT_EQ(r.status, 0) << r.err;
  pids_.push_back(r.out.substr(0, r.out.find('\n')));
  return pids_.back();
}

Debuginfod::Debuginfod(const std::string& dir, const std::string& sources) : dir_(dir) {
  RunResult port =
      sh("python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\", 0)); "
         "print(s.getsockname()[1])'");
  EXPECT_EQ(port.status, 0) << port.err;
  const std::string number = port.out.substr(0, port.out.find('\n'));
  url_ = "http://127.0.0.1:" + number;
  RunResult server = sh("debuginfod -d " + quote(dir + "/db.sqlite") + " -p " + number + " " +
                        sources + " > " + quote(dir + "/server.log") + " 2>&1 & echo $!");
  EXPECT_EQ(server.status, 0) << server.err;
  pid_ = server.out.substr(0, server.out.find('\n'));
}

bool Debuginfod::serves(const std::string& kind, const std::string& id,
                        const std::string& got) const {
  const std::string probe = quote(dir_ + "/probe");
  return sh("for i in $(seq 120); do rm -rf " + probe + "; f=$(DEBUGINFOD_CACHE_PATH=" + probe +
            " DEBUGINFOD_URLS=" + url_ + " debuginfod-find " + kind + " " + id +
            " 2>/dev/null) && cp \"$f\" " + quote(got) + " && exit 0; sleep 0.5; done; exit 1")
             .status == 0;
}

void Debuginfod::stop() {
  if (pid_.empty()) return;
  sh("kill " + pid_ + "; for i in $(seq 100); do kill -0 " + pid_ +
     " 2>/dev/null || exit 0; sleep 0.1; done");
  pid_.clear();
}

}  // namespace pdfix::e2e
