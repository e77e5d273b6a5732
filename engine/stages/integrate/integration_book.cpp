#include "stages/integrate/integration_book.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "core/error.hpp"

namespace livedrp::stages {

IntegrationBook::IntegrationBook(IntegrationBookSettings settings)
    : settings_(std::move(settings)),
      sum_(settings_.centres.size(), 0.0),
      finite_(settings_.centres.size(), 0) {
  if (settings_.average_events < 1) throw InputError("integration.average_events must be >= 1");
}

void IntegrationBook::add_to_sums(const std::vector<double>& profile, double sign, int step) {
  for (std::size_t b = 0; b < sum_.size(); ++b)
    if (std::isfinite(profile[b])) {
      sum_[b] += sign * profile[b];
      finite_[b] = std::uint64_t(std::int64_t(finite_[b]) + step);
    }
}

void IntegrationBook::add(const EventHeader& header, const std::any& result) {
  const auto& profile = std::any_cast<const ProfileResult&>(result);
  const std::size_t bins = settings_.centres.size();
  if (profile.size() != bins)
    throw RuntimeFault("integration: an event's profile has " + std::to_string(profile.size()) +
                       " bins, the integrator " + std::to_string(bins));
  window_.push_back(profile);
  add_to_sums(window_.back(), 1.0, 1);
  if (window_.size() > settings_.average_events) {
    add_to_sums(window_.front(), -1.0, -1);
    window_.pop_front();
  }
  if (++added_since_resum_ >= settings_.average_events) {
    sum_.assign(bins, 0.0);
    finite_.assign(bins, 0);
    for (const auto& p : window_) add_to_sums(p, 1.0, 1);
    added_since_resum_ = 0;
  }
  latest_sequence_ = header.sequence;
  latest_pulse_id_ = header.pulse_id;
  fresh_ = true;
}

std::vector<protocol::Message> IntegrationBook::publish(bool last) {
  (void)last;  // the last event's profile goes out like any other fresh one
  if (!fresh_) return {};
  fresh_ = false;
  protocol::RadialProfile profile;
  profile.unit = settings_.unit;
  profile.sequence = latest_sequence_;
  profile.pulse_id = latest_pulse_id_;
  profile.average_window = settings_.average_events;
  profile.average_events = window_.size();
  profile.centres = settings_.centres;
  profile.latest = window_.back();  // the newest event's: the window holds at least it
  profile.average.resize(sum_.size());
  for (std::size_t b = 0; b < sum_.size(); ++b)
    profile.average[b] =
        finite_[b] > 0 ? sum_[b] / double(finite_[b]) : std::numeric_limits<double>::quiet_NaN();
  // Throws ProtocolError for a profile the protocol refuses (an infinite intensity from an
  // event's corrupt pixels): the engine logs it and goes on.
  return {protocol::make_profile_message(profile)};
}

nlohmann::json IntegrationBook::stats_block(bool whole_run) {
  (void)whole_run;
  return nullptr;  // the profile has a topic of its own
}

}  // namespace livedrp::stages
