// A recording's samples as stacks: each sample's callchain (or its ip alone) resolved to the maps
// that covered its addresses when it was taken, by the one timeline (transform/process_timeline.h)
// with records applied in perf's time order (transform/time_order.h), and counted by event, by
// the command of its thread and by stack. What export writes as pprof or folded stacks; memory
// grows with the distinct stacks and maps, not with the recording. The tap decodes the records;
// their counting runs beside it (profile/counter_thread.h).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "format/records.h"
#include "profile/stack_counter.h"
#include "profile/stack_table.h"
#include "transform/tap.h"

namespace pdfix::profile {

// One map of a file (or the kernel, or a module) as a profile names it: where it lay, from which
// file offset, and the build-id its record carried ("" when none was proven).
struct Mapping {
  uint64_t start = 0;
  uint64_t limit = 0;  // exclusive
  uint64_t offset = 0;
  std::string file;
  std::string build_id;
  bool kernel = false;
  uint32_t pid = 0;  // the first process that mapped it (where a finder looks for its root)
  // Without a build-id: the file here proven by device and inode to be the one mapped (a Go
  // program), whose names are then its own; "" when none is.
  std::string proven_file;
  bool operator==(const Mapping&) const = default;
};

// The file here that a map record without a build-id mapped, proven (resolve::Resolver, by
// device and inode on the recording's host and boot); "" when none is. Asked once a mapping,
// while the recording's session is open.
using ProveFile =
    std::function<std::string(const format::MmapRecord& m, const transform::Session& s)>;

// A sampled event as the profile counts it: perf's name, and whether its period is time (the
// clock events count nanoseconds).
struct SampledEvent {
  std::string name;
  bool clock = false;
};

// The stacks of a recording. A stack's key: its event, its command (an index into comms plus
// one), its pid and its tid (each plus one; 0 for a label not asked for), then for each frame,
// leaf first, the mapping (an index into mappings plus one; 0 for an address no map covers) and
// the address.
struct Profile {
  Labels labels;
  std::vector<SampledEvent> events;
  std::vector<Mapping> mappings;
  std::vector<std::string> comms;
  StackTable stacks;
  uint64_t samples = 0;      // counted, in stacks
  uint64_t not_counted = 0;  // of events left out (dummy, tracking) or of no known event
  std::optional<uint64_t> first_time;
  std::optional<uint64_t> last_time;
  std::string hostname;
  std::string osrelease;
  std::string perf_version;
  std::string command_line;
};

// Reads the records a pipeline writes (or a recording's own) into a Profile.
class StackTap : public transform::RecordTap {
 public:
  // `prove`, when given, is asked for each mapping without a build-id.
  explicit StackTap(ProveFile prove = nullptr, Labels labels = {});
  ~StackTap() override;
  StackTap(const StackTap&) = delete;
  StackTap& operator=(const StackTap&) = delete;

  bool taps(uint32_t type) const override;
  absl::Status record(const transform::RecordRef& r, const transform::Session& s) override;
  absl::Status end(const transform::Session& s, const transform::FeatureEdits& edits) override;

  // Told on the thread that reads, as the recording is read: `first` of each mapping (its index
  // in Profile::mappings plus one) the first time a sample's frame lies in it, then `frames` of
  // the mapped frames of each stack first counted (export names them then, beside the rest of
  // the recording).
  void on_new(std::function<void(uint64_t, const Mapping&)> first,
              std::function<void(std::span<const Frame>)> frames);

  // After end(): moved out once.
  Profile take();

 private:
  class Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace pdfix::profile
