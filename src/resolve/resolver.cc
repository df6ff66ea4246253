#include "resolve/resolver.h"

#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "resolve/elf_build_id.h"

namespace pdfix::resolve {
namespace {

constexpr uint16_t kCpuModeMask = 7;
constexpr uint16_t kCpuModeKernel = 1;
constexpr uint16_t kCpuModeGuestKernel = 4;

bool starts_with_any(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  for (auto p : prefixes) {
    if (s.starts_with(p)) return true;
  }
  return false;
}

std::optional<std::string> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
}

std::optional<BuildId> notes_file(const std::string& path) {
  auto blob = slurp(path);
  if (!blob) return std::nullopt;
  return build_id_of_notes({reinterpret_cast<const uint8_t*>(blob->data()), blob->size()});
}

// The address of _text in /proc/kallsyms (needs root, or kptr_restrict 0, to be real).
std::optional<uint64_t> running_kernel_text() {
  std::ifstream f("/proc/kallsyms");
  std::string line;
  while (std::getline(f, line)) {
    std::vector<absl::string_view> cols = absl::StrSplit(line, ' ');
    if (cols.size() >= 3 && cols[2] == "_text") {
      uint64_t addr = 0;
      if (absl::SimpleHexAtoi(cols[0], &addr) && addr != 0) return addr;
      return std::nullopt;
    }
  }
  return std::nullopt;
}

}  // namespace

MapKind classify(std::string_view filename, uint16_t misc) {
  const uint16_t mode = misc & kCpuModeMask;
  const bool kernel_mode = mode == kCpuModeKernel || mode == kCpuModeGuestKernel;
  if (starts_with_any(filename, {"[kernel.kallsyms]", "[guest.kernel.kallsyms"})) {
    return MapKind::kKernel;
  }
  if (filename == "[vdso]") return MapKind::kVdso;
  if (kernel_mode) return MapKind::kModule;
  if (filename.empty() || filename.front() != '/' ||
      starts_with_any(filename, {"//anon", "/dev/", "/SYSV", "/memfd:", "/anon_hugepage"})) {
    return MapKind::kAnonymous;
  }
  return MapKind::kFile;
}

std::string module_name(std::string_view filename) {
  std::string_view base = filename;
  if (base.starts_with("[") && base.ends_with("]")) {
    base = base.substr(1, base.size() - 2);
  } else {
    base = base.substr(base.rfind('/') + 1);
    for (std::string_view suffix : {".gz", ".xz", ".zst"}) {
      if (base.ends_with(suffix)) base.remove_suffix(suffix.size());
    }
    if (base.ends_with(".ko")) base.remove_suffix(3);
  }
  std::string name(base);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

Resolver::Resolver(ResolverConfig config, const RecordingFacts& facts)
    : config_(std::move(config)), facts_(facts) {}

const Resolution& Resolver::resolve(const MapQuery& q) {
  // One file is opened and parsed once, however many maps name it; a file-backed map is keyed by
  // its inode as well, so a replaced binary is looked at again.
  std::string key = absl::StrCat(q.filename, "\n", q.misc & kCpuModeMask, "\n", q.has_inode, ":",
                                 q.maj, ":", q.min, ":", q.ino);
  // Which vdso a map is depends on its length (see vdso()).
  if (classify(q.filename, q.misc) == MapKind::kVdso) absl::StrAppend(&key, ":", q.len);
  auto it = cache_.find(key);
  if (it == cache_.end()) it = cache_.emplace(key, resolve_uncached(q)).first;
  return it->second;
}

Resolution Resolver::resolve_uncached(const MapQuery& q) {
  switch (classify(q.filename, q.misc)) {
    case MapKind::kAnonymous:
      return {std::nullopt, "", "anonymous"};
    case MapKind::kKernel:
      return kernel_image(q);
    case MapKind::kModule:
      return kernel_module(q);
    case MapKind::kVdso:
      return vdso(q);
    case MapKind::kFile:
      return user_file(q);
  }
  return {};
}

std::optional<Resolution> Resolver::from_known_or_table(const MapQuery& q, MapKind kind) const {
  const std::string name = kind == MapKind::kKernel ? std::string(q.filename.starts_with("[guest")
                                                                      ? "[guest.kernel.kallsyms]"
                                                                      : "[kernel.kallsyms]")
                                                    : q.filename;
  if (auto it = config_.known.find(name); it != config_.known.end()) {
    return Resolution{it->second, "--known-build-ids", ""};
  }
  if (kind == MapKind::kModule) {
    if (auto it = config_.known.find(absl::StrCat("[", module_name(q.filename), "]"));
        it != config_.known.end()) {
      return Resolution{it->second, "--known-build-ids", ""};
    }
  }
  // The table may name a file twice with different ids (a binary upgraded mid-run): then it
  // cannot tell which one this map is.
  std::optional<BuildId> found;
  for (const auto& e : facts_.table) {
    bool match = e.filename == name;
    if (!match && kind == MapKind::kModule && e.kernel) {
      match = module_name(e.filename) == module_name(q.filename);
    }
    if (!match) continue;
    if (found && !(*found == e.id)) return Resolution{std::nullopt, "", "ambiguous build-id table"};
    found = e.id;
  }
  if (found) return Resolution{found, "build-id table", ""};
  return std::nullopt;
}

bool Resolver::this_host() const {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 && !facts_.hostname.empty() &&
         facts_.hostname == name;
}

bool Resolver::same_boot() {
  if (!same_boot_) {
    struct utsname u{};
    const bool same_release = uname(&u) == 0 && facts_.osrelease == u.release;
    const auto text = running_kernel_text();
    same_boot_ =
        this_host() && same_release && facts_.kernel_text && text && *facts_.kernel_text == *text;
  }
  return *same_boot_;
}

Resolution Resolver::kernel_image(const MapQuery& q) {
  if (auto r = from_known_or_table(q, MapKind::kKernel)) return *r;
  if (q.filename.starts_with("[guest")) return {std::nullopt, "", "guest kernel not in the table"};
  if (!config_.sysroot.empty()) {
    for (const std::string& p :
         {absl::StrCat("/usr/lib/debug/boot/vmlinux-", facts_.osrelease),
          absl::StrCat("/boot/vmlinux-", facts_.osrelease),
          absl::StrCat("/lib/modules/", facts_.osrelease, "/build/vmlinux")}) {
      Resolution r = from_file(config_.sysroot + p, q, /*live=*/false);
      if (r.id) return r;
    }
  }
  if (same_boot()) {
    if (auto id = notes_file("/sys/kernel/notes")) return {id, "/sys/kernel/notes", ""};
  }
  return {std::nullopt, "", "not found (recording is not of this boot; no table entry)"};
}

Resolution Resolver::kernel_module(const MapQuery& q) {
  if (auto r = from_known_or_table(q, MapKind::kModule)) return *r;
  const bool is_path = !q.filename.empty() && q.filename.front() == '/';
  if (is_path && !config_.sysroot.empty()) {
    Resolution r = from_file(config_.sysroot + q.filename, q, /*live=*/false);
    if (r.id || r.reason != "not found") return r;
  }
  if (same_boot()) {
    const std::string name = module_name(q.filename);
    if (auto id = notes_file(absl::StrCat("/sys/module/", name, "/notes/.note.gnu.build-id"))) {
      return {id, "/sys/module notes", ""};
    }
    if (is_path) return from_file(q.filename, q, /*live=*/true);
  }
  return {std::nullopt, "", "not found (recording is not of this boot; no table entry)"};
}

Resolution Resolver::user_file(const MapQuery& q) {
  if (q.filename.ends_with(" (deleted)")) {
    if (auto r = from_known_or_table(q, MapKind::kFile)) return *r;
    return {std::nullopt, "", "deleted"};
  }
  if (auto r = from_known_or_table(q, MapKind::kFile)) return *r;
  Resolution r = config_.sysroot.empty() ? from_file(q.filename, q, /*live=*/true)
                                         : from_file(config_.sysroot + q.filename, q, false);
  if (r.id || r.reason != "not found") return r;
  if (auto id = from_buildid_cache(q.filename)) return {id, "build-id cache", ""};
  return r;
}

Resolution Resolver::vdso(const MapQuery& q) {
  if (auto r = from_known_or_table(q, MapKind::kVdso)) return *r;
  if (!same_boot()) {
    return {std::nullopt, "",
            "not found (vdso not in the build-id table, recording not of this boot)"};
  }
  // The running kernel maps the same vdso into every process of an ABI, pdfix's own included. A
  // mapping of another length is another ABI's vdso (a 32-bit process's), which pdfix cannot see.
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (!line.ends_with("[vdso]")) continue;
    uint64_t begin = 0;
    uint64_t end = 0;
    const std::string field = line.substr(0, line.find(' '));
    std::vector<absl::string_view> range = absl::StrSplit(field, '-');
    if (range.size() != 2 || !absl::SimpleHexAtoi(range[0], &begin) ||
        !absl::SimpleHexAtoi(range[1], &end) || end <= begin) {
      break;
    }
    if (end - begin != q.len) {
      return {std::nullopt, "", "not found (vdso of another ABI than this process's)"};
    }
    // The kernel tells a process where its vdso is only as a number.
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    const auto* image = reinterpret_cast<const uint8_t*>(getauxval(AT_SYSINFO_EHDR));
    if (image == nullptr || reinterpret_cast<uintptr_t>(image) != begin) break;
    auto id = build_id_of_elf({image, end - begin});
    if (id.ok() && id->has_value()) return {*id, "this process's vdso", ""};
    break;
  }
  return {std::nullopt, "", "not found (no vdso in this process to compare with)"};
}

Resolution Resolver::from_file(const std::string& path, const MapQuery& q, bool live) {
  struct stat st{};
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return {std::nullopt, "", "not found"};
  }
  if (live && !this_host()) {
    return {std::nullopt, "", "not found (recorded on another host; give --sysroot)"};
  }
  if (live) {
    // On this machine a path proves nothing by itself: the file must be the very inode that was
    // mapped, and must not have changed since the recording ended.
    if (q.has_inode &&
        (st.st_ino != q.ino || major(st.st_dev) != q.maj || minor(st.st_dev) != q.min)) {
      return {std::nullopt, "", "stale (the file was replaced: inode differs)"};
    }
    if (facts_.ended_at && st.st_mtim.tv_sec > *facts_.ended_at) {
      return {std::nullopt, "", "stale (modified after the recording)"};
    }
  }
  auto buf = read_maybe_compressed(path);
  if (!buf.ok()) return {std::nullopt, "", std::string(buf.status().message())};
  llvm::StringRef bytes = (*buf)->getBuffer();
  auto id = build_id_of_elf({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
  if (!id.ok()) return {std::nullopt, "", "not ELF"};
  if (!id->has_value()) return {std::nullopt, "", "no build-id in file"};
  return {*id, live ? "file" : "sysroot", ""};
}

std::optional<BuildId> Resolver::from_buildid_cache(const std::string& filename) const {
  if (config_.buildid_dir.empty()) return std::nullopt;
  // perf keeps <cache>/<path>/<build-id>/; one id for a path identifies it, several do not.
  std::error_code ec;
  std::optional<BuildId> found;
  for (const auto& e : std::filesystem::directory_iterator(config_.buildid_dir + filename, ec)) {
    auto id = BuildId::from_hex(e.path().filename().string());
    if (!id) continue;
    if (found) return std::nullopt;
    found = id;
  }
  return found;
}

}  // namespace pdfix::resolve
