// A bundle's own facts, at its top as pdfix-bundle.json: which of its files are slim copies
// (store/slim_elf.h), and, for a bundle of a run that keeps each binary once (pdfix follow
// --archive), which files of its recording's binaries are in the run's earlier bundles, by the
// name of the bundle beside it that holds each.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace pdfix::store {

inline constexpr char kBundleManifest[] = "pdfix-bundle.json";

struct BundleManifest {
  std::vector<std::string> slim;  // by their names in the bundle, or in the one that holds them
  bool unwind_tables = true;      // whether the slim copies keep theirs
  // Bundle file name (in the same directory) -> the names of the files it holds for this one.
  std::map<std::string, std::vector<std::string>> elsewhere;
  // Written only when it says something.
  bool empty() const { return slim.empty() && elsewhere.empty(); }
};

std::string bundle_manifest_json(const BundleManifest& manifest);
absl::StatusOr<BundleManifest> parse_bundle_manifest(std::string_view text);

// Whether `name` is a relative path of plain components, naming something inside a bundle.
bool is_inside(std::string_view name);

}  // namespace pdfix::store
