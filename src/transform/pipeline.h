// Runs an ordered chain of passes over a recording and writes the result. With no passes it is a
// copy that is byte-identical to the input.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "io/input.h"
#include "transform/pass.h"

namespace pdfix::transform {

struct PipelineOptions {
  // Called now and then with bytes done and bytes in all (0 when unknown, as on a pipe).
  std::function<void(uint64_t done, uint64_t total)> progress;
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

}  // namespace pdfix::transform
