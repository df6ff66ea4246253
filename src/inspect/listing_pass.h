// The listing of what a pipeline writes, made as it writes it: what list_build_ids would list of
// the output, without reading the output again. The last pass of `fix --archive` and `fix
// --store`, which keep the binaries the fixed recording names.
#pragma once

#include <optional>
#include <string_view>

#include "inspect/buildid_list.h"
#include "transform/pass.h"

namespace pdfix::inspect {

class ListingPass : public transform::Pass {
 public:
  explicit ListingPass(const BuildIdListOptions& options) : options_(options) {}
  std::string_view name() const override { return "listing"; }
  bool wants(uint32_t type) const override;
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& s,
                       transform::RecordSink& out) override;
  // The file's table and attrs are the output's: as the passes before this one edited them.
  absl::Status finish(const transform::Session& s, transform::RecordSink& out,
                      transform::FeatureEdits& edits) override;

  // After the pipeline ran; moved out once.
  std::optional<BuildIdListing> take() { return std::move(listing_); }

 private:
  // perf's listing rules are decided by the session's header, which the first record brings.
  DsoLister& lister(const transform::Session& s);

  BuildIdListOptions options_;
  std::optional<DsoLister> lister_;
  bool stream_user_stacks_ = false;  // a stream's ATTR records, as written
  std::optional<BuildIdListing> listing_;
};

}  // namespace pdfix::inspect
