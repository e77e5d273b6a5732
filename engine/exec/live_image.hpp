#pragma once
// The `image` topic's engine side (JSON "image"): publish_hz times a second the engine thread
// hands over the latest processed event (its calibrated pixels read back from the backend, its
// raw words copied while the ring slot is still the event's, its peaks) and the reporter thread
// assembles it, decodes the gain-mode occupancy and builds the message. Only the chosen events
// are read back; the engine thread's share is two copies.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "core/event.hpp"
#include "core/image_assembly.hpp"
#include "protocol/peaks_topic.hpp"

namespace livedrp {

class LiveImage {
 public:
  using Clock = std::chrono::steady_clock;
  // `assembly` and `constants` outlive this object.
  LiveImage(const DetectorDescription& detector, const CalibrationConstants& constants,
            const ImageAssembly& assembly, double publish_hz);

  // Engine thread: is it time to hand over an event?
  bool due(Clock::time_point now) const { return now >= next_capture_; }
  // Engine thread: the event's raw words (detector.raw_event_bytes()) and calibrated pixels are
  // copied by `fill` into the buffers it is given (so the caller reads the backend straight into
  // them); `peaks` when the event was searched.
  template <typename Fill>
  void capture(const EventHeader& header, Fill&& fill,
               const std::optional<protocol::EventPeaks>& peaks) {
    std::lock_guard lock(mutex_);
    fill(raw_.data(), calibrated_.data());
    header_ = header;
    peaks_ = peaks;
    fresh_ = true;
    next_capture_ = Clock::now() + period_;
  }
  // Reporter thread: the image of the event handed over last, once (nullopt when none is new).
  std::optional<protocol::ImageFrame> take();

 private:
  const DetectorDescription& detector_;
  const CalibrationConstants& constants_;
  const ImageAssembly& assembly_;
  Clock::duration period_;
  std::string unit_;
  std::mutex mutex_;  // guards the fields below
  Clock::time_point next_capture_{};
  std::vector<std::byte> raw_;
  std::vector<float> calibrated_;
  EventHeader header_;
  std::optional<protocol::EventPeaks> peaks_;
  bool fresh_ = false;
};

}  // namespace livedrp
