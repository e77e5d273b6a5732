#pragma once
// The stages a launched resident lane runs after calibration (resident_pipeline.hpp): the lane's
// own buffers, the work it records behind the calibration, and the publish step that copies the
// event's results into the entry of the payload ring and of the compressed arena that its
// sequence number selects.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "cuda/codec/device_codec.hpp"
#include "cuda/device.hpp"
#include "cuda/integrate/device_integrator.hpp"
#include "cuda/peaks/device_peakfinder8.hpp"
#include "cuda/resident/resident_kernels.cuh"
#include "cuda/resident/resident_pipeline.hpp"

namespace livedrp::gpu::resident {

// One event's entry of the payload ring: byte offsets, each 64-byte aligned; 0 bytes where off.
struct PayloadLayout {
  std::size_t stamps = 0;           // kResidentStamps device-clock words
  std::size_t compressed_size = 0;  // one word
  std::size_t profile = 0, profile_bytes = 0;
  std::size_t peaks = 0, peaks_bytes = 0;  // a ListHeader, then up to capacity peaks
  std::size_t stride = 0;
};

// One copy the publish kernel makes per event: `fixed_bytes`, then, when `count_word` is set,
// its value times `element_bytes` more, at most `max_bytes` in all, from `source` to entry
// (event % entries) of the ring at `target`.
struct PublishSegment {
  const char* source = nullptr;
  char* target = nullptr;
  std::size_t target_stride = 0;
  std::size_t fixed_bytes = 0;
  const void* count_word = nullptr;
  int count_is_64 = 0;
  std::size_t element_bytes = 0;
  std::size_t max_bytes = 0;
};

// What one lane owns for its stages, made at set-up.
class LaneStages {
 public:
  // `payload_device` and `arena` are the rings the publish step writes (entry event %
  // ring.result_slots). `sibling_of`: another lane's finder whose device tables this lane's
  // finder shares (nullptr for the first lane).
  // `plan`: the integrator's, made once for every lane (nullptr when integration is off).
  LaneStages(const DetectorDescription& detector, const ResidentStages& stages,
             const IntegrationPlan* plan, const PayloadLayout& layout, char* payload_device,
             char* arena, std::size_t arena_stride, const DevicePeakFinder8* sibling_of);

  // Records, on `stream`, everything between the wait kernel and the finish kernel but the
  // calibration: call record_start before the calibration and record_after_calibration after it.
  void record_start(const LaneState* state, const Stream& stream) const;
  void record_after_calibration(const Ring& ring, const LaneState* state, const float* calibrated,
                                std::uint64_t trap_at_event, const Stream& stream);

  const DeviceIntegrator* integrator() const { return integrator_.get(); }
  const DevicePeakFinder8* finder() const { return finder_.get(); }
  std::size_t device_bytes() const;

 private:
  DetectorDescription detector_;
  std::optional<codec::CodecParams> compression_;
  codec::DType dtype_ = codec::DType::UInt16;
  std::vector<std::uint64_t> shape_;
  DeviceBuffer stamps_, raw_copy_, compressed_, profile_, segments_;
  std::unique_ptr<DeviceCodec> codec_;
  std::unique_ptr<DeviceIntegrator> integrator_;
  std::unique_ptr<DevicePeakFinder8> finder_;
  int segment_count_ = 0;
  int publish_blocks_ = 0;
};

// The payload entry's layout for these stages (the integrator and finder give their sizes).
PayloadLayout payload_layout(const ResidentStages& stages, std::size_t profile_doubles,
                             int peak_capacity);
// The codec's element type and the bound of one event's stream (0 when compression is off).
codec::DType compression_dtype(const DetectorDescription& detector, const ResidentStages& stages);
std::uint64_t compressed_bound(const DetectorDescription& detector, const ResidentStages& stages);

}  // namespace livedrp::gpu::resident
