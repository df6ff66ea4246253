// JIT code into the recording: each jitdump a recording's maps name (jit-PID.dump, mapped by the
// runtime as a marker) becomes one ELF file of all its code, and each load and move an MMAP2 of it
// carrying its build-id, at the load's time, in place of the marker and of the process's
// anonymous code maps; a process's /tmp/perf-PID.map becomes a symbol-only ELF file that its
// anonymous code maps are renamed to. The files go into the build-id cache, so that readers and
// bundles find them by id once the dump, the map file and the process are gone.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "jit/dump_file.h"
#include "jit/jit_elf.h"
#include "jit/perf_map.h"
#include "passes/repair.h"
#include "transform/process_timeline.h"
#include "transform/rebuilt.h"

namespace pdfix::passes {

struct InjectJitConfig {
  std::string buildid_dir;            // where the ELF files go
  std::vector<std::string> jit_dirs;  // --jit-dir: dumps and map files copied off the host
};

struct JitReport {
  // One jitdump or map file, found or not.
  struct Source {
    enum class Kind { kJitdump, kPerfMap } kind = Kind::kJitdump;
    std::string name;  // as the recording names it
    uint32_t pid = 0;
    std::string found_at;  // the file read; empty when none was usable
    std::string problem;   // why not, or what was left of it
    std::string build_id;
    std::string elf;  // the ELF file in the cache
    uint64_t functions = 0;
    uint64_t maps = 0;  // MMAP2 records naming the ELF file
    // The record that named it: the marker map, or the process's first anonymous code map.
    uint64_t offset = 0;
    uint32_t part = 0;
    std::string record;
  };
  std::vector<Source> sources;
  // A process with anonymous code whose map file is at none of the places looked: each place, and
  // why it was passed over when a file was there. Its JIT code stays unknown, as it does in perf.
  struct MapFileNotFound {
    uint32_t pid = 0;
    std::vector<std::string> looked_at;
    // The file of the process the places were taken from ("maj:min inode", and whether it is on
    // a mounted overlay); empty when none was known.
    std::string files_on;
  };
  std::vector<MapFileNotFound> map_files_not_found;
  uint64_t dumps_missing = 0;  // named by a marker, not usable: their code stays unknown
  uint64_t anonymous_dropped = 0;
  uint64_t files_added = 0;  // ELF files new to the cache
};

class InjectJit : public Repair {
 public:
  InjectJit(InjectJitConfig config, const Common& common);

  std::string_view name() const override { return "inject-jit"; }
  bool wants(uint32_t type) const override;
  const uint64_t* wants_changes() const override { return &wants_changes_; }
  absl::Status rewrite(const transform::RecordRef& r, const transform::Session& s,
                       transform::RecordSink& out) override;
  absl::Status finish(const transform::Session& s, transform::RecordSink& out,
                      transform::FeatureEdits& edits) override;
  llvm::json::Object report_json() const override;
  void report_text(std::ostream& out, bool verbose) const override;
  bool incomplete() const override { return report_.dumps_missing > 0; }
  std::string cache_written() const override;
  std::vector<transform::PassFinding> findings() const override;

  const JitReport& report() const { return report_; }

 private:
  // A process's map file as an ELF image: its symbols by address, the file's name and id.
  struct MapImage {
    std::string text;  // the map file; the symbols view it
    std::vector<jit::MapSymbol> symbols;
    std::string elf_name;
    format::BuildId id;
    uint64_t base = 0;  // jit::SymbolImage::base
    size_t source = 0;  // in report_.sources
  };

  absl::Status comm(const transform::RecordRef& r, const transform::Session& s,
                    transform::RecordSink& out);
  absl::Status fork(const transform::RecordRef& r, const transform::Session& s,
                    transform::RecordSink& out);
  absl::Status marker(const transform::RecordRef& r, const transform::Session& s,
                      transform::RecordSink& out);
  absl::Status anonymous(const transform::RecordRef& r, const transform::Session& s,
                         transform::RecordSink& out);
  // The map file of `pid`, read and written as ELF once; nullptr when there is none.
  const MapImage* map_image(const transform::RecordRef& r, const transform::Session& s);
  // An MMAP2 of `elf_name` for each load and move of the dump's code, at its time (never before
  // the marker's), in the marker `r`'s process, made to wait for its place (code_maps_); how
  // many.
  uint64_t place_code_maps(const transform::RecordRef& r, const transform::Session& s,
                           const jit::JitDump& dump, const jit::DumpImage& image,
                           const std::string& elf_name, std::optional<uint64_t> marker_time);
  // The code maps whose time the recording has reached (all of them with `all`), written. perf
  // sorts what has a time only within reach of its rounds: it delivers, at each FINISHED_ROUND,
  // what is up to the highest time of the round before. A map written ahead of the recording's
  // time raises that mark, and records of later rounds below it are delivered out of order after
  // everything up to it (every map of the runtime's code to come among them); one written late
  // comes after the samples it names were delivered. So each is written where the recording's
  // time first reaches its own: in a round none before which reached it.
  absl::Status write_code_maps(const transform::Session& s, transform::RecordSink& out, bool all);
  // `bytes` as `name` in the build-id cache.
  absl::Status keep(const std::string& name, const format::BuildId& id,
                    std::span<const uint8_t> bytes, JitReport::Source& source);
  // The trailer of `r` with its pid, tid and time set to those given.
  std::vector<uint8_t> trailer_of(const transform::RecordRef& r, const transform::Session& s,
                                  uint32_t pid, uint32_t tid, uint64_t time) const;
  // Where the dump a marker map names may be read here: under --sysroot, or at each of
  // resolve::places that shows the inode mapped (on the recording's host), then in each
  // --jit-dir. Why other files there were passed over goes to `problems`.
  std::vector<jit::FileCandidate> dump_candidates(const JitMarker& marker, uint32_t pid,
                                                  const transform::Session& s,
                                                  std::vector<std::string>& problems) const;
  // A process's dump, found and checked once: at its marker, or ahead of it, for an anonymous
  // code map that perf applies after the marker but that comes first in the file (file mode).
  struct FoundDump {
    std::optional<jit::DumpFile> file;  // released once its maps are out
    std::string problem;                // why there is none
    uint32_t named_pid = 0;  // the pid its name gives: the process's own, in its namespace
  };
  FoundDump& dump_of(uint32_t pid, const JitMarker& marker, const transform::Session& s);
  // Whether the anonymous code map `r` comes, by time, after its process's marker (the survey's)
  // of a dump that is there: perf applies the dump's maps before it, so it is dropped.
  bool dumped_ahead(const transform::RecordRef& r, const transform::Session& s);
  // Where `pid`'s map file may be read here: under --sysroot; on the recording's host, /tmp and
  // the living process's /tmp; each --jit-dir.
  // `files_on`: what the places were taken from (JitReport::MapFileNotFound).
  std::vector<jit::FileCandidate> map_candidates(uint32_t pid, const transform::Session& s,
                                                 std::string& files_on) const;
  bool recorded_here(const transform::Session& s) const;

  InjectJitConfig config_;
  const Common& common_;
  JitReport report_;
  // What is kept of a process belongs to the image it runs (transform/process_timeline.h): an exec,
  // or a new process under a reused pid, begins another.
  using ProcessImage = std::pair<uint32_t, uint64_t>;  // pid, ProcessTimeline::image
  ProcessImage image_of(uint32_t pid) const { return {pid, timeline_.image(pid)}; }
  // A file map of each process (naming its file in mapped_files_), the forks and the execs.
  transform::ProcessTimeline timeline_;
  std::vector<resolve::Inode> mapped_files_;
  std::map<resolve::Inode, uint32_t> file_index_;  // in mapped_files_
  absl::flat_hash_set<ProcessImage> dumped_;
  absl::flat_hash_map<ProcessImage, FoundDump> dumps_;
  absl::flat_hash_set<std::pair<ProcessImage, std::string>> dumps_seen_;  // each marker's path
  absl::flat_hash_map<ProcessImage, std::unique_ptr<MapImage>> map_images_;

  // A code map waiting for the recording's time to reach its own.
  struct CodeMap {
    format::MmapRecord fields;  // its filename one of elf_names_
    format::BuildId id;
    std::vector<uint8_t> trailer;
    transform::RecordRef marker;  // where it is placed: its bytes and map left out
  };
  std::multimap<uint64_t, CodeMap> code_maps_;  // by time
  std::deque<std::string> elf_names_;
  uint64_t reached_ = 0;  // the highest time of the records seen
  uint32_t part_ = 0;     // of the record last seen
  uint64_t wants_changes_ = 0;

  transform::Rebuilt rebuilt_;
};

std::unique_ptr<RepairKind> inject_jit_kind();

}  // namespace pdfix::passes
