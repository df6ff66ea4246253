// The bundles of a run that keeps each binary once (pdfix follow --archive): which bundle in the
// directory holds each file of the binaries, kept beside them in DIR/.pdfix-bundle-chain so that a
// run stopped and started again goes on with the same chain. A bundle's files are written to it
// once the bundle is complete; a bundle written again (a chunk fixed again after a kill) is not
// taken to hold what it is about to hold.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "io/locked_log.h"

namespace pdfix::store {

struct HeldFile {
  std::string bundle;  // its file name in the directory
  bool slim = false;   // held as a slim copy
};

class BundleChain {
 public:
  // The chain of directory `dir` (begun if there is none), held locked: one run a directory.
  static absl::StatusOr<BundleChain> open(const std::string& dir);

  // The bundle other than `bundle` that holds `file` (a name under .debug); null when none does.
  const HeldFile* holder(const std::string& file, const std::string& bundle) const;
  // What the complete bundle `bundle` holds (file names and whether each is slim), appended and
  // synced to disk.
  absl::Status add(const std::string& bundle,
                   const std::vector<std::pair<std::string, bool>>& files);
  size_t size() const { return held_.size(); }

  static constexpr char kName[] = ".pdfix-bundle-chain";

 private:
  explicit BundleChain(io::LockedLog log);
  void take(const std::string& bundle, const std::vector<std::pair<std::string, bool>>& files);
  io::LockedLog log_;
  std::map<std::string, HeldFile> held_;
};

}  // namespace pdfix::store
