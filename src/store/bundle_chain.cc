#include "store/bundle_chain.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "llvm/Support/JSON.h"

namespace pdfix::store {

absl::StatusOr<BundleChain> BundleChain::open(const std::string& dir) {
  auto log = io::LockedLog::open(absl::StrCat(dir, "/", kName),
                                 absl::StrCat("another run is writing bundles into ", dir));
  if (!log.ok()) return log.status();
  const std::string text = log->text();
  BundleChain chain(*std::move(log));
  // A bundle a line, as JSON: {"bundle": NAME, "files": [[FILE, SLIM], ...]}. A line cut short by
  // a crash does not parse, and its bundle's files are bundled again.
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    auto value = llvm::json::parse(llvm::StringRef(line.data(), line.size()));
    if (!value) {
      llvm::consumeError(value.takeError());
      continue;
    }
    const llvm::json::Object* o = value->getAsObject();
    const auto bundle = o != nullptr ? o->getString("bundle") : std::nullopt;
    const llvm::json::Array* files = o != nullptr ? o->getArray("files") : nullptr;
    if (!bundle || files == nullptr) continue;
    std::vector<std::pair<std::string, bool>> held;
    for (const llvm::json::Value& f : *files) {
      const llvm::json::Array* pair = f.getAsArray();
      if (pair == nullptr || pair->size() != 2) continue;
      const auto name = (*pair)[0].getAsString();
      const auto slim = (*pair)[1].getAsBoolean();
      if (name && slim) held.emplace_back(name->str(), *slim);
    }
    chain.take(bundle->str(), held);
  }
  return chain;
}

BundleChain::BundleChain(io::LockedLog log) : log_(std::move(log)) {}

void BundleChain::take(const std::string& bundle,
                       const std::vector<std::pair<std::string, bool>>& files) {
  // A bundle written again holds what its last writing did.
  std::erase_if(held_, [&](const auto& e) { return e.second.bundle == bundle; });
  for (const auto& [file, slim] : files) held_.try_emplace(file, HeldFile{bundle, slim});
}

const HeldFile* BundleChain::holder(const std::string& file, const std::string& bundle) const {
  const auto it = held_.find(file);
  return it == held_.end() || it->second.bundle == bundle ? nullptr : &it->second;
}

absl::Status BundleChain::add(const std::string& bundle,
                              const std::vector<std::pair<std::string, bool>>& files) {
  llvm::json::Array list;
  for (const auto& [file, slim] : files) list.push_back(llvm::json::Array{file, slim});
  std::string line;
  llvm::raw_string_ostream os(line);
  os << llvm::json::Value(llvm::json::Object{{"bundle", bundle}, {"files", std::move(list)}})
     << "\n";
  os.flush();
  if (absl::Status s = log_.append(line); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(s.message(), ": what ", bundle, " holds"));
  }
  take(bundle, files);
  return absl::OkStatus();
}

}  // namespace pdfix::store
