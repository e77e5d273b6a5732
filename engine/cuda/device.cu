#include "cuda/device.hpp"

#include <cuda_runtime.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.hpp"

namespace livedrp::gpu {
namespace {

// "CALL: CUDA's text (cudaErrorName)".
[[noreturn]] void fail(cudaError_t status, const std::string& call) {
  throw RuntimeFault(call + ": " + cudaGetErrorString(status) + " (" + cudaGetErrorName(status) +
                     ")");
}
void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) fail(status, call);
}

// CUDA maps the streams of a process onto CUDA_DEVICE_MAX_CONNECTIONS hardware work queues, 8
// unless the environment says otherwise; streams beyond that share a queue and wait for each
// other's work. livedrp runs up to 16 streams of small kernels (peak finding, one segment's
// codec): on the H200 peak finding over 16 streams went from 19,032 to 26,235 frames/s with 32
// queues (docs/benchmarks.md). The runtime reads the variable when it creates the context, so it
// is set at load time, before any CUDA call; a value the user set is kept.
[[maybe_unused]] const bool kConnectionsSet = [] {
  return setenv("CUDA_DEVICE_MAX_CONNECTIONS", "32", 0) == 0;
}();

// The smallest kernel there is: asking the runtime for its attributes tells whether this binary
// holds code (machine code or PTX) that device 0 can run.
__global__ void probe_kernel() {}

}  // namespace

std::optional<std::string> unavailable_reason() {
  int count = 0;
  if (const cudaError_t status = cudaGetDeviceCount(&count); status != cudaSuccess)
    return std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status) + " (" +
           cudaGetErrorName(status) + ")";
  if (count == 0) return std::string("no CUDA device");
  if (const cudaError_t status = cudaSetDevice(0); status != cudaSuccess)
    return std::string("cudaSetDevice(0): ") + cudaGetErrorString(status);
  cudaFuncAttributes attributes{};
  if (const cudaError_t status = cudaFuncGetAttributes(&attributes, probe_kernel);
      status != cudaSuccess) {
    cudaDeviceProp properties{};
    std::string device = "device 0";
    if (cudaGetDeviceProperties(&properties, 0) == cudaSuccess)
      device += std::string(" (") + properties.name + ", compute capability " +
                std::to_string(properties.major) + "." + std::to_string(properties.minor) + ")";
    return device + " cannot run this build's kernels: " + cudaGetErrorString(status) +
           " (this build has code for CUDA architectures " LIVEDRP_CUDA_ARCHITECTURES ")";
  }
  return std::nullopt;
}

std::size_t device_memory_used() {
  std::size_t free_bytes = 0, total_bytes = 0;
  check(cudaMemGetInfo(&free_bytes, &total_bytes), "cudaMemGetInfo");
  return total_bytes - free_bytes;
}

bool hopper_features() {
  static const int major = [] {
    int device = 0, value = 0;
    if (cudaGetDevice(&device) != cudaSuccess ||
        cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMajor, device) != cudaSuccess)
      return 0;
    return value;
  }();
  const char* portable = std::getenv("LIVEDRP_CUDA_PORTABLE");
  if (portable != nullptr && std::strcmp(portable, "1") == 0) return false;
  return major >= 9;
}

void use_device() {
  check(cudaSetDevice(0), "cudaSetDevice(0)");
}

DeviceProperties device_properties() {
  use_device();
  cudaDeviceProp properties{};
  check(cudaGetDeviceProperties(&properties, 0), "cudaGetDeviceProperties(0)");
  DeviceProperties result;
  result.name = properties.name;
  result.compute_major = properties.major;
  result.compute_minor = properties.minor;
  result.multiprocessors = properties.multiProcessorCount;
  result.global_memory_bytes = properties.totalGlobalMem;
  result.l2_bytes = std::size_t(properties.l2CacheSize);
  check(cudaRuntimeGetVersion(&result.runtime_version), "cudaRuntimeGetVersion");
  check(cudaDriverGetVersion(&result.driver_version), "cudaDriverGetVersion");
  return result;
}

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (const cudaError_t status = cudaMalloc(&pointer_, bytes); status != cudaSuccess)
    fail(status, "cudaMalloc(" + std::to_string(bytes) + " bytes)");
}
DeviceBuffer::~DeviceBuffer() {
  if (pointer_) cudaFree(pointer_);  // nothing to report from a destructor
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : pointer_(std::exchange(other.pointer_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (pointer_) cudaFree(pointer_);
    pointer_ = std::exchange(other.pointer_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void* allocate_pinned(std::size_t bytes) {
  void* pointer = nullptr;
  if (const cudaError_t status = cudaHostAlloc(&pointer, bytes, cudaHostAllocPortable);
      status != cudaSuccess)
    fail(status, "cudaHostAlloc(" + std::to_string(bytes) + " bytes)");
  return pointer;
}
void free_pinned(void* pointer) noexcept {
  if (pointer) cudaFreeHost(pointer);
}
MappedHostBuffer::MappedHostBuffer(std::size_t bytes) {
  if (const cudaError_t status =
          cudaHostAlloc(&host_, bytes, cudaHostAllocMapped | cudaHostAllocPortable);
      status != cudaSuccess)
    fail(status, "cudaHostAlloc(" + std::to_string(bytes) + " bytes, mapped)");
  std::memset(host_, 0, bytes);
  if (const cudaError_t status = cudaHostGetDevicePointer(&device_, host_, 0);
      status != cudaSuccess) {
    cudaFreeHost(std::exchange(host_, nullptr));
    fail(status, "cudaHostGetDevicePointer");
  }
}
MappedHostBuffer::~MappedHostBuffer() {
  if (host_) cudaFreeHost(host_);
}
MappedHostBuffer::MappedHostBuffer(MappedHostBuffer&& other) noexcept
    : host_(std::exchange(other.host_, nullptr)), device_(std::exchange(other.device_, nullptr)) {}
MappedHostBuffer& MappedHostBuffer::operator=(MappedHostBuffer&& other) noexcept {
  if (this != &other) {
    if (host_) cudaFreeHost(host_);
    host_ = std::exchange(other.host_, nullptr);
    device_ = std::exchange(other.device_, nullptr);
  }
  return *this;
}

bool is_pinned_host(const void* pointer) {
  cudaPointerAttributes attributes{};
  check(cudaPointerGetAttributes(&attributes, pointer), "cudaPointerGetAttributes");
  return attributes.type == cudaMemoryTypeHost;
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& other) noexcept
    : pointer_(std::exchange(other.pointer_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& other) noexcept {
  if (this != &other) {
    free_pinned(pointer_);
    pointer_ = std::exchange(other.pointer_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Stream::Stream() {
  check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
}
Stream::~Stream() {
  if (stream_) cudaStreamDestroy(stream_);
}
void Stream::synchronize() const {
  check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}
void Stream::wait(EventHandle event) const {
  check(cudaStreamWaitEvent(stream_, event, 0), "cudaStreamWaitEvent");
}

Event::Event(bool timing) {
  check(cudaEventCreateWithFlags(&event_, timing ? cudaEventDefault : cudaEventDisableTiming),
        "cudaEventCreateWithFlags");
}
Event::~Event() {
  if (event_) cudaEventDestroy(event_);
}
void Event::record(const Stream& stream) {
  check(cudaEventRecord(event_, stream.get()), "cudaEventRecord");
}
bool Event::query() const {
  const cudaError_t status = cudaEventQuery(event_);
  if (status == cudaSuccess) return true;
  if (status == cudaErrorNotReady) return false;
  fail(status, "cudaEventQuery");
}
void Event::synchronize() const {
  check(cudaEventSynchronize(event_), "cudaEventSynchronize");
}
float Event::elapsed_ms_since(const Event& start) const {
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start.event_, event_), "cudaEventElapsedTime");
  return ms;
}

void copy_async(void* destination, const void* source, std::size_t bytes, const Stream& stream,
                const char* what) {
  if (const cudaError_t status =
          cudaMemcpyAsync(destination, source, bytes, cudaMemcpyDefault, stream.get());
      status != cudaSuccess)
    fail(status, std::string("cudaMemcpyAsync(") + what + ", " + std::to_string(bytes) + " bytes)");
}

void fill_async(void* device_pointer, int byte, std::size_t bytes, const Stream& stream) {
  if (const cudaError_t status = cudaMemsetAsync(device_pointer, byte, bytes, stream.get());
      status != cudaSuccess)
    fail(status, "cudaMemsetAsync(" + std::to_string(bytes) + " bytes)");
}

void check_launch(const char* kernel) {
  if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess)
    fail(status, std::string("launch of ") + kernel);
}

}  // namespace livedrp::gpu
