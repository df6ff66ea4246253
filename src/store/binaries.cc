#include "store/binaries.h"

#include <sys/stat.h>

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

bool is_file(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool proven_file(const std::string& path, const BuildId& id) {
  if (!is_file(path)) return false;
  auto image = resolve::read_maybe_compressed(path);
  return image.ok() && has_build_id(**image, id);
}

// kallsyms with every address zero (kptr_restrict, not root) names symbols but places none.
bool has_addresses(std::string_view kallsyms) {
  const size_t end = kallsyms.find(' ');
  return end != std::string_view::npos && end > 0 &&
         kallsyms.substr(0, end).find_first_not_of('0') != std::string_view::npos;
}

// perf reads no debug file from its cache for a kernel module (nor for kallsyms or the vdso).
bool takes_debug_file(const Binary& b) {
  static const std::regex kModule(R"(\.ko(\.(xz|gz|zst))?$)");
  return b.kind == EntryKind::kElf && !b.guest && b.from == Binary::From::kFile &&
         !std::regex_search(b.name, kModule);
}

std::optional<Binary> debug_file_of(const Binary& b, const FindOptions& options) {
  if (!takes_debug_file(b)) return std::nullopt;
  resolve::DebugPlaces places{.sysroot = options.sysroot,
                              .caches = options.more_caches,
                              .debuginfod_client_cache = options.debuginfod_client_cache};
  if (!options.cache_dir.empty()) places.caches.insert(places.caches.begin(), options.cache_dir);
  auto found = resolve::find_debug_file(b.id, b.name, b.path, places);
  if (!found) return std::nullopt;
  Binary d = b;
  d.kind = EntryKind::kDebug;
  d.path = found->path;
  d.evidence = absl::StrCat("its build-id (", std::string(resolve::name(found->source)), ")");
  d.samples = 0;  // the binary's entry speaks for its samples
  return d;
}

class Prover {
 public:
  Prover(const resolve::Host& host, const FindOptions& options, std::optional<int64_t> ended_at)
      : host_(host), options_(options), ended_at_(ended_at) {}

  void prove(Binary& b, std::optional<resolve::Inode> inode) {
    if (b.kind == EntryKind::kKallsyms) return kernel(b);
    if (b.kind == EntryKind::kVdso) return vdso(b);
    auto found =
        resolve::find_copy(host_, {.name = b.name, .id = b.id, .inode = inode, .pids = b.pids},
                           {.sysroot = options_.sysroot,
                            .search = options_.search,
                            .caches = caches(),
                            .ended_at = ended_at_});
    if (found) return take(b, found->path, found->where);
    const std::string where = options_.sysroot.empty() ? b.name : options_.sysroot + b.name;
    b.missing = !is_file(where) ? "no such file; not in the build-id cache"
                : options_.sysroot.empty()
                    ? "another file than this host's at that path (a container's or chroot's, or "
                      "one replaced since): give its root or layers with --search; not in the "
                      "build-id cache"
                    : "the file there has another build-id; not in the build-id cache";
  }

  // The running kernel's ELF image, when one with the id is installed where distributions put it.
  std::optional<Binary> vmlinux(const Binary& kernel) const {
    if (host_.kernel_build_id() != kernel.id) return std::nullopt;
    for (const std::string& p : resolve::vmlinux_paths(host_.kernel_release())) {
      const std::string path = options_.sysroot + p;
      if (proven_file(path, kernel.id)) {
        Binary v = kernel;
        v.kind = EntryKind::kVmlinux;
        v.from = Binary::From::kFile;
        v.path = path;
        v.evidence = "its build-id";
        return v;
      }
    }
    return std::nullopt;
  }

 private:
  static void take(Binary& b, std::string path, std::string evidence) {
    b.from = Binary::From::kFile;
    b.path = std::move(path);
    b.evidence = std::move(evidence);
  }

  std::vector<std::string> caches() const {
    std::vector<std::string> out = options_.more_caches;
    if (!options_.cache_dir.empty()) out.insert(out.begin(), options_.cache_dir);
    return out;
  }

  bool from_cache(Binary& b) const {
    for (const std::string& cache : caches()) {
      const std::string path = cached_file(cache, b.id, b.kind);
      if (b.kind == EntryKind::kKallsyms ? !is_file(path) : !proven_file(path, b.id)) continue;
      take(b, path, "perf's build-id cache");
      return true;
    }
    return false;
  }

  void kernel(Binary& b) {
    if (options_.sysroot.empty() && host_.kernel_build_id() == b.id) {
      if (!symbols_) symbols_ = host_.kallsyms();
      if (has_addresses(*symbols_)) {
        b.from = Binary::From::kKallsyms;
        b.evidence = "/proc/kallsyms (the running kernel has this id)";
        return;
      }
      if (from_cache(b)) return;
      b.missing = "/proc/kallsyms shows no addresses (kptr_restrict; run as root)";
      return;
    }
    if (from_cache(b)) return;
    b.missing = "not the running kernel; not in the build-id cache";
  }

  void vdso(Binary& b) const {
    if (options_.sysroot.empty() && !resolve::vdso_with_id(host_, b.id).empty()) {
      b.from = Binary::From::kVdso;
      b.evidence = "this process's vdso";
      return;
    }
    if (from_cache(b)) return;
    b.missing = "not this kernel's vdso; not in the build-id cache";
  }

  const resolve::Host& host_;
  const FindOptions& options_;
  std::optional<int64_t> ended_at_;
  std::optional<std::string> symbols_;
};

// Files that no record gives a build-id, proven as inject proves a map: by device and inode, on
// the host and boot that recorded, unchanged since. One without a build-id of its own is kept by
// path; one with a build-id needs `pdfix fix` to name it in the recording first.
class MappedFiles {
 public:
  MappedFiles(const resolve::Host& host, const FindOptions& options, resolve::RecordingFacts facts)
      : resolver_({.sysroot = options.sysroot, .search = options.search}, host),
        facts_(std::move(facts)) {}

  void prove(Binary& b, const resolve::DsoBuildId& d) {
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
    const resolve::Resolution& r = resolver_.resolve(q, facts_);
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
                              r.source == "file" ? "this host's file at the mapped path" : r.source,
                              "); ", resolve::kNoBuildIdInFile);
    b.sha256 = sha256_hex(
        {reinterpret_cast<const uint8_t*>((*image)->getBufferStart()), (*image)->getBufferSize()});
    b.missing.clear();
  }

 private:
  resolve::Resolver resolver_;
  resolve::RecordingFacts facts_;
};

}  // namespace

bool has_build_id(const llvm::MemoryBuffer& image, const format::BuildId& id) {
  auto got = resolve::build_id_of_elf(
      {reinterpret_cast<const uint8_t*>(image.getBufferStart()), image.getBufferSize()});
  return got.ok() && *got == id;
}

absl::StatusOr<Named> find_binaries(io::Input& in, const resolve::RecordedDsos& dsos,
                                    const resolve::Host& host, const FindOptions& options) {
  const io::RecordingSpan span = io::recording_span(in);
  Prover prover(host, options, span.ended_at);
  MappedFiles files(host, options,
                    {dsos.hostname, dsos.osrelease, dsos.kernel_text, span.started_at,
                     span.ended_at, dsos.table, nullptr});
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
        if (options.prove && d.machine == "host") files.prove(out.idless.back(), d);
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
    } else if (options.prove) {
      prover.prove(b,
                   d.has_inode ? std::optional(resolve::Inode{d.maj, d.min, d.ino}) : std::nullopt);
    }
    by_id.emplace(d.build_id, out.binaries.size());
    out.binaries.push_back(b);
    if (options.prove && options.debug_files) {
      if (auto debug = debug_file_of(b, options)) out.binaries.push_back(*debug);
    }
    if (options.prove && b.kind == EntryKind::kKallsyms && d.machine == "host") {
      if (auto v = prover.vmlinux(b)) {
        v->samples = 0;  // the kallsyms entry speaks for the kernel's samples
        out.binaries.push_back(*v);
      }
    }
  }
  return out;
}

absl::StatusOr<std::unique_ptr<llvm::MemoryBuffer>> load_binary(const Binary& b,
                                                                const resolve::Host& host) {
  switch (b.from) {
    case Binary::From::kFile:
      return resolve::read_maybe_compressed(b.path);
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
