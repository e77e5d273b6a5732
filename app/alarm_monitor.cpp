#include "app/alarm_monitor.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace livedrp::app {

namespace {

std::string number(double value, int decimals = 1) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

void check_threshold(const std::optional<double>& value, const char* name) {
  if (value && (!std::isfinite(*value) || *value < 0))
    throw InputError(std::string("alarms: ") + name + " " + number(*value, 3) +
                     " must be a finite number >= 0");
}

}  // namespace

void validate(const AlarmSettings& s) {
  check_threshold(s.rate_floor_hz, "event-rate floor");
  check_threshold(s.drop_ceiling_pct, "drop ceiling");
  check_threshold(s.hit_rate_min_pct, "hit-rate minimum");
  check_threshold(s.hit_rate_max_pct, "hit-rate maximum");
  if (s.drop_ceiling_pct && *s.drop_ceiling_pct > 100)
    throw InputError("alarms: drop ceiling " + number(*s.drop_ceiling_pct) + " % is above 100 %");
  for (const auto& bound : {s.hit_rate_min_pct, s.hit_rate_max_pct})
    if (bound && *bound > 100)
      throw InputError("alarms: hit-rate bound " + number(*bound) + " % is above 100 %");
  if (s.hit_rate_min_pct && s.hit_rate_max_pct && *s.hit_rate_min_pct > *s.hit_rate_max_pct)
    throw InputError("alarms: hit-rate band " + number(*s.hit_rate_min_pct) + " % to " +
                     number(*s.hit_rate_max_pct) + " % has its minimum above its maximum");
  check_threshold(s.gain_ceiling_pct, "gain-mode ceiling");
  if (s.gain_ceiling_pct && *s.gain_ceiling_pct > 100)
    throw InputError("alarms: gain-mode ceiling " + number(*s.gain_ceiling_pct) +
                     " % is above 100 %");
  if (s.gain_ceiling_pct && s.gain_mode.empty())
    throw InputError(
        "alarms: the gain-mode ceiling needs a gain mode (as the detector names it, "
        "or \"bad\")");
  if (!std::isfinite(s.red_after_s) || s.red_after_s < 0)
    throw InputError("alarms: red after " + number(s.red_after_s) + " s must be >= 0");
}

void AlarmMonitor::set_settings(const AlarmSettings& settings) {
  validate(settings);
  settings_ = settings;
  // A threshold switched off ends its breach; the others are judged again at the next stats.
  if (!settings_.rate_floor_hz) rate_ = {};
  if (!settings_.drop_ceiling_pct) drops_ = {};
  if (!settings_.hit_rate_min_pct && !settings_.hit_rate_max_pct) hits_ = {};
  if (!settings_.gain_ceiling_pct) gain_ = {};
  if (!settings_.engine_errors) acknowledge();
}

void AlarmMonitor::update(Breach& breach, bool breached, std::string text, double now_s) {
  if (!breached) {
    breach = {};
    return;
  }
  if (!breach.since_s) breach.since_s = now_s;
  breach.text = std::move(text);
}

void AlarmMonitor::on_stats(const protocol::StatsPayload& stats, double now_s) {
  if (settings_.rate_floor_hz) {
    const double rate = stats.event_rate_hz;
    update(rate_, !(rate >= *settings_.rate_floor_hz),
           "event rate " + number(rate) + " /s below the floor of " +
               number(*settings_.rate_floor_hz) + " /s",
           now_s);
  }
  if (settings_.drop_ceiling_pct) {
    // Over the interval since the previous stats of the same run (counts only rise in a run).
    const bool same_run = previous_ && stats.events_in >= previous_->events_in &&
                          stats.events_dropped >= previous_->events_dropped;
    const std::uint64_t entered =
        same_run ? stats.events_in - previous_->events_in : stats.events_in;
    const std::uint64_t dropped =
        same_run ? stats.events_dropped - previous_->events_dropped : stats.events_dropped;
    if (entered > 0) {
      const double percent = 100.0 * double(dropped) / double(entered);
      update(drops_, percent > *settings_.drop_ceiling_pct,
             std::to_string(dropped) + " of " + std::to_string(entered) + " events dropped (" +
                 number(percent) + " %, ceiling " + number(*settings_.drop_ceiling_pct) + " %)",
             now_s);
    }
  }
  if ((settings_.hit_rate_min_pct || settings_.hit_rate_max_pct) && stats.peak_finding &&
      std::isfinite(stats.peak_finding->interval_hit_rate)) {
    const double percent = 100.0 * stats.peak_finding->interval_hit_rate;
    const bool low = settings_.hit_rate_min_pct && percent < *settings_.hit_rate_min_pct;
    const bool high = settings_.hit_rate_max_pct && percent > *settings_.hit_rate_max_pct;
    update(hits_, low || high,
           "hit rate " + number(percent) + " % " +
               (low ? "below " + number(*settings_.hit_rate_min_pct)
                    : "above " + number(settings_.hit_rate_max_pct.value_or(100))) +
               " %",
           now_s);
  }
  previous_ = stats;
}

void AlarmMonitor::on_image(const protocol::ImageFrame& image, double now_s) {
  if (!settings_.gain_ceiling_pct || image.gain_occupancy.empty() || image.gain_modes.empty())
    return;
  const std::size_t modes = image.gain_modes.size();
  std::size_t mode = 0;
  while (mode < modes && image.gain_modes[mode] != settings_.gain_mode) ++mode;
  if (mode == modes) {
    std::string known;
    for (const std::string& name : image.gain_modes) known += (known.empty() ? "" : ", ") + name;
    update(gain_, true,
           "gain mode '" + settings_.gain_mode + "' is not one of this detector's (" + known + ")",
           now_s);
    return;
  }
  std::size_t worst = 0;
  float worst_fraction = -1;
  for (std::size_t segment = 0; segment * modes + mode < image.gain_occupancy.size(); ++segment) {
    const float fraction = image.gain_occupancy[segment * modes + mode];
    if (fraction > worst_fraction) {
      worst_fraction = fraction;
      worst = segment;
    }
  }
  const double percent = 100.0 * double(worst_fraction);
  update(gain_, percent > *settings_.gain_ceiling_pct,
         "gain mode " + settings_.gain_mode + " on " + number(percent) + " % of segment " +
             std::to_string(worst) + "'s pixels (ceiling " + number(*settings_.gain_ceiling_pct) +
             " %)",
         now_s);
}

void AlarmMonitor::on_log(const protocol::LogEntry& entry) {
  if (!settings_.engine_errors || entry.level == protocol::LogLevel::Warning) return;
  errors_ += 1 + entry.suppressed;  // held-back entries may be errors too: counted as such
  last_error_ = entry.text;
}

void AlarmMonitor::acknowledge() {
  errors_ = 0;
  last_error_.clear();
}

void AlarmMonitor::on_idle() {
  rate_ = {};
  drops_ = {};
  hits_ = {};
  gain_ = {};
  previous_.reset();
}

AlarmState AlarmMonitor::state(double now_s) const {
  AlarmState state;
  std::vector<std::string> red, amber;
  if (errors_ > 0)
    red.push_back(std::to_string(errors_) + (errors_ == 1 ? " engine error" : " engine errors") +
                  ", last: " + last_error_);
  for (const Breach* breach : {&rate_, &drops_, &hits_, &gain_}) {
    if (!breach->since_s) continue;
    const double lasted = now_s - *breach->since_s;
    if (lasted >= settings_.red_after_s)
      red.push_back(breach->text + " for " + number(lasted, 0) + " s");
    else
      amber.push_back(breach->text);
  }
  state.level = !red.empty()     ? AlarmLevel::Red
                : !amber.empty() ? AlarmLevel::Amber
                                 : AlarmLevel::Ok;
  state.reasons = std::move(red);
  state.reasons.insert(state.reasons.end(), amber.begin(), amber.end());
  return state;
}

}  // namespace livedrp::app
