#include "transform/pipeline.h"

#include <sys/stat.h>

#include <algorithm>
#include <bitset>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "format/feature.h"
#include "format/record_type.h"
#include "io/output_directory.h"
#include "transform/agreement.h"
#include "transform/open_session.h"
#include "transform/owned_record.h"
#include "transform/reader.h"
#include "transform/rebuilt.h"
#include "transform/tail.h"
#include "transform/writer.h"

namespace pdfix::transform {
namespace {

constexpr uint64_t kProgressStep = 16ULL << 20;

// Sends each record to the writer of the file it came from: one writer for all, or, for a
// directory recording written as one, a writer per file.
class WriterTail : public Tail {
 public:
  explicit WriterTail(std::vector<Writer*> by_part) : by_part_(std::move(by_part)) {}
  absl::Status emit(const RecordRef& r) override { return by_part_[r.part]->emit(r); }
  absl::Status bypass(const RecordRef& r) override { return by_part_[r.part]->emit(r); }
  absl::Status untouched(uint64_t offset, uint64_t size, uint32_t part) override {
    return by_part_[part]->emit_untouched(offset, size, part);
  }

 private:
  std::vector<Writer*> by_part_;
};

// A stream's last stage: its EVENT_DESC record is written anew from the ATTR records that went out
// before it (perf writes the attrs first), when a pass changed them (agreement.h).
class AgreeingTail : public Tail {
 public:
  AgreeingTail(Tail& next, const format::Endian& e) : next_(next), endian_(e) {}
  absl::Status emit(const RecordRef& r) override { return agreed(r, false); }
  absl::Status bypass(const RecordRef& r) override { return agreed(r, true); }
  absl::Status untouched(uint64_t offset, uint64_t size, uint32_t part) override {
    return next_.untouched(offset, size, part);
  }

 private:
  absl::Status agreed(const RecordRef& r, bool bypassing) {
    if (r.header.type == format::kHeaderAttr) agreement_.attr_out(r.bytes, endian_);
    if (r.header.type == format::kHeaderFeature) {
      if (auto anew = agreement_.event_desc(r.bytes, endian_)) {
        return next_.emit(rebuilt_.inserted(*std::move(anew), r, endian_));
      }
    }
    return bypassing ? next_.bypass(r) : next_.emit(r);
  }

  Tail& next_;
  format::Endian endian_;
  StreamAgreement agreement_;
  Rebuilt rebuilt_;
};

// The dry run's end: notes whether the passes changed anything among the records they were given.
class ChangeProbe : public Tail {
 public:
  absl::Status emit(const RecordRef& r) override {
    if (r.original) {
      ++originals_;
    } else {
      rebuilt_ = true;
    }
    return absl::OkStatus();
  }
  absl::Status bypass(const RecordRef& /*r*/) override { return absl::OkStatus(); }
  absl::Status untouched(uint64_t /*offset*/, uint64_t /*size*/, uint32_t /*part*/) override {
    return absl::OkStatus();
  }
  bool changed(uint64_t given) const { return rebuilt_ || originals_ != given; }

 private:
  uint64_t originals_ = 0;
  bool rebuilt_ = false;
};

// Where records go when nothing is written: a tap in front of it sees them all.
class Discard : public Tail {
 public:
  absl::Status emit(const RecordRef& /*r*/) override { return absl::OkStatus(); }
  absl::Status bypass(const RecordRef& /*r*/) override { return absl::OkStatus(); }
  absl::Status untouched(uint64_t /*offset*/, uint64_t /*size*/, uint32_t /*part*/) override {
    return absl::OkStatus();
  }
};

// In a dry run, between a pass and what follows it: tells the observer what the pass changed. A
// record the pass was given is pending until it (or what stands in its place) comes out.
class Watch : public RecordSink {
 public:
  Watch(size_t pass, DryRunObserver& observer, RecordSink& next)
      : pass_(pass), observer_(observer), next_(next) {}
  void given(const RecordRef& r) { pending_.emplace(key(r), OwnedRecord(r)); }
  absl::Status emit(const RecordRef& r) override {
    auto [first, last] = pending_.equal_range(key(r));
    // Passed on as given (an earlier pass's record too), or a map rebuilt in place; every other
    // record a pass makes is inserted.
    auto same = std::find_if(first, last, [&](const auto& p) {
      return std::ranges::equal(p.second.view().bytes, r.bytes);
    });
    if (same != last) {
      pending_.erase(same);
    } else if (r.map != nullptr) {
      auto map = std::find_if(first, last, [](const auto& p) { return p.second.map() != nullptr; });
      const RecordRef before = map != last ? map->second.view() : RecordRef{};
      observer_.changed(pass_, map != last ? &before : nullptr, &r);
      if (map != last) pending_.erase(map);
    } else {
      observer_.changed(pass_, nullptr, &r);
    }
    return next_.emit(r);
  }
  // What never came out was dropped.
  void end() {
    for (const auto& [k, rec] : pending_) {
      const RecordRef before = rec.view();
      observer_.changed(pass_, &before, nullptr);
    }
    pending_.clear();
  }

 private:
  using Key = std::tuple<uint32_t, uint64_t, uint64_t, bool>;
  static Key key(const RecordRef& r) { return {r.part, r.offset, r.inner_offset, r.inner}; }

  size_t pass_;
  DryRunObserver& observer_;
  RecordSink& next_;
  std::multimap<Key, OwnedRecord> pending_;
};

// Hands each record to one pass, whose output goes on to the next stage (through the pass's
// watch in a dry run; a record the pass is not given goes by both).
class Stage : public RecordSink {
 public:
  Stage(Pass& pass, const Session& session, RecordSink& out, RecordSink& next, Watch* watch)
      : pass_(pass), session_(session), out_(out), next_(next), watch_(watch) {}
  absl::Status emit(const RecordRef& r) override {
    if (pass_.wants(r.header.type)) {
      if (watch_ != nullptr) watch_->given(r);
      return pass_.rewrite(r, session_, out_);
    }
    // Another pass's record goes by this one, after what it holds, so that order is kept.
    if (pass_.holding()) {
      if (auto s = pass_.release(session_, out_); !s.ok()) return s;
    }
    return next_.emit(r);
  }

 private:
  Pass& pass_;
  const Session& session_;
  RecordSink& out_;
  RecordSink& next_;
  Watch* watch_;
};

// One sweep of a chain over a recording.
class Sweep {
 public:
  // With an observer, every pass's output is watched, and no record is skipped unseen.
  Sweep(Session& session, PassChain& chain, Tail& tail, DryRunObserver* observer = nullptr)
      : session_(session), chain_(chain), observer_(observer) {
    // What the tail keeps in agreement must reach it as records, not as runs of untouched bytes.
    agreeing_ = session.pipe() && !chain.empty();
    sinks_.resize(chain.size() + 1);
    outs_.resize(chain.size());
    sinks_[chain.size()] = &tail;
    for (size_t i = chain.size(); i-- > 0;) {
      Watch* watch = nullptr;
      outs_[i] = sinks_[i + 1];
      if (observer != nullptr) {
        watches_.push_back(std::make_unique<Watch>(i, *observer, *sinks_[i + 1]));
        watch = watches_.back().get();
        outs_[i] = watch;
      }
      stages_.push_back(
          std::make_unique<Stage>(*chain[i], session, *outs_[i], *sinks_[i + 1], watch));
      sinks_[i] = stages_.back().get();
    }
    for (const auto& p : chain) {
      if (const uint64_t* counter = p->wants_changes()) wants_counters_.push_back(counter);
    }
    ask_wants();
  }

  absl::Status run(RecordReader& reader, Tail& tail, const PipelineOptions& options) {
    uint64_t reported = 0;
    while (true) {
      if (auto span = reader.skip_unwanted(stop_at_); span.size > 0) {
        if (auto s = release_held(); !s.ok()) return s;
        if (auto s = tail.untouched(span.offset, span.size, span.part); !s.ok()) return s;
      }
      auto r = reader.next();
      if (!r.ok()) return r.status();
      if (!r->has_value()) break;
      if (auto s = one(**r, tail); !s.ok()) return s;
      if (wants_changes() != wants_changes_) ask_wants();
      const uint64_t at = reader.position();
      if (options.progress && at - reported >= kProgressStep) {
        options.progress(at, reader.end());
        reported = at;
      }
    }
    if (options.progress) options.progress(reader.end(), reader.end());
    return absl::OkStatus();
  }

  // Each pass flushes what it held back into the passes after it, then finishes.
  absl::Status finish(FeatureEdits& edits) {
    for (size_t i = 0; i < chain_.size(); ++i) {
      if (auto s = chain_[i]->release(session_, *outs_[i]); !s.ok()) return s;
      const FeatureEdits before = observer_ != nullptr ? edits : FeatureEdits{};
      if (auto s = chain_[i]->finish(session_, *outs_[i], edits); !s.ok()) return s;
      if (observer_ == nullptr) continue;
      for (const auto& [feature, bytes] : edits.replace) {
        auto was = before.replace.find(feature);
        if (was == before.replace.end() || was->second != bytes) {
          observer_->feature_replaced(i, feature, bytes);
        }
      }
    }
    for (auto& w : watches_) w->end();
    if (!chain_.empty()) agree_event_desc(session_, edits);
    return absl::OkStatus();
  }

  uint64_t given() const { return given_; }

 private:
  absl::Status one(const RecordRef& r, Tail& tail) {
    if (observer_ != nullptr) observer_->read(r);
    // Compressed records and a trailing tail are the writer's business, not the passes'. A
    // compressed container only announces the records inside it, which the passes see.
    if (!r.inner && format::is_compressed_type(r.header.type) && !r.trailing) {
      return tail.bypass(r);
    }
    if (r.trailing || !wanted(r.header.type)) {
      if (auto s = release_held(); !s.ok()) return s;
      return tail.bypass(r);
    }
    ++given_;
    if (r.header.type != format::kMmap && r.header.type != format::kMmap2) {
      return sinks_.front()->emit(r);
    }
    auto map = session_.learn_map(r);
    if (!map.ok()) return map.status();
    map_ = *std::move(map);
    RecordRef with_map = r;
    with_map.map = &map_;
    return sinks_.front()->emit(with_map);
  }

  // Lets every pass that holds records back emit them, first pass first, so that what one
  // releases can be released by the next.
  absl::Status release_held() {
    for (size_t i = 0; i < chain_.size(); ++i) {
      if (!chain_[i]->holding()) continue;
      if (auto s = chain_[i]->release(session_, *outs_[i]); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  bool wanted(uint32_t type) const { return type >= wanted_.size() || wanted_[type]; }

  uint64_t wants_changes() const {
    uint64_t n = 0;
    for (const uint64_t* counter : wants_counters_) n += *counter;
    return n;
  }
  // Which records the passes want, and so where the reader stops.
  void ask_wants() {
    wants_changes_ = wants_changes();
    for (uint32_t t = 0; t < wanted_.size(); ++t) {
      wanted_[t] = false;
      for (const auto& p : chain_) wanted_[t] = wanted_[t] || p->wants(t);
      stop_at_[t] = wanted_[t] || observer_ != nullptr ||
                    (agreeing_ && (t == format::kHeaderAttr || t == format::kHeaderFeature));
    }
  }

  Session& session_;
  PassChain& chain_;
  std::vector<std::unique_ptr<Stage>> stages_;
  DryRunObserver* observer_;
  std::vector<std::unique_ptr<Watch>> watches_;
  std::vector<RecordSink*> sinks_;  // sinks_[i] feeds pass i; the last is the tail
  std::vector<RecordSink*> outs_;   // where pass i emits: sinks_[i + 1], or its watch
  std::bitset<128> wanted_;
  std::bitset<128> stop_at_;
  std::vector<const uint64_t*> wants_counters_;  // Pass::wants_changes
  uint64_t wants_changes_ = 0;
  bool agreeing_ = false;
  Map map_;
  uint64_t given_ = 0;
};

// The dry run: whether a fresh chain changes any record of this compressed file.
absl::StatusOr<bool> chain_changes_records(io::Input& in, const MakeChain& make_chain,
                                           const PipelineOptions& options) {
  // The dry run gets a session of its own, which learns what the records teach from the start.
  auto session = open_session(in);
  if (!session.ok()) return session.status();
  PassChain chain = make_chain();
  ChangeProbe probe;
  Sweep sweep(*session, chain, probe);
  auto reader = make_reader(in, *session, {.expand_compressed = true});
  if (auto s = sweep.run(*reader, probe, options); !s.ok()) return s;
  FeatureEdits ignored;
  if (auto s = sweep.finish(ignored); !s.ok()) return s;
  return probe.changed(sweep.given());
}

}  // namespace

absl::Status dry_run(io::Input& in, PassChain& chain, DryRunObserver& observer) {
  auto session = open_session(in);
  if (!session.ok()) return session.status();
  observer.begin(*session);
  ChangeProbe sink;
  Sweep sweep(*session, chain, sink, &observer);
  auto reader = make_reader(in, *session, {.expand_compressed = true});
  const absl::Status reading = sweep.run(*reader, sink, {});
  // The passes still decide on what came before a record that could not be read.
  FeatureEdits edits;
  const absl::Status finishing = sweep.finish(edits);
  observer.end(reading.ok() ? finishing : reading);
  return absl::OkStatus();
}

namespace {

// Where a run writes: one Output, or one per file of a directory recording.
struct Outputs {
  std::unique_ptr<io::OutputDirectory> directory;
  std::vector<std::unique_ptr<io::Output>> files;  // `data` (or the one file) first

  absl::Status commit() {
    for (auto& f : files) {
      if (auto s = f->commit(); !s.ok()) return s;
    }
    return directory != nullptr ? directory->commit() : absl::OkStatus();
  }
};

absl::StatusOr<Outputs> create_outputs(const io::Input& in, const std::string& out_path,
                                       bool as_directory, io::Output::Mode mode,
                                       mode_t permissions) {
  if (auto s = io::refuse_input_as_output(in, out_path); !s.ok()) return s;
  Outputs outs;
  if (!as_directory) {
    auto out = io::Output::create(out_path, mode, permissions);
    if (!out.ok()) return out.status();
    outs.files.push_back(*std::move(out));
    return outs;
  }
  if (out_path == "-") {
    return absl::InvalidArgumentError(
        "a directory recording is written as a directory, not to stdout: give --single-file to "
        "write one perf.data");
  }
  auto dir = io::OutputDirectory::create(out_path);
  if (!dir.ok()) return dir.status();
  outs.directory = *std::move(dir);
  std::vector<std::string> names{"data"};
  for (size_t i = 0; i < in.parts.size(); ++i) names.push_back(in.part_name(i));
  for (const std::string& name : names) {
    auto out = outs.directory->file(name, mode, permissions);
    if (!out.ok()) return out.status();
    outs.files.push_back(*std::move(out));
  }
  return outs;
}

}  // namespace

absl::StatusOr<PassChain> run_pipeline(io::Input& in, const std::string& out_path,
                                       const MakeChain& make_chain,
                                       const PipelineOptions& options) {
  auto session = open_session(in);
  if (!session.ok()) return session.status();
  PassChain chain = make_chain ? make_chain() : PassChain{};
  // OUT is checked (and its temporary file made) before any reading: a bad OUT costs nothing.
  // 0600, or the input's permissions where they are stricter.
  mode_t permissions = 0600;
  struct stat st{};
  if (in.mapped != nullptr && fstat(in.mapped->fd(), &st) == 0) permissions &= st.st_mode;
  const bool as_directory = in.directory && !options.single_file;
  auto outs = create_outputs(
      in, out_path, as_directory,
      session->pipe() ? io::Output::Mode::kStreaming : io::Output::Mode::kSeekable, permissions);
  if (!outs.ok()) return outs.status();
  if (in.mapped != nullptr) {
    for (auto& f : outs->files) f->probe_sharing(in.mapped->fd());
  }
  // One file from many: the threads' compressed streams become one.
  const bool merging = in.directory && options.single_file;
  auto compression = Writer::Compression::kRecompress;
  std::optional<uint32_t> compressed_output;
  for (const auto& pass : chain) {
    if (auto t = pass->compressed_output(*session)) compressed_output = t;
  }
  if (compressed_output) {
    // A reader that cannot take the input's form: what is compressed is written anew.
  } else if (chain.empty() && !merging) {
    compression = Writer::Compression::kKeep;
  } else if (session->compressed_file() && in.mapped != nullptr && !merging) {
    auto changes = chain_changes_records(in, make_chain, options);
    if (!changes.ok()) return changes.status();
    if (!*changes) compression = Writer::Compression::kKeep;
  }
  const std::vector<const io::MappedFile*> parts = in.part_views();
  std::vector<std::unique_ptr<Writer>> writers;
  for (size_t i = 0; i < outs->files.size(); ++i) {
    writers.push_back(std::make_unique<Writer>(
        *outs->files[i], *session, in.mapped.get(), compression, parts,
        i == 0 ? Writer::Layout::kRecording : Writer::Layout::kBareRecords));
    if (options.zstd_level != 0) writers.back()->set_zstd_level(options.zstd_level);
    if (compressed_output) writers.back()->set_compressed_output(*compressed_output);
    if (auto s = writers.back()->begin(); !s.ok()) return s;
  }
  std::vector<Writer*> by_part;
  for (size_t p = 0; p <= parts.size(); ++p) {
    by_part.push_back(as_directory ? writers[p].get() : writers.front().get());
  }
  WriterTail writing(by_part);
  std::vector<const io::MappedFile*> by_file{in.mapped.get()};
  by_file.insert(by_file.end(), parts.begin(), parts.end());
  std::optional<TappedTail> tapped;
  if (options.tap != nullptr) tapped.emplace(writing, *options.tap, *session, by_file);
  Tail& written = tapped ? static_cast<Tail&>(*tapped) : writing;
  AgreeingTail agreeing(written, session->endian());
  Tail& tail = session->pipe() && !chain.empty() ? static_cast<Tail&>(agreeing) : written;
  Sweep sweep(*session, chain, tail);
  auto reader = make_reader(
      in, *session, {.expand_compressed = !chain.empty() || merging || options.tap != nullptr});
  if (auto s = sweep.run(*reader, tail, options); !s.ok()) return s;
  FeatureEdits edits;
  if (auto s = sweep.finish(edits); !s.ok()) return s;
  if (options.tap != nullptr) {
    if (auto s = options.tap->end(*session, edits); !s.ok()) return s;
  }
  // A single file holds all the records; readers take HEADER_DIR_FORMAT to mean they do not.
  if (merging) edits.remove.insert(format::kFeatDirFormat);
  for (auto& w : writers) {
    if (auto s = w->finish(edits); !s.ok()) return s;
  }
  // The output is the recording still: it keeps the time the recording ended, which the trust
  // rules read (a file modified after it is not the one mapped), so that fix of fix's output,
  // after the binaries changed, proves no new file.
  if (in.mapped != nullptr && fstat(in.mapped->fd(), &st) == 0) {
    for (auto& f : outs->files) f->keep_modification_time(st.st_mtim);
  }
  if (auto s = outs->commit(); !s.ok()) return s;
  return chain;
}

absl::StatusOr<PassChain> run_into_tap(io::Input& in, const MakeChain& make_chain, RecordTap& tap,
                                       const PipelineOptions& options) {
  auto session = open_session(in);
  if (!session.ok()) return session.status();
  PassChain chain = make_chain ? make_chain() : PassChain{};
  std::vector<const io::MappedFile*> by_file{in.mapped.get()};
  const std::vector<const io::MappedFile*> parts = in.part_views();
  by_file.insert(by_file.end(), parts.begin(), parts.end());
  Discard discard;
  TappedTail tapped(discard, tap, *session, by_file);
  Sweep sweep(*session, chain, tapped);
  auto reader = make_reader(in, *session, {.expand_compressed = true});
  if (auto s = sweep.run(*reader, tapped, options); !s.ok()) return s;
  FeatureEdits edits;
  if (auto s = sweep.finish(edits); !s.ok()) return s;
  if (auto s = tap.end(*session, edits); !s.ok()) return s;
  return chain;
}

}  // namespace pdfix::transform
