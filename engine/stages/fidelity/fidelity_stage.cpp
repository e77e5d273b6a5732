#include "stages/fidelity/fidelity_stage.hpp"

#include <chrono>

#include "core/error.hpp"

namespace livedrp::stages {

FidelityStage::FidelityStage(std::shared_ptr<const CompressStage> compress,
                             std::shared_ptr<FidelitySampler> sampler, FidelityBookSettings book,
                             std::size_t pixels)
    : compress_(std::move(compress)),
      sampler_(std::move(sampler)),
      book_(std::move(book)),
      pixels_(pixels) {}

std::any FidelityStage::run_cpu(const CpuEvent& event) {
  const auto now = FidelitySampler::Clock::now();
  // The compress stage ran before this one on this thread, for this event: its stream is this
  // event's.
  if (sampler_->take_due(now))
    sampler_->offer(event.header, compress_->last_stream(), event.calibrated);
  return {};
}

std::unique_ptr<StageBook> FidelityStage::make_book() const {
  return std::make_unique<FidelityBook>(sampler_, book_);
}

std::shared_ptr<FidelityStage> make_fidelity_stage(const FidelityConfig& config,
                                                   const FidelityStageInputs& inputs) {
  if (!config.enabled) return nullptr;
  if (!inputs.compress)
    throw InputError(
        "fidelity.enabled: compression is off (compression.codec 'off'), so there is no stream "
        "to measure; choose codec 'lossy' (or 'lossless') or set fidelity.enabled false");
  if (!inputs.integrate && !inputs.peaks)
    throw InputError(
        "fidelity.enabled: needs integration or peak finding to compare the decompressed image "
        "by; turn on integration.enabled or peak_finding.enabled, or set fidelity.enabled false");

  FidelityBookSettings book;
  const codec::CodecParams& codec = inputs.compress->params();
  book.codec = codec::to_string(codec.codec);
  book.error_bound = codec.codec == codec::Codec::Lossy ? codec.error_bound : 0.0;
  book.samples_hz = config.samples_hz;
  book.match_radius_px = config.match_radius_px;

  FidelityEvaluatorSetup setup{inputs.detector, inputs.constants, inputs.calibration};
  setup.stream_holds_calibrated_image = inputs.compress->compresses_calibrated_image();
  setup.match_radius_px = config.match_radius_px;
  if (inputs.integrate) {
    // A copy of the run's integrator (its tables built): the sampler's thread integrates beside
    // the pipeline's, and an Integrator serves one integrate() at a time.
    setup.integrator = inputs.integrate->integrator();
    book.unit = inputs.integrate->book_settings().unit;
    book.centres = inputs.integrate->book_settings().centres;
  }
  if (inputs.peaks) {
    std::shared_ptr<const PeakStage> peak_stage = inputs.peaks;
    setup.peak_source = FidelityPeakSource{
        [peak_stage] { return peak_stage->params().in_force(); },
        [peak_stage](const peaks::PeakFinderParams& params) { return peak_stage->finder(params); }};
  }
  auto sampler =
      std::make_shared<FidelitySampler>(FidelityEvaluator(std::move(setup)), config.samples_hz);
  return std::make_shared<FidelityStage>(inputs.compress, std::move(sampler), std::move(book),
                                         inputs.detector.pixels());
}

}  // namespace livedrp::stages
