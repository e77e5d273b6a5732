#include "stages/image/live_image.hpp"

#include "calib/gain_occupancy.hpp"
#include "core/error.hpp"

namespace livedrp {

LiveImage::LiveImage(const DetectorDescription& detector, const CalibrationConstants& constants,
                     const ImageAssembly& assembly)
    : detector_(detector),
      constants_(constants),
      assembly_(assembly),
      // The gain constants are keV per ADU (calib/constants.hpp); float32 data is already
      // calibrated upstream in a unit livedrp does not know, and only masked here; an integer
      // image stays in its counts (pedestal 0, gain 1, or a flat field near 1).
      unit_(detector.encoding == RawEncoding::Float32 ? ""
            : is_integer_image(detector.encoding)     ? "counts"
                                                      : "keV") {}

void LiveImage::offer(std::shared_ptr<const ImageSample> sample,
                      std::optional<protocol::EventPeaks> peaks) {
  if (!sample) return;
  if (sample->raw.size() != detector_.raw_event_bytes() ||
      sample->calibrated.size() != detector_.pixels())
    throw RuntimeFault("image: a sample of event " + std::to_string(sample->header.sequence) +
                       " holds " + std::to_string(sample->raw.size()) + " raw bytes and " +
                       std::to_string(sample->calibrated.size()) + " pixels, not the detector's " +
                       std::to_string(detector_.raw_event_bytes()) + " and " +
                       std::to_string(detector_.pixels()));
  std::lock_guard lock(mutex_);
  sample_ = std::move(sample);
  peaks_ = std::move(peaks);
}

std::optional<protocol::ImageFrame> LiveImage::take() {
  std::shared_ptr<const ImageSample> sample;
  protocol::ImageFrame image;
  {
    std::lock_guard lock(mutex_);
    if (!sample_) return std::nullopt;
    sample.swap(sample_);
    if (peaks_) {
      image.has_peaks = true;
      image.peaks = std::move(*peaks_);
      peaks_.reset();
    }
  }
  image.sequence = sample->header.sequence;
  image.pulse_id = sample->header.pulse_id;
  image.source_time_ns = sample->header.timestamp_ns;
  image.height = assembly_.height();
  image.width = assembly_.width();
  image.pixels.resize(image.height * image.width);
  assembly_.assemble(sample->calibrated.data(), image.pixels.data());
  image.unit = unit_;
  const calib::GainOccupancy occupancy =
      calib::gain_occupancy(detector_, constants_, sample->raw.data());
  image.gain_modes = occupancy.modes;
  image.segments = std::uint64_t(occupancy.segments);
  image.gain_occupancy = occupancy.fraction;
  image.assembly = assembly_.layout();
  return image;
}

}  // namespace livedrp
