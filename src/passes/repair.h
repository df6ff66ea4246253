// What the command line asks of the repair passes, and how each is made from it. A repair pass is
// a transform::Pass that reports what it did and declares its own options; everything the CLI
// knows of a pass comes from its RepairKind (src/passes/registry.cc lists them).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "format/machine.h"
#include "io/input.h"
#include "passes/map_survey.h"
#include "resolve/host.h"
#include "resolve/recorded_dsos.h"
#include "resolve/resolver.h"
#include "transform/look_ahead.h"
#include "transform/pass.h"

// Declared only: llvm/Support/JSON.h is a second of parsing, paid by the units that use it.
namespace llvm::json {
class Object;
}  // namespace llvm::json

namespace pdfix::passes {

// Settings more than one pass reads, and the host the passes may take evidence from.
struct Common {
  std::string sysroot;  // a copy of the recording host's root; empty: none
  // More roots to find the files of chroots and containers under (--search), proven by inode.
  std::vector<std::string> search;
  // When the input was created and last written (nanoseconds since the epoch): the recording's
  // time span.
  std::optional<int64_t> recording_started_at;
  std::optional<int64_t> recording_ended_at;
  const resolve::Host* host = nullptr;
  // What the whole recording maps, swept when first asked for (nullptr: none, as for a pass run
  // alone by a test).
  std::shared_ptr<OnDemandSurvey> survey;
  // The run's one resolver: every pass asks it, so that a file is read and proven once and every
  // pass has the same answer. nullptr: each pass makes its own (a pass run alone by a test).
  std::shared_ptr<resolve::Resolver> resolver;
  // The bound of every pass's look-ahead (transform/look_ahead.h); tests make it small.
  uint64_t look_ahead_bytes = transform::kLookAheadBytes;
};

// The inodes of the whole recording, swept when the resolver first needs them; none for a stream.
inline std::function<const resolve::PathInodes*()> survey_inodes(const Common& common) {
  if (common.survey == nullptr) return nullptr;
  return [survey = common.survey]() -> const resolve::PathInodes* {
    const MapSurvey* s = survey->get();
    return s != nullptr ? &s->inodes() : nullptr;
  };
}

// What the recording says of where and when it was made, as the resolver takes it: the one
// assembly, for every pass and for what keeps a recording's binaries. Where: what the recording
// says (`place`: the session's header and table, or a listing's copy of them). When: the run's
// input, never a file written since (fix --archive keeps from its output). The survey of the
// whole recording where there is one.
inline resolve::RecordingFacts recording_facts(const resolve::RecordedPlace& place,
                                               const Common& common) {
  return {place.hostname,
          place.osrelease,
          place.kernel_text,
          common.recording_started_at,
          common.recording_ended_at,
          place.table,
          survey_inodes(common)};
}
// What the session's header and build-id table say of where it was made.
inline resolve::RecordedPlace recorded_place(const transform::Session& s) {
  return {s.hostname(), s.osrelease(), s.kernel_start(format::kHostMachine),
          s.build_id_table().entries};
}
inline resolve::RecordingFacts recording_facts(const transform::Session& s, const Common& common) {
  return recording_facts(recorded_place(s), common);
}
inline resolve::RecordingFacts recording_facts(const resolve::RecordedDsos& listing,
                                               const Common& common) {
  return recording_facts({listing.hostname, listing.osrelease, listing.kernel_text, listing.table},
                         common);
}

class Repair : public transform::Pass {
 public:
  // What the pass did: JSON for scripts, a few lines of text for people.
  virtual llvm::json::Object report_json() const = 0;
  virtual void report_text(std::ostream& out, bool verbose) const = 0;
  // Done, but not all that was asked for is there (its RepairKind::incomplete_exit says when).
  virtual bool incomplete() const { return false; }
  // A build-id cache this pass put files into that OUT names: `fix --archive` and `--store` keep
  // them from there. Empty: none.
  virtual std::string cache_written() const { return ""; }
};

// How a pass declares its options without knowing the command-line parser.
class Options {
 public:
  virtual ~Options() = default;
  virtual void value(const std::string& name, const std::string& value_name,
                     const std::string& help,
                     std::function<absl::Status(const std::string& value)> set) = 0;
  // An option that may be given again: `add` is called with each value, in order.
  virtual void each_value(const std::string& name, const std::string& value_name,
                          const std::string& help,
                          std::function<absl::Status(const std::string& value)> add) {
    value(name, value_name, help, std::move(add));
  }
  // A directory that must exist. Passes that declare the same name share its value.
  virtual void directory(const std::string& name, const std::string& help, std::string& target) = 0;
};

// One repair pass as the command line knows it. Each keeps the config its options fill in, and
// makes as many passes from it as the pipeline asks for.
class RepairKind {
 public:
  virtual ~RepairKind() = default;
  virtual std::string verb() const = 0;        // "fix-module-sizes"
  virtual std::string report_key() const = 0;  // its object in `fix --json`
  virtual std::string summary() const = 0;     // one line for `pdfix --help`
  virtual std::string description() const = 0;
  // A switch the verb requires, naming what it does ("--buildids"); empty: none.
  virtual std::string required_switch() const { return ""; }
  // An option its own verb requires ("--for"), which `fix` may go without; empty: none.
  virtual std::string required_option() const { return ""; }
  // A pass `fix` runs only when this switch asks for it ("--unwind"); empty: fix always runs it.
  virtual std::string fix_switch() const { return ""; }
  // A switch that makes `fix` leave this pass out ("--no-jit"); empty: none.
  virtual std::string fix_skip_switch() const { return ""; }
  // When the verb exits 3, done but not all there (for its --help); empty: it never does.
  virtual std::string incomplete_exit() const { return ""; }
  virtual void declare(Options& /*options*/) {}
  // What the pass's options add to the run's one resolver (--known-build-ids, --buildid-dir).
  virtual void add_to(resolve::ResolverConfig& /*config*/) const {}
  virtual std::unique_ptr<Repair> make(const Common& common) const = 0;
};

// Every repair pass, in the order `pdfix fix` runs them: each sees what the ones before did.
std::vector<std::unique_ptr<RepairKind>> repair_kinds();

// The settings for a run of `kinds` over `in` (nullptr: a stream, or a test without a file): the
// sysroot, the --search roots, the recording's time span, which the trust rules compare file and
// cache times with, the survey of the whole recording, and the run's one resolver. Its config is
// assembled here and nowhere else: --sysroot, --search, what each pass's options add (add_to), and
// perf's cache where this host keeps it (made in the same run by inject-jit for JIT code).
// `ids`: the build-ids the run's earlier recordings read (null: none kept).
Common common_for(io::Input* in, const std::string& sysroot, const std::vector<std::string>& search,
                  const resolve::Host& host, const std::vector<RepairKind*>& kinds,
                  resolve::IdMemory* ids = nullptr);

}  // namespace pdfix::passes
