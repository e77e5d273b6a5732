#pragma once
// The operator's alarms (docs/gui.md, "Alarms"): thresholds on what the engine's `stats` report,
// and the engine's own errors from the `log` topic. A breach turns the state amber at once and red
// when it has lasted `red_after_s`; an engine error turns it red until acknowledged. Pure logic:
// the panel (alarm_panel.hpp) feeds it messages and the clock and draws the state.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "protocol/log_topic.hpp"
#include "protocol/peaks_topic.hpp"
#include "protocol/topics.hpp"

namespace livedrp::app {

struct AlarmSettings {
  std::optional<double> rate_floor_hz;     // processed events/s below it
  std::optional<double> drop_ceiling_pct;  // dropped / entered over the stats interval above it
  std::optional<double> hit_rate_min_pct;  // the interval's hit rate below it ...
  std::optional<double> hit_rate_max_pct;  // ... or above it
  // Gain-mode occupancy (from the `image` messages): the share of a segment's pixels in gain
  // mode `gain_mode` (named as the detector names it, or "bad") above the ceiling in any segment.
  std::optional<double> gain_ceiling_pct;
  std::string gain_mode = "bad";
  double red_after_s = 10;    // a breach this long turns red (0: at once)
  bool engine_errors = true;  // `log` errors and critical entries turn red
};

// Throws InputError naming the field: negative or non-finite thresholds, a hit-rate band with
// min above max or outside 0..100, a gain ceiling above 100 or without a mode, a negative
// red_after_s.
void validate(const AlarmSettings& settings);

enum class AlarmLevel { Ok, Amber, Red };

struct AlarmState {
  AlarmLevel level = AlarmLevel::Ok;
  std::vector<std::string> reasons;  // one line per breach, worst first; empty when Ok
};

class AlarmMonitor {
 public:
  void set_settings(const AlarmSettings& settings);  // validates; keeps the breaches' clocks
  const AlarmSettings& settings() const { return settings_; }

  // A `stats` payload received at `now_s` (any monotonic clock, seconds).
  void on_stats(const protocol::StatsPayload& stats, double now_s);
  void on_log(const protocol::LogEntry& entry);
  // An `image` message's gain occupancy received at `now_s`; an image without one (a detector
  // without gain modes) leaves the gain alarm as it was.
  void on_image(const protocol::ImageFrame& image, double now_s);
  // Clears the engine errors noted so far (the breaches of thresholds stay while they last).
  void acknowledge();
  // No run: breaches end (a stopped engine is not "below its rate floor").
  void on_idle();

  AlarmState state(double now_s) const;
  std::uint64_t unacknowledged_errors() const { return errors_; }

 private:
  struct Breach {
    std::optional<double> since_s;  // set while breached
    std::string text;
  };
  void update(Breach& breach, bool breached, std::string text, double now_s);

  AlarmSettings settings_;
  Breach rate_, drops_, hits_, gain_;
  std::optional<protocol::StatsPayload> previous_;  // for the interval's drops
  std::uint64_t errors_ = 0;
  std::string last_error_;
};

}  // namespace livedrp::app
