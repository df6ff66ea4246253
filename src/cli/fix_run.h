// One run of `fix` (or of one repair verb) over a recording: the passes in one read, then keeping
// the binaries OUT names (--archive, --store). `fix` runs it once; `follow` once per chunk, with
// the same options, so that a chunk is fixed exactly as `pdfix fix` would fix it.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "cli/verb.h"
#include "io/input.h"
#include "llvm/Support/JSON.h"
#include "passes/repair.h"
#include "resolve/host.h"
#include "resolve/id_memory.h"
#include "store/bundle_chain.h"
#include "store/find_memory.h"

namespace pdfix::cli {

// What a repair verb is given on its command line besides the passes' own options.
struct FixArgs {
  std::string in;
  std::string out;
  std::string sysroot;
  std::vector<std::string> search;
  bool json = false;
  bool verbose = false;
  bool quiet = false;
  bool strict = false;     // --archive/--store only
  bool no_debug = false;   // --archive/--store only
  bool with_code = false;  // --archive only
  bool slim = false;       // --store only
  OutputArgs output;
  // fix only: keep the binaries OUT names.
  std::string archive;
  bool store = false;
};

// --sysroot, --search, --json, -v, -q and the output options (IN and OUT are the verb's own).
void add_fix_common(CLI::App& cmd, FixArgs& a);

// fix's options beyond add_fix_common: --archive or --store and what goes with them, each
// optional pass's switch, and every pass's own options. `chosen` then gives the passes asked for.
struct FixOptions {
  FixArgs args;
  CLI::Option* archive = nullptr;
  std::map<passes::RepairKind*, bool> asked;    // by --unwind and its kind
  std::map<passes::RepairKind*, bool> skipped;  // by --no-jit and its kind
  std::vector<passes::RepairKind*> kinds;
  std::vector<passes::RepairKind*> chosen() const;
};
std::shared_ptr<FixOptions> add_fix_options(CLI::App& cmd,
                                            const std::vector<passes::RepairKind*>& kinds);

// What a run of fix found wrong with its options before reading anything; OK when none.
absl::Status check_fix_args(const FixArgs& a);

// What a run of several recordings (follow, fix IN... OUTDIR) keeps from one to the next.
struct RunMemory {
  store::FindMemory found;  // each binary's copy and debug file
  resolve::IdMemory ids;    // each file's build-id, by its stamp
  io::ChunkPool chunks;     // the read buffers, made once for all recordings
  // The chain of bundles --archive adds to (follow --archive); null: each bundle holds all.
  store::BundleChain* bundles = nullptr;
};

// Runs `kinds` over a.in into a.out and keeps what OUT names when asked. The reports go to `json`
// when given (an object with a member per pass, or the one pass's report when `single`), else as
// text to stderr (not with -q). `memory`, when given, is what the run's earlier recordings
// found. Returns the exit status.
int run_fix(const std::string& verb, const std::vector<passes::RepairKind*>& kinds,
            const FixArgs& a, const resolve::Host& host, llvm::json::Object* json, bool single,
            RunMemory* memory = nullptr);

// For a process that fixes one recording after another (follow, fix IN... OUTDIR): what one
// recording's passes free is kept for the next instead of going back to the kernel, which would
// fault it in again, zeroed, page by page (a tenth of a chunk's time in follow). The heap then
// stays at the largest recording's need, which the look-ahead bound caps.
void keep_freed_memory_between_recordings();

}  // namespace pdfix::cli
