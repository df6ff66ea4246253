// What `archive`, `store` and `fix --archive/--store` share on the command line: their flags, the
// recording's listing and the run's resolver handed to the keep step (store/keep_step.h), and
// saying what it kept and what is missing.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "passes/repair.h"
#include "resolve/host.h"
#include "resolve/recorded_dsos.h"
#include "store/bundle_chain.h"
#include "store/find_memory.h"

// Declared only: llvm/Support/JSON.h is a second of parsing, paid by the units that use it.
namespace llvm::json {
class Object;
}  // namespace llvm::json

namespace pdfix::cli {

struct KeepArgs {
  std::string sysroot;
  std::vector<std::string> search;  // --search roots: more places to find a named binary
  bool hits_only = false;
  bool verbose = false;
  bool quiet = false;
  // A binary that samples hit and the bundle or cache cannot resolve makes the exit status 3.
  bool strict = false;
  bool no_debug = false;  // leave out the binaries' separate debug files
  // A bundle holds slim copies unless `with_code`; a cache whole files unless `slim`.
  bool with_code = false;
  bool slim = false;
  int zstd_level = 3;
  // Build-id caches the run's passes wrote files into, looked in besides perf's.
  std::vector<std::string> more_caches;
};

// --hits, --strict, -q, --search (and, with `bundle_options`, --bundle-zstd-level).
void add_keep_options(CLI::App& cmd, KeepArgs& args, bool bundle_options);

// Where a kept binary went: a bundle or a build-id cache.
struct KeepTarget {
  std::string bundle;  // non-empty: archive into this bundle
  std::string cache;   // else: store into this cache
};

// What a run that wrote the recording already has: `fix --archive` and `--store` keep what the
// recording they wrote names without reading it again.
struct KeepRun {
  // The run's settings and resolver, whose resolver inject used; null: one made from the
  // recording and `args` as for any run (common_for).
  const passes::Common* common = nullptr;
  // What the recording names, listed as it was written (inspect/listing_tap.h); null: the
  // recording is read to list it.
  const resolve::RecordedDsos* listing = nullptr;
  // What the run found for the recordings before (follow's chunks); null: a run of one.
  store::FindMemory* memory = nullptr;
  // The run's chain of bundles (follow --archive): a bundle holds only what its earlier ones do
  // not, and is added to the chain once complete. Null: a bundle holds everything.
  store::BundleChain* chain = nullptr;
};

// Keeps `recording`'s binaries, found and proven by the run's resolver (store::keep_recording).
// The summary goes to stderr as text (not with `quiet`), or, when
// `json` is given, into it as an object. Returns the exit status: 3 when samples hit binaries that
// will not resolve and `strict` is set, or when the recording names no binary by build-id at all.
int keep(const std::string& recording, const KeepTarget& target, const KeepArgs& args,
         const resolve::Host& host, const KeepRun& run, llvm::json::Object* json);

// What `keep` and `fetch` say of the exit status beyond 0 and 2.
extern const char* const kStrictExit;

// --no-debug, for archive, store and fix.
void add_no_debug_flag(CLI::App& cmd, bool& no_debug);

// --with-code, for a bundle (archive, fix --archive), and --slim, for a cache (store, fix --store).
CLI::Option* add_with_code_flag(CLI::App& cmd, bool& with_code);
CLI::Option* add_slim_flag(CLI::App& cmd, bool& slim);

// What a slim copy cannot do, said where one is made or unpacked.
extern const char* const kSlimAnnotate;

// The cache `store` and `fetch` fill by default: perf's ($PERF_BUILDID_DIR, else ~/.debug).
std::string default_cache(const resolve::Host& host);

}  // namespace pdfix::cli
