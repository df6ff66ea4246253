#include "store/fetch.h"

#include <elfutils/debuginfod.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "llvm/Support/MemoryBuffer.h"
#include "resolve/elf_build_id.h"
#include "resolve/find_copy.h"
#include "store/cache_store.h"
#include "store/loaded_library.h"

namespace pdfix::store {
namespace {

// libdebuginfod is loaded when a fetch begins, not linked: it brings curl, GnuTLS, Kerberos and
// LDAP, whose loading cost every pdfix run 5 ms (elfutils' libdw loads it the same way).
struct Debuginfod {
  decltype(&debuginfod_begin) begin = nullptr;
  decltype(&debuginfod_end) end = nullptr;
  decltype(&debuginfod_find_executable) find_executable = nullptr;
  decltype(&debuginfod_find_debuginfo) find_debuginfo = nullptr;
  decltype(&debuginfod_set_verbose_fd) set_verbose_fd = nullptr;
};

absl::StatusOr<Debuginfod> load_debuginfod() {
  auto lib = LoadedLibrary::open("libdebuginfod.so.1", "libdebuginfod1");
  if (!lib.ok()) return lib.status();
  Debuginfod api;
  if (!lib->bind("debuginfod_begin", api.begin) || !lib->bind("debuginfod_end", api.end) ||
      !lib->bind("debuginfod_find_executable", api.find_executable) ||
      !lib->bind("debuginfod_find_debuginfo", api.find_debuginfo) ||
      !lib->bind("debuginfod_set_verbose_fd", api.set_verbose_fd)) {
    return absl::FailedPreconditionError("libdebuginfod.so.1 lacks the client functions");
  }
  return api;
}

bool in_cache(const std::string& cache, const Binary& b, EntryKind kind) {
  return resolve::cache_holds(cache, b.id, kind);
}

// The errors with which libdebuginfod says that no server could be asked, as opposed to -ENOENT,
// the servers' answer that they do not have the file.
bool unreachable(int error) {
  switch (error) {
    case ECONNREFUSED:
    case ECONNRESET:
    case EHOSTUNREACH:
    case ENETUNREACH:
    case ETIME:
    case ETIMEDOUT:
    case EAGAIN:
    case EIO:
    case ENOSYS:
      return true;
    default:
      return false;
  }
}

// What libdebuginfod's verbose stream tells of one lookup. It answers -ENOENT alike for "no server
// has it", for an HTTP 5xx, and for a miss it remembers from an earlier lookup without asking
// anyone; only its transcript tells them apart ("url N ..." for each server asked, curl's "The
// requested URL returned error: CODE" for each HTTP error).
struct Transcript {
  bool asked = false;
  bool answered_no = false;  // a server answered with a 4xx: it does not have the file
  int server_error = 0;      // the last 5xx
};

Transcript read_transcript(int fd) {
  Transcript t;
  std::string text;
  char buf[4096];
  ::lseek(fd, 0, SEEK_SET);
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  constexpr absl::string_view kError = "returned error: ";
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (absl::StartsWith(line, "url ")) t.asked = true;
    const size_t at = line.find(kError);
    int code = 0;
    if (at == absl::string_view::npos ||
        !absl::SimpleAtoi(line.substr(at + kError.size(), 3), &code)) {
      continue;
    }
    if (code >= 500) {
      t.server_error = code;
    } else {
      t.answered_no = true;
    }
  }
  return t;
}

bool regular_nonempty(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

// `transcript` is the client's verbose stream, a memory file emptied before each lookup.
Fetched fetch_one(const Debuginfod& api, debuginfod_client* client, int transcript,
                  const FetchOptions& options, const Binary& b, EntryKind kind) {
  const std::string& cache = options.cache;
  const std::string what = kind == EntryKind::kDebug     ? "debuginfo"
                           : kind == EntryKind::kVmlinux ? "vmlinux"
                                                         : "executable";
  Fetched f{.build_id = b.id.hex(), .name = b.name, .what = what};
  if (in_cache(cache, b, kind)) {
    f.outcome = Outcome::kPresent;
    return f;
  }
  // libdebuginfod answers from its own cache without asking a server: that is no fetch.
  const bool had =
      !options.client_cache.empty() &&
      regular_nonempty(absl::StrCat(options.client_cache, "/", b.id.hex(), "/",
                                    kind == EntryKind::kDebug ? "debuginfo" : "executable"));
  if (transcript >= 0 && ::ftruncate(transcript, 0) == 0) ::lseek(transcript, 0, SEEK_SET);
  char* where = nullptr;
  const int fd = kind == EntryKind::kDebug
                     ? api.find_debuginfo(client, b.id.bytes.data(), b.id.size, &where)
                     : api.find_executable(client, b.id.bytes.data(), b.id.size, &where);
  const Transcript told = transcript >= 0 ? read_transcript(transcript) : Transcript{.asked = true};
  f.asked = told.asked;
  if (fd == -ENOENT && !told.asked) {
    f.outcome = Outcome::kMissing;
    f.detail = "libdebuginfod remembers an earlier miss in its client cache; no server was asked";
  } else if (fd == -ENOENT && told.server_error != 0 && !told.answered_no) {
    f.outcome = Outcome::kUnreachable;
    f.detail = absl::StrCat(options.urls, " answered HTTP ", told.server_error);
  } else if (fd < 0) {
    f.outcome = fd == -ENOENT      ? Outcome::kMissing
                : unreachable(-fd) ? Outcome::kUnreachable
                                   : Outcome::kFailed;
    // Which server could not be reached is what the user needs to act on.
    f.detail = fd == -ENOENT      ? "the servers do not have it"
               : unreachable(-fd) ? absl::StrCat(options.urls, ": ", std::strerror(-fd))
                                  : std::strerror(-fd);
  }
  if (fd < 0) return f;
  auto image = llvm::MemoryBuffer::getOpenFile(fd, where != nullptr ? where : b.name,
                                               /*FileSize=*/-1, /*RequiresNullTerminator=*/false);
  ::close(fd);
  std::free(where);
  if (!image) {
    f.outcome = Outcome::kFailed;
    f.detail = image.getError().message();
    return f;
  }
  // A server is not evidence: what it sends must carry the id asked for.
  if (!resolve::carries_build_id(
          {reinterpret_cast<const uint8_t*>((*image)->getBufferStart()), (*image)->getBufferSize()},
          b.id)) {
    f.outcome = Outcome::kFailed;
    f.detail = "the server sent a file with another build-id";
    return f;
  }
  auto entry = cache_entry(b.name, b.id, kind);
  if (!entry) {
    f.outcome = Outcome::kFailed;
    f.detail = "its name cannot be a path in a build-id cache";
    return f;
  }
  auto stored = store_in_cache(
      cache, *entry,
      {reinterpret_cast<const uint8_t*>((*image)->getBufferStart()), (*image)->getBufferSize()});
  if (!stored.ok()) {
    f.outcome = Outcome::kFailed;
    f.detail = std::string(stored.status().message());
    return f;
  }
  f.outcome = had ? Outcome::kCached : Outcome::kFetched;
  f.detail = absl::StrCat((*image)->getBufferSize(), " bytes",
                          had ? " from libdebuginfod's client cache" : "");
  return f;
}

}  // namespace

std::string_view name(Outcome o) {
  switch (o) {
    case Outcome::kPresent:
      return "present";
    case Outcome::kFetched:
      return "fetched";
    case Outcome::kCached:
      return "cached";
    case Outcome::kMissing:
      return "missing";
    case Outcome::kUnreachable:
      return "unreachable";
    case Outcome::kFailed:
      break;
  }
  return "failed";
}

absl::StatusOr<std::vector<Fetched>> fetch_binaries(const std::vector<Binary>& named,
                                                    const FetchOptions& options) {
  if (options.urls.empty()) {
    return absl::InvalidArgumentError(
        "no debuginfod server: give --debuginfod URLS or set DEBUGINFOD_URLS");
  }
  // libdebuginfod takes its servers from the environment only, when a client begins.
  auto api = load_debuginfod();
  if (!api.ok()) return api.status();
  ::setenv("DEBUGINFOD_URLS", options.urls.c_str(), 1);
  std::unique_ptr<debuginfod_client, decltype(api->end)> client(api->begin(), api->end);
  if (!client) return absl::InternalError("cannot start a debuginfod client");
  const int transcript = ::memfd_create("pdfix-debuginfod", MFD_CLOEXEC);
  if (transcript >= 0) api->set_verbose_fd(client.get(), transcript);
  absl::Cleanup close_transcript = [transcript] {
    if (transcript >= 0) ::close(transcript);
  };
  std::vector<Fetched> out;
  for (size_t i = 0; i < named.size(); ++i) {
    const Binary& b = named[i];
    if (b.guest) continue;
    if (b.kind == EntryKind::kKallsyms && in_cache(options.cache, b, b.kind)) {
      out.push_back({.build_id = b.id.hex(),
                     .name = b.name,
                     .what = "kallsyms",
                     .outcome = Outcome::kPresent});
    } else if (b.kind == EntryKind::kKallsyms) {
      out.push_back(fetch_one(*api, client.get(), transcript, options, b, EntryKind::kVmlinux));
    } else {
      out.push_back(fetch_one(*api, client.get(), transcript, options, b, b.kind));
      if (options.debuginfo && b.kind == EntryKind::kElf) {
        out.push_back(fetch_one(*api, client.get(), transcript, options, b, EntryKind::kDebug));
      }
    }
    if (options.progress) options.progress(i + 1, named.size());
  }
  return out;
}

}  // namespace pdfix::store
