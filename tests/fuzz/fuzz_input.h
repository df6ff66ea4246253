// The fuzzer's bytes as pdfix's input: a mapped file, or a stream read through PipeStream.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>

#include "io/input.h"

namespace pdfix::fuzz {

class FuzzInput {
 public:
  FuzzInput(const uint8_t* data, size_t size, bool stream) {
    fd_ = memfd_create("fuzz.data", MFD_CLOEXEC);
    if (fd_ < 0) return;
    for (size_t done = 0; done < size;) {
      const ssize_t w = ::write(fd_, data + done, size - done);
      if (w <= 0) return;
      done += static_cast<size_t>(w);
    }
    lseek(fd_, 0, SEEK_SET);
    in_.name = "fuzz.data";
    if (stream) {
      in_.pipe = std::make_unique<io::PipeStream>(fd_, in_.name);
      owned_ = fd_;
      return;
    }
    // The mapping owns the descriptor from here.
    if (auto mapped = io::MappedFile::open_fd(fd_, in_.name); mapped.ok()) {
      in_.mapped = *std::move(mapped);
    }
  }
  ~FuzzInput() {
    in_.pipe.reset();
    if (owned_ >= 0) close(owned_);
  }
  FuzzInput(const FuzzInput&) = delete;
  FuzzInput& operator=(const FuzzInput&) = delete;

  bool ok() const { return in_.mapped != nullptr || in_.pipe != nullptr; }
  io::Input& input() { return in_; }

 private:
  int fd_ = -1;
  int owned_ = -1;
  io::Input in_;
};

}  // namespace pdfix::fuzz
