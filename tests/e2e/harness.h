// Running the built pdfix and the machine's perf from tests.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

// Declared only: llvm/Support/JSON.h is a second of parsing, paid by the units that use it.
namespace llvm::json {
class Object;
}  // namespace llvm::json

namespace pdfix::e2e {

struct RunResult {
  int status = -1;  // exit status, or -1 if killed by a signal
  std::string out;
  std::string err;
};

// Runs a shell command line (bash -o pipefail -c: a pipeline fails when any command in it fails),
// capturing stdout and stderr, without the caller's DEBUGINFOD_URLS.
RunResult sh(const std::string& command);
std::string quote(const std::string& s);
std::string pdfix();  // the binary under test, quoted
// Where the build and the tree are (paths.cc, the one unit compiled with them: a path in a unit's
// flags makes ccache miss it in every copy of the tree at another path, as the mutants' are).
std::string pdfix_binary();        // the binary under test
std::string source_dir();          // the tree's root
std::string corpus_dir();          // corpora/
std::string foreign_corpus_dir();  // ../shared/corpora/foreign

struct Bounded {
  int status = -1;
  uint64_t max_rss_kib = 0;  // the largest of any process it ran
  std::string out;
  std::string err;
};
// Runs `command` under a 60-second limit; GNU time gives the peak RSS of everything it ran.
Bounded bounded(const std::string& command);

// Whether perf_event_open works here (root, paranoid setting, container).
bool perf_can_record();
// What perf record said when it refused (empty when it records).
std::string perf_refusal();
// PDFIX_REQUIRE_PERF=1 (scripts/test.sh, CI): a test that needs perf must not skip.
bool perf_required();

// In a test or SetUp: skips, loudly, where perf cannot record; fails instead when perf is
// required, so that a green run there means the perf tests ran.
#define PDFIX_NEEDS_PERF_RECORD()                                                           \
  do {                                                                                      \
    if (!::pdfix::e2e::perf_can_record()) {                                                 \
      if (::pdfix::e2e::perf_required()) {                                                  \
        FAIL() << "perf_event_open is refused here, and PDFIX_REQUIRE_PERF=1 requires it: " \
               << ::pdfix::e2e::perf_refusal();                                             \
      }                                                                                     \
      GTEST_SKIP() << "*** perf_event_open is refused here: SKIPPED ***";                   \
    }                                                                                       \
  } while (false)
// perf report --stats's aggregated counts by record name; empty if perf cannot read the file.
std::map<std::string, uint64_t> perf_stats(const std::string& path);
// hotspot-perfparser --print-stats (Debian's hotspot: a reader written apart from perf and
// pdfix): its "samples" and "mmaps" counts; empty if it is not installed or reads nothing.
std::map<std::string, uint64_t> hotspot_stats(const std::string& path);
// Where hotspot-perfparser is; empty when hotspot is not installed.
std::string hotspot_perfparser();
// pdfix info --json's record_counts.
std::map<std::string, uint64_t> pdfix_counts(const std::string& path);

// Every perf.data of ../shared/corpora/foreign (and corpora/), relative names and full paths.
struct CorpusFile {
  std::string name;
  std::string path;
  bool must_be_refused;  // invalid_perf.data, the corrupted pipe file
  // Whether the machine's perf 6.1 reads it: not the perf 6.16 recordings (an attr size it does
  // not know), nor a pipe of Intel PT data (CorpusCoverage checks this list against perf).
  bool perf_reads;
  // Whether Debian's hotspot-perfparser 1.3 reads it whole: not zstd data (built without zstd),
  // nor Intel PT (it misframes the AUXTRACE payload). CorpusCoverage checks this list too.
  bool hotspot_reads;
};
std::vector<CorpusFile> corpus_files();
// The files pdfix reads, and of those the ones perf reads too: the parameters of the tests that
// compare with perf, so that none of them has a file to skip.
std::vector<CorpusFile> accepted_corpus_files();
std::vector<CorpusFile> perf_read_corpus_files();
std::vector<CorpusFile> hotspot_read_corpus_files();
inline void PrintTo(const CorpusFile& f, std::ostream* os) { *os << f.name; }
// A GoogleTest-safe name for a parameterized test over corpus files.
std::string corpus_test_name(const CorpusFile& f);

// A new directory for the running test, removed when the test ends (remove_test_dir's rule).
std::string temp_dir();
// Removes a test's temp_dir(), but keeps it (and says where) when the test failed and
// PDFIX_E2E_KEEP is set: what a failure under load left is there to read.
void remove_test_dir(const std::string& dir);
// A program (`app`) and its shared library (`libwork.so`) in `where`, each with its own build-id;
// another `variant` changes the code of both, so both ids. The program's hot function is named
// spin_v<variant>, so reports tell the versions apart.
void build_app(const std::string& where, const std::string& variant);
// A Go program at `path` (Debian's golang-go: no GNU build-id) whose hot function, a recursive
// fib of its argument (default 32), is main.fib_v<variant>.
void build_go_fib(const std::string& path, const std::string& variant);
bool same_file(const std::string& a, const std::string& b);
// The lines of `a` that `b` lacks ("- " each) and those of `b` that `a` lacks ("+ "), as sets of
// lines, at most `limit` of them: what a failure of EXPECT_EQ(a, b) over two reports shows.
std::string line_diff(const std::string& a, const std::string& b, size_t limit = 40);
// The build-id a file's own notes give, by binutils' readelf; "" when it has none.
std::string own_id(const std::string& path);
// perf script's text split into its samples: each sample's lines, ending in a newline, the header
// first.
std::vector<std::string> script_samples(const std::string& text);
// Every record of `recording` as pdfix dump --json prints it, in file order.
std::vector<llvm::json::Object> records_of(const std::string& recording);
// `text` as one JSON object (a test failure, and an empty object, when it is not one).
llvm::json::Object parse_object(const std::string& text);
// `o`'s integer member `key` (a test failure, and -1, when there is none).
int64_t int_of(const llvm::json::Object& o, std::string_view key);
// A MMAP or MMAP2 record as pdfix dump --json prints it.
struct MapRecord {
  std::string filename;
  uint32_t pid = 0;
  std::string dev;  // "maj:min" in hex; empty when the record carries an id instead
  uint64_t ino = 0;
  std::string build_id;  // "" when it carries none
};
// Every map record of `recording`, in file order.
std::vector<MapRecord> maps_of(const std::string& recording);

// A root holding Debian sid's perf (7.2 today), made once (tests/e2e/perf_sid_root.sh) and kept in
// /var/tmp/pdfix-perf-sid/root: perf's newer reader, run by chroot. A test failure, and "", when it
// cannot be made.
std::string perf_sid_root();
// `command` run by sh in that root, with `dir` bound at /b (a test failure, and status 2, when
// there is no root).
RunResult in_sid_root(const std::string& dir, const std::string& command);
// The command that runs that perf in this host's mount namespace, by the root's own loader and
// libraries (perf 7 cannot record from a chroot); "" as above.
std::string perf_sid_command();

// Commands a test starts in the background, each in a session of its own, its stdout to DIR/LOG
// and its stderr to DIR/LOG.err. What still runs when it goes (a failed test's) is killed.
class Background {
 public:
  explicit Background(std::string dir) : dir_(std::move(dir)) {}
  ~Background();
  Background(const Background&) = delete;
  Background& operator=(const Background&) = delete;
  // Returns the command's pid.
  std::string start(const std::string& command, const std::string& log);

 private:
  std::string dir_;
  std::vector<std::string> pids_;
};

// elfutils' debuginfod on a free port of 127.0.0.1, serving what `sources` names ("-F DIR",
// "-Z .tar.zst=zstdcat DIR"), its database and log under `dir`; stopped by its pid, and waited
// for (a server still writing its WAL races the removal of `dir`), by stop() or when it goes.
class Debuginfod {
 public:
  Debuginfod(const std::string& dir, const std::string& sources);
  ~Debuginfod() { stop(); }
  Debuginfod(const Debuginfod&) = delete;
  Debuginfod& operator=(const Debuginfod&) = delete;
  const std::string& url() const { return url_; }
  // Whether it answers `kind` (executable, debuginfo) for `id` within a minute, asked by
  // debuginfod-find with a client cache of its own each time (the client remembers a miss); the
  // file it sent is left at `got`.
  bool serves(const std::string& kind, const std::string& id, const std::string& got) const;
  void stop();

 private:
  std::string dir_;
  std::string url_;
  std::string pid_;
};

}  // namespace pdfix::e2e
