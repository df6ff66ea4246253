// Runs an ordered list of passes over a recording and writes the result. With no passes it is a
// copy that is byte-identical to the input.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "io/input.h"
#include "transform/pass.h"

namespace pdfix::transform {

struct PipelineOptions {
  // Called now and then with bytes done and bytes in all (0 when unknown, as on a pipe).
  std::function<void(uint64_t done, uint64_t total)> progress;
};

// Reads `in`, runs `passes` in order, writes `out_path` ("-" for stdout). The output appears only
// when everything succeeded.
absl::Status run_pipeline(io::Input& in, const std::string& out_path, std::span<Pass* const> passes,
                          const PipelineOptions& options);

}  // namespace pdfix::transform
