#include "cli/pass_options.h"

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

void CliOptions::each_value(const std::string& name, const std::string& value_name,
                            const std::string& help,
                            std::function<absl::Status(const std::string&)> add) {
  cmd_.add_option_function<std::vector<std::string>>(
          name,
          [name, add = std::move(add)](const std::vector<std::string>& values) {
            for (const std::string& v : values) {
              if (auto s = add(v); !s.ok()) {
                throw CLI::ValidationError(name, std::string(s.message()));
              }
            }
          },
          help)
      ->type_name(value_name)
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void CliOptions::directory(const std::string& name, const std::string& help, std::string& target) {
  if (CLI::Option* declared = cmd_.get_option_no_throw(name)) {
    declared->each([&target](const std::string& v) { target = v; });
    return;
  }
  cmd_.add_option(name, target, help)->check(CLI::ExistingDirectory)->type_name("DIR");
}

void add_search_option(CLI::App& cmd, std::vector<std::string>& search) {
  cmd.add_option("--search", search,
                 "Another root under which the recording's files may be found: a container's "
                 "rootfs, a chroot, an image layer (overlay2's diff/ directories). Repeatable, and "
                 "directories joined by ':' count as several, as overlayfs's lowerdir and `podman "
                 "image inspect` list an image's layers. A file there proves a map only by being "
                 "the inode that was mapped (archive and store: by having the build-id named).")
      ->delimiter(':')
      ->check(CLI::ExistingDirectory)
      ->type_name("DIR")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
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
