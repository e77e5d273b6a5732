#pragma once
// Readers that take a path (.npy, HDF5 constants) are fuzzed through a file that lives in memory
// (memfd_create), named by /proc/self/fd/N: no disk traffic per input, nothing left behind, and
// every reader opens it as any other file.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace livedrp::fuzz {

class MemoryFile {
 public:
  MemoryFile() : fd_(memfd_create("livedrp-fuzz", 0)) {
    if (fd_ < 0) std::abort();  // the target cannot run at all: say so loudly
  }
  ~MemoryFile() { close(fd_); }
  MemoryFile(const MemoryFile&) = delete;
  MemoryFile& operator=(const MemoryFile&) = delete;

  // Replaces the file's contents with `size` bytes at `data`; returns the path to open.
  std::string hold(const std::uint8_t* data, std::size_t size) {
    if (ftruncate(fd_, 0) != 0) std::abort();
    std::size_t written = 0;
    while (written < size) {
      const ssize_t n = pwrite(fd_, data + written, size - written, off_t(written));
      if (n <= 0) std::abort();
      written += std::size_t(n);
    }
    return "/proc/self/fd/" + std::to_string(fd_);
  }

 private:
  int fd_;
};

}  // namespace livedrp::fuzz
