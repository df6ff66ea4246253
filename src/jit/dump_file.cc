#include "jit/dump_file.h"

#include <sys/stat.h>

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace pdfix::jit {
namespace {

bool loaded_before(const std::vector<CodeLoad>& loads, const std::vector<CodeMove>& moves,
                   uint64_t time) {
  return std::any_of(loads.begin(), loads.end(),
                     [&](const CodeLoad& l) { return l.timestamp < time; }) ||
         std::any_of(moves.begin(), moves.end(),
                     [&](const CodeMove& m) { return m.timestamp < time; });
}

}  // namespace

std::optional<DumpFile> read_dump(const std::vector<FileCandidate>& where, uint32_t named_pid,
                                  std::optional<uint64_t> marker_time,
                                  std::vector<std::string>& problems) {
  for (const FileCandidate& c : where) {
    struct stat st{};
    if (stat(c.path.c_str(), &st) != 0) continue;
    auto buffer = llvm::MemoryBuffer::getFile(c.path, /*IsText=*/false,
                                              /*RequiresNullTerminator=*/false);
    if (!buffer) {
      problems.push_back(c.path + ": " + buffer.getError().message());
      continue;
    }
    auto parsed = parse_jitdump({reinterpret_cast<const uint8_t*>((*buffer)->getBufferStart()),
                                 (*buffer)->getBufferSize()});
    if (!parsed.ok()) {
      problems.push_back(absl::StrCat(c.path, ": ", parsed.status().message()));
      continue;
    }
    if (parsed->pid != named_pid) {
      problems.push_back(absl::StrCat(c.path, " is process ", parsed->pid, "'s dump"));
      continue;
    }
    // A copy is taken for the dump only if its code was loaded after the recorded map: the
    // runtimes (V8, perf's JVMTI agent) map the dump before they write to it. The header's time
    // says nothing here: it is written after the map, and V8 writes it in wall-clock
    // microseconds.
    if (!c.recorded && marker_time && loaded_before(parsed->loads, parsed->moves, *marker_time)) {
      problems.push_back(c.path +
                         " holds code loaded before the recorded dump was mapped: another run's");
      continue;
    }
    if (parsed->arch_timestamp) {
      problems.push_back(c.path + ": times from the CPU's counter, not CLOCK_MONOTONIC");
      continue;
    }
    return DumpFile{c.path, std::move(*buffer), std::move(*parsed)};
  }
  return std::nullopt;
}

}  // namespace pdfix::jit
