#include "store/binaries.h"

#include <algorithm>
#include <regex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "format/machine.h"
#include "format/map_kind.h"
#include "resolve/debug_file.h"
#include "resolve/elf_build_id.h"
#include "resolve/find_copy.h"
#include "resolve/resolver.h"
#include "store/symfs_layout.h"

namespace pdfix::store {
namespace {

using format::BuildId;

// perf reads no debug file from its cache for a kernel module (nor for kallsyms or the vdso).
bool takes_debug_file(const Binary& b) {
  static const std::regex kModule(R"(\.ko(\.(xz|gz|zst))?$)");
  return b.kind == EntryKind::kElf && !b.guest && b.from == Binary::From::kFile &&
         !std::regex_search(b.name, kModule);
}

std::optional<Binary> debug_file_of(const Binary& b, const resolve::CopyPlaces& places) {
  if (!takes_debug_file(b)) return std::nullopt;
  auto found = resolve::find_debug_file(b.id, b.name, b.path, places);
  if (!found) return std::nullopt;
  Binary d = b;
  d.kind = EntryKind::kDebug;
  d.path = found->path;
  d.evidence = absl::StrCat("its build-id (", std::string(resolve::name(found->source)), ")");
  d.samples = 0;  // the binary's entry speaks for its samples
  return d;
}

void take(Binary& b, const resolve::Copy& c) {
  b.from = c.from;
  b.path = c.path;
  b.evidence = c.evidence;
  b.missing = c.missing;
}

// A file that no record gives a build-id, proven as inject proves a map (the run's resolver): by
// device and inode, on the host and boot that recorded, unchanged since. One without a build-id
// of its own is kept by path; one with a build-id needs `pdfix fix` to name it in the recording
// first.
void prove_idless(Binary& b, const resolve::DsoBuildId& d, resolve::Resolver& resolver,
                  const resolve::RecordingFacts& facts) {
  if (!d.has_inode) {
    b.missing = "an MMAP record without device and inode: no file can be proven to be it";
    return;
  }
  const resolve::MapQuery q{.filename = d.name,
                            .misc = format::kCpuModeUser,
                            .has_inode = true,
                            .maj = d.maj,
                            .min = d.min,
                            .ino = d.ino,
                            .pid = d.pids.empty() ? 0 : d.pids.front()};
  const resolve::Resolution& r = resolver.resolve(q, facts);
  if (r.id) {
    b.missing = "no record of the recording gives it its build-id (run pdfix fix first)";
    return;
  }
  if (r.file.empty()) {
    b.missing = r.reason;
    return;
  }
  auto image = resolve::read_maybe_compressed(r.file);
  if (!image.ok()) {
    b.missing = std::string(image.status().message());
    return;
  }
  b.from = Binary::From::kFile;
  b.path = r.file;
  b.evidence = absl::StrCat("its device and inode (",
                            r.file == d.name ? "this host's file at the mapped path" : r.source,
                            "); ", r.reason);
  b.sha256 = sha256_hex(bytes_of(**image), mapping_of(**image));
  b.missing.clear();
}

}  // namespace

absl::StatusOr<Named> find_binaries(const resolve::RecordedDsos& dsos,
                                    const resolve::RecordingFacts& facts, const resolve::Host& host,
                                    const FindOptions& options) {
  const bool prove = options.resolver != nullptr;
  resolve::CopyPlaces places;
  if (prove) {
    places = options.resolver->copy_places(facts.ended_at);
    places.caches.insert(places.caches.end(), options.more_caches.begin(),
                         options.more_caches.end());
  }
  absl::flat_hash_map<std::string, size_t> by_id;  // hex -> index in out.binaries
  Named out{.samples = dsos.samples};
  for (const resolve::DsoBuildId& d : dsos.dsos) {
    const bool named_file = format::classify(d.name, 0) != format::MapKind::kAnonymous ||
                            entry_kind_of(d.name) != EntryKind::kElf;
    auto id = BuildId::from_hex(d.build_id);
    if (!id) {
      if (d.samples > 0 && named_file) {
        out.idless.push_back({.name = d.name,
                              .kind = entry_kind_of(d.name),
                              .guest = d.machine != "host",
                              .missing = "no record of the recording gives it a build-id",
                              .samples = d.samples,
                              .pids = d.pids});
        if (prove && d.machine == "host") {
          prove_idless(out.idless.back(), d, *options.resolver, facts);
        }
      }
      continue;
    }
    if (auto it = by_id.find(d.build_id); it != by_id.end()) {
      Binary& known = out.binaries[it->second];
      known.samples += d.samples;
      known.pids.insert(known.pids.end(), d.pids.begin(), d.pids.end());
      std::sort(known.pids.begin(), known.pids.end());
      known.pids.erase(std::unique(known.pids.begin(), known.pids.end()), known.pids.end());
      continue;
    }
    Binary b{.id = *id,
             .name = d.name,
             .kind = entry_kind_of(d.name),
             .samples = d.samples,
             .pids = d.pids};
    if (d.machine != "host") {
      b.guest = true;
      b.missing = absl::StrCat("a DSO of ", d.machine, ": its files are not on this host");
    } else if (!named_file) {
      continue;  // [vsyscall], a module known only as "[name]", //anon: no file to look for
    } else if (!cache_entry(b.name, b.id, b.kind)) {
      b.missing = "its name cannot be a path in a build-id cache";
    }
    std::optional<Binary> debug;
    if (prove && b.missing.empty() && !b.guest) {
      const auto inode =
          d.has_inode ? std::optional(resolve::Inode{d.maj, d.min, d.ino}) : std::nullopt;
      const std::string key = FindMemory::key(b.name, b.id, inode);
      const auto again = options.memory != nullptr ? options.memory->recall(key) : std::nullopt;
      if (again) {
        take(b, again->copy);
        if (again->debug) {
          debug = b;
          take(*debug, *again->debug);
        }
      } else {
        take(b,
             resolve::copy_of(
                 host, {.name = b.name, .id = b.id, .inode = inode, .pids = b.pids, .kind = b.kind},
                 places));
        debug = options.debug_files ? debug_file_of(b, places) : std::nullopt;
        // Without debug files asked for, none is remembered as found: a later run may ask.
        if (options.memory != nullptr && options.debug_files) {
          options.memory->remember(
              key, {.copy = {b.from, b.path, b.evidence, b.missing},
                    .debug = debug ? std::optional(resolve::Copy{debug->from, debug->path,
                                                                 debug->evidence, ""})
                                   : std::nullopt});
        }
      }
    }
    by_id.emplace(d.build_id, out.binaries.size());
    out.binaries.push_back(b);
    if (debug && options.debug_files) {
      debug->kind = EntryKind::kDebug;
      debug->samples = 0;  // the binary's entry speaks for its samples
      out.binaries.push_back(*debug);
    }
    if (prove && b.kind == EntryKind::kKallsyms && d.machine == "host") {
      if (auto v = resolve::vmlinux_of(b.id, facts.osrelease, places)) {
        Binary image = b;
        take(image, *v);
        image.kind = EntryKind::kVmlinux;
        image.samples = 0;  // the kallsyms entry speaks for the kernel's samples
        out.binaries.push_back(image);
      }
    }
  }
  return out;
}

std::span<const uint8_t> bytes_of(const llvm::MemoryBuffer& b) {
  return {reinterpret_cast<const uint8_t*>(b.getBufferStart()), b.getBufferSize()};
}

std::span<const uint8_t> mapping_of(const llvm::MemoryBuffer& b) {
  return b.getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap ? bytes_of(b)
                                                                    : std::span<const uint8_t>();
}

absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> load_binary(const Binary& b,
                                                                const resolve::Host& host) {
  switch (b.from) {
    case Binary::From::kFile: {
      auto image = resolve::read_maybe_compressed(b.path);
      if (!image.ok()) return image.status();
      // Proven when it was found; rewritten since, it is another binary than the one named.
      const std::span<const uint8_t> bytes = bytes_of(**image);
      if (b.id.size != 0 && b.kind != EntryKind::kKallsyms &&
          !resolve::carries_build_id(bytes, b.id)) {
        return absl::FailedPreconditionError(
            absl::StrCat(b.path, ": no longer carries build-id ", b.id.hex()));
      }
      return image;
    }
    case Binary::From::kKallsyms:
      return llvm::MemoryBuffer::getMemBufferCopy(host.kallsyms(), "/proc/kallsyms");
    case Binary::From::kVdso: {
      const std::span<const uint8_t> image = host.vdso();
      return llvm::MemoryBuffer::getMemBufferCopy(
          {reinterpret_cast<const char*>(image.data()), image.size()}, "[vdso]");
    }
    case Binary::From::kNothing:
      break;
  }
  return absl::NotFoundError(absl::StrCat(b.name, ": no proven copy"));
}

}  // namespace pdfix::store
