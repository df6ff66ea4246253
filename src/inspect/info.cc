#include "inspect/info.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "format/feature.h"
#include "format/record_type.h"
#include "format/unfinished.h"
#include "format/utf8.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_os_ostream.h"
#include "transform/open_session.h"

namespace pdfix::inspect {
namespace {

// A one-line summary of the features pdfix decodes.
std::string summarize(int id, const format::FeatureBytes& f) {
  switch (id) {
    case format::kFeatHostname:
    case format::kFeatOsRelease:
    case format::kFeatVersion:
    case format::kFeatArch:
    case format::kFeatCpuDesc:
    case format::kFeatCpuId: {
      auto s = format::decode_string_feature(f);
      return s.ok() ? *s : std::string(s.status().message());
    }
    case format::kFeatNrCpus: {
      auto n = format::decode_nrcpus(f);
      return n.ok() ? absl::StrCat(n->online, " online of ", n->available) : "";
    }
    case format::kFeatCmdline: {
      auto c = format::decode_cmdline(f);
      return c.ok() ? absl::StrJoin(*c, " ") : "";
    }
    case format::kFeatBuildId: {
      auto t = format::decode_build_id_table(f);
      return t.ok() ? absl::StrCat(t->size(), " entries") : std::string(t.status().message());
    }
    case format::kFeatCompressed: {
      auto c = format::decode_compressed(f);
      return c.ok() ? absl::StrCat(c->type == 1 ? "zstd" : "type " + std::to_string(c->type),
                                   " level ", c->level, " ratio ", c->ratio)
                    : "";
    }
    case format::kFeatAuxtrace: {
      auto a = format::decode_auxtrace_index(f);
      return a.ok() ? absl::StrCat(a->size(), " AUXTRACE records indexed") : "";
    }
    case format::kFeatClockData: {
      auto c = format::decode_clock_data(f);
      return c.ok() ? absl::StrCat("clockid ", c->clockid, " wall ", c->wall_clock_ns, " ns") : "";
    }
    case format::kFeatEMachine: {
      auto m = format::decode_e_machine(f);
      return m.ok() ? absl::StrCat("ELF machine ", m->machine, " flags 0x", absl::Hex(m->flags))
                    : "";
    }
    default:
      return "";
  }
}

}  // namespace

absl::StatusOr<Info> collect_info(io::Input& in) {
  auto session = transform::open_session(in);
  if (!session.ok()) return session.status();
  Info info;
  info.path = in.name;
  const format::FileHeader& h = session->header();
  info.pipe = h.pipe;
  info.big_endian = h.endian.is_big();
  info.header_size = h.header_size;
  info.file_size = in.mapped != nullptr ? in.mapped->bytes().size() : 0;
  info.data_offset = h.pipe ? format::kPipeHeaderSize : h.data.offset;

  auto reader = transform::make_reader(in, *session, {.expand_compressed = true});
  while (true) {
    auto r = reader->next();
    if (!r.ok()) return r.status();
    if (!r->has_value()) break;
    if ((*r)->trailing) {
      info.trailing_bytes = (*r)->bytes.size();
      continue;
    }
    ++info.record_counts[format::record_type_name((*r)->header.type)];
    ++info.records;
  }
  info.data_size = h.pipe ? reader->position() - format::kPipeHeaderSize : h.data.size;
  info.unfinished = h.unfinished;
  info.cut = h.cut;

  // Pipe mode learns events and features while reading, so these come after the records.
  for (size_t i = 0; i < session->attrs().size(); ++i) {
    const auto& a = session->attrs()[i];
    info.events.push_back({session->event_name(i), a.type, a.config,
                           a.size == 0 ? format::kAttrSizeVer0 : a.size, a.sample_type,
                           a.ids.size()});
  }
  if (!h.pipe) {
    for (const auto& f : session->feature_table()) {
      auto bytes = session->feature(f.id);
      info.features.push_back(
          {f.id, format::feature_name(f.id), f.section.size, bytes ? summarize(f.id, *bytes) : ""});
    }
  } else {
    for (int id = 0; id < static_cast<int>(format::kFeatureBits); ++id) {
      if (auto bytes = session->feature(id)) {
        info.features.push_back(
            {id, format::feature_name(id), bytes->bytes.size(), summarize(id, *bytes)});
      }
    }
  }
  return info;
}

void print_info_text(const Info& info, std::ostream& os) {
  os << info.path << ": " << (info.pipe ? "pipe" : "file") << "-mode perf.data, "
     << (info.big_endian ? "big" : "little") << "-endian";
  if (!info.pipe) os << ", " << info.file_size << " bytes";
  os << "\n  header " << info.header_size << " bytes; data at 0x" << std::hex << info.data_offset
     << std::dec << ", " << info.data_size << " bytes\n";
  if (info.unfinished) os << "  " << format::unfinished_note(info.cut) << "\n";
  os << "events (" << info.events.size() << "):\n";
  for (const auto& e : info.events) {
    os << "  " << e.name << "  (type " << e.type << ", config 0x" << std::hex << e.config
       << ", sample_type 0x" << e.sample_type << std::dec << ", attr " << e.attr_size << " bytes, "
       << e.ids << " ids)\n";
  }
  os << "features (" << info.features.size() << "):\n";
  for (const auto& f : info.features) {
    os << "  " << f.name << "  " << f.size << " bytes";
    if (!f.value.empty()) os << "  " << f.value;
    os << "\n";
  }
  os << "records (" << info.records << "):\n";
  for (const auto& [name, n] : info.record_counts) os << "  " << name << "  " << n << "\n";
  if (info.trailing_bytes > 0) {
    os << "after the last record: " << info.trailing_bytes
       << " bytes that are no record (perf ignores them too; kept as they are)\n";
  }
}

void print_info_json(const Info& info, std::ostream& os) {
  llvm::json::Array events;
  for (const auto& e : info.events) {
    events.push_back(llvm::json::Object{{"name", format::escape_invalid_utf8(e.name)},
                                        {"type", static_cast<int64_t>(e.type)},
                                        {"config", static_cast<int64_t>(e.config)},
                                        {"attr_size", static_cast<int64_t>(e.attr_size)},
                                        {"sample_type", static_cast<int64_t>(e.sample_type)},
                                        {"ids", static_cast<int64_t>(e.ids)}});
  }
  llvm::json::Array features;
  for (const auto& f : info.features) {
    llvm::json::Object o{{"id", f.id}, {"name", f.name}, {"size", static_cast<int64_t>(f.size)}};
    if (!f.value.empty()) o["value"] = format::escape_invalid_utf8(f.value);
    features.push_back(std::move(o));
  }
  llvm::json::Object counts;
  for (const auto& [name, n] : info.record_counts) counts[name] = static_cast<int64_t>(n);
  llvm::json::Object root{
      {"path", format::escape_invalid_utf8(info.path)},
      {"mode", info.pipe ? "pipe" : "file"},
      {"byte_order", info.big_endian ? "big" : "little"},
      {"header_size", static_cast<int64_t>(info.header_size)},
      {"data_offset", static_cast<int64_t>(info.data_offset)},
      {"data_size", static_cast<int64_t>(info.data_size)},
      {"unfinished", info.unfinished},
      {"cut_bytes", static_cast<int64_t>(info.cut)},
      {"events", std::move(events)},
      {"features", std::move(features)},
      {"records", static_cast<int64_t>(info.records)},
      {"record_counts", std::move(counts)},
      {"trailing_bytes", static_cast<int64_t>(info.trailing_bytes)},
  };
  if (!info.pipe) root["file_size"] = static_cast<int64_t>(info.file_size);
  llvm::raw_os_ostream out(os);
  out << llvm::formatv("{0:2}", llvm::json::Value(std::move(root))) << "\n";
}

}  // namespace pdfix::inspect
