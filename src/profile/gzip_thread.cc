#include "profile/gzip_thread.h"

#include <google/protobuf/io/gzip_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace pdfix::profile {

GzipThread::GzipThread() : thread_([this] { run(); }) {}

GzipThread::~GzipThread() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  work_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void GzipThread::write(std::string bytes) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    room_.wait(lock, [this] { return queued_.size() < kQueued; });
    queued_.push_back(std::move(bytes));
  }
  work_.notify_one();
}

std::string GzipThread::finish() {
  {
    const std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  work_.notify_one();
  thread_.join();
  return failed_ ? std::string() : std::move(out_);
}

void GzipThread::run() {
  google::protobuf::io::StringOutputStream to_string(&out_);
  google::protobuf::io::GzipOutputStream::Options options;
  options.format = google::protobuf::io::GzipOutputStream::GZIP;
  // The default level takes three times as long for a few percent of size.
  options.compression_level = 1;
  google::protobuf::io::GzipOutputStream gz(&to_string, options);
  for (;;) {
    std::string bytes;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_.wait(lock, [this] { return done_ || !queued_.empty(); });
      if (queued_.empty()) break;
      bytes = std::move(queued_.front());
      queued_.pop_front();
    }
    room_.notify_one();
    for (size_t at = 0; at < bytes.size() && !failed_;) {
      void* room = nullptr;
      int size = 0;
      if (!gz.Next(&room, &size)) {
        failed_ = true;
        break;
      }
      const size_t n = std::min(bytes.size() - at, static_cast<size_t>(size));
      std::memcpy(room, bytes.data() + at, n);
      at += n;
      if (n < static_cast<size_t>(size)) gz.BackUp(static_cast<int>(static_cast<size_t>(size) - n));
    }
  }
  if (!gz.Close()) failed_ = true;
}

}  // namespace pdfix::profile
