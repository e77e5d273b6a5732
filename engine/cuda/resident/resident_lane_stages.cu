// The stages of a launched resident lane (resident_lane_stages.cuh).
#include "cuda/resident/resident_lane_stages.cuh"

#include <algorithm>
#include <cstdlib>
#include <string>

#include "codec/compression_input.hpp"
#include "core/error.hpp"

namespace livedrp::gpu::resident {
namespace {

constexpr std::size_t kPayloadAlign = 64;
// Threads of the publish and copy kernels, and a cap on the publish kernel's blocks per segment
// (a lossless stream of a 2-Mpixel event is a few MB: two blocks per multiprocessor copy it).
constexpr int kCopyThreads = 256;
constexpr int kMaxPublishBlocks = 264;

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess)
    throw RuntimeFault(std::string(call) + ": " + cudaGetErrorString(status));
}

std::size_t align_up(std::size_t value, std::size_t to) {
  return (value + to - 1) / to * to;
}

__global__ void stamp_kernel(const LaneState* state, u64* stamp) {
  if (!state->skip) *stamp = globaltimer_ns();
}

// LIVEDRP_RESIDENT_STAMPS=0 (a benchmark knob): the lanes record no stage stamps, so an event's
// stage times read 0. Four one-thread kernels less an event: what the kernel count costs the
// whole, measured against the default in the same call.
bool stamps_wanted() {
  static const bool wanted = [] {
    const char* value = std::getenv("LIVEDRP_RESIDENT_STAMPS");
    return !(value && std::string(value) == "0");
  }();
  return wanted;
}

// Compression of the raw words (lossless, codec/compression_input.hpp) reads them in the event's
// ring slot (chosen on the device): copied once into the lane's buffer, whose address the codec's
// kernels were given.
__global__ void __launch_bounds__(kCopyThreads)
    copy_slot_raw_kernel(Ring ring, const LaneState* state, uint4* target, std::size_t words) {
  if (state->skip) return;
  const uint4* source = reinterpret_cast<const uint4*>(
      ring.raw + std::size_t(state->event % u64(ring.slots)) * ring.raw_stride);
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += std::size_t(gridDim.x) * blockDim.x)
    target[i] = __ldcs(source + i);
}

// blockIdx.y picks the segment. Sources and targets are 16-byte aligned (payload entries are
// 64-byte aligned, device buffers 256). Every thread fences its writes at system scope, so the
// finish kernel's ready word, written after this kernel, is seen after them by the host.
__global__ void __launch_bounds__(kCopyThreads)
    publish_kernel(Ring ring, const LaneState* state, const PublishSegment* segments,
                   u64 trap_at_event) {
  if (state->skip) return;
  const u64 event = state->event;
  if (event == trap_at_event) __trap();
  const PublishSegment segment = segments[blockIdx.y];
  std::size_t bytes = segment.fixed_bytes;
  if (segment.count_word) {
    const long long count =
        segment.count_is_64
            ? static_cast<long long>(*static_cast<const std::uint64_t*>(segment.count_word))
            : static_cast<long long>(*static_cast<const int*>(segment.count_word));
    bytes += std::size_t(count > 0 ? count : 0) * segment.element_bytes;
  }
  bytes = bytes < segment.max_bytes ? bytes : segment.max_bytes;
  char* target =
      segment.target + std::size_t(event % u64(ring.result_slots)) * segment.target_stride;
  const std::size_t words = bytes / 16;
  const uint4* from = reinterpret_cast<const uint4*>(segment.source);
  uint4* to = reinterpret_cast<uint4*>(target);
  for (std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += std::size_t(gridDim.x) * blockDim.x)
    to[i] = from[i];
  if (blockIdx.x == 0)
    for (std::size_t i = words * 16 + threadIdx.x; i < bytes; i += blockDim.x)
      target[i] = segment.source[i];
  __threadfence_system();
}

}  // namespace

codec::DType compression_dtype(const DetectorDescription& detector, const ResidentStages& stages) {
  const codec::Codec codec =
      stages.compression ? stages.compression->codec : codec::Codec::Lossless;
  return codec::compression_input(detector.encoding, codec).dtype;
}

std::uint64_t compressed_bound(const DetectorDescription& detector, const ResidentStages& stages) {
  if (!stages.compression) return 0;
  return codec::compressed_bound(compression_dtype(detector, stages), detector.pixels(), 3,
                                 *stages.compression);
}

PayloadLayout payload_layout(const ResidentStages& stages, std::size_t profile_doubles,
                             int peak_capacity) {
  PayloadLayout layout;
  std::size_t at = 0;
  layout.stamps = at;
  at = align_up(at + kResidentStamps * sizeof(u64), kPayloadAlign);
  layout.compressed_size = at;
  at = align_up(at + sizeof(u64), kPayloadAlign);
  if (stages.integrator) {
    layout.profile = at;
    layout.profile_bytes = profile_doubles * sizeof(double);
    at = align_up(at + layout.profile_bytes, kPayloadAlign);
  }
  if (stages.peak_finder) {
    layout.peaks = at;
    layout.peaks_bytes = sizeof(DevicePeakFinder8::ListHeader) +
                         std::size_t(std::max(peak_capacity, 0)) * sizeof(peaks::Peak);
    at = align_up(at + layout.peaks_bytes, kPayloadAlign);
  }
  layout.stride = at;
  return layout;
}

LaneStages::LaneStages(const DetectorDescription& detector, const ResidentStages& stages,
                       const IntegrationPlan* plan, const PayloadLayout& layout,
                       char* payload_device, char* arena, std::size_t arena_stride,
                       const DevicePeakFinder8* sibling_of)
    : detector_(detector),
      compression_(stages.compression),
      dtype_(compression_dtype(detector, stages)),
      shape_{std::uint64_t(detector.segments), std::uint64_t(detector.rows),
             std::uint64_t(detector.cols)} {
  stamps_ = DeviceBuffer(kResidentStamps * sizeof(u64));
  check(cudaMemset(stamps_.get(), 0, stamps_.bytes()), "cudaMemset(stage stamps)");
  std::vector<PublishSegment> segments;
  std::size_t largest = kResidentStamps * sizeof(u64);
  segments.push_back({stamps_.as<const char>(), payload_device + layout.stamps, layout.stride,
                      kResidentStamps * sizeof(u64), nullptr, 0, 0, kResidentStamps * sizeof(u64)});
  if (stages.compression) {
    const std::uint64_t bound = compressed_bound(detector, stages);
    if (arena_stride < bound)
      throw RuntimeFault("resident pipeline: compressed arena entries of " +
                         std::to_string(arena_stride) + " bytes, below the bound " +
                         std::to_string(bound));
    codec_ = std::make_unique<DeviceCodec>(detector.pixels());
    compressed_ = DeviceBuffer(bound);
    if (!codec::compression_input(detector.encoding, stages.compression->codec).calibrated_image)
      raw_copy_ = DeviceBuffer(align_up(detector.raw_event_bytes(), 256));
    const char* size_word = reinterpret_cast<const char*>(codec_->device_size_word());
    segments.push_back({size_word, payload_device + layout.compressed_size, layout.stride,
                        sizeof(u64), nullptr, 0, 0, sizeof(u64)});
    segments.push_back({compressed_.as<const char>(), arena, arena_stride, 0, size_word, 1, 1,
                        std::size_t(bound)});
    largest = std::max<std::size_t>(largest, bound);
  }
  if (plan) {
    integrator_ = std::make_unique<DeviceIntegrator>(*plan, 1, IntegrationKernel::PixelMajor);
    if (integrator_->result_doubles() * sizeof(double) != layout.profile_bytes)
      throw RuntimeFault("resident pipeline: the integrator's bin values (" +
                         std::to_string(integrator_->result_doubles()) +
                         " doubles) do not fit the payload layout");
    profile_ = DeviceBuffer(layout.profile_bytes);
    segments.push_back({profile_.as<const char>(), payload_device + layout.profile, layout.stride,
                        layout.profile_bytes, nullptr, 0, 0, layout.profile_bytes});
    largest = std::max(largest, layout.profile_bytes);
  }
  if (stages.peak_finder) {
    finder_ = sibling_of ? sibling_of->sibling()
                         : std::make_unique<DevicePeakFinder8>(*stages.peak_finder);
    const char* list = static_cast<const char*>(finder_->device_list());
    // The header, then only the peaks stored (the header's second word).
    segments.push_back({list, payload_device + layout.peaks, layout.stride,
                        sizeof(DevicePeakFinder8::ListHeader),
                        list + offsetof(DevicePeakFinder8::ListHeader, stored), 0,
                        sizeof(peaks::Peak), layout.peaks_bytes});
    largest = std::max(largest, layout.peaks_bytes);
  }
  segment_count_ = int(segments.size());
  segments_ = DeviceBuffer(segments.size() * sizeof(PublishSegment));
  check(cudaMemcpy(segments_.get(), segments.data(), segments_.bytes(), cudaMemcpyHostToDevice),
        "cudaMemcpy(publish segments)");
  publish_blocks_ =
      int(std::min<u64>(kMaxPublishBlocks,
                        std::max<u64>(1, (largest + 16 * kCopyThreads - 1) / (16 * kCopyThreads))));
}

void LaneStages::record_start(const LaneState* state, const Stream& stream) const {
  if (!stamps_wanted()) return;
  stamp_kernel<<<1, 1, 0, stream.get()>>>(state, stamps_.as<u64>() + kStampStart);
  check_launch("stamp_kernel");
}

void LaneStages::record_after_calibration(const Ring& ring, const LaneState* state,
                                          const float* calibrated, std::uint64_t trap_at_event,
                                          const Stream& stream) {
  const cudaStream_t st = stream.get();
  u64* stamps = stamps_.as<u64>();
  const bool stamped = stamps_wanted();
  if (stamped) {
    stamp_kernel<<<1, 1, 0, st>>>(state, stamps + kStampCalibrated);
    check_launch("stamp_kernel");
  }
  if (codec_) {
    const void* input = calibrated;
    if (raw_copy_.get()) {
      const std::size_t words = align_up(detector_.raw_event_bytes(), 16) / 16;
      const int blocks =
          int(std::min<std::size_t>(4 * 132, (words + kCopyThreads - 1) / kCopyThreads));
      copy_slot_raw_kernel<<<blocks, kCopyThreads, 0, st>>>(ring, state, raw_copy_.as<uint4>(),
                                                            words);
      check_launch("copy_slot_raw_kernel");
      input = raw_copy_.get();
    }
    codec_->compress(input, dtype_, detector_.pixels(), shape_, *compression_, compressed_.get(),
                     compressed_.bytes(), stream);
    if (stamped) {
      stamp_kernel<<<1, 1, 0, st>>>(state, stamps + kStampCompressed);
      check_launch("stamp_kernel");
    }
  }
  if (integrator_) {
    integrator_->enqueue_into_device(calibrated, profile_.as<double>(), stream);
    if (stamped) {
      stamp_kernel<<<1, 1, 0, st>>>(state, stamps + kStampIntegrated);
      check_launch("stamp_kernel");
    }
  }
  if (finder_) {
    finder_->enqueue_on_device(calibrated, stream);
    if (stamped) {
      stamp_kernel<<<1, 1, 0, st>>>(state, stamps + kStampSearched);
      check_launch("stamp_kernel");
    }
  }
  publish_kernel<<<dim3(unsigned(publish_blocks_), unsigned(segment_count_)), kCopyThreads, 0,
                   st>>>(ring, state, segments_.as<const PublishSegment>(), trap_at_event);
  check_launch("publish_kernel");
}

std::size_t LaneStages::device_bytes() const {
  return stamps_.bytes() + raw_copy_.bytes() + compressed_.bytes() + profile_.bytes() +
         segments_.bytes();
}

}  // namespace livedrp::gpu::resident
