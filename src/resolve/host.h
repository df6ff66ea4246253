// The machine pdfix runs on, as far as it decides what evidence pdfix may take from here: its name,
// the running kernel and its boot, the kernel's and modules' notes, this process's vdso, and where
// perf keeps its build-id cache. Every such fact enters through this interface, read once, so a
// test can give pdfix another host.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "format/build_id.h"
#include "resolve/mountinfo.h"

namespace pdfix::resolve {

class Host {
 public:
  virtual ~Host() = default;
  virtual std::string hostname() const = 0;
  virtual std::string kernel_release() const = 0;
  // The running kernel's _text address (/proc/kallsyms): it moves with KASLR at every boot.
  virtual std::optional<uint64_t> kernel_text() const = 0;
  // The running kernel's build-id (/sys/kernel/notes) and a loaded module's (/sys/module/NAME).
  virtual std::optional<format::BuildId> kernel_build_id() const = 0;
  virtual std::optional<format::BuildId> module_build_id(const std::string& name) const = 0;
  // The vdso the kernel maps into this process, as mapped; empty when there is none.
  virtual std::span<const uint8_t> vdso() const = 0;
  // perf's build-id cache, $PERF_BUILDID_DIR else ~/.debug, whether or not it exists yet (a run
  // may make it: inject-jit does for JIT code); empty without either.
  virtual std::string buildid_cache_path() const = 0;
  // The running kernel's symbol table (/proc/kallsyms); empty when unreadable.
  virtual std::string kallsyms() const = 0;
  // Where libdebuginfod keeps what it fetched: $DEBUGINFOD_CACHE_PATH, else
  // $XDG_CACHE_HOME/debuginfod_client, else ~/.cache/debuginfod_client; empty without HOME.
  virtual std::string debuginfod_client_cache() const = 0;
  // The debuginfod servers this user names: $DEBUGINFOD_URLS (space-separated); empty: none.
  virtual std::string debuginfod_urls() const = 0;
  // A process that lives now: its root directory as seen from here (/proc/PID/root, which reaches
  // into its mount namespace or chroot) and when it started, in nanoseconds since the epoch.
  struct Process {
    std::string root;
    int64_t started_at = 0;
    // Its pid in its own pid namespace (the last of /proc/PID/status's NSpid): the pid a
    // containerised runtime names its perf-PID.map and jit-PID.dump for.
    uint32_t ns_pid = 0;
  };
  virtual std::optional<Process> process(uint32_t pid) const = 0;
  // The filesystem mounted here with device maj:min, as this process's mount table shows it;
  // nullopt when none is (an overlay since unmounted, or mounted only in another namespace).
  virtual std::optional<Mount> mount(uint32_t maj, uint32_t min) const = 0;
  // Every overlay mounted here whole: the roots of the containers that live now.
  virtual std::vector<Mount> overlays() const = 0;
  // When this boot began (/proc/stat btime), in nanoseconds since the epoch.
  virtual std::optional<int64_t> boot_time() const = 0;
  // The same machine with nothing remembered that may change: a run that lasts (follow) asks
  // again for each recording, for mounts, modules and processes come and go. What stays the same
  // until the next boot (the kernel's id, text address and boot time, this process's vdso) may be
  // carried over, and the mounts too while the mount table has not changed.
  virtual std::unique_ptr<Host> anew() const = 0;
};

// The process recorded as `pid`, if the one living under that pid now is it: one that started
// before the recording ended (`ended_at`, when known); a pid is reused.
std::optional<Host::Process> recorded_process(const Host& host, uint32_t pid,
                                              std::optional<int64_t> ended_at);

// This machine. Each fact is read from the system the first time it is asked for; anew() keeps
// what a boot does not change and the mount table until the kernel says it changed.
class LiveHost : public Host {
 public:
  LiveHost();
  std::string hostname() const override;
  std::string kernel_release() const override;
  std::optional<uint64_t> kernel_text() const override;
  std::optional<format::BuildId> kernel_build_id() const override;
  std::optional<format::BuildId> module_build_id(const std::string& name) const override;
  std::span<const uint8_t> vdso() const override;
  std::string buildid_cache_path() const override;
  std::string kallsyms() const override;
  std::string debuginfod_client_cache() const override;
  std::string debuginfod_urls() const override;
  std::optional<Process> process(uint32_t pid) const override;
  std::optional<Mount> mount(uint32_t maj, uint32_t min) const override;
  std::vector<Mount> overlays() const override;
  std::optional<int64_t> boot_time() const override;
  std::unique_ptr<Host> anew() const override;

 private:
  // What stays until the next boot, shared by a host and those made anew from it.
  struct BootFacts {
    std::optional<std::optional<uint64_t>> text;
    std::optional<std::optional<format::BuildId>> kernel_id;
    std::optional<std::span<const uint8_t>> vdso;
    std::optional<std::optional<int64_t>> boot;
  };
  class MountTable;
  explicit LiveHost(std::shared_ptr<BootFacts> boot, std::shared_ptr<MountTable> mounts);
  const std::string& mountinfo() const;
  std::optional<Process> read_process(uint32_t pid) const;
  std::shared_ptr<BootFacts> boot_facts_;
  std::shared_ptr<MountTable> mounts_;
  mutable std::shared_ptr<const std::string> mountinfo_;  // this host's snapshot of mounts_
  mutable std::optional<std::string> hostname_;
  mutable std::optional<std::string> release_;
  mutable std::map<std::string, std::optional<format::BuildId>> module_ids_;
  mutable std::map<uint32_t, std::optional<Process>> processes_;
  mutable std::map<std::pair<uint32_t, uint32_t>, std::optional<Mount>> mounts_by_device_;
};

}  // namespace pdfix::resolve
