#include "resolve/debug_file.h"

#include "absl/strings/str_cat.h"
#include "llvm/Object/ObjectFile.h"
#include "resolve/cache_layout.h"
#include "resolve/elf_build_id.h"

namespace pdfix::resolve {
namespace {

// The file name a binary's .gnu_debuglink gives; empty when it has none (or names a path).
std::string debug_link(const std::string& binary) {
  auto obj = llvm::object::ObjectFile::createObjectFile(binary);
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return "";
  }
  for (const llvm::object::SectionRef& section : obj->getBinary()->sections()) {
    auto section_name = section.getName();
    if (!section_name || *section_name != ".gnu_debuglink") {
      if (!section_name) llvm::consumeError(section_name.takeError());
      continue;
    }
    auto contents = section.getContents();
    if (!contents) {
      llvm::consumeError(contents.takeError());
      return "";
    }
    // The name, NUL-terminated within the section, then padding and a CRC.
    const llvm::StringRef bytes = *contents;
    const std::string link = bytes.take_until([](char c) { return c == '\0'; }).str();
    return link.find('/') == std::string::npos && link != "." && link != ".." ? link : "";
  }
  return "";
}

}  // namespace

std::string_view name(DebugSource s) {
  switch (s) {
    case DebugSource::kBuildIdDir:
      return "the distribution's /usr/lib/debug";
    case DebugSource::kDebugLink:
      return "its .gnu_debuglink";
    case DebugSource::kCache:
      return "a build-id cache";
    case DebugSource::kDebuginfod:
      return "libdebuginfod's client cache";
  }
  return "";
}

std::optional<DebugFile> find_debug_file(const format::BuildId& id, const std::string& name,
                                         const std::string& binary, const CopyPlaces& places) {
  const std::string hex = id.hex();
  std::vector<DebugFile> where = {
      {places.sysroot + distribution_debug_file(id), DebugSource::kBuildIdDir}};
  if (const std::string link = debug_link(binary); !link.empty() && name.starts_with('/')) {
    const std::string dir = name.substr(0, name.rfind('/'));
    for (const std::string& d : {places.sysroot + dir, places.sysroot + dir + "/.debug",
                                 places.sysroot + "/usr/lib/debug" + dir}) {
      where.push_back({absl::StrCat(d, "/", link), DebugSource::kDebugLink});
    }
  }
  // A binary that is its own debug file (not stripped) needs none beside it.
  for (DebugFile& f : where) {
    if (f.path != binary && carries_build_id(f.path, id)) return std::move(f);
  }
  if (auto cached = in_caches(places.caches, id, EntryKind::kDebug); cached && *cached != binary) {
    return DebugFile{*std::move(cached), DebugSource::kCache};
  }
  if (!places.debuginfod_client_cache.empty()) {
    DebugFile f{absl::StrCat(places.debuginfod_client_cache, "/", hex, "/debuginfo"),
                DebugSource::kDebuginfod};
    if (carries_build_id(f.path, id)) return f;
  }
  return std::nullopt;
}

}  // namespace pdfix::resolve
