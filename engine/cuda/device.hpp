#pragma once
// Thin owners of CUDA runtime objects (device memory, pinned host memory, streams, events) for code
// compiled by the plain C++ compiler: no CUDA header is included here, so engine/exec and the tools
// can use the GPU through this header alone. Every call's return code is checked; a failure throws
// RuntimeFault naming the call, its arguments that matter, and CUDA's own text for the error.
//
// Only set-up (constructors) allocates or blocks; the per-event calls (copy_async, Event::record,
// Event::query) only enqueue work or ask whether it is done.
#include <cstddef>
#include <optional>
#include <string>

// The runtime's own opaque types (cudaStream_t is CUstream_st*, cudaEvent_t is CUevent_st*).
struct CUstream_st;
struct CUevent_st;

namespace livedrp::gpu {

using StreamHandle = CUstream_st*;
using EventHandle = CUevent_st*;

// nullopt when device 0 can run this build's kernels; else why not (no device, driver too old for
// this runtime, compute capability the build has no code for, ...).
std::optional<std::string> unavailable_reason();

struct DeviceProperties {
  std::string name;  // "NVIDIA H200"
  int compute_major = 0, compute_minor = 0;
  int multiprocessors = 0;
  std::size_t global_memory_bytes = 0;
  std::size_t l2_bytes = 0;
  int runtime_version = 0;  // e.g. 13000
  int driver_version = 0;
};
DeviceProperties device_properties();  // of device 0; makes it current

// Bytes of device 0's memory in use now, by every process (total - free from cudaMemGetInfo).
std::size_t device_memory_used();

// Device 0 is the one the engine uses; makes it current for the calling thread.
void use_device();

// Whether launches may use Hopper's (sm_90) features: programmatic dependent launch and the
// Tensor Memory Accelerator's bulk copies. True when device 0's compute capability is 9.0 or
// newer, unless the environment variable LIVEDRP_CUDA_PORTABLE is 1, which forces the portable
// paths that Ampere and Ada GPUs (sm_80, sm_86, sm_89) take, so that they are tested on Hopper
// too. Read at each call (the variable is cheap to read), so a test can switch it.
bool hopper_features();

// Device memory, allocated once, freed by the destructor.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return pointer_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(pointer_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* pointer_ = nullptr;
  std::size_t bytes_ = 0;
};

// Page-locked host memory (cudaHostAlloc): host<->device copies from it are DMA and asynchronous.
void* allocate_pinned(std::size_t bytes);
void free_pinned(void* pointer) noexcept;
// True when `pointer` lies in page-locked (or registered) host memory, so an async copy from it
// does not stage through a pageable bounce buffer.
bool is_pinned_host(const void* pointer);

class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  explicit PinnedBuffer(std::size_t bytes) : pointer_(allocate_pinned(bytes)), bytes_(bytes) {}
  ~PinnedBuffer() { free_pinned(pointer_); }
  PinnedBuffer(PinnedBuffer&& other) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* get() const { return pointer_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(pointer_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* pointer_ = nullptr;
  std::size_t bytes_ = 0;
};

// Pinned host memory mapped into the device's address space (cudaHostAllocMapped), zeroed: the
// host and kernels read and write the same words (resident kernels' job and result rings). Each
// word should have one writer; the device may only load and store here (atomics on host memory
// need bus atomics the host's PCIe root may not have).
class MappedHostBuffer {
 public:
  MappedHostBuffer() = default;
  explicit MappedHostBuffer(std::size_t bytes);
  ~MappedHostBuffer();
  MappedHostBuffer(MappedHostBuffer&& other) noexcept;
  MappedHostBuffer& operator=(MappedHostBuffer&& other) noexcept;
  MappedHostBuffer(const MappedHostBuffer&) = delete;
  MappedHostBuffer& operator=(const MappedHostBuffer&) = delete;

  void* host() const { return host_; }
  void* device() const { return device_; }  // the same memory, as kernels address it

 private:
  void* host_ = nullptr;
  void* device_ = nullptr;
};

// A non-blocking stream (it never serialises with the legacy default stream).
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  StreamHandle get() const { return stream_; }
  // Host waits for everything enqueued so far on this stream (set-up, tests and benchmarks only).
  void synchronize() const;
  // Work enqueued on this stream afterwards waits for `event` (no host wait).
  void wait(EventHandle event) const;

 private:
  StreamHandle stream_ = nullptr;
};

class Event {
 public:
  // `timing`: the event records a timestamp usable with elapsed_ms (slightly costlier).
  explicit Event(bool timing = true);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  EventHandle get() const { return event_; }

  void record(const Stream& stream);
  // True when the work before the last record() is done; throws on a device error (which the
  // runtime reports on the first query after it happened).
  bool query() const;
  // Host waits for this event only (flow control; never a device-wide synchronisation).
  void synchronize() const;
  // Milliseconds from `start` to this event; both must be complete timing events.
  float elapsed_ms_since(const Event& start) const;

 private:
  EventHandle event_ = nullptr;
};

// cudaMemcpyAsync with the direction inferred from the pointers (unified addressing).
// `what` names the copy in an error message ("raw event to device slot 2").
void copy_async(void* destination, const void* source, std::size_t bytes, const Stream& stream,
                const char* what);
// cudaMemsetAsync: every byte of [pointer, pointer + bytes) set to `byte` (0xFF poisons float32
// buffers with NaN).
void fill_async(void* device_pointer, int byte, std::size_t bytes, const Stream& stream);
// Throws RuntimeFault when a kernel launch just before failed (cudaGetLastError), naming `kernel`.
void check_launch(const char* kernel);

}  // namespace livedrp::gpu
