#include "resolve/host_identity.h"

#include "absl/strings/str_cat.h"
#include "format/machine.h"

namespace pdfix::resolve {

HostIdentity::HostIdentity(const RecordedPlace& recorded, std::optional<int64_t> started_at,
                           const Host& host)
    : recorded_(recorded), started_at_(started_at), host_(host) {}

std::optional<std::string> HostIdentity::elsewhere() const {
  if (recorded_.hostname.empty()) return "the recording names no host";
  if (recorded_.hostname != host_.hostname()) {
    return absl::StrCat("recorded on ", std::string(recorded_.hostname), ", this is ",
                        host_.hostname());
  }
  // Many hosts share a name: the kernel and its boot tell them apart.
  if (const std::string release = host_.kernel_release();
      !recorded_.osrelease.empty() && recorded_.osrelease != release) {
    return absl::StrCat("recorded under kernel ", std::string(recorded_.osrelease),
                        ", this host runs ", release);
  }
  if (const auto running = host_.kernel_build_id()) {
    for (const auto& e : recorded_.table) {
      if (format::machine_of(e.misc, static_cast<uint32_t>(e.pid)) != format::kHostMachine ||
          e.filename != "[kernel.kallsyms]") {
        continue;
      }
      if (auto id = e.build_id(); id && !(*id == *running)) {
        return absl::StrCat("recorded under kernel build ", id->hex(), ", this host runs ",
                            running->hex());
      }
    }
  }
  if (const auto text = host_.kernel_text();
      recorded_.kernel_text && text && *recorded_.kernel_text != *text) {
    return "recorded in another boot (the kernel's KASLR base differs)";
  }
  if (const auto boot = host_.boot_time(); boot && started_at_ && *started_at_ < *boot) {
    return "recorded before this host's last boot";
  }
  return std::nullopt;
}

bool HostIdentity::same_boot() const {
  const auto text = host_.kernel_text();
  return same_host() && recorded_.osrelease == host_.kernel_release() && recorded_.kernel_text &&
         text && *recorded_.kernel_text == *text;
}

}  // namespace pdfix::resolve
