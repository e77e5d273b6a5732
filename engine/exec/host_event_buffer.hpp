#pragma once
#include <cstddef>
#include <utility>

#include "core/error.hpp"
#include "exec/backend.hpp"

namespace livedrp {

// One event's bytes in a backend's host memory (pinned for the CUDA backend, so a host-to-device
// copy from it is DMA), freed by the backend that allocated it. The backend must outlive it.
class HostEventBuffer {
 public:
  HostEventBuffer(Backend& backend, std::size_t bytes)
      : backend_(&backend), data_(backend.allocate_host(bytes)) {
    if (!data_ && bytes > 0)
      throw RuntimeFault("cannot allocate " + std::to_string(bytes) +
                         " bytes of host memory for a generated event");
  }
  ~HostEventBuffer() {
    if (data_) backend_->free_host(data_);
  }
  HostEventBuffer(HostEventBuffer&& other) noexcept
      : backend_(other.backend_), data_(std::exchange(other.data_, nullptr)) {}
  HostEventBuffer& operator=(HostEventBuffer&& other) noexcept {
    std::swap(backend_, other.backend_);
    std::swap(data_, other.data_);
    return *this;
  }
  HostEventBuffer(const HostEventBuffer&) = delete;
  HostEventBuffer& operator=(const HostEventBuffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }

 private:
  Backend* backend_;
  void* data_;
};

}  // namespace livedrp
