// The keep step: what a bundle or a build-id cache gets of one recording, from its listing (what
// it names, resolve::RecordedDsos) and the run's resolver: every binary it names found and proven
// (find_binaries), kept (archive_recording or store_binaries), a bundle added to the run's chain,
// and the verdict on what samples hit (judge). archive, store, fix --archive/--store and follow
// (through fix) all take it; they parse flags and say what it returns.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "io/input.h"
#include "resolve/host.h"
#include "resolve/recorded_dsos.h"
#include "resolve/resolver.h"
#include "store/binaries.h"
#include "store/bundle_chain.h"
#include "store/find_memory.h"
#include "store/keep_binaries.h"
#include "store/keep_verdict.h"

namespace pdfix::store {

struct KeepRequest {
  const resolve::RecordedDsos* dsos = nullptr;  // what the recording names
  resolve::RecordingFacts facts;                // what the run's resolver takes of it
  resolve::Resolver* resolver = nullptr;        // the run's
  // Into a bundle at `bundle` ("-": stdout) that holds `recording` (a mapped file or a directory
  // recording), or else into the build-id cache at `cache`.
  const io::Input* recording = nullptr;
  std::string bundle;
  std::string cache;
  std::vector<std::string> more_caches;  // caches a pass of this run wrote into, looked in too
  bool debug_files = true;               // each binary's separate debug file too
  bool slim = false;                     // slim copies (store/slim_elf.h), no code
  int zstd_level = 3;                    // a bundle's
  KeepProgress progress;
  FindMemory* memory = nullptr;  // what earlier recordings of the run found; null: none
  // The run's chain of bundles: a bundle holds only what its earlier ones do not, and joins the
  // chain once complete. Null: the bundle holds everything.
  BundleChain* chain = nullptr;
};

struct KeepOutcome {
  Named named;  // what was found, each binary's copy or why it has none
  Kept kept;
  // Whether slim copies kept their unwind tables: a cache serves any recording, a bundle only the
  // one it holds, which needs them only with user stack copies to unwind.
  bool unwind_tables = true;
  // Points into `named`.
  Verdict verdict() const { return judge(named); }
};

// Keeps what `r.dsos` names. A bundle is never written over the recording it holds.
absl::StatusOr<KeepOutcome> keep_recording(const KeepRequest& r, const resolve::Host& host);

}  // namespace pdfix::store
