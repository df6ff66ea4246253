// `pdfix check`: a lint that changes nothing. It dry-runs the repair chain `pdfix fix` would run
// and reports, record by record, what each pass would change and why that matters, plus what no
// pass changes but a reader trips over (bytes appended, a cut-off record, what older perf refuses).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "io/input.h"
#include "transform/pass.h"

namespace pdfix::inspect {

struct Finding {
  // An error makes perf show wrong data or lose some; a note is worth knowing before archiving.
  enum class Severity { kError, kNote };
  Severity severity = Severity::kNote;
  uint64_t offset = 0;  // of the record in `file` (inside compressed data: of its container)
  std::string record;   // "MMAP2", "BUILD_ID feature", ...
  std::string what;
  std::string fixed_by;  // the verb that repairs it; empty when none can
  uint64_t count = 1;    // notes alike on one file are told once, counted
  std::string file;      // of a directory recording: "data.0", ...; empty for `data`
  // What stays wrong or unanalysable after `pdfix fix`: an error no pass repairs, or a file that
  // samples hit and for which fix proves no build-id.
  bool unrecoverable = false;
};

struct CheckReport {
  std::vector<Finding> findings;  // by offset
  uint64_t errors() const;
  uint64_t notes() const;

  // Whether the recording is ready to archive: nothing for fix to do, nothing unrecoverable.
  // (Notes about what older perf versions refuse do not count: that is compat --for's business.)
  enum class Verdict { kReady, kFixable, kUnrecoverable };
  Verdict verdict() const;
};

// "ready", "fixable", "unrecoverable".
const char* verdict_name(CheckReport::Verdict v);

// Dry-runs `chain` (the passes of `pdfix fix`, in order) over `in`; `fixers` says how a user runs
// each pass ("inject --buildids"). Fails only when `in` cannot be read as a recording at all; a
// record that cannot be read later is an error finding.
absl::StatusOr<CheckReport> check(io::Input& in, transform::PassChain chain,
                                  std::vector<std::string> fixers);

void print_check_text(const CheckReport& report, std::ostream& os);
void print_check_json(const CheckReport& report, std::ostream& os);

}  // namespace pdfix::inspect
