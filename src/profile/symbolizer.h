// Names for a profile's addresses: functions, source lines and inline frames, from the binary a
// mapping's build-id proves (found by the finder: resolve::find_copy) or its debug file
// (resolve::find_debug_file), read by LLVM's symbolizer library. A mapping without a proven
// build-id, or whose binary is nowhere here, gets no names: a wrong name is worse than none.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "format/build_id.h"
#include "profile/kallsyms.h"
#include "profile/stacks.h"
#include "resolve/file_places.h"
#include "resolve/find_copy.h"
#include "resolve/host.h"

namespace pdfix::profile {

// One frame at an address: its function, and where in the source.
struct Line {
  std::string function;     // as profiles show it (profile/demangle.h)
  std::string system_name;  // as the binary names it: mangled, for C++
  std::string file;
  int64_t line = 0;
  int64_t column = 0;
};

// Frames' names, by frame: what a Namer (profile/namer.h) named while the recording was read.
using NamedFrames = absl::flat_hash_map<Frame, std::vector<Line>>;

class Symbolizer {
 public:
  Symbolizer(const resolve::Host& host, resolve::CopyPlaces places);
  // For the next recording of a run (follow --export): its host and places. What was read for
  // earlier ones is kept while its files are unchanged (device, inode, size, mtime, ctime), as
  // the finder's memory keeps what it found (store/find_memory.h); a binary not found is looked
  // for again, and the kernel is the next recording's own.
  void next_recording(const resolve::Host& host, resolve::CopyPlaces places);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Starts reading this host's kallsyms beside the caller (a distribution kernel's takes a tenth
  // of a second of the kernel's own formatting), for set_kernel when the recording's kernel is the
  // one running.
  void read_host_kallsyms_ahead();
  // Waits for what read_host_kallsyms_ahead started, if set_kernel did not take it: the host may
  // be gone before the next recording (follow asks a new one for each).
  void end_recording();
  // The kernel image's map of the recording ([kernel.kallsyms]_text, with its build-id): kernel
  // frames, modules' too, are named from its kallsyms.
  void set_kernel(const Mapping& image);
  // The frames at `address` in `m`, innermost inline frame first; empty when it cannot be named.
  // A `caller`'s address is a return address: it is looked up one byte before, in the call.
  std::vector<Line> lines(const Mapping& m, uint64_t address, bool caller);
  // For naming on another thread (profile/namer.h), in two halves that touch apart what they
  // keep: binary_to_name finds `m`'s binary (what lines() reads: its debug file, else itself)
  // on the thread that asks everything else, nullptr when there is none; lines_in names an
  // address of it, mapped at `start` from file offset `offset`, and touches only that binary
  // (what LLVM's symbolizer read of it, its problem). One thread at a time may name, and nothing
  // else asks of the binaries meanwhile (lines(), problem()).
  struct Binary;
  Binary* binary_to_name(const Mapping& m);
  std::vector<Line> lines_in(Binary& b, uint64_t start, uint64_t offset, uint64_t address,
                             bool caller);
  // The binary `m`'s build-id (or inode) proves, here: "" when none is. Found once a mapping, for
  // names and for this alike.
  std::string binary_file(const Mapping& m);
  // Why `m`'s binary gives no names ("" when it does, or was not asked).
  std::string problem(const Mapping& m) const;

 private:
  Binary& binary_of(const Mapping& m);
  Binary& vdso_of(const format::BuildId& id, Binary& b);
  // What LLVM's symbolizer reads of `b`, or its problem.
  static void read_module(Binary& b);
  static std::string key(const Mapping& m) {
    return m.build_id + "\n" + m.file + "\n" + m.proven_file;
  }

  const resolve::Host* host_;
  resolve::CopyPlaces places_;
  std::unique_ptr<Kallsyms> kallsyms_;
  std::future<std::unique_ptr<Kallsyms>> host_kallsyms_;  // read_host_kallsyms_ahead's
  std::string kernel_problem_;
  absl::flat_hash_map<std::string, std::unique_ptr<Binary>> binaries_;
};

}  // namespace pdfix::profile
