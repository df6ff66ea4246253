// Files without a build-id (Go's programs, by default), kept by path for `perf report --symfs
// ROOT`, which reads a map's file at ROOT + its path when no build-id names it:
//
//   symfs/<n>/<path>       the file, its path without the leading '/'
//   symfs/roots.json       each root's files (path, SHA-256 of the content) and the processes
//                          (pids in the recording) that map them; the kernel's build-id, whose
//                          kallsyms in .debug a report with --symfs must be given by name
//
// perf takes one --symfs per report, and two files at one path (the host's program and a
// container's) cannot share a root: each goes into the first root that has no other file at its
// path, and a report of a root is filtered to the processes of its files.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "format/build_id.h"
#include "store/binaries.h"

namespace pdfix::store {

inline constexpr char kSymfsDir[] = "symfs";
inline constexpr char kSymfsManifest[] = "symfs/roots.json";

struct SymfsFile {
  std::string path;    // the mapped path
  std::string sha256;  // hex, of the content
};

struct SymfsRoot {
  std::string dir;  // "symfs/<n>"
  std::vector<SymfsFile> files;
  std::vector<uint32_t> pids;  // sorted
};

struct SymfsLayout {
  std::vector<SymfsRoot> roots;
  // The binary each file of each root is (its index in the list given), one per (path, content).
  std::vector<std::vector<size_t>> binaries;
  std::optional<format::BuildId> kernel;  // the host kernel's id, when its kallsyms are kept
};

// The roots for `files` (those with a proven copy and a content hash); `kernel`, the host
// kernel's id when its kallsyms are kept.
SymfsLayout symfs_layout(const std::vector<Binary>& files, std::optional<format::BuildId> kernel);

// Where `path` lies in the bundle under `root`; nullopt when it cannot be a path inside one (no
// leading '/', or a "." or ".." component).
std::optional<std::string> symfs_entry(const SymfsRoot& root, const std::string& path);

// The file a bundle unpacked at `dir` (whose manifest is `layout`) keeps for a map of `path` in
// process `pid`: in the root whose processes include `pid` (or the one root, when its processes
// are not listed). The bundle's word, as `perf report --symfs` takes it: the archive proved the
// file by inode when it kept it, and a slim copy no longer has the content its hash names. ""
// when there is none.
std::string symfs_file_for(const std::string& dir, const SymfsLayout& layout,
                           const std::string& path, uint32_t pid);

std::string symfs_manifest(const SymfsLayout& layout);
// The roots a manifest lists; their directories are made anew ("symfs/<n>"), never taken from
// the text, which came with the bundle.
absl::StatusOr<SymfsLayout> parse_symfs_manifest(std::string_view text);

// The SHA-256 of `bytes`, in hex; the pages of the part of them in `mapping` (a mapped file's
// bytes) are dropped as they are hashed (store/file_image.h).
std::string sha256_hex(std::span<const uint8_t> bytes, std::span<const uint8_t> mapping = {});

}  // namespace pdfix::store
