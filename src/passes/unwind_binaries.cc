#include "passes/unwind_binaries.h"

#include "absl/strings/str_cat.h"
#include "resolve/cache_layout.h"
#include "resolve/debug_file.h"
#include "resolve/find_copy.h"
#include "store/fetch.h"

namespace pdfix::passes {

UnwindBinaries::UnwindBinaries(const UnwindConfig& config, const Common& common,
                               UnwindReport& report)
    : config_(config), common_(common), report_(report), resolver_(common.resolver) {}

uint32_t UnwindBinaries::binary_of(const transform::Map& m, const transform::Session& s) {
  const format::MmapRecord& f = m.fields;
  const std::string name(f.filename);
  std::optional<format::BuildId> id = m.build_id;
  std::string why;
  if (!id) {
    const resolve::MapQuery query{name, f.misc, f.is_mmap2, f.maj, f.min, f.ino, f.len, f.pid};
    const resolve::Resolution& res = resolver_->resolve(query, recording_facts(s, common_));
    id = res.id;
    why = res.reason;
  }
  const std::string key =
      id ? absl::StrCat(id->hex(), "\n", name) : absl::StrCat("?", f.pid, "\n", name);
  auto [it, added] = index_.try_emplace(key, static_cast<uint32_t>(binaries_.size()));
  if (added) {
    binaries_.push_back({.name = name, .pid = f.pid, .id = id, .why_none = why});
  }
  return it->second;
}

unwind::Code UnwindBinaries::code_at(uint32_t binary, const transform::ProcessTimeline::Map& map,
                                     uint64_t pc, const unwind::RegisterSet& regs) {
  Binary& b = binaries_[binary];
  unwind::Code c;
  c.binary = b.name;
  unwind::CfiTable* cfi = cfi_of(b, regs);
  if (cfi == nullptr) return c;
  const auto vaddr = cfi->vaddr_of_offset(pc - map.start + map.pgoff);
  if (!vaddr) return c;
  c.row = cfi->find(*vaddr);
  if (c.row == nullptr && b.debug_cfi != nullptr) c.row = b.debug_cfi->find(*vaddr);
  return c;
}

unwind::CfiTable* UnwindBinaries::cfi_of(Binary& b, const unwind::RegisterSet& regs) {
  if (b.loaded) return b.cfi.get();
  b.loaded = true;
  if (!b.id) {
    report_.unproven[b.name] = b.why_none.empty() ? "no build-id" : b.why_none;
    return nullptr;
  }
  std::unique_ptr<llvm::MemoryBuffer> image;
  if (b.name == "[vdso]") {
    const auto vdso = resolve::vdso_with_id(*common_.host, *b.id);
    if (!vdso.empty()) {
      image = llvm::MemoryBuffer::getMemBuffer(
          llvm::StringRef(reinterpret_cast<const char*>(vdso.data()), vdso.size()), "[vdso]",
          false);
    }
  } else {
    auto found = resolve::find_copy(*common_.host, {.name = b.name, .id = *b.id, .pids = {b.pid}},
                                    resolver_->copy_places(common_.recording_ended_at));
    if (found) image = read_copy(found->path);
    if (image == nullptr) {
      if (const std::string fetched = fetch(b); !fetched.empty()) {
        image = read_copy(fetched);
      }
    }
  }
  if (image == nullptr) {
    report_.unproven[b.name] = absl::StrCat("no copy with build-id ", b.id->hex());
    return nullptr;
  }
  const std::string copy = image->getBufferIdentifier().str();
  auto table = unwind::CfiTable::build(std::move(image), regs, &cache_);
  if (!table.ok()) {
    report_.unproven[b.name] = std::string(table.status().message());
    return nullptr;
  }
  b.cfi = std::move(*table);
  // Code the binary's own .eh_frame leaves out may have rows in its debug file's .debug_frame.
  if (auto found = resolve::find_debug_file(*b.id, b.name, copy,
                                            resolver_->copy_places(common_.recording_ended_at))) {
    if (auto debug = read_copy(found->path)) {
      if (auto t = unwind::CfiTable::build(std::move(debug), regs, &cache_);
          t.ok() && !(*t)->empty()) {
        b.debug_cfi = std::move(*t);
      }
    }
  }
  return b.cfi.get();
}

std::string UnwindBinaries::fetch(const Binary& b) {
  // A server that could not be reached once is not asked again for every other binary.
  const std::string& cache = resolver_->buildid_dir();
  if (config_.debuginfod_urls.empty() || cache.empty() || !report_.unreachable.empty()) {
    return "";
  }
  auto got = store::fetch_binaries({{.id = *b.id, .name = b.name}},
                                   {.cache = cache,
                                    .client_cache = config_.debuginfod_client_cache,
                                    .urls = config_.debuginfod_urls});
  if (!got.ok()) {
    report_.fetched[b.name] = std::string(got.status().message());
    return "";
  }
  if (got->empty()) return "";
  const store::Fetched& f = got->front();
  const std::string outcome(store::name(f.outcome));
  report_.fetched[b.name] = f.detail.empty() ? outcome : absl::StrCat(outcome, ": ", f.detail);
  if (f.outcome == store::Outcome::kUnreachable) report_.unreachable = f.detail;
  if (!store::in_cache_now(f.outcome)) return "";
  return resolve::cached_file(cache, *b.id, resolve::EntryKind::kElf);
}

std::unique_ptr<llvm::MemoryBuffer> UnwindBinaries::read_copy(const std::string& path) {
  auto file = llvm::MemoryBuffer::getFile(path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  return file ? std::move(*file) : nullptr;
}

}  // namespace pdfix::passes
