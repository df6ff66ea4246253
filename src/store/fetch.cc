#include "store/fetch.h"

#include <elfutils/debuginfod.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "llvm/Support/MemoryBuffer.h"
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
};

absl::StatusOr<Debuginfod> load_debuginfod() {
  auto lib = LoadedLibrary::open("libdebuginfod.so.1", "libdebuginfod1");
  if (!lib.ok()) return lib.status();
  Debuginfod api;
  if (!lib->bind("debuginfod_begin", api.begin) || !lib->bind("debuginfod_end", api.end) ||
      !lib->bind("debuginfod_find_executable", api.find_executable) ||
      !lib->bind("debuginfod_find_debuginfo", api.find_debuginfo)) {
    return absl::FailedPreconditionError("libdebuginfod.so.1 lacks the client functions");
  }
  return api;
}

bool in_cache(const std::string& cache, const Binary& b, EntryKind kind) {
  const std::string path = cached_file(cache, b.id, kind);
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  if (kind == EntryKind::kKallsyms) return true;
  auto image =
      llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  return image && has_build_id(**image, b.id);
}

Fetched fetch_one(const Debuginfod& api, debuginfod_client* client, const std::string& cache,
                  const Binary& b, EntryKind kind) {
  const std::string what = kind == EntryKind::kDebug     ? "debuginfo"
                           : kind == EntryKind::kVmlinux ? "vmlinux"
                                                         : "executable";
  Fetched f{b.id.hex(), b.name, what, "", ""};
  if (in_cache(cache, b, kind)) {
    f.outcome = "present";
    return f;
  }
  char* where = nullptr;
  const int fd = kind == EntryKind::kDebug
                     ? api.find_debuginfo(client, b.id.bytes.data(), b.id.size, &where)
                     : api.find_executable(client, b.id.bytes.data(), b.id.size, &where);
  if (fd < 0) {
    f.outcome = fd == -ENOENT ? "missing" : "failed";
    f.detail = fd == -ENOENT ? "no server has it" : std::strerror(-fd);
    return f;
  }
  auto image = llvm::MemoryBuffer::getOpenFile(fd, where != nullptr ? where : b.name,
                                               /*FileSize=*/-1, /*RequiresNullTerminator=*/false);
  ::close(fd);
  std::free(where);
  if (!image) {
    f.outcome = "failed";
    f.detail = image.getError().message();
    return f;
  }
  // A server is not evidence: what it sends must carry the id asked for.
  if (!has_build_id(**image, b.id)) {
    f.outcome = "failed";
    f.detail = "the server sent a file with another build-id";
    return f;
  }
  auto entry = cache_entry(b.name, b.id, kind);
  if (!entry) {
    f.outcome = "failed";
    f.detail = "its name cannot be a path in a build-id cache";
    return f;
  }
  auto stored = store_in_cache(
      cache, *entry,
      {reinterpret_cast<const uint8_t*>((*image)->getBufferStart()), (*image)->getBufferSize()});
  if (!stored.ok()) {
    f.outcome = "failed";
    f.detail = std::string(stored.status().message());
    return f;
  }
  f.outcome = "fetched";
  f.detail = absl::StrCat((*image)->getBufferSize(), " bytes");
  return f;
}

}  // namespace

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
  std::vector<Fetched> out;
  for (size_t i = 0; i < named.size(); ++i) {
    const Binary& b = named[i];
    if (b.guest) continue;
    if (b.kind == EntryKind::kKallsyms && in_cache(options.cache, b, b.kind)) {
      out.push_back({b.id.hex(), b.name, "kallsyms", "present", ""});
    } else if (b.kind == EntryKind::kKallsyms) {
      out.push_back(fetch_one(*api, client.get(), options.cache, b, EntryKind::kVmlinux));
    } else {
      out.push_back(fetch_one(*api, client.get(), options.cache, b, b.kind));
      if (options.debuginfo && b.kind == EntryKind::kElf) {
        out.push_back(fetch_one(*api, client.get(), options.cache, b, EntryKind::kDebug));
      }
    }
    if (options.progress) options.progress(i + 1, named.size());
  }
  return out;
}

}  // namespace pdfix::store
