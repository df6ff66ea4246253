#include "resolve/host.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <iterator>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "io/huge_pages.h"
#include "resolve/elf_build_id.h"

namespace pdfix::resolve {
namespace {

std::optional<format::BuildId> notes_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  const std::string blob{std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  return build_id_of_notes({reinterpret_cast<const uint8_t*>(blob.data()), blob.size()});
}

// The address perf takes for the kernel map's start, from /proc/kallsyms (needs root, or
// kptr_restrict 0, to be real): _text, else _stext, perf's order. arm64's kallsyms has no _text,
// and perf names its map [kernel.kallsyms]_stext.
std::optional<uint64_t> read_kernel_text() {
  std::ifstream f("/proc/kallsyms");
  std::string line;
  std::optional<uint64_t> stext;
  while (std::getline(f, line)) {
    std::vector<absl::string_view> cols = absl::StrSplit(line, ' ');
    if (cols.size() < 3 || (cols[2] != "_text" && cols[2] != "_stext")) continue;
    uint64_t addr = 0;
    if (!absl::SimpleHexAtoi(cols[0], &addr) || addr == 0) return std::nullopt;
    if (cols[2] == "_text") return addr;
    stext = addr;
  }
  return stext;
}

// The kernel tells a process where its vdso is only as an address, and /proc/self/maps its extent.
std::span<const uint8_t> read_vdso() {
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
      return {};
    }
    // NOLINTNEXTLINE(performance-no-int-to-ptr)
    const auto* image = reinterpret_cast<const uint8_t*>(getauxval(AT_SYSINFO_EHDR));
    if (image == nullptr || reinterpret_cast<uintptr_t>(image) != begin) return {};
    return {image, end - begin};
  }
  return {};
}

template <typename T, typename Fn>
const T& once(std::optional<T>& slot, Fn&& read) {
  if (!slot) slot = read();
  return *slot;
}

// All of what `fd` reads from its start.
std::string read_from_start(int fd) {
  std::string text;
  if (lseek(fd, 0, SEEK_SET) != 0) return text;
  std::vector<char> block(size_t{1} << 16);
  for (ssize_t n; (n = read(fd, block.data(), block.size())) > 0;) {
    text.append(block.data(), static_cast<size_t>(n));
  }
  return text;
}

}  // namespace

// This process's mount table, read again only once the kernel says it changed: poll(2) on an open
// /proc/self/mountinfo reports POLLPRI after any mount or unmount in the namespace since the last
// poll (proc(5)). Read for each chunk before, and as long as the host has mounts (every container
// adds its own).
class LiveHost::MountTable {
 public:
  MountTable() = default;
  MountTable(const MountTable&) = delete;
  MountTable& operator=(const MountTable&) = delete;
  ~MountTable() {
    if (fd_ >= 0) close(fd_);
  }
  std::shared_ptr<const std::string> now() {
    if (fd_ < 0) {
      fd_ = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
      if (fd_ < 0) return std::make_shared<const std::string>();
    } else if (text_ != nullptr) {
      pollfd p{.fd = fd_, .events = POLLPRI, .revents = 0};
      if (poll(&p, 1, 0) == 0) return text_;
    }
    text_ = std::make_shared<const std::string>(read_from_start(fd_));
    return text_;
  }

 private:
  int fd_ = -1;
  std::shared_ptr<const std::string> text_;
};

LiveHost::LiveHost() : LiveHost(std::make_shared<BootFacts>(), std::make_shared<MountTable>()) {}

LiveHost::LiveHost(std::shared_ptr<BootFacts> boot, std::shared_ptr<MountTable> mounts)
    : boot_facts_(std::move(boot)), mounts_(std::move(mounts)) {}

std::unique_ptr<Host> LiveHost::anew() const {
  return std::unique_ptr<Host>(new LiveHost(boot_facts_, mounts_));
}

std::string LiveHost::hostname() const {
  return once(hostname_, [] {
    char name[256] = {};
    return gethostname(name, sizeof name - 1) == 0 ? std::string(name) : std::string();
  });
}

std::string LiveHost::kernel_release() const {
  return once(release_, [] {
    struct utsname u{};
    return uname(&u) == 0 ? std::string(u.release) : std::string();
  });
}

std::optional<uint64_t> LiveHost::kernel_text() const {
  return once(boot_facts_->text, read_kernel_text);
}

std::optional<format::BuildId> LiveHost::kernel_build_id() const {
  return once(boot_facts_->kernel_id, [] { return notes_file("/sys/kernel/notes"); });
}

std::optional<format::BuildId> LiveHost::module_build_id(const std::string& name) const {
  auto it = module_ids_.find(name);
  if (it == module_ids_.end()) {
    it = module_ids_
             .emplace(name,
                      notes_file(absl::StrCat("/sys/module/", name, "/notes/.note.gnu.build-id")))
             .first;
  }
  return it->second;
}

std::span<const uint8_t> LiveHost::vdso() const { return once(boot_facts_->vdso, read_vdso); }

std::string LiveHost::buildid_cache_path() const {
  if (const char* dir = std::getenv("PERF_BUILDID_DIR"); dir != nullptr && *dir != '\0') {
    return dir;
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    return std::string(home) + "/.debug";
  }
  return "";
}

std::string LiveHost::kallsyms() const {
  // /proc gives no size: read in large blocks, not a character at a time (10 MB on a distribution
  // kernel, read for each recording stored), straight into the text.
  std::string text;
  const int fd = open("/proc/kallsyms", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return text;
  // Room for a distribution kernel's at once, in huge pages: growing by doubling copied it all
  // twice more, and each small page written is a page fault (dear in a virtual machine: 2,500 of
  // them were a fifth of the reading). Room not written to takes no memory.
  constexpr size_t kBlock = size_t{1} << 20;
  text.reserve(size_t{32} << 20);
  io::advise_huge(text.data(), text.capacity());
  // The kernel gives a page or so a read: the text grows a block at a time (written once before
  // the reads fill it), not a block a read.
  size_t filled = 0;
  for (;;) {
    if (filled == text.size()) text.resize(filled + kBlock);
    const ssize_t n = read(fd, text.data() + filled, text.size() - filled);
    if (n <= 0) break;
    filled += static_cast<size_t>(n);
  }
  text.resize(filled);
  close(fd);
  return text;
}

std::string LiveHost::debuginfod_urls() const {
  const char* v = std::getenv("DEBUGINFOD_URLS");
  return v != nullptr ? v : "";
}

std::string LiveHost::debuginfod_client_cache() const {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : "");
  };
  if (std::string dir = env("DEBUGINFOD_CACHE_PATH"); !dir.empty()) return dir;
  if (std::string dir = env("XDG_CACHE_HOME"); !dir.empty()) return dir + "/debuginfod_client";
  if (std::string home = env("HOME"); !home.empty()) return home + "/.cache/debuginfod_client";
  return "";
}

std::optional<Host::Process> recorded_process(const Host& host, uint32_t pid,
                                              std::optional<int64_t> ended_at) {
  auto p = host.process(pid);
  if (!p || (ended_at && p->started_at > *ended_at)) return std::nullopt;
  return p;
}

std::optional<Host::Process> LiveHost::process(uint32_t pid) const {
  // Asked for each map of a process: read once. A process that starts under the pid later
  // started after the recording, which recorded_process refuses anyway.
  auto [it, added] = processes_.try_emplace(pid);
  if (added) it->second = read_process(pid);
  return it->second;
}

std::optional<Host::Process> LiveHost::read_process(uint32_t pid) const {
  // /proc/PID/stat: the 22nd field, after the parenthesised command (which may hold spaces), is
  // the start time in clock ticks since boot; /proc/stat's btime is the boot, in seconds.
  std::ifstream stat_file(absl::StrCat("/proc/", pid, "/stat"));
  std::string line;
  if (!std::getline(stat_file, line)) return std::nullopt;
  const size_t close = line.rfind(')');
  if (close == std::string::npos) return std::nullopt;
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(line).substr(close + 1), ' ', absl::SkipEmpty());
  uint64_t ticks = 0;
  // Fields 3.. follow the command: the start time is the 20th of them.
  if (fields.size() < 20 || !absl::SimpleAtoi(fields[19], &ticks)) return std::nullopt;
  const std::optional<int64_t> boot = boot_time();
  const long hz = sysconf(_SC_CLK_TCK);
  if (!boot || hz <= 0) return std::nullopt;
  constexpr int64_t kNanos = 1'000'000'000;
  Process p{absl::StrCat("/proc/", pid, "/root"),
            *boot + static_cast<int64_t>(ticks) * (kNanos / hz), pid};
  std::ifstream status(absl::StrCat("/proc/", pid, "/status"));
  while (std::getline(status, line)) {
    if (!line.starts_with("NSpid:")) continue;
    std::vector<absl::string_view> pids = absl::StrSplit(absl::string_view(line).substr(6),
                                                         absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (!pids.empty() && !absl::SimpleAtoi(pids.back(), &p.ns_pid)) p.ns_pid = pid;
    break;
  }
  return p;
}

const std::string& LiveHost::mountinfo() const {
  // One table a host: overlays mounted later belong to containers started after the recording.
  if (!mountinfo_) mountinfo_ = mounts_->now();
  return *mountinfo_;
}

std::optional<Mount> LiveHost::mount(uint32_t maj, uint32_t min) const {
  // Asked for each map judged, of a few devices: the table is read through once a device.
  auto [it, added] = mounts_by_device_.try_emplace({maj, min});
  if (added) it->second = find_mount(mountinfo(), maj, min);
  return it->second;
}

std::vector<Mount> LiveHost::overlays() const { return whole_overlays(mountinfo()); }

std::optional<int64_t> LiveHost::boot_time() const {
  // Asked for each map the resolver judges, and the same until the next boot.
  std::optional<std::optional<int64_t>>& boot = boot_facts_->boot;
  if (boot) return *boot;
  boot.emplace();
  std::ifstream stat("/proc/stat");
  for (std::string line; std::getline(stat, line);) {
    int64_t seconds = 0;
    if (line.starts_with("btime ") && absl::SimpleAtoi(line.substr(6), &seconds)) {
      *boot = seconds * 1'000'000'000;
      break;
    }
  }
  return *boot;
}

}  // namespace pdfix::resolve
