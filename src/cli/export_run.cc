#include "cli/export_run.h"

#include <algorithm>
#include <filesystem>
#include <iostream>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "cli/pass_options.h"
#include "cli/progress.h"
#include "cli/verb.h"
#include "format/utf8.h"
#include "io/output.h"
#include "llvm/Support/JSON.h"
#include "passes/repair.h"
#include "profile/coverage.h"
#include "profile/folded.h"
#include "profile/htlhash.h"
#include "profile/namer.h"
#include "profile/otlp.h"
#include "profile/pprof.h"
#include "store/bundle.h"
#include "store/symfs_layout.h"
#include "transform/open_session.h"
#include "transform/pipeline.h"

namespace pdfix::cli {
namespace {

// The run's summary: what was counted, how much of it has names, and by mapping (of the
// samples whose leaf lies in each) why not.
llvm::json::Object summary(const profile::Profile& p, profile::Locations& l,
                           const profile::Symbolizer* symbolizer, const std::string& format) {
  llvm::json::Array leaves;
  int64_t not_read = 0;
  for (const profile::MappingCoverage& c : profile::leaf_coverage(p, l)) {
    llvm::json::Object o{{"samples", static_cast<int64_t>(c.samples)},
                         {"named", static_cast<int64_t>(c.named)}};
    if (c.mapping == 0) {
      o["file"] = "";
      o["problem"] = "no map covered the address";
    } else {
      const profile::Mapping& m = p.mappings[c.mapping - 1];
      o["file"] = format::escape_invalid_utf8(m.file);
      o["build_id"] = m.build_id;
      const std::string problem = symbolizer != nullptr ? symbolizer->problem(m) : "--no-symbols";
      if (c.named < c.samples && !problem.empty()) {
        o["problem"] = format::escape_invalid_utf8(problem);
        if (symbolizer != nullptr) ++not_read;
      }
    }
    leaves.push_back(std::move(o));
  }
  return llvm::json::Object{{"format", format},
                            {"samples", static_cast<int64_t>(p.samples)},
                            {"samples_not_counted", static_cast<int64_t>(p.not_counted)},
                            {"stacks", static_cast<int64_t>(p.stacks.size())},
                            {"mappings", static_cast<int64_t>(p.mappings.size())},
                            {"locations", static_cast<int64_t>(l.all().size())},
                            {"locations_named", static_cast<int64_t>(l.named())},
                            // Binaries (and kernels) whose sampled frames stay unnamed because
                            // they were not found or not read here: what --strict fails on.
                            {"binaries_not_read", not_read},
                            {"leaves_by_mapping", std::move(leaves)}};
}

// An error reading IN, naming it: the offset alone does not say which file.
absl::Status of_input(const ExportArgs& a, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(a.in == "-" ? "stdin" : a.in, ": ", s.message()));
}

// Whether IN's samples carry stack copies (--call-graph dwarf). A stream's events come as records:
// one is taken to, and what has none goes through the unwinder untouched.
bool user_stacks(io::Input& in) {
  if (in.mapped == nullptr) return true;
  auto session = transform::open_session(in);
  if (!session.ok()) return false;
  return std::any_of(
      session->attrs().begin(), session->attrs().end(),
      [](const format::EventAttr& a) { return (a.sample_type & format::kSampleStackUser) != 0; });
}

// export's settings of the passes' own options: --buildid-dir, which they share (the cache the
// run resolves from, where inject-jit writes its ELF files); the rest as they default.
class ExportOptions : public passes::Options {
 public:
  explicit ExportOptions(const ExportArgs& a) : a_(a) {}
  void value(const std::string& /*name*/, const std::string& /*value_name*/,
             const std::string& /*help*/,
             std::function<absl::Status(const std::string&)> /*set*/) override {}
  void directory(const std::string& name, const std::string& /*help*/,
                 std::string& target) override {
    if (name == "--buildid-dir") target = a_.buildid_dir;
  }

 private:
  const ExportArgs& a_;
};

}  // namespace

std::string export_extension(const std::string& format) {
  if (format == "otlp") return ".otlp";
  if (format == "folded") return ".folded";
  return ".pb.gz";
}

// The summary for people: the totals, then each mapping whose leaves stayed unnamed, most
// samples first, with why.
void say_export(const llvm::json::Object& s, std::ostream& out) {
  const auto n = [&](llvm::StringRef key) { return s.getInteger(key).value_or(0); };
  out << "pdfix export: " << n("samples") << " samples in " << n("stacks") << " stacks, "
      << n("mappings") << " mappings; " << n("locations_named") << " of " << n("locations")
      << " locations named\n";
  int shown = 0;
  for (const llvm::json::Value& v : *s.getArray("leaves_by_mapping")) {
    const llvm::json::Object& o = *v.getAsObject();
    const int64_t samples = o.getInteger("samples").value_or(0);
    const int64_t unnamed = samples - o.getInteger("named").value_or(0);
    if (unnamed == 0 || ++shown > 10) continue;
    const llvm::StringRef file = o.getString("file").value_or("");
    out << "  " << unnamed << " samples unnamed in " << (file.empty() ? "no map" : file.str())
        << ": " << o.getString("problem").value_or("no symbol covers their addresses").str()
        << "\n";
  }
  if (const int64_t not_read = n("binaries_not_read"); not_read > 0) {
    out << "  " << not_read << " sampled binaries not found or not read here (--strict fails)\n";
  }
}

int run_export(const ExportArgs& a, const resolve::Host& host, llvm::json::Object& said,
               std::unique_ptr<profile::Symbolizer>* kept, resolve::IdMemory* ids) {
  const auto failed = [&](const absl::Status& s) { return fail(s, &said); };
  auto in = io::open_input(a.in);
  if (!in.ok()) return failed(of_input(a, in.status()));
  if (auto s = io::refuse_input_as_output(*in, a.out); !s.ok()) return failed(s);
  // OUT is made (a temporary file beside it) before any reading: a bad OUT costs nothing.
  auto out = io::Output::create(a.out, io::Output::Mode::kStreaming);
  if (!out.ok()) return failed(out.status());
  // The maps' build-ids proven as `inject --buildids` proves them: what names the binaries; JIT
  // code's maps naming the ELF files `inject-jit` makes of jitdumps and perf-PID.map files (into
  // the build-id cache, as `fix` does); and DWARF stacks unwound as `unwind` unwinds them, into
  // the callchains the profile reads.
  std::vector<std::unique_ptr<passes::RepairKind>> owned = passes::repair_kinds();
  std::vector<passes::RepairKind*> kinds;
  const bool stacks = user_stacks(*in);
  ExportOptions options(a);
  for (const auto& k : owned) {
    k->declare(options);
    if (k->verb() == "inject" || k->verb() == "inject-jit" || (stacks && k->verb() == "unwind")) {
      kinds.push_back(k.get());
    }
  }
  const passes::Common common = passes::common_for(&*in, a.sysroot, a.search, host, kinds, ids);
  // The binaries are found for --no-symbols too: OTLP names them by their file ids. Made before
  // the recording is read, so that this host's kallsyms is read beside it.
  std::unique_ptr<profile::Symbolizer> own;
  std::unique_ptr<profile::Symbolizer>& symbolizer = kept != nullptr ? *kept : own;
  resolve::CopyPlaces places = common.resolver->copy_places(common.recording_ended_at);
  places.kallsyms = a.kallsyms;
  if (symbolizer == nullptr) {
    symbolizer = std::make_unique<profile::Symbolizer>(host, std::move(places));
  } else {
    symbolizer->next_recording(host, std::move(places));
  }
  if (!a.no_symbols) symbolizer->read_host_kallsyms_ahead();
  // A symbolizer kept for the next recording keeps nothing of this one's host past this run.
  const absl::Cleanup host_done = [&symbolizer] { symbolizer->end_recording(); };
  // A file without a build-id (Go) is named from when the resolver proves it by its inode on the
  // recording's host, or from the copy an unpacked bundle (--buildid-dir DIR/.debug) keeps of it
  // by path and content, under DIR/symfs.
  std::string bundle_dir;
  store::SymfsLayout symfs;
  if (!a.buildid_dir.empty()) {
    std::filesystem::path cache = std::filesystem::path(a.buildid_dir).lexically_normal();
    if (cache.filename().empty()) cache = cache.parent_path();  // "DIR/.debug/"
    bundle_dir = cache.has_parent_path() ? cache.parent_path().string() : ".";
    auto layout = store::read_symfs(bundle_dir);
    if (!layout.ok()) return failed(layout.status());
    symfs = *std::move(layout);
  }
  profile::StackTap tap(
      [&](const format::MmapRecord& m, const transform::Session& s) {
        if (!m.is_mmap2 || m.has_build_id()) return std::string();
        const resolve::MapQuery query{
            std::string(m.filename), m.misc, true, m.maj, m.min, m.ino, m.len, m.pid};
        std::string file = common.resolver->resolve(query, passes::recording_facts(s, common)).file;
        if (file.empty() && !symfs.roots.empty()) {
          file = store::symfs_file_for(bundle_dir, symfs, std::string(m.filename), m.pid);
        }
        return file;
      },
      a.labels);
  // Each frame in a binary is named beside the rest of the recording, from the first stack that
  // holds it.
  std::optional<profile::Namer> namer;
  if (!a.no_symbols) {
    namer.emplace(*symbolizer);
    tap.on_new([&namer](uint64_t mapping, const profile::Mapping& m) { namer->add(mapping, m); },
               [&namer](std::span<const profile::Frame> frames) { namer->name(frames); });
  }
  Progress progress("export");
  auto chain = transform::run_into_tap(*in, chain_of(kinds, common), tap,
                                       {.progress = a.quiet ? nullptr : progress.callback()});
  profile::NamedFrames named;
  if (namer) named = namer->finish();
  if (!chain.ok()) return failed(of_input(a, chain.status()));
  const profile::Profile p = tap.take();
  if (!a.no_symbols) {
    for (const profile::Mapping& m : p.mappings) {
      if (m.kernel && m.file.starts_with("[kernel.kallsyms]")) {
        symbolizer->set_kernel(m);
        break;
      }
    }
  }
  profile::Locations locations(p, a.no_symbols ? nullptr : symbolizer.get(), std::move(named));
  uint64_t event = 0;
  if (!a.event.empty()) {
    while (event < p.events.size() && p.events[event].name != a.event) ++event;
    if (event == p.events.size()) {
      return failed(
          absl::InvalidArgumentError(absl::StrCat("--event ", a.event, ": not sampled in ", a.in)));
    }
  }
  std::string bytes;
  if (a.format == "folded") {
    bytes = profile::to_folded(p, locations, event);
  } else if (a.format == "otlp") {
    std::vector<std::string> htlhashes;
    absl::flat_hash_map<std::string, std::string> by_file;
    for (const profile::Mapping& m : p.mappings) {
      const std::string file = symbolizer->binary_file(m);
      auto [it, added] = by_file.try_emplace(file);
      if (added && !file.empty()) it->second = profile::htlhash_of(file).value_or("");
      htlhashes.push_back(it->second);
    }
    auto otlp = profile::to_otlp(p, locations, htlhashes);
    if (!otlp.ok()) return failed(otlp.status());
    bytes = *std::move(otlp);
  } else {
    auto pprof = profile::to_pprof(p, locations);
    if (!pprof.ok()) return failed(pprof.status());
    bytes = *std::move(pprof);
  }
  if (auto s = (*out)->write({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
      !s.ok()) {
    return failed(s);
  }
  if (auto s = (*out)->commit(); !s.ok()) return failed(s);
  said = summary(p, locations, a.no_symbols ? nullptr : symbolizer.get(), a.format);
  if (p.samples == 0) return kExitIncomplete;
  return a.strict && said.getInteger("binaries_not_read").value_or(0) > 0 ? kExitIncomplete
                                                                          : kExitOk;
}

}  // namespace pdfix::cli
