#include <iostream>

#include "cli/keep.h"
#include "cli/verb.h"
#include "llvm/Support/JSON.h"

namespace pdfix::cli {

Verb add_archive(CLI::App& app, const resolve::Host& host) {
  struct Args {
    std::string in;
    std::string bundle;
    bool json = false;
    KeepArgs keep;
  };
  auto a = std::make_shared<Args>();
  CLI::App* cmd = add_command(
      app, "archive",
      {"pdfix archive", "a recording and the binaries its build-ids name, in one bundle",
       "pdfix archive [--hits] [--strict] [--sysroot DIR] [--search DIR]... [--json] IN BUNDLE",
       R"(Writes BUNDLE, one zstd-compressed tar: IN as perf.data, and as .debug every binary
that IN's build-ids name (build-id table, HEADER_BUILD_ID and MMAP2 records), laid out as
perf's build-id cache. Run it on the host that made the recording, after `pdfix fix`, so
that every map carries its id.

A binary goes in only when a copy is proven to be it: a file whose own build-id is the one
named (at the mapped path, under --sysroot or a --search root, while a container lives under
the root of a process that maps it or under an overlay mounted whole, or in perf's build-id
cache), the running kernel's /proc/kallsyms when the running kernel has the kernel's id
(and a vmlinux with that id, from where distributions install one, as
[kernel.kallsyms]/ID/vmlinux), this process's vdso when it has the vdso's id. Modules are stored decompressed. One copy per
id. What cannot be proven is listed as missing, with the reason, and the bundle is still
written. The summary names every binary that samples hit and that will not resolve from the
bundle (no build-id in the recording, or no proven copy), with its share of the samples:
those samples stay raw addresses in reports. A recording that names no binary by build-id
(perf record -B, not yet fixed) gives a bundle nothing resolves from: exit 3, and the advice
to run pdfix fix first.

A file without a build-id of its own (a Go program, by default) goes in by path and content,
under symfs/N/ (one root for each set of files that share no path), only when it is proven
to be the mapped file by its device and inode on the host and boot that recorded and is
unchanged since; `pdfix unpack` prints the perf report --symfs command that reads it.

Unpack with `pdfix unpack BUNDLE DIR` or `tar --zstd -xf BUNDLE -C DIR`; then
`perf --buildid-dir DIR/.debug report -i DIR/perf.data`. A directory of bundles can be
served by elfutils' debuginfod (`debuginfod -Z .tar.zst=zstdcat DIR`), for `pdfix fetch`.

IN is a file or a directory recording; BUNDLE may be '-' for stdout. BUNDLE appears only
complete, mode 0600. The summary goes to stderr; --json to stdout.)",
       exit_status({{kExitIncomplete, kStrictExit}})});
  cmd->add_option("IN", a->in, "The recording (a file or a directory recording).")->required();
  cmd->add_option("BUNDLE", a->bundle, "The bundle to write ('-': stdout).")->required();
  cmd->add_option("--sysroot", a->keep.sysroot,
                  "A copy of the recording host's root: binaries are looked up there.")
      ->check(CLI::ExistingDirectory)
      ->type_name("DIR");
  cmd->add_flag("--json", a->json,
                "The summary as one JSON object on stdout (on stderr when BUNDLE is '-').");
  cmd->add_flag("-v,--verbose", a->keep.verbose, "List every binary kept, with its evidence.");
  add_keep_options(*cmd, a->keep, /*bundle_options=*/true);
  add_with_code_flag(*cmd, a->keep.with_code);
  return {cmd, [a, &host] {
            llvm::json::Object summary;
            const int status =
                keep(a->in, {.bundle = a->bundle}, a->keep, host, {}, a->json ? &summary : nullptr);
            if (status != kExitError && a->json) {
              print_json(std::move(summary), json_stream(a->bundle));
            }
            return status;
          }};
}

}  // namespace pdfix::cli
