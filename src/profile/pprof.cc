#include "profile/pprof.h"

#include <google/protobuf/io/coded_stream.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "io/huge_pages.h"
#include "profile.pb.h"
#include "profile/arena.h"
#include "profile/gzip_thread.h"

namespace pdfix::profile {
namespace {

namespace pb = perftools::profiles;

// The string table: entry 0 is "", as the format requires.
class Strings {
 public:
  explicit Strings(pb::Profile& p) : p_(p) { id(""); }
  int64_t id(const std::string& s) {
    auto [it, added] = index_.try_emplace(s, p_.string_table_size());
    if (added) p_.add_string_table(s);
    return it->second;
  }

 private:
  pb::Profile& p_;
  absl::flat_hash_map<std::string, int64_t> index_;
};

// Whether `file` may be a program: a file, not a shared object (libc.so.6, a JIT's .so).
bool may_be_program(std::string_view file) {
  if (!file.starts_with('/')) return false;
  const std::string_view base = file.substr(file.rfind('/') + 1);
  const size_t so = base.find(".so");
  return so == std::string_view::npos ||
         (so + 3 < base.size() && base[so + 3] != '.' && base[so + 3] != ' ');
}

// The mapping pprof takes for the program profiled (the first: its file heads every report): of
// the program in the most samples' stacks (each counted once a stack; a shared object only when
// no program was sampled), the mapping with the most. nullopt when no user-space binary was.
std::optional<size_t> main_mapping(const Profile& profile) {
  std::vector<uint64_t> in(profile.mappings.size());
  std::vector<size_t> last(profile.mappings.size(), SIZE_MAX);
  absl::flat_hash_map<std::string, uint64_t> by_file;
  for (size_t i = 0; i < profile.stacks.size(); ++i) {
    const std::span<const uint64_t> frames = frames_of(profile.stacks.key(i));
    const uint64_t samples = profile.stacks.totals(i).samples;
    for (size_t f = 0; f + 1 < frames.size(); f += 2) {
      const uint64_t mapping = frame_of(frames, f).mapping;
      if (mapping == 0) continue;
      const size_t m = mapping - 1;
      if (profile.mappings[m].kernel || last[m] == i) continue;
      last[m] = i;
      in[m] += samples;
      by_file[profile.mappings[m].file] += samples;
    }
  }
  std::optional<size_t> best;
  const auto better = [&](size_t a, size_t b) {
    const uint64_t fa = by_file[profile.mappings[a].file];
    const uint64_t fb = by_file[profile.mappings[b].file];
    const bool pa = may_be_program(profile.mappings[a].file);
    const bool pb = may_be_program(profile.mappings[b].file);
    if (pa != pb) return pa;
    return fa != fb ? fa > fb : in[a] > in[b];
  };
  for (size_t m = 0; m < profile.mappings.size(); ++m) {
    if (in[m] > 0 && (!best || better(m, *best))) best = m;
  }
  return best;
}

// The samples go to the compressor in blocks of this much (a dozen a profile of 20 K stacks): few
// enough hand-overs, and small enough that the compression keeps up with the encoding and is left
// little but the rest of the message once the last sample is made (at 256 KiB, pprof's making
// took 4 ms longer on dense: the last block waited for the rest).
constexpr size_t kEncodedBlock = size_t{64} << 10;
// Beyond it, room for the sample that passes it (most are a few dozen bytes).
constexpr size_t kEncodedSlack = size_t{16} << 10;

// A message `m` as field `field` of the message being encoded into `to`.
void append_field(std::string& to, int field, const google::protobuf::MessageLite& m) {
  using Coded = google::protobuf::io::CodedOutputStream;
  const size_t size = m.ByteSizeLong();
  const uint32_t tag = static_cast<uint32_t>(field) << 3 | 2;  // length-delimited
  const size_t at = to.size();
  to.resize(at + Coded::VarintSize32(tag) + Coded::VarintSize64(size) + size);
  auto* p = reinterpret_cast<uint8_t*>(to.data() + at);
  p = Coded::WriteVarint32ToArray(tag, p);
  p = Coded::WriteVarint64ToArray(size, p);
  m.SerializeWithCachedSizesToArray(p);
}

}  // namespace

absl::StatusOr<std::string> to_pprof(const Profile& profile, Locations& locations) {
  // Hundreds of thousands of messages: made in one arena and freed with it.
  google::protobuf::Arena arena(profile_arena());
  pb::Profile& p = *google::protobuf::Arena::CreateMessage<pb::Profile>(&arena);
  Strings strings(p);
  // The value columns: each event's samples, then a clock's nanoseconds.
  std::vector<int> samples_column;
  std::vector<int> time_column;
  for (const SampledEvent& e : profile.events) {
    samples_column.push_back(p.sample_type_size());
    pb::ValueType* count = p.add_sample_type();
    count->set_type(strings.id(e.name));
    count->set_unit(strings.id("count"));
    time_column.push_back(-1);
    if (e.clock) {
      time_column.back() = p.sample_type_size();
      pb::ValueType* time = p.add_sample_type();
      time->set_type(strings.id(e.name + "-time"));
      time->set_unit(strings.id("nanoseconds"));
    }
  }
  if (!profile.events.empty()) p.set_default_sample_type(p.sample_type(0).type());
  const int columns = p.sample_type_size();
  const int64_t comm_key = strings.id("comm");
  const int64_t pid_key = strings.id("pid");
  const int64_t tid_key = strings.id("tid");
  // The samples, most of the profile's bytes, are encoded one by one and compressed beside the
  // making of the next; the rest of the message follows them (a message's fields may come in any
  // order, and a repeated one's elements are taken in the order they come).
  GzipThread gz;
  // Each block's room had at once: their pages were most of the faults of the making.
  const auto block = [] {
    std::string b;
    io::reserve_prefaulted(b, kEncodedBlock + kEncodedSlack);
    return b;
  };
  std::string encoded = block();
  pb::Sample* s = google::protobuf::Arena::CreateMessage<pb::Sample>(&arena);
  for (size_t i = 0; i < profile.stacks.size(); ++i) {
    const std::span<const uint64_t> key = profile.stacks.key(i);
    const Totals& totals = profile.stacks.totals(i);
    s->Clear();
    for (const uint32_t l : locations.of(frames_of(key))) s->add_location_id(l + 1);
    for (int c = 0; c < columns; ++c) s->add_value(0);
    const uint64_t e = event_of(key);
    s->set_value(samples_column[e], static_cast<int64_t>(totals.samples));
    if (time_column[e] >= 0) s->set_value(time_column[e], static_cast<int64_t>(totals.period));
    if (const uint64_t comm = comm_of(key); comm != 0) {
      pb::Label* label = s->add_label();
      label->set_key(comm_key);
      label->set_str(strings.id(profile.comms[comm - 1]));
    }
    for (const auto& [k, v] : {std::pair(pid_key, pid_of(key)), std::pair(tid_key, tid_of(key))}) {
      if (v == 0) continue;
      pb::Label* label = s->add_label();
      label->set_key(k);
      label->set_num(static_cast<int64_t>(v - 1));
    }
    append_field(encoded, pb::Profile::kSampleFieldNumber, *s);
    if (encoded.size() >= kEncodedBlock) gz.write(std::exchange(encoded, block()));
  }
  // Which mappings' frames have names, lines and inline frames.
  std::vector<bool> functions(profile.mappings.size());
  std::vector<bool> inlined(profile.mappings.size());
  std::map<std::pair<std::string, std::string>, uint64_t> function_ids;
  for (size_t i = 0; i < locations.all().size(); ++i) {
    const Location& l = locations.all()[i];
    pb::Location* loc = p.add_location();
    loc->set_id(i + 1);
    loc->set_mapping_id(l.mapping);
    loc->set_address(l.address);
    if (l.mapping != 0 && !l.lines.empty()) {
      functions[l.mapping - 1] = true;
      if (l.lines.size() > 1) inlined[l.mapping - 1] = true;
    }
    for (const Line& line : l.lines) {
      auto [it, added] =
          function_ids.try_emplace({line.system_name, line.file}, function_ids.size() + 1);
      if (added) {
        pb::Function* f = p.add_function();
        f->set_id(it->second);
        f->set_name(strings.id(line.function));
        f->set_system_name(strings.id(line.system_name));
        f->set_filename(strings.id(line.file));
      }
      pb::Line* pl = loc->add_line();
      pl->set_function_id(it->second);
      pl->set_line(line.line);
      pl->set_column(line.column);
    }
  }
  // The main binary first; the ids stay the mappings' indices plus one.
  std::vector<size_t> order;
  const std::optional<size_t> main = main_mapping(profile);
  if (main) order.push_back(*main);
  for (size_t i = 0; i < profile.mappings.size(); ++i) {
    if (i != main) order.push_back(i);
  }
  for (const size_t i : order) {
    const Mapping& m = profile.mappings[i];
    pb::Mapping* pm = p.add_mapping();
    pm->set_id(i + 1);
    pm->set_memory_start(m.start);
    pm->set_memory_limit(m.limit);
    pm->set_file_offset(m.offset);
    pm->set_filename(strings.id(m.file));
    pm->set_build_id(strings.id(m.build_id));
    pm->set_has_functions(functions[i]);
    pm->set_has_filenames(functions[i]);
    pm->set_has_line_numbers(functions[i]);
    pm->set_has_inline_frames(inlined[i]);
  }
  if (profile.first_time && profile.last_time) {
    p.set_duration_nanos(static_cast<int64_t>(*profile.last_time - *profile.first_time));
  }
  if (!profile.perf_version.empty()) {
    p.add_comment(strings.id("perf version " + profile.perf_version));
  }
  if (!profile.command_line.empty()) p.add_comment(strings.id(profile.command_line));
  if (!profile.hostname.empty()) p.add_comment(strings.id("recorded on " + profile.hostname));
  const size_t rest = p.ByteSizeLong();
  io::reserve_prefaulted(encoded, encoded.size() + rest);
  encoded.resize(encoded.size() + rest);
  p.SerializeWithCachedSizesToArray(
      reinterpret_cast<uint8_t*>(encoded.data() + encoded.size() - rest));
  gz.write(std::move(encoded));
  std::string out = gz.finish();
  if (out.empty()) return absl::InternalError("pprof: the profile did not compress");
  return out;
}

}  // namespace pdfix::profile
