// Running the built pdfix and the machine's perf from tests.
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace pdfix::e2e {

struct RunResult {
  int status = -1;  // exit status, or -1 if killed by a signal
  std::string out;
  std::string err;
};

// Runs a shell command line (bash -c), capturing stdout and stderr.
RunResult sh(const std::string& command);
std::string quote(const std::string& s);
std::string pdfix();  // the binary under test, quoted

// Whether perf_event_open works here (root, paranoid setting, container).
bool perf_can_record();
// perf report --stats's aggregated counts by record name; empty if perf cannot read the file.
std::map<std::string, uint64_t> perf_stats(const std::string& path);
// pdfix info --json's record_counts.
std::map<std::string, uint64_t> pdfix_counts(const std::string& path);

// Every perf.data of ../shared/corpora/foreign (and corpora/), relative names and full paths.
struct CorpusFile {
  std::string name;
  std::string path;
  bool must_be_refused;  // invalid_perf.data, the corrupted pipe file
};
std::vector<CorpusFile> corpus_files();
inline void PrintTo(const CorpusFile& f, std::ostream* os) { *os << f.name; }
// A GoogleTest-safe name for a parameterized test over corpus files.
std::string corpus_test_name(const CorpusFile& f);

std::string temp_dir();
// A program (`app`) and its shared library (`libwork.so`) in `where`, each with its own build-id;
// another `variant` changes the code of both, so both ids. The program's hot function is named
// spin_v<variant>, so reports tell the versions apart.
void build_app(const std::string& where, const std::string& variant);
bool same_file(const std::string& a, const std::string& b);

}  // namespace pdfix::e2e
