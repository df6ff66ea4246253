// Which inodes a recording maps at each path, read from the whole file before a pass needs it:
// perf's build-id table gives ids by path, and whether its one id for a path can be a map's
// depends on how many files the recording maps there, before and after that map.
#pragma once

#include <memory>
#include <optional>

#include "io/input.h"
#include "resolve/resolver.h"

namespace pdfix::passes {

class MapSurvey : public resolve::MappedInodes {
 public:
  // Over a mapped input, which it reads again on the first all(); nullptr for a stream.
  static std::shared_ptr<const MapSurvey> of(io::Input& in);
  const resolve::PathInodes& all() const override;

 private:
  explicit MapSurvey(io::Input& in) : in_(in) {}
  io::Input& in_;
  mutable std::optional<resolve::PathInodes> inodes_;
};

}  // namespace pdfix::passes
