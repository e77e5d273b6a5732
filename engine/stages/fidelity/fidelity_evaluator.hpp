#pragma once
// One fidelity sample, evaluated: an event's compressed stream is decoded with the project's own
// codec (codec/codec.hpp), turned back into a calibrated image (a lossy stream holds the image
// itself; a lossless one the raw words, calibrated here as the backends calibrate), and the
// original and the decoded image both go through the run's integration and peakfinder8; the
// results are compared (fidelity_measures.hpp). Synchronous and single-threaded: the sampler runs
// it on a thread of its own, a test calls it directly.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "calib/calibration_math.hpp"
#include "calib/constants.hpp"
#include "core/detector.hpp"
#include "core/event.hpp"
#include "integrate/integrator.hpp"
#include "peaks/peakfinder8.hpp"
#include "protocol/profile_topic.hpp"
#include "stages/fidelity/fidelity_measures.hpp"

namespace livedrp::stages {

// An event taken for a sample: its stream as the compress stage wrote it and its calibrated
// image as the pipeline computed it.
struct FidelityInput {
  EventHeader header;
  std::vector<std::uint8_t> stream;
  std::vector<float> calibrated;
};

struct FidelitySample {
  EventHeader header;
  std::uint64_t stream_bytes = 0;        // the compressed stream
  std::uint64_t uncompressed_bytes = 0;  // what it decodes to
  double max_pixel_error = 0;  // largest |decoded - original| of the calibrated image's pixels
  double evaluation_ms = 0;    // decode, integrations, searches and comparisons
  // With integration on: both profiles (NaN: bin without pixels) and their difference.
  std::optional<std::vector<double>> original_profile, decompressed_profile;
  std::optional<ProfileDifference> profile_difference;
  // With peak finding on: the parameters' version both searches used, both lists' sizes (found,
  // beyond the listed peaks) and how the listed peaks match.
  std::optional<PeakMatch> peak_match;
  std::uint64_t params_version = 0;
  std::uint64_t found_original = 0, found_decompressed = 0;
};

// The peak finding in force, read for each sample so that a sample follows a live parameter
// change: the version with its parameters, and a finder for them.
struct FidelityPeakSource {
  std::function<std::pair<std::uint64_t, peaks::PeakFinderParams>()> in_force;
  std::function<peaks::PeakFinder8(const peaks::PeakFinderParams&)> make_finder;
};

struct FidelityEvaluatorSetup {
  const DetectorDescription& detector;
  // For a stream of raw words (lossless): the run's constants and calibration; they must outlive
  // the evaluator (the engine's constants outlive its stages).
  const CalibrationConstants& constants;
  calib::CalibrationParams calibration;
  bool stream_holds_calibrated_image = true;
  std::optional<integrate::Integrator> integrator;  // none: integration is off
  std::optional<FidelityPeakSource> peak_source;    // none: peak finding is off
  double match_radius_px = 2.0;
};

class FidelityEvaluator {
 public:
  // Throws InputError when neither integration nor peak finding is given (nothing to compare).
  explicit FidelityEvaluator(FidelityEvaluatorSetup setup);

  // Throws InputError for a stream the codec refuses (damaged, foreign) or whose decoded size is
  // not the detector's event.
  FidelitySample evaluate(const FidelityInput& input);

  bool integrates() const { return integrator_.has_value(); }
  bool finds_peaks() const { return peak_source_.has_value(); }
  double match_radius_px() const { return match_radius_px_; }

 private:
  std::vector<float> decoded_image(const FidelityInput& input, std::uint64_t& decoded_bytes);
  peaks::PeakFinder8& finder_in_force(std::uint64_t& version);

  DetectorDescription detector_;
  const CalibrationConstants& constants_;
  calib::CalibrationParams calibration_;
  bool stream_holds_calibrated_image_;
  std::optional<integrate::Integrator> integrator_;
  std::optional<FidelityPeakSource> peak_source_;
  double match_radius_px_;
  std::optional<peaks::PeakFinder8> finder_;  // for finder_version_, rebuilt on a change
  std::uint64_t finder_version_ = 0;
};

}  // namespace livedrp::stages
