#include "profile/locations.h"

#include <utility>

namespace pdfix::profile {

Locations::Locations(const Profile& profile, Symbolizer* symbolizer, NamedFrames named)
    : profile_(profile), symbolizer_(symbolizer), named_frames_(std::move(named)) {
  // A profile has about as many distinct frames as stacks, most of the time fewer.
  index_.reserve(profile.stacks.size());
  io::reserve_prefaulted(all_, profile.stacks.size());
}

std::span<const uint32_t> Locations::of(std::span<const uint64_t> frames) {
  of_.clear();
  for (size_t i = 0; i + 1 < frames.size(); i += 2) {
    const Frame frame = frame_of(frames, i);
    const uint64_t mapping = frame.mapping;
    const uint64_t address = frame.address;
    auto [it, added] = index_.try_emplace(frame, static_cast<uint32_t>(all_.size()));
    if (added) {
      Location l{.mapping = mapping, .address = address, .caller = frame.caller};
      if (auto named = named_frames_.find(frame); named != named_frames_.end()) {
        l.lines = std::move(named->second);
      } else if (symbolizer_ != nullptr && mapping != 0) {
        l.lines = symbolizer_->lines(profile_.mappings[mapping - 1], address, frame.caller);
      }
      if (!l.lines.empty()) ++named_;
      all_.push_back(std::move(l));
    }
    of_.push_back(it->second);
  }
  return of_;
}

}  // namespace pdfix::profile
