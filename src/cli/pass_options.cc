#include "cli/pass_options.h"

#include <fcntl.h>
#include <sys/stat.h>

#include "absl/strings/strip.h"

namespace pdfix::cli {

void CliOptions::value(const std::string& name, const std::string& value_name,
                       const std::string& help,
                       std::function<absl::Status(const std::string&)> set) {
  cmd_.add_option_function<std::string>(
          name,
          [name, set = std::move(set)](const std::string& v) {
            if (auto s = set(v); !s.ok()) {
              throw CLI::ValidationError(name, std::string(s.message()));
            }
          },
          help)
      ->type_name(value_name);
}

void CliOptions::directory(const std::string& name, const std::string& help, std::string& target) {
  cmd_.add_option(name, target, help)->check(CLI::ExistingDirectory)->type_name("DIR");
}

passes::Common common_for(const io::Input& in, const std::string& sysroot,
                          const resolve::Host& host) {
  passes::Common common{std::string(absl::StripSuffix(sysroot, "/")), std::nullopt, std::nullopt,
                        &host};
  if (in.mapped == nullptr) return common;
  // The recording began when its file was created and ended when it was last written: a file
  // changed after that is not the one that was mapped.
  struct statx st{};
  if (statx(in.mapped->fd(), "", AT_EMPTY_PATH, STATX_MTIME | STATX_BTIME, &st) == 0) {
    auto nanos = [](const statx_timestamp& t) {
      return static_cast<int64_t>(t.tv_sec) * 1'000'000'000 + t.tv_nsec;
    };
    common.recording_ended_at = nanos(st.stx_mtime);
    if ((st.stx_mask & STATX_BTIME) != 0) common.recording_started_at = nanos(st.stx_btime);
  }
  return common;
}

transform::MakeChain chain_of(const std::vector<passes::RepairKind*>& kinds,
                              const passes::Common& common) {
  return [kinds, &common] {
    transform::PassChain chain;
    for (const passes::RepairKind* k : kinds) chain.push_back(k->make(common));
    return chain;
  };
}

}  // namespace pdfix::cli
