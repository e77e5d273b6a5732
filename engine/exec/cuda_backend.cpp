// The CUDA backend: each submitted event is copied from its (pinned) ring slot into one of a few
// device slots, calibrated there by one kernel launch, and marked by a CUDA event; several events
// are in flight at once, one stream per slot, so the copy of one event overlaps the kernels of
// others. Everything is allocated when the backend is made; per event the host only enqueues work
// and asks CUDA events whether it is done (next_completed with `block` waits on the oldest event
// only: flow control, never a device synchronisation).
#include <memory>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "exec/backend.hpp"

#ifdef LIVEDRP_HAVE_CUDA

#include <array>
#include <cstring>
#include <vector>

#include "cuda/cuda_calibrator.hpp"
#include "cuda/device.hpp"

namespace livedrp {
namespace {

// Events in flight. Four covers the copy of the next event, the kernel of the current one and
// the completion of the last with one to spare; more only adds latency (the H2D copy of a 4 MB
// event, not the kernel, is what limits this path).
constexpr int kSlots = 4;

class CudaBackend final : public Backend {
 public:
  CudaBackend(const DetectorDescription& detector, const CalibrationConstants& constants,
              const calib::CalibrationParams& params)
      : detector_(detector),
        params_(params),
        device_name_(gpu::device_properties().name),
        calibrator_(detector, constants) {
    for (auto& slot : slots_) {
      slot = std::make_unique<Slot>();
      slot->raw = gpu::DeviceBuffer(detector.raw_event_bytes());
      slot->out = gpu::DeviceBuffer(detector.pixels() * sizeof(float));
      // NaN in every output slot: a pixel no kernel wrote shows as NaN, never as a stale value.
      gpu::fill_async(slot->out.get(), 0xFF, slot->out.bytes(), slot->stream);
    }
    for (auto& slot : slots_) slot->stream.synchronize();  // set-up only
  }

  ~CudaBackend() override {
    // The device slots must not be freed under work still running on them.
    for (auto& slot : slots_) {
      try {
        slot->stream.synchronize();
      } catch (const RuntimeFault&) {
        // A device fault was already reported (or will never be): nothing left to do here.
      }
    }
  }

  std::string name() const override { return "cuda"; }
  std::string device_name() const override { return device_name_; }

  void* allocate_host(std::size_t bytes) override { return gpu::allocate_pinned(bytes); }
  void free_host(void* pointer) override { gpu::free_pinned(pointer); }

  void set_params(const calib::CalibrationParams& params) override { params_ = params; }

  bool can_submit() const override { return count_ < kSlots; }

  void submit(const BackendEvent& event) override {
    if (count_ == kSlots)
      throw RuntimeFault("cuda backend: submit with " + std::to_string(kSlots) +
                         " events already in flight (call can_submit first)");
    const int index = (head_ + count_) % kSlots;
    Slot& slot = *slots_[index];
    const std::size_t bytes = detector_.raw_event_bytes();
    const void* source = event.raw;
    if (!gpu::is_pinned_host(source)) {
      // Not from allocate_host: copying pageable memory would stage through the driver and block.
      // Stage it through this slot's own pinned buffer instead (allocated on first need, then
      // reused); the slot is free, so nothing still reads that buffer.
      if (!slot.staging.get()) slot.staging = gpu::PinnedBuffer(bytes);
      std::memcpy(slot.staging.get(), source, bytes);
      source = slot.staging.get();
    }
    gpu::copy_async(slot.raw.get(), source, bytes, slot.stream, "raw event to a device slot");
    slot.start.record(slot.stream);
    calibrator_.launch(slot.raw.get(), slot.out.as<float>(), params_, slot.stream);
    slot.end.record(slot.stream);
    slot.header = event.header;
    slot.ring_slot = event.ring_slot;
    slot.admission = event.admission;
    ++count_;
    ++submitted_;
  }

  std::optional<CompletedEvent> next_completed(bool block) override {
    if (count_ == 0) return std::nullopt;
    Slot& slot = *slots_[head_];
    if (block)
      slot.end.synchronize();
    else if (!slot.end.query())
      return std::nullopt;
    CompletedEvent done;
    done.header = slot.header;
    done.ring_slot = slot.ring_slot;
    done.admission = slot.admission;
    done.output_slot = head_;
    done.calibrate_us = 1000.0 * double(slot.end.elapsed_ms_since(slot.start));
    head_ = (head_ + 1) % kSlots;
    --count_;
    return done;
  }

  std::size_t in_flight() const override { return std::size_t(count_); }
  std::vector<LaneOccupancy> lane_occupancy() const override {
    return {{std::uint64_t(count_), std::uint64_t(kSlots), submitted_ - std::uint64_t(count_)}};
  }

  void read_output(const CompletedEvent& event, float* host_out) override {
    if (event.output_slot < 0 || event.output_slot >= kSlots)
      throw RuntimeFault("cuda backend: read_output of an event with output slot " +
                         std::to_string(event.output_slot));
    Slot& slot = *slots_[event.output_slot];
    gpu::copy_async(host_out, slot.out.get(), slot.out.bytes(), slot.stream,
                    "calibrated image to the host");
    slot.stream.synchronize();  // test and image path only
  }

 private:
  struct Slot {
    gpu::Stream stream;
    gpu::Event start{true}, end{true};
    gpu::DeviceBuffer raw, out;
    gpu::PinnedBuffer staging;
    EventHeader header;
    int ring_slot = -1;
    std::uint64_t admission = 0;
  };

  DetectorDescription detector_;
  calib::CalibrationParams params_;
  std::string device_name_;
  gpu::DeviceCalibrator calibrator_;
  std::array<std::unique_ptr<Slot>, kSlots> slots_;
  int head_ = 0;   // oldest event in flight
  int count_ = 0;  // events in flight
  std::uint64_t submitted_ = 0;
};

}  // namespace

std::optional<std::string> cuda_unavailable_reason() { return gpu::unavailable_reason(); }

std::unique_ptr<Backend> make_cuda_backend(const DetectorDescription& detector,
                                           const CalibrationConstants& constants,
                                           const calib::CalibrationParams& params,
                                           const StreamConfig&) {
  return std::make_unique<CudaBackend>(detector, constants, params);
}

}  // namespace livedrp

#else  // built without CUDA

namespace livedrp {

std::optional<std::string> cuda_unavailable_reason() {
  return std::string("built without CUDA (configure with a CUDA compiler)");
}

std::unique_ptr<Backend> make_cuda_backend(const DetectorDescription&, const CalibrationConstants&,
                                           const calib::CalibrationParams&, const StreamConfig&) {
  throw RuntimeFault("built without CUDA support");
}

}  // namespace livedrp

#endif
