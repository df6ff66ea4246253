// One run of `export` over a recording: the passes that prove its maps (and unwind its DWARF
// stacks) read into a profile, named and written whole. `export` runs it once; `follow --export`
// once per fixed chunk, keeping the symbolizer's binaries from chunk to chunk.
#pragma once

#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "profile/stacks.h"
#include "profile/symbolizer.h"
#include "resolve/host.h"
#include "resolve/id_memory.h"

// Declared only: llvm/Support/JSON.h is a second of parsing, paid by the units that use it.
namespace llvm::json {
class Object;
}  // namespace llvm::json

namespace pdfix::cli {

struct ExportArgs {
  std::string in;
  std::string out;
  std::string format = "pprof";  // pprof, otlp or folded
  std::string event;             // folded: the event written ("": the first)
  std::string sysroot;
  std::vector<std::string> search;
  std::string buildid_dir;  // "": $PERF_BUILDID_DIR or ~/.debug
  std::string kallsyms;     // the recording's kernel's, where no proven copy is here
  profile::Labels labels;
  bool no_symbols = false;
  bool strict = false;  // exit 3 when a sampled binary was not found or not read
  bool quiet = false;   // no progress bar
};

// The file name ending of each format's profiles.
std::string export_extension(const std::string& format);

// Exports a.in into a.out. `summary` gets the run's summary (samples, stacks, named locations,
// leaves by mapping), or `error` when it fails. For a run of several recordings (follow
// --export), `kept` holds the symbolizer from one to the next (made at the first), `ids` each
// file's build-id by its stamp. Returns the exit status: 0, 3 when IN holds no sample of a
// sampled event (or, a.strict, a sampled binary was not found or not read: the profile is
// written all the same), 2 when nothing was written.
int run_export(const ExportArgs& a, const resolve::Host& host, llvm::json::Object& summary,
               std::unique_ptr<profile::Symbolizer>* kept = nullptr,
               resolve::IdMemory* ids = nullptr);

// The summary for people: the totals, then each mapping whose leaves stayed unnamed, with why.
void say_export(const llvm::json::Object& s, std::ostream& out);

}  // namespace pdfix::cli
