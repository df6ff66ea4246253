#include "profile/otlp.h"

#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "opentelemetry/proto/collector/profiles/v1development/profiles_service.pb.h"
#include "profile/arena.h"

namespace pdfix::profile {
namespace {

namespace pb = opentelemetry::proto::profiles::v1development;
namespace common = opentelemetry::proto::common::v1;

// The dictionary's string table: entry 0 is "".
class Strings {
 public:
  explicit Strings(pb::ProfilesDictionary& d) : d_(d) { id(""); }
  int32_t id(const std::string& s) {
    auto [it, added] = index_.try_emplace(s, d_.string_table_size());
    if (added) d_.add_string_table(s);
    return it->second;
  }

 private:
  pb::ProfilesDictionary& d_;
  absl::flat_hash_map<std::string, int32_t> index_;
};

// The dictionary's attribute table: one entry per key and value (a string or an integer).
class Attributes {
 public:
  Attributes(pb::ProfilesDictionary& d, Strings& strings) : d_(d), strings_(strings) {}
  int32_t id(const std::string& key, const std::string& value) {
    auto [it, added] = strings_index_.try_emplace(std::pair(key, value), d_.attribute_table_size());
    if (added) add(key)->set_string_value(value);
    return it->second;
  }
  int32_t id(const std::string& key, int64_t value) {
    auto [it, added] = ints_index_.try_emplace(std::pair(key, value), d_.attribute_table_size());
    if (added) add(key)->set_int_value(value);
    return it->second;
  }

 private:
  common::AnyValue* add(const std::string& key) {
    pb::KeyValueAndUnit* a = d_.add_attribute_table();
    a->set_key_strindex(strings_.id(key));
    return a->mutable_value();
  }
  pb::ProfilesDictionary& d_;
  Strings& strings_;
  std::map<std::pair<std::string, std::string>, int32_t> strings_index_;
  std::map<std::pair<std::string, int64_t>, int32_t> ints_index_;
};

}  // namespace

absl::StatusOr<std::string> to_otlp(const Profile& profile, Locations& locations,
                                    const std::vector<std::string>& htlhashes) {
  // Hundreds of thousands of messages: made in one arena and freed with it.
  google::protobuf::Arena arena(profile_arena());
  auto& request = *google::protobuf::Arena::CreateMessage<
      opentelemetry::proto::collector::profiles::v1development::ExportProfilesServiceRequest>(
      &arena);
  pb::ProfilesDictionary& d = *request.mutable_dictionary();
  Strings strings(d);
  // Entry 0 of every table is its zero value; a link's has the ids' full lengths, all zero.
  d.add_mapping_table();
  d.add_location_table();
  d.add_function_table();
  pb::Link* no_link = d.add_link_table();
  no_link->set_trace_id(std::string(16, '\0'));
  no_link->set_span_id(std::string(8, '\0'));
  d.add_attribute_table();
  d.add_stack_table();
  Attributes attributes(d, strings);

  for (size_t i = 0; i < profile.mappings.size(); ++i) {
    const Mapping& m = profile.mappings[i];
    pb::Mapping* pm = d.add_mapping_table();
    pm->set_memory_start(m.start);
    pm->set_memory_limit(m.limit);
    pm->set_file_offset(m.offset);
    pm->set_filename_strindex(strings.id(m.file));
    if (!m.build_id.empty()) {
      pm->add_attribute_indices(attributes.id("process.executable.build_id.gnu", m.build_id));
    }
    if (i < htlhashes.size() && !htlhashes[i].empty()) {
      pm->add_attribute_indices(attributes.id("process.executable.build_id.htlhash", htlhashes[i]));
    }
  }
  // Stacks first: they name every location the tables must hold.
  std::map<std::vector<uint32_t>, int32_t> stack_index;
  std::vector<int32_t> stack_of;  // by stack, in the order of profile.stacks
  for (size_t i = 0; i < profile.stacks.size(); ++i) {
    const std::span<const uint32_t> frames = locations.of(frames_of(profile.stacks.key(i)));
    auto [it, added] = stack_index.try_emplace(std::vector<uint32_t>(frames.begin(), frames.end()),
                                               d.stack_table_size());
    if (added) {
      pb::Stack* st = d.add_stack_table();
      for (const uint32_t l : it->first) st->add_location_indices(static_cast<int32_t>(l + 1));
    }
    stack_of.push_back(it->second);
  }
  std::map<std::pair<std::string, std::string>, int32_t> function_index;
  for (const Location& l : locations.all()) {
    pb::Location* loc = d.add_location_table();
    loc->set_mapping_index(static_cast<int32_t>(l.mapping));
    loc->set_address(l.address);
    for (const Line& line : l.lines) {
      auto [it, added] =
          function_index.try_emplace({line.system_name, line.file}, d.function_table_size());
      if (added) {
        pb::Function* f = d.add_function_table();
        f->set_name_strindex(strings.id(line.function));
        f->set_system_name_strindex(strings.id(line.system_name));
        f->set_filename_strindex(strings.id(line.file));
      }
      pb::Line* pl = loc->add_lines();
      pl->set_function_index(it->second);
      pl->set_line(line.line);
      pl->set_column(line.column);
    }
  }

  pb::ResourceProfiles* resource = request.add_resource_profiles();
  if (!profile.hostname.empty()) {
    common::KeyValue* host = resource->mutable_resource()->add_attributes();
    host->set_key("host.name");
    host->mutable_value()->set_string_value(profile.hostname);
  }
  pb::ScopeProfiles* scope = resource->add_scope_profiles();
  scope->mutable_scope()->set_name("pdfix");
  const uint64_t duration =
      profile.first_time && profile.last_time ? *profile.last_time - *profile.first_time : 0;
  // One profile per value: each event's samples, then a clock event's nanoseconds.
  for (uint64_t e = 0; e < profile.events.size(); ++e) {
    for (const bool time : {false, true}) {
      if (time && !profile.events[e].clock) continue;
      pb::Profile* p = scope->add_profiles();
      p->mutable_sample_type()->set_type_strindex(
          strings.id(time ? profile.events[e].name + "-time" : profile.events[e].name));
      p->mutable_sample_type()->set_unit_strindex(strings.id(time ? "nanoseconds" : "count"));
      p->set_duration_nano(duration);
      for (size_t i = 0; i < profile.stacks.size(); ++i) {
        const std::span<const uint64_t> key = profile.stacks.key(i);
        const Totals& totals = profile.stacks.totals(i);
        const int32_t stack = stack_of[i];
        if (event_of(key) != e) continue;
        pb::Sample* s = p->add_samples();
        s->set_stack_index(stack);
        if (const uint64_t comm = comm_of(key); comm != 0) {
          s->add_attribute_indices(attributes.id("thread.name", profile.comms[comm - 1]));
        }
        if (const uint64_t pid = pid_of(key); pid != 0) {
          s->add_attribute_indices(attributes.id("process.pid", static_cast<int64_t>(pid - 1)));
        }
        if (const uint64_t tid = tid_of(key); tid != 0) {
          s->add_attribute_indices(attributes.id("thread.id", static_cast<int64_t>(tid - 1)));
        }
        s->add_values(static_cast<int64_t>(time ? totals.period : totals.samples));
      }
    }
  }
  std::string bytes;
  if (!request.SerializeToString(&bytes)) {
    return absl::InternalError("otlp: the profiles did not encode");
  }
  return bytes;
}

}  // namespace pdfix::profile
