#include "store/symfs_layout.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SHA256.h"
#include "store/file_image.h"

namespace pdfix::store {
namespace {

void add_pids(std::vector<uint32_t>& to, const std::vector<uint32_t>& pids) {
  to.insert(to.end(), pids.begin(), pids.end());
  std::sort(to.begin(), to.end());
  to.erase(std::unique(to.begin(), to.end()), to.end());
}

}  // namespace

SymfsLayout symfs_layout(const std::vector<Binary>& files, std::optional<format::BuildId> kernel) {
  SymfsLayout layout{.kernel = kernel};
  for (size_t i = 0; i < files.size(); ++i) {
    const Binary& b = files[i];
    if (b.from != Binary::From::kFile || b.sha256.empty()) continue;
    // The first root without another file at the path; the same content at the same path (one
    // file under two inodes: a copy in an image) is kept once.
    size_t r = 0;
    std::optional<size_t> same;
    for (; r < layout.roots.size(); ++r) {
      const std::vector<SymfsFile>& in = layout.roots[r].files;
      auto at =
          std::find_if(in.begin(), in.end(), [&](const SymfsFile& f) { return f.path == b.name; });
      if (at == in.end()) break;
      if (at->sha256 == b.sha256) {
        same = static_cast<size_t>(at - in.begin());
        break;
      }
    }
    if (r == layout.roots.size()) {
      layout.roots.push_back({absl::StrCat(kSymfsDir, "/", r), {}, {}});
      layout.binaries.emplace_back();
    }
    if (!same) {
      layout.roots[r].files.push_back({b.name, b.sha256});
      layout.binaries[r].push_back(i);
    }
    add_pids(layout.roots[r].pids, b.pids);
  }
  return layout;
}

std::optional<std::string> symfs_entry(const SymfsRoot& root, const std::string& path) {
  if (!path.starts_with('/')) return std::nullopt;
  for (absl::string_view part : absl::StrSplit(absl::string_view(path).substr(1), '/')) {
    if (part.empty() || part == "." || part == "..") return std::nullopt;
  }
  return absl::StrCat(root.dir, path);
}

std::string symfs_file_for(const std::string& dir, const SymfsLayout& layout,
                           const std::string& path, uint32_t pid) {
  for (const SymfsRoot& root : layout.roots) {
    const bool its = std::binary_search(root.pids.begin(), root.pids.end(), pid) ||
                     (root.pids.empty() && layout.roots.size() == 1);
    if (!its) continue;
    for (const SymfsFile& f : root.files) {
      if (f.path != path) continue;
      const std::optional<std::string> entry = symfs_entry(root, path);
      if (!entry) return "";
      const std::string file = absl::StrCat(dir, "/", *entry);
      std::error_code ec;
      return std::filesystem::is_regular_file(std::filesystem::symlink_status(file, ec)) ? file
                                                                                         : "";
    }
  }
  return "";
}

std::string symfs_manifest(const SymfsLayout& layout) {
  llvm::json::Array roots;
  for (const SymfsRoot& r : layout.roots) {
    llvm::json::Array files;
    for (const SymfsFile& f : r.files) {
      files.push_back(llvm::json::Object{{"path", f.path}, {"sha256", f.sha256}});
    }
    llvm::json::Array pids;
    for (uint32_t pid : r.pids) pids.push_back(static_cast<int64_t>(pid));
    roots.push_back(
        llvm::json::Object{{"dir", r.dir}, {"files", std::move(files)}, {"pids", std::move(pids)}});
  }
  llvm::json::Object top{{"roots", std::move(roots)}};
  if (layout.kernel) top["kernel_build_id"] = layout.kernel->hex();
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(top))) << "\n";
  return text;
}

absl::StatusOr<SymfsLayout> parse_symfs_manifest(std::string_view text) {
  auto value = llvm::json::parse(llvm::StringRef(text.data(), text.size()));
  const auto bad = [](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(kSymfsManifest, ": ", why));
  };
  if (!value) return bad(llvm::toString(value.takeError()));
  const llvm::json::Object* top = value->getAsObject();
  const llvm::json::Array* roots = top == nullptr ? nullptr : top->getArray("roots");
  if (roots == nullptr) return bad("no roots");
  SymfsLayout layout;
  for (const llvm::json::Value& v : *roots) {
    const llvm::json::Object* r = v.getAsObject();
    const llvm::json::Array* files = r == nullptr ? nullptr : r->getArray("files");
    const llvm::json::Array* pids = r == nullptr ? nullptr : r->getArray("pids");
    if (files == nullptr || pids == nullptr) return bad("a root without files or pids");
    SymfsRoot root{absl::StrCat(kSymfsDir, "/", layout.roots.size()), {}, {}};
    for (const llvm::json::Value& f : *files) {
      const llvm::json::Object* o = f.getAsObject();
      auto path = o == nullptr ? std::nullopt : o->getString("path");
      auto sha = o == nullptr ? std::nullopt : o->getString("sha256");
      if (!path || !sha) return bad("a file without path or sha256");
      root.files.push_back({path->str(), sha->str()});
    }
    for (const llvm::json::Value& p : *pids) {
      auto pid = p.getAsInteger();
      if (!pid || *pid < 0 || *pid > UINT32_MAX) return bad("a pid that is none");
      root.pids.push_back(static_cast<uint32_t>(*pid));
    }
    layout.roots.push_back(std::move(root));
  }
  if (auto id = top->getString("kernel_build_id")) layout.kernel = format::BuildId::from_hex(*id);
  return layout;
}

std::string sha256_hex(std::span<const uint8_t> bytes, std::span<const uint8_t> mapping) {
  // In steps, each step's pages of a mapped file dropped once hashed.
  constexpr size_t kStep = size_t{8} << 20;
  llvm::SHA256 hash;
  for (size_t at = 0; at < bytes.size(); at += kStep) {
    const std::span<const uint8_t> part = bytes.subspan(at, std::min(kStep, bytes.size() - at));
    hash.update(llvm::ArrayRef(part.data(), part.size()));
    drop_pages(mapping, part);
  }
  const std::array<uint8_t, 32> digest = hash.final();
  return llvm::toHex(digest, /*LowerCase=*/true);
}

}  // namespace pdfix::store
