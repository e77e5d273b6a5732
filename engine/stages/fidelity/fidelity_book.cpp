#include "stages/fidelity/fidelity_book.hpp"

namespace livedrp::stages {

protocol::FidelityReport fidelity_report(const FidelitySample& sample, const FidelityCounts& counts,
                                         const FidelityBookSettings& settings) {
  protocol::FidelityReport r;
  r.sequence = sample.header.sequence;
  r.pulse_id = sample.header.pulse_id;
  r.codec = settings.codec;
  r.error_bound = settings.error_bound;
  r.samples = counts.evaluated;
  r.skipped = counts.skipped;
  r.failed = counts.failed;
  r.samples_hz = settings.samples_hz;
  r.stream_bytes = sample.stream_bytes;
  r.uncompressed_bytes = sample.uncompressed_bytes;
  r.max_pixel_error = sample.max_pixel_error;
  r.evaluation_ms = sample.evaluation_ms;
  if (sample.profile_difference) {
    r.has_profile = true;
    r.unit = settings.unit;
    r.centres = settings.centres;
    r.original = *sample.original_profile;
    r.decompressed = *sample.decompressed_profile;
    const ProfileDifference& d = *sample.profile_difference;
    r.relative = d.relative;
    r.compared_bins = d.compared_bins;
    r.max_abs_relative = d.max_abs;
    r.mean_abs_relative = d.mean_abs;
    r.rms_relative = d.rms;
  }
  if (sample.peak_match) {
    r.has_peaks = true;
    const PeakMatch& m = *sample.peak_match;
    r.params_version = sample.params_version;
    r.match_radius_px = settings.match_radius_px;
    r.found_original = sample.found_original;
    r.found_decompressed = sample.found_decompressed;
    r.peaks_original = m.original;
    r.peaks_decompressed = m.decompressed;
    r.kept = m.kept;
    r.lost = m.lost;
    r.added = m.added;
    r.recall = m.recall;
    r.precision = m.precision;
    r.mean_shift_px = m.mean_shift_px;
    r.max_shift_px = m.max_shift_px;
  }
  return r;
}

FidelityBook::FidelityBook(std::shared_ptr<FidelitySampler> sampler, FidelityBookSettings settings)
    : sampler_(std::move(sampler)), settings_(std::move(settings)) {}

void FidelityBook::add(const EventHeader&, const std::any&) {
  // Nothing per event: the stage's CPU part hands samples to the sampler directly.
}

std::vector<protocol::Message> FidelityBook::publish(bool last) {
  if (last) sampler_->wait_idle();
  std::optional<FidelitySampler::Evaluated> newest = sampler_->take_newest();
  if (!newest) return {};
  // The skips and failures up to now: a skip after the sample was evaluated is news too.
  FidelityCounts counts = sampler_->counts();
  counts.evaluated = newest->counts.evaluated;
  return {protocol::make_fidelity_message(fidelity_report(newest->sample, counts, settings_))};
}

nlohmann::json FidelityBook::stats_block(bool) {
  const FidelityCounts counts = sampler_->counts();
  return {{"samples", counts.evaluated},
          {"skipped", counts.skipped},
          {"failed", counts.failed},
          {"last_error", counts.last_error}};
}

}  // namespace livedrp::stages
