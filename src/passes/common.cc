#include "absl/strings/strip.h"
#include "io/input.h"
#include "passes/repair.h"

namespace pdfix::passes {

Common common_for(io::Input* in, const std::string& sysroot, const std::vector<std::string>& search,
                  const resolve::Host& host, const std::vector<RepairKind*>& kinds,
                  resolve::IdMemory* ids) {
  Common common{.sysroot = std::string(absl::StripSuffix(sysroot, "/")), .host = &host};
  for (const std::string& root : search) {
    common.search.emplace_back(absl::StripSuffix(root, "/"));
  }
  if (in != nullptr && in->mapped != nullptr) {
    common.survey = std::make_shared<OnDemandSurvey>(*in);
    const io::RecordingSpan span = io::recording_span(*in);
    common.recording_started_at = span.started_at;
    common.recording_ended_at = span.ended_at;
  }
  resolve::ResolverConfig config{.sysroot = common.sysroot, .search = common.search, .ids = ids};
  for (const RepairKind* k : kinds) k->add_to(config);
  if (config.buildid_dir.empty()) config.buildid_dir = host.buildid_cache_path();
  common.resolver = std::make_shared<resolve::Resolver>(std::move(config), host);
  return common;
}

}  // namespace pdfix::passes
