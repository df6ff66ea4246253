// The kernel's, its modules' and the vdso's ids (Resolver::kernel_image, kernel_module, vdso): what
// the recording's table says, a sysroot's files, and the running kernel's notes and this process's
// vdso only for a recording of this boot (resolve::HostIdentity::same_boot). User files, proven by
// inode, are resolver.cc's.
#include "format/map_kind.h"
#include "resolve/elf_build_id.h"
#include "resolve/kernel_files.h"
#include "resolve/resolver.h"

namespace pdfix::resolve {

using format::MapKind;

Resolution Resolver::kernel_image(const MapQuery& q) {
  if (auto r = from_known_or_table(q, MapKind::kKernel)) return *r;
  if (!config_.sysroot.empty()) {
    const std::string release(facts_.osrelease);
    for (const std::string& p : vmlinux_paths(release)) {
      Resolution r = from_file(config_.sysroot + p, q, /*live=*/false);
      if (r.id) return r;
    }
  }
  if (identity().same_boot()) {
    if (auto id = host_.kernel_build_id()) return {id, "/sys/kernel/notes", ""};
  }
  return {std::nullopt, "", "not found (recording is not of this boot; no table entry)"};
}

Resolution Resolver::kernel_module(const MapQuery& q) {
  if (auto r = from_known_or_table(q, MapKind::kModule)) return *r;
  const bool is_path = !q.filename.empty() && q.filename.front() == '/';
  if (is_path && !config_.sysroot.empty()) {
    Resolution r = from_file(config_.sysroot + q.filename, q, /*live=*/false);
    if (r.id || r.absence != Resolution::Absence::kNoFile) return r;
  }
  if (identity().same_boot()) {
    if (auto id = host_.module_build_id(format::module_name(q.filename))) {
      return {id, "/sys/module notes", ""};
    }
    if (is_path) return from_file(q.filename, q, /*live=*/true);
  }
  return {std::nullopt, "", "not found (recording is not of this boot; no table entry)"};
}

Resolution Resolver::vdso(const MapQuery& q) {
  if (auto r = from_known_or_table(q, MapKind::kVdso)) return *r;
  if (!identity().same_boot()) {
    return {std::nullopt, "",
            "not found (vdso not in the build-id table, recording not of this boot)"};
  }
  // The running kernel maps the same vdso into every process of an ABI, pdfix's own included. A
  // mapping of another length is another ABI's vdso (a 32-bit process's), which pdfix cannot see.
  const std::span<const uint8_t> image = host_.vdso();
  if (image.empty()) {
    return {std::nullopt, "", "not found (no vdso in this process to compare with)"};
  }
  if (image.size() != q.len) {
    return {std::nullopt, "", "not found (vdso of another ABI than this process's)"};
  }
  auto id = build_id_of_elf(image);
  if (id.ok() && id->has_value()) return {*id, "this process's vdso", ""};
  return {std::nullopt, "", "not found (no vdso in this process to compare with)"};
}

}  // namespace pdfix::resolve
