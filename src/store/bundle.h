// A bundle: one tar, zstd-compressed, holding a recording as `perf.data` and the binaries its
// build-ids name as `.debug`, perf's build-id cache (store/cache_layout.h). `tar --zstd -xf`
// unpacks it as `pdfix unpack` does, and elfutils' debuginfod serves the ELF files in it by
// build-id (`debuginfod -Z .tar.zst=zstdcat DIR`). libarchive writes and reads it.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "io/output.h"
#include "store/bundle_manifest.h"
#include "store/file_image.h"
#include "store/symfs_layout.h"

struct archive;

namespace pdfix::store {

struct LibArchive;
// Where libarchive's output goes (bundle.cc).
struct BundleSink;

class BundleWriter {
 public:
  // `path` "-" is stdout; a file appears only complete, 0600, at commit().
  static absl::StatusOr<std::unique_ptr<BundleWriter>> create(const std::string& path,
                                                              int zstd_level);
  ~BundleWriter();
  BundleWriter(const BundleWriter&) = delete;
  BundleWriter& operator=(const BundleWriter&) = delete;

  absl::Status add_file(const std::string& name, std::span<const uint8_t> bytes, unsigned mode) {
    return add_file(name, FileImage::whole(bytes), mode);
  }
  // A file with holes goes in as a sparse entry (pax, GNU sparse 1.0): its pieces alone.
  absl::Status add_file(const std::string& name, const FileImage& image, unsigned mode);
  absl::Status add_symlink(const std::string& name, const std::string& target);
  absl::Status commit();
  uint64_t bytes_written() const { return out_->position(); }

 private:
  BundleWriter(std::unique_ptr<io::Output> out, const LibArchive& api);
  absl::Status error(const std::string& what);

  std::unique_ptr<io::Output> out_;
  std::unique_ptr<BundleSink> sink_;
  struct archive* tar_ = nullptr;
};

struct UnpackOptions {
  // Where the binaries go: empty for DIR/.debug, else this build-id cache (merged into it).
  std::string merge_cache;
};

struct Unpacked {
  std::string recording;  // DIR/perf.data
  std::string cache;      // DIR/.debug, or the merged cache
  size_t binaries = 0;    // cache entries in the bundle
  size_t added = 0;       // of those, new to a merged cache
  // Files without a build-id, by root (DIR/symfs/<n>, see store/symfs_layout.h), and the kernel's
  // kallsyms in the cache, which a report with --symfs must be given by name ("" if none).
  std::vector<SymfsRoot> symfs;
  std::string kallsyms;
  // The slim copies among the binaries, by their names in the bundle: no code to annotate.
  std::vector<std::string> slim;
  bool unwind_tables = true;  // whether they keep their unwind tables
  // The earlier bundles of its chain its files were taken from, and how many from each.
  std::vector<std::pair<std::string, size_t>> elsewhere;
};

// The roots of files without a build-id that the bundle unpacked at `dir` holds, as its
// symfs/roots.json lists them (an empty layout when it has none).
absl::StatusOr<SymfsLayout> read_symfs(const std::string& dir);

// Unpacks `bundle` ("-": stdin) into `dir`, which must not exist or be empty; it appears only
// complete. Refused: anything that is not a tar holding perf.data, and any entry that would land
// outside `dir` (absolute names, "..", links pointing out, hard links, devices). The files its
// manifest says earlier bundles of its chain hold are taken from those, found beside it; one
// missing is an error.
absl::StatusOr<Unpacked> unpack_bundle(const std::string& bundle, const std::string& dir,
                                       const UnpackOptions& options);

}  // namespace pdfix::store
