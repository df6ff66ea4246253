#include "transform/pipeline.h"

#include <bitset>
#include <memory>
#include <vector>

#include "format/file_header.h"
#include "format/record_type.h"
#include "transform/open_session.h"
#include "transform/reader.h"
#include "transform/writer.h"

namespace pdfix::transform {
namespace {

// Hands each record to one pass, whose output goes on to the next stage.
class Stage : public RecordSink {
 public:
  Stage(Pass& pass, const Session& session, RecordSink& next)
      : pass_(pass), session_(session), next_(next) {}
  absl::Status emit(const RecordRef& r) override { return pass_.rewrite(r, session_, next_); }

 private:
  Pass& pass_;
  const Session& session_;
  RecordSink& next_;
};

constexpr uint64_t kProgressStep = 16ULL << 20;

class Run {
 public:
  Run(io::Input& in, Session& session, std::span<Pass* const> passes,
      const PipelineOptions& options)
      : in_(in), session_(session), passes_(passes), options_(options) {
    for (uint32_t t = 0; t < wanted_.size(); ++t) {
      for (Pass* p : passes_) wanted_[t] = wanted_[t] || p->wants(t);
    }
  }

  absl::Status analyze() {
    bool any = false;
    for (Pass* p : passes_) any = any || p->needs_analysis(session_);
    if (!any || (session_.pipe() && in_.mapped == nullptr)) return absl::OkStatus();
    // The analysis sweep gets a session of its own: pipe-format files teach it their events as
    // they go, and the rewrite sweep must learn them again from the start.
    auto fresh = open_session(in_);
    if (!fresh.ok()) return fresh.status();
    auto reader = make_reader(in_, *fresh, {.expand_compressed = true});
    return sweep(
        *reader,
        [&](const RecordRef& r) -> absl::Status {
          if (r.trailing || (!r.inner && format::is_compressed_type(r.header.type)) ||
              !wanted(r.header.type)) {
            return absl::OkStatus();
          }
          for (Pass* p : passes_) {
            if (!p->needs_analysis(session_)) continue;
            if (auto s = p->analyze(r, *fresh); !s.ok()) return s;
          }
          return absl::OkStatus();
        },
        [](const RecordReader::Span&) { return absl::OkStatus(); });
  }

  absl::Status rewrite(const std::string& out_path) {
    Session& session = session_;
    FeatureEdits edits;
    bool changes = false;
    for (Pass* p : passes_) {
      if (auto s = p->plan(session, edits); !s.ok()) return s;
      changes = changes || p->changes_records();
    }
    const bool streaming = session.pipe();
    auto out = io::Output::create(
        out_path, streaming ? io::Output::Mode::kStreaming : io::Output::Mode::kSeekable);
    if (!out.ok()) return out.status();
    Writer writer(**out, session, in_.mapped.get(),
                  changes ? Writer::Compression::kRecompress : Writer::Compression::kKeep);
    if (auto s = writer.begin(); !s.ok()) return s;

    std::vector<std::unique_ptr<Stage>> stages;
    RecordSink* head = &writer;
    for (size_t i = passes_.size(); i-- > 0;) {
      stages.push_back(std::make_unique<Stage>(*passes_[i], session, *head));
      head = stages.back().get();
    }
    const bool online_analysis = streaming && in_.mapped == nullptr;
    auto reader = make_reader(in_, session, {.expand_compressed = !passes_.empty()});
    absl::Status st = sweep(
        *reader,
        [&](const RecordRef& r) -> absl::Status {
          // Compressed records and a trailing tail are the writer's business, not the passes'.
          // A compressed container only announces the records inside it, which the passes see.
          if (!r.inner && format::is_compressed_type(r.header.type) && !r.trailing) {
            return writer.emit(r);
          }
          if (r.trailing || !wanted(r.header.type)) {
            if (auto s = release_held(stages, writer); !s.ok()) return s;
            return writer.emit(r);
          }
          if (online_analysis) {
            for (Pass* p : passes_) {
              if (!p->needs_analysis(session)) continue;
              if (auto s = p->analyze(r, session); !s.ok()) return s;
            }
          }
          return head->emit(r);
        },
        [&](const RecordReader::Span& span) {
          if (auto s = release_held(stages, writer); !s.ok()) return s;
          return writer.emit_untouched(span.offset, span.size);
        });
    if (!st.ok()) return st;
    // Each pass flushes what it held back into the passes after it.
    for (size_t i = 0; i < passes_.size(); ++i) {
      RecordSink& next = after(i, stages, writer);
      if (auto s = passes_[i]->release(session, next); !s.ok()) return s;
      if (auto s = passes_[i]->finish(session, next, edits); !s.ok()) return s;
    }
    if (auto s = writer.finish(edits); !s.ok()) return s;
    return (*out)->commit();
  }

 private:
  // Where pass i's output goes: the stage of the pass after it, or the writer. `stages` holds the
  // stages last pass first.
  RecordSink& after(size_t i, const std::vector<std::unique_ptr<Stage>>& stages, Writer& writer) {
    if (i + 1 == passes_.size()) return writer;
    return *stages[passes_.size() - 2 - i];
  }

  // Lets every pass that holds records back emit them, first pass first, so that what one
  // releases can be released by the next.
  absl::Status release_held(const std::vector<std::unique_ptr<Stage>>& stages, Writer& writer) {
    for (size_t i = 0; i < passes_.size(); ++i) {
      if (!passes_[i]->holding()) continue;
      if (auto s = passes_[i]->release(session_, after(i, stages, writer)); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  // Calls `fn` on every record; runs of records no pass wants go to `skipped` in one piece.
  template <typename Fn, typename Skip>
  absl::Status sweep(RecordReader& reader, Fn&& fn, Skip&& skipped) {
    uint64_t reported = 0;
    std::bitset<64> kernel_wanted;
    for (uint32_t t = 0; t < kernel_wanted.size(); ++t) kernel_wanted[t] = wanted_[t];
    while (true) {
      if (auto span = reader.skip_unwanted(kernel_wanted); span.size > 0) {
        if (auto s = skipped(span); !s.ok()) return s;
      }
      auto r = reader.next();
      if (!r.ok()) return r.status();
      if (!r->has_value()) break;
      if (auto s = fn(**r); !s.ok()) return s;
      const uint64_t at = reader.position();
      if (options_.progress && at - reported >= kProgressStep) {
        options_.progress(at, reader.end());
        reported = at;
      }
    }
    if (options_.progress) options_.progress(reader.end(), reader.end());
    return absl::OkStatus();
  }

  bool wanted(uint32_t type) const { return type >= wanted_.size() || wanted_[type]; }

  io::Input& in_;
  Session& session_;
  std::bitset<128> wanted_;
  std::span<Pass* const> passes_;
  const PipelineOptions& options_;
};

}  // namespace

absl::Status run_pipeline(io::Input& in, const std::string& out_path, std::span<Pass* const> passes,
                          const PipelineOptions& options) {
  auto session = open_session(in);
  if (!session.ok()) return session.status();
  Run run(in, *session, passes, options);
  if (auto s = run.analyze(); !s.ok()) return s;
  return run.rewrite(out_path);
}

}  // namespace pdfix::transform
