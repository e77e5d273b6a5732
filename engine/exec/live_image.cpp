#include "exec/live_image.hpp"

#include "calib/gain_occupancy.hpp"

namespace livedrp {

LiveImage::LiveImage(const DetectorDescription& detector, const CalibrationConstants& constants,
                     const ImageAssembly& assembly, double publish_hz)
    : detector_(detector),
      constants_(constants),
      assembly_(assembly),
      period_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(1.0 / publish_hz))),
      // The gain constants are keV per ADU (calib/constants.hpp); float32 data is already
      // calibrated upstream in a unit livedrp does not know, and only masked here; an integer
      // image stays in its counts (pedestal 0, gain 1, or a flat field near 1).
      unit_(detector.encoding == RawEncoding::Float32 ? ""
            : is_integer_image(detector.encoding)     ? "counts"
                                                      : "keV"),
      raw_(detector.raw_event_bytes()),
      calibrated_(detector.pixels()) {}

std::optional<protocol::ImageFrame> LiveImage::take() {
  protocol::ImageFrame image;
  std::vector<std::byte> raw;
  std::vector<float> calibrated;
  {
    std::lock_guard lock(mutex_);
    if (!fresh_) return std::nullopt;
    fresh_ = false;
    // Swapped out, so the engine thread can hand over the next event while this one is built.
    raw.swap(raw_);
    calibrated.swap(calibrated_);
    raw_.resize(raw.size());
    calibrated_.resize(calibrated.size());
    image.sequence = header_.sequence;
    image.pulse_id = header_.pulse_id;
    image.source_time_ns = header_.timestamp_ns;
    if (peaks_) {
      image.has_peaks = true;
      image.peaks = *peaks_;
    }
  }
  image.height = assembly_.height();
  image.width = assembly_.width();
  image.pixels.resize(image.height * image.width);
  assembly_.assemble(calibrated.data(), image.pixels.data());
  image.unit = unit_;
  const calib::GainOccupancy occupancy = calib::gain_occupancy(detector_, constants_, raw.data());
  image.gain_modes = occupancy.modes;
  image.segments = std::uint64_t(occupancy.segments);
  image.gain_occupancy = occupancy.fraction;
  image.assembly = assembly_.layout();
  return image;
}

}  // namespace livedrp
