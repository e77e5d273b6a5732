#pragma once
// The `image` topic's mailbox: the image stage's book hands over each sampled event (its raw
// words and calibrated pixels, copied by the stage's CPU or CUDA part, or by the device-resident
// pipeline's snapshot) with its peaks, and whoever publishes (the book at the reporter's step, or
// an MPI rank's report) takes the newest, assembled, with its gain-mode occupancy decoded. Only
// the newest is kept: an event handed over before the last one was taken is replaced.
#include <cstddef>
#include <memory>
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

// One sampled event as the image stage copied it.
struct ImageSample {
  EventHeader header;
  std::vector<std::byte> raw;     // detector.raw_event_bytes()
  std::vector<float> calibrated;  // detector.pixels(), segment-major
};

class LiveImage {
 public:
  // `assembly` and `constants` outlive this object.
  LiveImage(const DetectorDescription& detector, const CalibrationConstants& constants,
            const ImageAssembly& assembly);

  // Any thread: the newest sampled event, with its peaks when it was searched.
  void offer(std::shared_ptr<const ImageSample> sample, std::optional<protocol::EventPeaks> peaks);
  // Any thread: the image of the event offered last, once (nullopt when none is new).
  std::optional<protocol::ImageFrame> take();

 private:
  const DetectorDescription& detector_;
  const CalibrationConstants& constants_;
  const ImageAssembly& assembly_;
  std::string unit_;
  std::mutex mutex_;  // guards the fields below
  std::shared_ptr<const ImageSample> sample_;
  std::optional<protocol::EventPeaks> peaks_;
};

}  // namespace livedrp
