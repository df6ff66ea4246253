// Unwinding DWARF-mode stacks at pre-archive time (`pdfix unwind`, `fix --unwind`): each sample
// that carries the user registers and a copy of the user stack (perf record --call-graph dwarf)
// gets the user frames those give, found with the CFI of the proven binaries, appended to its
// callchain after PERF_CONTEXT_USER; the registers and stack bytes leave the record, and the events
// say so (REGS_USER and STACK_USER off, CALLCHAIN on). No raw process memory stays in OUT.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "passes/repair.h"
#include "resolve/resolver.h"
#include "transform/owned_record.h"
#include "transform/process_timeline.h"
#include "transform/rebuilt.h"
#include "transform/time_order.h"
#include "unwind/arch.h"
#include "unwind/cfi_table.h"

namespace pdfix::passes {

struct UnwindConfig {
  size_t max_frames = 127;  // user frames kept per sample, as perf's default --max-stack
  resolve::ResolverConfig resolver;
  // Servers a binary missing here is fetched from (space-separated URLs); empty: none.
  std::string debuginfod_urls;
  std::string debuginfod_client_cache;
};

struct UnwindReport {
  uint64_t samples = 0;      // with user registers and stack
  uint64_t complete = 0;     // unwound to the outermost frame
  uint64_t partial = 0;      // some callers found, then a stop
  uint64_t failed = 0;       // no caller found
  uint64_t kernel_only = 0;  // no user registers (a kernel thread): the kernel callchain stays
  uint64_t stack_bytes_dropped = 0;
  uint64_t attrs_rewritten = 0;
  uint64_t early_flushes = 0;  // times the records held for their round's turn outgrew the bound
  std::map<std::string, uint64_t> stops;  // why unwinds that were not complete stopped
  // Binaries samples stopped in for want of CFI, or of a proven copy: name -> samples.
  std::map<std::string, uint64_t> lacking_cfi;
  std::map<std::string, std::string> unproven;  // name -> why no proven copy was found
  std::map<std::string, std::string> fetched;   // name -> what debuginfod did for it
  std::string unreachable;  // the debuginfod servers that could not be asked, and why

  // Samples whose unwind stopped in a binary of which no proven copy was found.
  uint64_t stopped_without_binary() const {
    uint64_t n = 0;
    for (const auto& [name, samples] : lacking_cfi) n += unproven.contains(name) ? samples : 0;
    return n;
  }
};

class UnwindStacks : public Repair {
 public:
  UnwindStacks(UnwindConfig config, const Common& common);
  ~UnwindStacks() override;

  std::string_view name() const override { return "unwind"; }
  // Every record: a sample's maps are those of its time, so records wait in file order until
  // perf's ordered events would have applied them (transform/time_order.h), and leave in it.
  bool wants(uint32_t /*type*/) const override { return true; }
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& s,
                       transform::RecordSink& out) override;
  bool holding() const override { return !held_.empty(); }
  absl::Status release(const transform::Session& s, transform::RecordSink& out) override;
  absl::Status finish(const transform::Session& s, transform::RecordSink& out,
                      transform::FeatureEdits& edits) override;
  llvm::json::Object report_json() const override;
  void report_text(std::ostream& out, bool verbose) const override;
  // Callers lost to a binary with no proven copy, or a server that could not be asked.
  bool incomplete() const override {
    return report_.stopped_without_binary() > 0 || !report_.unreachable.empty();
  }

  const UnwindReport& report() const { return report_; }

 private:
  struct Binary {
    std::string name;
    uint32_t pid = 0;  // the first process that mapped it: where /proc/PID/root is looked at
    std::optional<format::BuildId> id;
    std::string why_none;  // why there is no id
    bool loaded = false;
    std::unique_ptr<unwind::CfiTable> cfi;
    // Its separate debug file's, for code the binary's own .eh_frame does not cover.
    std::unique_ptr<unwind::CfiTable> debug_cfi;
  };
  class Lookup;
  // A record waiting for its turn: those before it in the file, and itself if it changes the
  // maps or is a sample to unwind, until its time comes.
  struct Held {
    transform::OwnedRecord record;
    std::optional<std::vector<uint8_t>> anew;  // what stands in its place
    bool ready = false;
  };

  // What a record does in its time: maps change, a sample is unwound.
  absl::Status apply(Held& h, const transform::Session& s);
  absl::Status emit_ready(const transform::Session& s, transform::RecordSink& out);
  void map(const transform::RecordRef& r, const transform::Session& s);
  // The handle of the binary map `m` names, registered on first sight.
  uint32_t binary_of(const transform::Map& m, const transform::Session& s);
  // The sample's bytes with its user stack unwound; nullopt when it is to stay as it is.
  absl::StatusOr<std::optional<std::vector<uint8_t>>> sample(const transform::RecordRef& r,
                                                             const transform::Session& s);
  unwind::CfiTable* cfi_of(Binary& b);
  // The binary from the debuginfod servers into the build-id cache, verified by its id; the
  // cached copy's path, or empty.
  std::string fetch(const Binary& b);
  // A copy already proven to be the binary (resolve::find_copy, find_debug_file, fetch), mapped;
  // nullptr when it cannot be read.
  static std::unique_ptr<llvm::MemoryBuffer> read_copy(const std::string& path);
  // An attr's bytes as they are once its samples are unwound.
  void unwound_attr(uint8_t* attr, uint32_t size, const format::Endian& e) const;

  UnwindConfig config_;
  Common common_;
  std::shared_ptr<resolve::Resolver> resolver_;
  UnwindReport report_;
  std::optional<unwind::RegisterSet> regs_;
  transform::ProcessTimeline maps_;
  std::vector<Binary> binaries_;
  absl::flat_hash_map<std::string, uint32_t> binary_index_;
  transform::Rebuilt rebuilt_;
  std::deque<Held> held_;
  uint64_t held_first_ = 0;  // the sequence number of held_.front()
  uint64_t held_bytes_ = 0;
  uint64_t next_seq_ = 0;
  const transform::Session* session_ = nullptr;  // for records delivered from the queue
  absl::Status delivered_;                       // the first error applying one
  transform::TimeOrder<uint64_t> order_;
};

std::unique_ptr<RepairKind> unwind_stacks_kind();

}  // namespace pdfix::passes
