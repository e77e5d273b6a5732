#pragma once
// The engine-side book of the fidelity sampler (stage contract, stages/stage.hpp): at each report
// tick, the newest evaluated sample as a `fidelity` message (none when no sample was evaluated
// since the last one), and the sampler's counts in stats.stage_stats.fidelity. At the end of a
// run it waits for the sample in evaluation, so that a run's last sample is published.
#include <memory>
#include <string>
#include <vector>

#include "protocol/fidelity_topic.hpp"
#include "stages/fidelity/fidelity_sampler.hpp"
#include "stages/stage.hpp"

namespace livedrp::stages {

// What every message of the run repeats.
struct FidelityBookSettings {
  std::string codec = "lossy";  // "lossy" or "lossless"
  double error_bound = 0;       // 0 for lossless
  double samples_hz = 0;
  double match_radius_px = 0;
  protocol::RadialUnit unit = protocol::RadialUnit::QInverseNm;
  std::vector<double> centres;  // the integrator's bin centres; empty when integration is off
};

// The `fidelity` message of one evaluated sample with the sampler's counts.
protocol::FidelityReport fidelity_report(const FidelitySample& sample, const FidelityCounts& counts,
                                         const FidelityBookSettings& settings);

class FidelityBook final : public StageBook {
 public:
  FidelityBook(std::shared_ptr<FidelitySampler> sampler, FidelityBookSettings settings);

  void add(const EventHeader& header, const std::any& result) override;
  std::vector<protocol::Message> publish(bool last) override;
  // {"samples": evaluated, "skipped": ..., "failed": ..., "last_error": text or ""}; the counts
  // are the run's (the sampler keeps no intervals: a few samples a second need none).
  nlohmann::json stats_block(bool whole_run) override;

 private:
  std::shared_ptr<FidelitySampler> sampler_;
  FidelityBookSettings settings_;
};

}  // namespace livedrp::stages
