#pragma once
// The engine-side book of live integration (stage contract, stages/stage.hpp): the profiles of
// the last `average_events` events and the newest one, published on the `profile` topic
// `publish_hz` times a second (and once more at the end of a run, so that a run always ends
// with its last event's profile).
// The window's sums are kept per bin over the finite values (a NaN bin had no pixels in that
// event) and summed again from the window each time it has turned over, so that rounding cannot
// build up over a run of millions of events.
#include <cstdint>
#include <deque>
#include <vector>

#include "protocol/profile_topic.hpp"
#include "stages/stage.hpp"

namespace livedrp::stages {

// The result an event carries for this book: its mean intensity per radial bin, NaN where no
// pixel contributed (CompletedEvent::profile's convention).
using ProfileResult = std::vector<double>;

struct IntegrationBookSettings {
  protocol::RadialUnit unit = protocol::RadialUnit::QInverseNm;
  std::vector<double> centres;  // bin centres, as the integrator reports them
  std::uint64_t average_events = 100;
  double publish_hz = 4;
};

class IntegrationBook final : public StageBook {
 public:
  explicit IntegrationBook(IntegrationBookSettings settings);

  // Throws RuntimeFault when the profile's bins are not the integrator's.
  void add(const EventHeader& header, const std::any& result) override;
  // The newest profile and the window's average when an event came since the last one; none
  // otherwise.
  std::vector<protocol::Message> publish(bool last) override;
  nlohmann::json stats_block(bool whole_run) override;
  double publish_hz() const override { return settings_.publish_hz; }

 private:
  void add_to_sums(const std::vector<double>& profile, double sign, int step);

  IntegrationBookSettings settings_;
  std::deque<std::vector<double>> window_;
  std::vector<double> sum_;
  std::vector<std::uint64_t> finite_;
  std::uint64_t added_since_resum_ = 0;
  std::uint64_t latest_sequence_ = 0, latest_pulse_id_ = 0;
  bool fresh_ = false;  // an event came since the last message
};

}  // namespace livedrp::stages
