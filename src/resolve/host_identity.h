// Whether a recording was made on this machine, and in its current boot: the one answer, from what
// the recording says of where it was made and what this machine says of itself. Everything that
// takes this machine's files, processes, kernel notes or build-id cache as evidence for a
// recording asks it one of its two questions.
//
// A hostname proves nothing by itself (images are cloned, containers and many hosts are
// "localhost"); it only tells that a recording is another machine's. The kernel (its release,
// build-id and KASLR base) and the time the recording began tell the boot.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "format/feature.h"
#include "resolve/host.h"

namespace pdfix::resolve {

// What the recording itself says of where it was made: its header's and build-id table's facts.
struct RecordedPlace {
  std::string_view hostname;
  std::string_view osrelease;
  std::optional<uint64_t> kernel_text;  // the host kernel map's pgoff: the KASLR base
  std::span<const format::BuildIdEntry> table;
};

class HostIdentity {
 public:
  // `started_at`: when the recording began (nanoseconds since the epoch), when known. A view: the
  // place's strings and table and the host outlive it.
  HostIdentity(const RecordedPlace& recorded, std::optional<int64_t> started_at, const Host& host);

  // Same host? Why the recording cannot be of this machine as it runs now: no hostname or another
  // one, another kernel release or build, another KASLR base, a start before this boot. nullopt
  // when nothing the recording says tells so: then this machine's inodes, devices, processes and
  // build-id cache may stand for the recording's. A recording of an earlier boot is not this
  // host's in that sense: devices are numbered and pids given anew at each boot.
  std::optional<std::string> elsewhere() const;
  bool same_host() const { return !elsewhere(); }

  // Same boot? The same host, and the kernel shows the boot: the recording names its kernel
  // release and KASLR base, and both are this boot's. Only then are the running kernel's notes,
  // its modules' and its vdso the recording's.
  bool same_boot() const;

 private:
  RecordedPlace recorded_;
  std::optional<int64_t> started_at_;
  const Host& host_;
};

}  // namespace pdfix::resolve
