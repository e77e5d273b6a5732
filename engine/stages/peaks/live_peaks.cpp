#include "stages/peaks/live_peaks.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>

#include <spdlog/spdlog.h>

#include "core/error.hpp"
#include "integrate/array_values.hpp"
#include "io/array_file.hpp"

namespace livedrp {
namespace {

// One event's pixels from FILE.npy or FILE.h5:/dataset, in any shape with that many values
// (segments x rows x cols or the stacked slab). `field` names the configuration field.
io::Array read_event_array(const std::string& location, const DetectorDescription& detector,
                           const char* field) {
  io::Array array;
  try {
    array = io::read_array(io::parse_array_location(location));
  } catch (const InputError& e) {
    throw InputError(std::string(field) + ": " + e.what());
  }
  if (array.elements() != detector.pixels())
    throw InputError(std::string(field) + ": '" + location + "' has shape " +
                     io::shape_text(array.shape) + " (" + std::to_string(array.elements()) +
                     " values); the detector " + detector.name + " has " +
                     std::to_string(detector.pixels()) + " pixels");
  return array;
}

// peak_finding.search_gain_configs: every pixel whose ePix10ka gain configuration (the constants'
// pixel_status & calib::kStatusConfigBits) is not among `names` joins `bad`. Refused for a
// detector without a per-pixel configuration (every pixel would read as FH) and when no pixel of
// the detector has a listed configuration (nothing would be searched).
void mask_unsearched_gain_configs(const std::vector<std::string>& names,
                                  const DetectorDescription& detector,
                                  const CalibrationConstants& constants,
                                  std::vector<std::uint8_t>& bad) {
  const std::string field = "peak_finding.search_gain_configs";
  const std::vector<std::string>& known = epix10ka_config_names();
  std::string listed, quoted;
  for (const std::string& name : names) {
    listed += (listed.empty() ? "" : ", ") + name;
    quoted += (quoted.empty() ? "\"" : ", \"") + name + "\"";
  }
  if (!has_gain_configuration(detector))
    throw InputError(field + " is [" + quoted + "], but detector " + detector.name +
                     " (raw encoding " + std::string(to_string(detector.encoding)) +
                     ") has no per-pixel gain configuration to choose by: only ePix10ka "
                     "detectors configure FH, FM, FL, AHL or AML per pixel. Give [] to search "
                     "every pixel, or leave pixels out with peak_finding.mask");
  constexpr std::size_t kValues = std::size_t(calib::kStatusConfigBits) + 1;
  std::array<bool, kValues> searched{};
  for (const std::string& name : names) {
    const std::optional<std::uint8_t> value = epix10ka_config_value(name);
    if (!value)
      throw InputError(field + ": \"" + name +
                       "\" is not an ePix10ka gain configuration (FH, FM, FL, AHL, AML)");
    searched[*value] = true;
  }
  std::array<std::size_t, kValues> configured{};
  std::size_t kept = 0;
  for (std::size_t p = 0; p < bad.size(); ++p) {
    const std::size_t value = constants.pixel_status[p] & calib::kStatusConfigBits;
    ++configured[value];
    if (searched[value])
      ++kept;
    else
      bad[p] = 1;
  }
  std::string present;
  for (std::size_t value = 0; value < kValues; ++value)
    if (configured[value] > 0)
      present += (present.empty() ? "" : ", ") +
                 (value < known.size() ? known[value] : "value " + std::to_string(value)) + " " +
                 std::to_string(configured[value]);
  if (kept == 0)
    throw InputError(field + " is [" + quoted + "], but no pixel of detector " + detector.name +
                     " is configured so: nothing would be searched (the calibration constants' "
                     "pixels per configuration: " +
                     present + ")");
  spdlog::info(
      "peak finding: gain configurations {} searched: {} of {} pixels are configured so "
      "(constants: {})",
      listed, kept, bad.size(), present);
}

}  // namespace

LivePeakGeometry::LivePeakGeometry(const LivePeakFindingConfig& config,
                                   const DetectorDescription& detector,
                                   const CalibrationConstants& constants)
    : layout_(peaks::slab_layout(detector)) {
  if (!config.radius_map.empty()) {
    radius_ = integrate::float_values(
        read_event_array(config.radius_map, detector, "peak_finding.radius_map"));
    for (std::size_t p = 0; p < radius_.size(); ++p)
      if (!std::isfinite(radius_[p]) || radius_[p] < 0)
        throw InputError("peak_finding.radius_map: '" + config.radius_map + "' has radius " +
                         std::to_string(radius_[p]) + " at pixel " + std::to_string(p) +
                         " (radii must be finite and >= 0)");
  } else {
    AssembledPoint beam{};
    try {
      beam = assembled_bounds(detector).centre();
    } catch (const InputError& e) {
      if (!config.beam)
        throw InputError(std::string("peak_finding.beam: the detector has no placement to take "
                                     "the beam from (") +
                         e.what() + "); give peak_finding.radius_map");
    }
    if (config.beam) beam = {config.beam->first, config.beam->second};
    radius_ = peaks::radius_map(detector, beam.x, beam.y);
  }
  bad_.assign(detector.pixels(), 0);
  if (!config.mask.empty())
    bad_ = integrate::mask_values(read_event_array(config.mask, detector, "peak_finding.mask"));
  for (std::size_t p = 0; p < bad_.size(); ++p)
    if (constants.masked(p)) bad_[p] = 1;
  if (!config.search_gain_configs.empty())
    mask_unsearched_gain_configs(config.search_gain_configs, detector, constants, bad_);
}

peaks::PeakFinder8 LivePeakGeometry::finder(const peaks::PeakFinderParams& params) const {
  return peaks::PeakFinder8(layout_, radius_, bad_, params);
}

protocol::EventPeaks event_peaks(const EventHeader& header, const peaks::PeakList& list,
                                 const peaks::PeakFinderParams& params, std::uint64_t version,
                                 bool rerun, const ImageAssembly* assembly) {
  protocol::EventPeaks out;
  out.sequence = header.sequence;
  out.pulse_id = header.pulse_id;
  out.found = std::uint64_t(std::max(0, list.found));
  out.hit = list.hit;
  out.min_peaks_for_hit = std::uint64_t(std::max(0, params.min_peaks_for_hit));
  out.params_version = version;
  out.rerun = rerun;
  out.peaks.reserve(list.peaks.size());
  for (const peaks::Peak& p : list.peaks) {
    protocol::PeakRow row;
    row.fs = p.fs;
    row.ss = p.ss;
    double x = p.fs, y = p.ss;
    if (assembly) assembly->slab_to_image(p.fs, p.ss, x, y);
    row.x = float(x);
    row.y = float(y);
    row.intensity = p.intensity;
    row.max_value = p.max_value;
    row.sigma = p.local_sigma;
    row.snr = p.snr;
    row.segment = p.segment;
    row.num_pixels = p.num_pixels;
    out.peaks.push_back(row);
  }
  return out;
}

LivePeakBook::LivePeakBook(double peaks_hz)
    : period_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(1.0 / peaks_hz))) {
  stats_.params_version = 1;
}

void LivePeakBook::add(std::uint64_t found, bool hit, double search_us) {
  std::lock_guard lock(mutex_);
  ++stats_.interval_events;
  ++stats_.total_events;
  stats_.interval_peaks += found;
  stats_.total_peaks += found;
  interval_us_sum_ += search_us;
  interval_us_max_ = std::max(interval_us_max_, search_us);
  total_us_sum_ += search_us;
  if (hit) {
    ++stats_.interval_hits;
    ++stats_.total_hits;
  }
}

void LivePeakBook::offer_hit(protocol::EventPeaks peaks) {
  std::lock_guard lock(mutex_);
  if (pending_) ++stats_.hits_not_sent;  // a newer hit came before the older one's turn
  pending_ = std::move(peaks);
}

std::optional<protocol::EventPeaks> LivePeakBook::take_due(Clock::time_point now, bool flush) {
  std::lock_guard lock(mutex_);
  if (!pending_ || (!flush && now < next_send_)) return std::nullopt;
  std::optional<protocol::EventPeaks> due = std::move(pending_);
  pending_.reset();
  next_send_ = now + period_;
  ++stats_.peaks_messages;
  return due;
}

void LivePeakBook::count_sent_rerun() {
  std::lock_guard lock(mutex_);
  ++stats_.peaks_messages;
}

void LivePeakBook::set_params_version(std::uint64_t version) {
  std::lock_guard lock(mutex_);
  stats_.params_version = version;
}

protocol::PeakFindingStats LivePeakBook::take_interval(double& mean_us, double& max_us) {
  std::lock_guard lock(mutex_);
  protocol::PeakFindingStats block = stats_;
  block.interval_hit_rate = block.interval_events > 0
                                ? double(block.interval_hits) / double(block.interval_events)
                                : std::numeric_limits<double>::quiet_NaN();
  mean_us = block.interval_events > 0 ? interval_us_sum_ / double(block.interval_events) : 0;
  max_us = interval_us_max_;
  stats_.interval_events = stats_.interval_hits = stats_.interval_peaks = 0;
  interval_us_sum_ = interval_us_max_ = 0;
  return block;
}

protocol::PeakFindingStats LivePeakBook::totals(double& mean_us) const {
  std::lock_guard lock(mutex_);
  protocol::PeakFindingStats block = stats_;
  block.interval_events = block.total_events;
  block.interval_hits = block.total_hits;
  block.interval_peaks = block.total_peaks;
  block.interval_hit_rate = block.total_events > 0
                                ? double(block.total_hits) / double(block.total_events)
                                : std::numeric_limits<double>::quiet_NaN();
  mean_us = block.total_events > 0 ? total_us_sum_ / double(block.total_events) : 0;
  return block;
}

}  // namespace livedrp
