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

#include "passes/repair.h"
#include "passes/unwind_binaries.h"
#include "passes/unwind_report.h"
#include "transform/look_ahead.h"
#include "transform/owned_record.h"
#include "transform/process_timeline.h"
#include "transform/rebuilt.h"
#include "transform/time_order.h"
#include "unwind/arch.h"
#include "unwind/cfi_table.h"
#include "unwind/unwinder.h"

namespace pdfix::passes {

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
  // The sample's bytes with its user stack unwound; nullopt when it is to stay as it is.
  // The sample with its user stack unwound into its callchain, into `anew`; false when it is not
  // one to unwind (and `anew` is left alone).
  absl::StatusOr<bool> sample(const transform::RecordRef& r, const transform::Session& s,
                              std::vector<uint8_t>& anew);
  // Memory for a record's bytes: one that an emitted record gave back, else new.
  std::vector<uint8_t> spare_bytes();
  void give_back(std::vector<uint8_t> bytes);

  UnwindConfig config_;
  Common common_;
  UnwindReport report_;
  std::optional<unwind::RegisterSet> regs_;
  // A sample's callchain and frames, their memory kept from one sample to the next.
  std::vector<uint64_t> chain_;
  unwind::Unwound unwound_;
  // The memory of held copies and rebuilt samples once emitted: the next ones reuse it, so that a
  // sample costs no allocation once a round's worth is there (bounded as what is held is).
  std::vector<std::vector<uint8_t>> spare_;
  transform::ProcessTimeline maps_;
  // The highest user address the recording has shown so far: what tells aarch64's signatures
  // from address bits (unwind::code_address_mask).
  uint64_t user_highest_ = 0;
  UnwindBinaries binaries_;
  transform::Rebuilt rebuilt_;
  transform::LookAhead<Held> held_;
  uint64_t held_first_ = 0;  // the sequence number of held_.front()
  uint64_t next_seq_ = 0;
  const transform::Session* session_ = nullptr;  // for records delivered from the queue
  absl::Status delivered_;                       // the first error applying one
  transform::TimeOrder<uint64_t> order_;
};

std::unique_ptr<RepairKind> unwind_stacks_kind();

}  // namespace pdfix::passes
