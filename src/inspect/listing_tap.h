// The listing of what a pipeline writes, made as it writes it (transform/tap.h): what
// list_build_ids would list of the output, without reading the output again. `fix --archive` and
// `fix --store` keep the binaries their output names from it.
#pragma once

#include <optional>

#include "inspect/buildid_list.h"
#include "transform/tap.h"

namespace pdfix::inspect {

class ListingTap : public transform::RecordTap {
 public:
  explicit ListingTap(const BuildIdListOptions& options) : options_(options) {}
  bool taps(uint32_t type) const override;
  absl::Status record(const transform::RecordRef& r, const transform::Session& s) override;
  // The file's table and attrs are the output's: as the passes edited them.
  absl::Status end(const transform::Session& s, const transform::FeatureEdits& edits) override;

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
