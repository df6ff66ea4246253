#include "store/bundle_manifest.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"

namespace pdfix::store {

bool is_inside(std::string_view name) {
  if (name.empty() || name.front() == '/') return false;
  for (absl::string_view part : absl::StrSplit(absl::string_view(name.data(), name.size()), '/')) {
    if (part == "..") return false;
  }
  return true;
}

namespace {

// A bundle beside this one: a plain file name.
bool is_sibling(std::string_view name) {
  return !name.empty() && name != "." && name != ".." && name.find('/') == std::string_view::npos;
}

}  // namespace

std::string bundle_manifest_json(const BundleManifest& manifest) {
  llvm::json::Array slim;
  for (const std::string& name : manifest.slim) slim.push_back(name);
  llvm::json::Object top{
      {"format", 1},
      {"slim", std::move(slim)},
      {"unwind_tables", manifest.unwind_tables},
      {"slim_means", "symbols, unwind tables, notes and debug information; no code or data"}};
  if (!manifest.elsewhere.empty()) {
    llvm::json::Object elsewhere;
    for (const auto& [bundle, names] : manifest.elsewhere) {
      llvm::json::Array held;
      for (const std::string& name : names) held.push_back(name);
      elsewhere[bundle] = std::move(held);
    }
    top["elsewhere"] = std::move(elsewhere);
    top["elsewhere_means"] =
        "files of this recording's binaries held by the bundles of these names beside this one "
        "(pdfix follow --archive keeps each binary once); pdfix unpack takes them from there";
  }
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::formatv("{0:2}", llvm::json::Value(std::move(top))) << "\n";
  return text;
}

absl::StatusOr<BundleManifest> parse_bundle_manifest(std::string_view text) {
  const auto bad = [](const std::string& why) {
    return absl::InvalidArgumentError(absl::StrCat(kBundleManifest, ": ", why));
  };
  auto value = llvm::json::parse(llvm::StringRef(text.data(), text.size()));
  if (!value) return bad(llvm::toString(value.takeError()));
  const llvm::json::Object* top = value->getAsObject();
  const llvm::json::Array* slim = top != nullptr ? top->getArray("slim") : nullptr;
  if (slim == nullptr) return bad("no \"slim\" array");
  BundleManifest manifest;
  manifest.unwind_tables = top->getBoolean("unwind_tables").value_or(true);
  for (const llvm::json::Value& v : *slim) {
    auto name = v.getAsString();
    if (!name || !is_inside(std::string_view(name->data(), name->size()))) {
      return bad("a slim file's name is not a path in the bundle");
    }
    manifest.slim.emplace_back(*name);
  }
  if (const llvm::json::Value* elsewhere = top->get("elsewhere")) {
    const llvm::json::Object* by_bundle = elsewhere->getAsObject();
    if (by_bundle == nullptr) return bad("\"elsewhere\" is not an object");
    for (const auto& [bundle, held] : *by_bundle) {
      if (!is_sibling(std::string_view(bundle.str()))) {
        return bad(absl::StrCat("'", bundle.str(), "' is not the name of a bundle beside it"));
      }
      const llvm::json::Array* names = held.getAsArray();
      if (names == nullptr) return bad("a bundle's files in \"elsewhere\" are not an array");
      std::vector<std::string>& out = manifest.elsewhere[bundle.str()];
      for (const llvm::json::Value& v : *names) {
        auto name = v.getAsString();
        if (!name || !name->starts_with(".debug/") ||
            !is_inside(std::string_view(name->data(), name->size()))) {
          return bad("a file held elsewhere is not a path in .debug");
        }
        out.emplace_back(*name);
      }
    }
  }
  return manifest;
}

}  // namespace pdfix::store
