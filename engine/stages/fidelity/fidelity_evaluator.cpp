#include "stages/fidelity/fidelity_evaluator.hpp"

#include <chrono>
#include <cstring>

#include "calib/calibrate_cpu.hpp"
#include "codec/codec.hpp"
#include "core/error.hpp"
#include "exec/backend.hpp"

namespace livedrp::stages {

FidelityEvaluator::FidelityEvaluator(FidelityEvaluatorSetup setup)
    : detector_(setup.detector),
      constants_(setup.constants),
      calibration_(setup.calibration),
      stream_holds_calibrated_image_(setup.stream_holds_calibrated_image),
      integrator_(std::move(setup.integrator)),
      peak_source_(std::move(setup.peak_source)),
      match_radius_px_(setup.match_radius_px) {
  if (!integrator_ && !peak_source_)
    throw InputError(
        "fidelity: needs integration or peak finding to compare the decompressed image by; turn "
        "on integration.enabled or peak_finding.enabled, or set fidelity.enabled false");
  // One thread: the sampler's. The tables are built now, not on the first sample.
  if (integrator_) {
    integrator_->set_thread_pool(nullptr);
    integrator_->csr();
    integrator_->normalization();
  }
}

std::vector<float> FidelityEvaluator::decoded_image(const FidelityInput& input,
                                                    std::uint64_t& decoded_bytes) {
  const codec::DecodedArray decoded =
      codec::decompress_cpu(input.stream.data(), input.stream.size());
  decoded_bytes = decoded.bytes.size();
  std::vector<float> image(detector_.pixels());
  if (stream_holds_calibrated_image_) {
    if (decoded.bytes.size() != image.size() * sizeof(float))
      throw InputError("fidelity: the stream decodes to " + std::to_string(decoded.bytes.size()) +
                       " bytes, the calibrated image has " +
                       std::to_string(image.size() * sizeof(float)));
    std::memcpy(image.data(), decoded.bytes.data(), decoded.bytes.size());
  } else {
    if (decoded.bytes.size() != detector_.raw_event_bytes())
      throw InputError("fidelity: the stream decodes to " + std::to_string(decoded.bytes.size()) +
                       " bytes, the raw event has " + std::to_string(detector_.raw_event_bytes()));
    calibrate_event_cpu(detector_, constants_, calibration_, decoded.bytes.data(), image.data());
  }
  return image;
}

peaks::PeakFinder8& FidelityEvaluator::finder_in_force(std::uint64_t& version) {
  auto [in_force, params] = peak_source_->in_force();
  if (!finder_ || in_force != finder_version_) {
    finder_.emplace(peak_source_->make_finder(params));
    finder_version_ = in_force;
  }
  version = finder_version_;
  return *finder_;
}

FidelitySample FidelityEvaluator::evaluate(const FidelityInput& input) {
  const auto start = std::chrono::steady_clock::now();
  if (input.calibrated.size() != detector_.pixels())
    throw InputError("fidelity: the sample's image has " + std::to_string(input.calibrated.size()) +
                     " pixels, the detector " + std::to_string(detector_.pixels()));
  FidelitySample sample;
  sample.header = input.header;
  sample.stream_bytes = input.stream.size();
  const std::vector<float> decoded = decoded_image(input, sample.uncompressed_bytes);
  sample.max_pixel_error = max_pixel_error(input.calibrated, decoded);

  if (integrator_) {
    sample.original_profile = profile_intensities(integrator_->integrate(input.calibrated));
    sample.decompressed_profile = profile_intensities(integrator_->integrate(decoded));
    sample.profile_difference =
        compare_profiles(*sample.original_profile, *sample.decompressed_profile);
  }
  if (peak_source_) {
    peaks::PeakFinder8& finder = finder_in_force(sample.params_version);
    const peaks::PeakList original = finder.find(input.calibrated.data());
    const peaks::PeakList decompressed = finder.find(decoded.data());
    sample.found_original = std::uint64_t(original.found);
    sample.found_decompressed = std::uint64_t(decompressed.found);
    sample.peak_match = match_peaks(original.peaks, decompressed.peaks, match_radius_px_);
  }
  sample.evaluation_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return sample;
}

}  // namespace livedrp::stages
