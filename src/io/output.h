// Where pdfix writes. The output appears only complete: a path is written to a temporary file
// beside it and renamed over it by commit(), and only a regular file is ever replaced so. stdout,
// a device or a FIFO gets the bytes only when they are all known to be good (file mode goes
// through an anonymous temporary file first, because a perf.data header is finished last; a
// regular file on stdout is written in place and cut back to empty on failure). An Output dropped
// without commit() leaves nothing behind.
//
// The writing itself happens on a worker thread, in order, so that reading and rewriting the next
// records overlaps the kernel's copying of the previous ones (where blocks are cloned and little
// is copied, on the caller's thread until a job copies much). The worker is kept a few jobs behind
// the caller: close enough that what it writes is still in the cache. A job gathers pieces (bytes
// of its own, and views of the input) and goes out in one writev, so that bytes the input already
// holds in memory are copied once, by the kernel.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace pdfix::io {

// The name of the temporary file (or directory) an output named `name` is written under until it
// is complete, less its random suffix: ".NAME.pdfix-". Left behind only by a SIGKILL.
std::string temp_prefix(const std::string& name);

// The file a mapping views, and where in it some mapped bytes start.
struct Origin {
  int fd = -1;
  uint64_t offset = 0;
};

class Output {
 public:
  enum class Mode {
    kSeekable,   // file-mode perf.data: the header is patched at the end
    kStreaming,  // pipe-mode perf.data: bytes go out in order
  };
  // `path` "-" is stdout. A new file gets `permissions`: 0600, as perf creates perf.data, for a
  // recording holds command lines, paths and memory contents.
  static absl::StatusOr<std::unique_ptr<Output>> create(const std::string& path, Mode mode,
                                                        mode_t permissions = 0600);
  ~Output();
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  // Errors of earlier writes are reported by a later call, at the latest by commit().
  absl::Status write(std::span<const uint8_t> bytes);
  // The bytes a job gathers before it goes to the worker.
  static constexpr uint64_t kJobBytes = uint64_t{256} << 10;

  // Writes `mapped` (bytes of a file mapping, which must stay mapped until commit() or
  // destruction) straight from where they are. The caller has just read them, so the worker, a
  // step behind, copies them from the cache: less memory traffic than copying them twice.
  // Given their `from`, the whole blocks of a long run are cloned instead (FICLONERANGE) where
  // the filesystem shares blocks between files (XFS, btrfs): nothing is copied at all.
  // `keep` holds the bytes alive instead where they are not a mapping's (an io::Chunk).
  absl::Status write_mapped(std::span<const uint8_t> mapped, Origin from = {},
                            std::shared_ptr<const void> keep = nullptr);
  // Whether runs have been cloned: the caller may then hand longer ones at a time.
  bool sharing_blocks() const { return cloning_.load(std::memory_order_relaxed) == kClones; }
  // Asks, before anything is written, whether this output can share blocks with `input` (a file
  // being read), and remembers the answer: where it can, the reader need not read the untouched
  // runs that will be cloned, only their record headers. Only a file pdfix created is asked.
  void probe_sharing(int input);
  // Overwrites bytes already written (kSeekable only).
  absl::Status patch(uint64_t offset, std::span<const uint8_t> bytes);
  uint64_t position() const { return pos_; }
  // The modification time the finished file gets (a file's, not a pipe's): the input's, for the
  // trust rules read a recording's end from it, and pdfix's output is that recording still.
  void keep_modification_time(const struct timespec& mtime) { mtime_ = mtime; }
  absl::Status commit();

 private:
  // A piece of a job: a view of bytes held elsewhere, or (data null) of the job's own bytes.
  struct Piece {
    const uint8_t* data = nullptr;
    uint64_t offset = 0;  // into Job::bytes, when data is null
    uint64_t len = 0;
    Origin from;  // where the viewed bytes are in a file, for cloning; fd -1 when nowhere
    std::shared_ptr<const void> keep;
  };
  // Consecutive output bytes, written in order.
  struct Job {
    std::vector<uint8_t> bytes;
    std::vector<Piece> pieces;
    uint64_t at = 0;   // the output offset of the first byte
    uint64_t len = 0;  // of all pieces
  };
  // Where the bytes written to fd_ end up, besides fd_ itself.
  struct Where {
    int spool_to = -1;   // fd_ is a temporary file whose bytes go here on commit()
    bool owned = false;  // the descriptor pdfix opened (not stdout) is closed at the end
    bool truncate_on_abort = false;  // fd_ is a regular stdout, cut back to empty on failure
    int temp_slot = -1;              // temp_'s registration with io/cleanup.h
  };
  Output(int fd, std::string target, std::string temp, Where where);
  static absl::StatusOr<std::unique_ptr<Output>> to_fd(int fd, std::string name, Mode mode,
                                                       bool owned);
  absl::Status send_spool();
  absl::Status flush();
  absl::Status enqueue(Job job);
  // Waits until every queued job is done; returns the first error any of them met.
  absl::Status drain();
  void work();
  absl::Status run(const Job& job);
  absl::Status clone_or_write(const uint8_t* data, uint64_t n, Origin from, uint64_t at);
  absl::Status write_all(const uint8_t* p, uint64_t n);
  absl::Status write_vector(std::vector<struct iovec>& iov);

  int fd_;
  std::string target_;  // the final path, or "<stdout>", for renaming and messages
  std::string temp_;    // the temporary path to rename; empty when there is none
  Where where_;
  bool committed_ = false;
  uint64_t pos_ = 0;
  std::optional<struct timespec> mtime_;
  Job job_;  // what the caller is gathering

  // Decided by the first run there is to clone, on the worker; a refusal is final for this
  // output, so a filesystem that cannot share blocks costs one failed ioctl.
  static constexpr int kUntried = 0;
  static constexpr int kClones = 1;
  static constexpr int kRefused = 2;
  std::atomic<int> cloning_{kUntried};
  uint64_t block_ = 0;  // fd_'s filesystem block, once asked (worker only)

  std::mutex mu_;
  std::condition_variable changed_;
  std::deque<Job> queue_;
  bool busy_ = false;
  bool stop_ = false;
  absl::Status error_;
  std::thread worker_;
};

}  // namespace pdfix::io
