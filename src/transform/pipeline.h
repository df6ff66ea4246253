// Runs an ordered chain of passes over a recording and writes the result. With no passes it is a
// copy that is byte-identical to the input.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "io/input.h"
#include "transform/pass.h"
#include "transform/tap.h"

namespace pdfix::transform {

struct PipelineOptions {
  // Called now and then with bytes done and bytes in all (0 when unknown, as on a pipe).
  std::function<void(uint64_t done, uint64_t total)> progress;
  // A directory recording (perf record --threads) is written as one perf.data, not a directory.
  bool single_file = false;
  // The zstd level of data compressed anew; 0: Writer::kDefaultZstdLevel.
  int zstd_level = 0;
  // Shown what is written (transform/tap.h); null: none.
  RecordTap* tap = nullptr;
};

// Makes a fresh chain of passes, each time it is called.
using MakeChain = std::function<PassChain()>;

// Reads `in`, runs the passes `make_chain` gives in order, writes `out_path` ("-" for stdout). The
// output appears only when everything succeeded. Returns the chain that wrote it, for its reports.
//
// zstd-compressed records in a file are copied as they were when no pass changes a record inside
// them: the pipeline finds out by a dry run of a second chain over the recording, into a sink that
// only notes whether any record was rebuilt, inserted or dropped.
absl::StatusOr<PassChain> run_pipeline(io::Input& in, const std::string& out_path,
                                       const MakeChain& make_chain, const PipelineOptions& options);

// Runs the passes `make_chain` gives over `in` and shows `tap` every record they would write,
// writing nothing: for a verb that reads what the passes make of a recording (export) without
// keeping it. options.tap is not used; `tap` is.
absl::StatusOr<PassChain> run_into_tap(io::Input& in, const MakeChain& make_chain, RecordTap& tap,
                                       const PipelineOptions& options);

// What a dry run shows, pass by pass: how each would change the recording. `pdfix check` is one.
class DryRunObserver {
 public:
  virtual ~DryRunObserver() = default;
  // Before the first record; `s` lives until the run ends.
  virtual void begin(const Session& s) = 0;
  // Every record as read, before any pass sees it (samples included: nothing is skipped).
  virtual void read(const RecordRef& r) = 0;
  // Pass number `pass` of the chain put `after` in place of `before`: a map rebuilt (both set),
  // a record inserted (no `before`), or one dropped (no `after`).
  virtual void changed(size_t pass, const RecordRef* before, const RecordRef* after) = 0;
  // Pass number `pass` replaced (or added) a feature section with `bytes`.
  virtual void feature_replaced(size_t pass, int feature, std::span<const uint8_t> bytes) = 0;
  // After the last record, or at the one the reader could not frame (`reading` then says why).
  virtual void end(const absl::Status& reading) = 0;
};

// Runs `chain` over `in` as run_pipeline would (compressed records expanded), writing nothing.
// Fails only when the input cannot be opened; a reading error later goes to the observer.
absl::Status dry_run(io::Input& in, PassChain& chain, DryRunObserver& observer);

}  // namespace pdfix::transform
