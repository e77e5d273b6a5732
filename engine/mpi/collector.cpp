#include "mpi/collector.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>

#include "core/error.hpp"

namespace livedrp::mpi {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double seconds(Collector::Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Raw bytes per event of a rank, from its whole-run rates (the collector does not know the
// rank's detector); 0 before the rank has processed anything.
double event_bytes(const protocol::StatsPayload& stats) {
  return stats.event_rate_hz > 0 && std::isfinite(stats.input_gbps)
             ? stats.input_gbps * 1e9 / stats.event_rate_hz
             : 0.0;
}

std::string joined(const std::set<std::string>& names) {
  std::string out;
  for (const auto& name : names) out += (out.empty() ? "" : ", ") + name;
  return out;
}

}  // namespace

Collector::Collector(int size, int collector_rank, bool collector_processes,
                     std::vector<int> processing, Clock::time_point start)
    : size_(size),
      collector_rank_(collector_rank),
      collector_processes_(collector_processes),
      start_(start) {
  for (int rank : processing) ranks_[rank].rank = rank;
}

void Collector::take(RankReport report, Clock::time_point now) {
  const auto it = ranks_.find(report.rank);
  if (it == ranks_.end())
    throw RuntimeFault("MPI: a report from rank " + std::to_string(report.rank) +
                       ", which takes no share of the events");
  Rank& r = it->second;
  if (r.report && r.report->final)
    throw RuntimeFault("MPI: rank " + std::to_string(report.rank) +
                       " reported again after its final report");
  if (r.report) {
    const double dt = report.stats.elapsed_s - r.report->stats.elapsed_s;
    if (dt > 0)
      r.rate_hz =
          double(report.stats.events_processed -
                 std::min(report.stats.events_processed, r.report->stats.events_processed)) /
          dt;
  }
  r.heard = now;
  if (report.image) {
    r.image = std::move(report.image);
    report.image.reset();
  }
  for (protocol::Message& message : report.messages) forwarded_.push_back(std::move(message));
  report.messages.clear();
  r.report = std::move(report);
  r.lost = false;
  r.lost_reason.clear();
}

std::vector<int> Collector::mark_silent(Clock::time_point now, Clock::duration limit) {
  std::vector<int> newly;
  for (auto& [rank, r] : ranks_) {
    if (r.lost || (r.report && r.report->final)) continue;
    const auto since = r.report ? r.heard : start_;
    if (now - since <= limit) continue;
    r.lost = true;
    char text[160];
    std::snprintf(text, sizeof text,
                  "lost: no report for %.1f s (its process or node is gone?); its last counts "
                  "are kept",
                  seconds(now - since));
    r.lost_reason = text;
    newly.push_back(rank);
  }
  return newly;
}

bool Collector::lost(int rank) const {
  const auto it = ranks_.find(rank);
  return it != ranks_.end() && it->second.lost;
}

bool Collector::all_final() const {
  for (const auto& [rank, r] : ranks_)
    if (!r.lost && (!r.report || !r.report->final)) return false;
  return true;
}

bool Collector::any_report() const {
  for (const auto& [rank, r] : ranks_)
    if (r.report) return true;
  return false;
}

protocol::StatsPayload Collector::sums() const {
  protocol::StatsPayload s;
  s.latency_p50_us = s.latency_p99_us = s.latency_max_us = kNaN;
  std::set<std::string> backends, devices;
  // Per stage: time-weighted by the events each rank processed.
  struct StageSum {
    double weighted_us = 0, weighted_gbps = 0, events = 0, max_us = 0;
  };
  std::map<std::string, StageSum> stage_sums;
  std::vector<std::string> stage_order;
  double compression_gbps_weighted = 0, compression_events = 0;
  for (const auto& [rank, r] : ranks_) {
    if (!r.report) continue;
    const protocol::StatsPayload& x = r.report->stats;
    s.events_in += x.events_in;
    s.events_processed += x.events_processed;
    s.events_dropped += x.events_dropped;
    for (const auto& [reason, count] : x.drops_by_reason) s.drops_by_reason[reason] += count;
    s.events_in_flight += x.events_in_flight;
    s.order_errors += x.order_errors;
    s.ring_slots += x.ring_slots;
    s.ring_occupancy += x.ring_occupancy;
    s.reorder_depth += x.reorder_depth;
    s.elapsed_s = std::max(s.elapsed_s, x.elapsed_s);
    if (!x.backend.empty()) backends.insert(x.backend);
    if (!x.device.empty()) devices.insert(x.device);
    const double events = double(x.events_processed);
    for (const auto& stage : x.stages) {
      if (!stage_sums.count(stage.name)) stage_order.push_back(stage.name);
      StageSum& sum = stage_sums[stage.name];
      if (std::isfinite(stage.mean_us)) sum.weighted_us += stage.mean_us * events;
      if (std::isfinite(stage.gbps)) sum.weighted_gbps += stage.gbps * events;
      if (std::isfinite(stage.max_us)) sum.max_us = std::max(sum.max_us, stage.max_us);
      sum.events += events;
    }
    if (x.compression) {
      if (!s.compression) {
        s.compression.emplace();
        s.compression->codec = x.compression->codec;
        s.compression->error_bound = x.compression->error_bound;
      }
      s.compression->total_bytes_in += x.compression->total_bytes_in;
      s.compression->total_bytes_out += x.compression->total_bytes_out;
      for (std::size_t b = 0; b < protocol::kRatioHistogramBins; ++b)
        s.compression->ratio_histogram[b] += x.compression->ratio_histogram[b];
      if (std::isfinite(x.compression->gbps)) {
        compression_gbps_weighted += x.compression->gbps * events;
        compression_events += events;
      }
    }
    if (x.peak_finding) {
      if (!s.peak_finding) s.peak_finding.emplace();
      s.peak_finding->total_events += x.peak_finding->total_events;
      s.peak_finding->total_hits += x.peak_finding->total_hits;
      s.peak_finding->total_peaks += x.peak_finding->total_peaks;
      s.peak_finding->params_version =
          std::max(s.peak_finding->params_version, x.peak_finding->params_version);
    }
  }
  s.backend = joined(backends);
  s.device = joined(devices);
  for (const auto& name : stage_order) {
    const StageSum& sum = stage_sums[name];
    s.stages.push_back({name, sum.events > 0 ? sum.weighted_us / sum.events : kNaN, sum.max_us,
                        sum.events > 0 ? sum.weighted_gbps / sum.events : kNaN});
  }
  if (s.compression)
    s.compression->gbps =
        compression_events > 0 ? compression_gbps_weighted / compression_events : kNaN;
  return s;
}

LatencyHistogram Collector::latencies() const {
  LatencyHistogram merged;
  for (const auto& [rank, r] : ranks_) {
    if (!r.report || r.report->latency.count() == 0) continue;
    for (std::size_t b = 0; b < LatencyHistogram::kBins; ++b)
      if (const std::uint64_t n = r.report->latency.bins()[b]) merged.add_to_bin(b, n);
    merged.raise_max(r.report->latency.max_us());
  }
  return merged;
}

protocol::RanksBlock Collector::ranks_block(Clock::time_point now) const {
  protocol::RanksBlock block;
  block.size = std::uint64_t(size_);
  block.collector = std::uint64_t(collector_rank_);
  block.collector_processes = collector_processes_;
  for (const auto& [rank, r] : ranks_) {
    protocol::RankStats stats;
    stats.rank = std::uint64_t(rank);
    stats.event_rate_hz = r.rate_hz;
    if (r.report) {
      const protocol::StatsPayload& x = r.report->stats;
      stats.state = !r.report->error.empty() ? protocol::kRankFailed
                    : r.report->final        ? protocol::kRankFinished
                                             : protocol::kRankRunning;
      stats.error = r.report->error;
      stats.host = r.report->host;
      stats.pid = r.report->pid;
      stats.events_in = x.events_in;
      stats.events_processed = x.events_processed;
      stats.events_dropped = x.events_dropped;
      stats.drops_by_reason = x.drops_by_reason;
      stats.elapsed_s = x.elapsed_s;
      stats.backend = x.backend;
      stats.device = x.device;
      stats.report_age_s = seconds(now - r.heard);
    } else {
      stats.report_age_s = seconds(now - start_);
    }
    if (r.lost) {
      stats.state = protocol::kRankLost;
      stats.error = r.lost_reason;
    }
    block.processing.push_back(std::move(stats));
  }
  return block;
}

protocol::StatsPayload Collector::take_stats(Clock::time_point now) {
  protocol::StatsPayload s = sums();
  s.event_rate_hz = 0;
  s.input_gbps = 0;
  for (const auto& [rank, r] : ranks_)
    if (r.report && std::isfinite(r.rate_hz)) {
      s.event_rate_hz += r.rate_hz;
      s.input_gbps += r.rate_hz * event_bytes(r.report->stats) / 1e9;
    }
  if (s.compression) {
    protocol::CompressionStats& c = *s.compression;
    c.interval_bytes_in = c.total_bytes_in - std::min(c.total_bytes_in, last_bytes_in_);
    c.interval_bytes_out = c.total_bytes_out - std::min(c.total_bytes_out, last_bytes_out_);
    c.interval_ratio = c.interval_bytes_out > 0
                           ? double(c.interval_bytes_in) / double(c.interval_bytes_out)
                           : kNaN;
    last_bytes_in_ = c.total_bytes_in;
    last_bytes_out_ = c.total_bytes_out;
  }
  if (s.peak_finding) {
    protocol::PeakFindingStats& p = *s.peak_finding;
    p.interval_events = p.total_events - std::min(p.total_events, last_peak_events_);
    p.interval_hits = p.total_hits - std::min(p.total_hits, last_peak_hits_);
    p.interval_peaks = p.total_peaks - std::min(p.total_peaks, last_peaks_);
    p.interval_hit_rate =
        p.interval_events > 0 ? double(p.interval_hits) / double(p.interval_events) : kNaN;
    p.peaks_messages = peaks_messages_;
    p.hits_not_sent = p.total_hits - std::min(p.total_hits, peaks_messages_);
    last_peak_events_ = p.total_events;
    last_peak_hits_ = p.total_hits;
    last_peaks_ = p.total_peaks;
  }
  // The latencies added since the previous `stats`: the merged histogram less the one then. Its
  // maximum is the upper edge of the highest bin reached (capped by the run's maximum).
  const LatencyHistogram merged = latencies();
  LatencyHistogram interval;
  std::size_t highest = LatencyHistogram::kBins;
  for (std::size_t b = 0; b < LatencyHistogram::kBins; ++b)
    if (const std::uint64_t n =
            merged.bins()[b] - std::min(merged.bins()[b], last_latency_bins_[b])) {
      interval.add_to_bin(b, n);
      highest = b;
    }
  last_latency_bins_ = merged.bins();
  if (interval.count() > 0) {
    interval.raise_max(std::min(LatencyHistogram::upper_edge_us(highest), merged.max_us()));
    s.latency_p50_us = interval.quantile_us(0.50);
    s.latency_p99_us = interval.quantile_us(0.99);
    s.latency_max_us = interval.max_us();
  }
  s.ranks = ranks_block(now);
  return s;
}

std::optional<protocol::RadialProfile> Collector::take_profile() {
  bool changed = false;
  for (const auto& [rank, r] : ranks_)
    if (r.report && r.report->profile &&
        (!r.profile_seen || r.profile_sequence != r.report->profile->latest_sequence))
      changed = true;
  if (!changed) return std::nullopt;
  std::optional<protocol::RadialProfile> merged;
  std::vector<double> sum;
  std::vector<std::uint64_t> finite;
  std::uint64_t newest_pulse = 0;
  for (auto& [rank, r] : ranks_) {
    if (!r.report || !r.report->profile) continue;
    const ProfileSums& p = *r.report->profile;
    r.profile_seen = true;
    r.profile_sequence = p.latest_sequence;
    if (!merged) {
      merged.emplace();
      merged->unit = p.unit;
      merged->centres = p.centres;
      merged->average_window = 0;
      merged->average_events = 0;
      sum.assign(p.centres.size(), 0.0);
      finite.assign(p.centres.size(), 0);
    } else if (p.centres != merged->centres || p.unit != merged->unit) {
      throw RuntimeFault("MPI: rank " + std::to_string(rank) +
                         "'s radial bins are not the other ranks' (different integration "
                         "settings on one run?)");
    }
    // In rank order, so that a merge of the same reports always rounds the same way.
    for (std::size_t b = 0; b < sum.size(); ++b) {
      sum[b] += p.sum[b];
      finite[b] += p.finite[b];
    }
    merged->average_window += p.window;
    merged->average_events += p.events;
    if (merged->latest.empty() || p.latest_pulse_id > newest_pulse) {
      newest_pulse = p.latest_pulse_id;
      merged->latest = p.latest;
      merged->sequence = p.latest_sequence;
      merged->pulse_id = p.latest_pulse_id;
    }
  }
  merged->average.resize(sum.size());
  for (std::size_t b = 0; b < sum.size(); ++b)
    merged->average[b] = finite[b] > 0 ? sum[b] / double(finite[b]) : kNaN;
  return merged;
}

std::optional<protocol::EventPeaks> Collector::take_newest_hit() {
  const protocol::EventPeaks* newest = nullptr;
  for (const auto& [rank, r] : ranks_)
    if (r.report && r.report->hit && (!newest || r.report->hit->pulse_id > newest->pulse_id))
      newest = &*r.report->hit;
  if (!newest || (newest_hit_taken_ && newest->pulse_id <= newest_hit_pulse_)) return std::nullopt;
  newest_hit_taken_ = true;
  newest_hit_pulse_ = newest->pulse_id;
  return *newest;
}

std::optional<protocol::ImageFrame> Collector::take_newest_image() {
  const protocol::ImageFrame* newest = nullptr;
  for (const auto& [rank, r] : ranks_)
    if (r.image && (!newest || r.image->pulse_id > newest->pulse_id)) newest = &*r.image;
  if (!newest || (newest_image_taken_ && newest->pulse_id <= newest_image_pulse_))
    return std::nullopt;
  newest_image_taken_ = true;
  newest_image_pulse_ = newest->pulse_id;
  return *newest;
}

std::vector<protocol::Message> Collector::take_forwarded() {
  std::vector<protocol::Message> out;
  out.swap(forwarded_);
  return out;
}

RunSummary Collector::summary(Clock::time_point now) const {
  RunSummary summary;
  summary.stats = sums();
  protocol::StatsPayload& s = summary.stats;
  double bytes_per_s = 0;
  for (const auto& [rank, r] : ranks_)
    if (r.report)
      bytes_per_s += double(r.report->stats.events_processed) * event_bytes(r.report->stats);
  const LatencyHistogram merged = latencies();
  s.latency_p50_us = merged.quantile_us(0.50);
  s.latency_p99_us = merged.quantile_us(0.99);
  s.latency_max_us = merged.max_us();
  if (s.elapsed_s > 0) {
    s.event_rate_hz = double(s.events_processed) / s.elapsed_s;
    s.input_gbps = bytes_per_s / s.elapsed_s / 1e9;
  }
  if (s.compression) {
    s.compression->interval_bytes_in = s.compression->total_bytes_in;
    s.compression->interval_bytes_out = s.compression->total_bytes_out;
    s.compression->interval_ratio =
        s.compression->total_bytes_out > 0
            ? double(s.compression->total_bytes_in) / double(s.compression->total_bytes_out)
            : kNaN;
  }
  if (s.peak_finding) {
    protocol::PeakFindingStats& p = *s.peak_finding;
    p.interval_events = p.total_events;
    p.interval_hits = p.total_hits;
    p.interval_peaks = p.total_peaks;
    p.interval_hit_rate = p.total_events > 0 ? double(p.total_hits) / double(p.total_events) : kNaN;
    p.peaks_messages = peaks_messages_;
    p.hits_not_sent = p.total_hits - std::min(p.total_hits, peaks_messages_);
  }
  s.ranks = ranks_block(now);
  summary.finished = all_final();
  summary.error = failures();
  return summary;
}

std::string Collector::failures() const {
  std::string out;
  for (const auto& [rank, r] : ranks_) {
    std::string why;
    if (r.lost)
      why = r.lost_reason + " (" +
            (r.report ? std::to_string(r.report->stats.events_in) + " events in, " +
                            std::to_string(r.report->stats.events_processed) + " processed"
                      : std::string("it never reported")) +
            ")";
    else if (r.report && !r.report->error.empty())
      why = r.report->error;
    if (!why.empty())
      out += (out.empty() ? "" : "; ") + ("rank " + std::to_string(rank) + ": " + why);
  }
  return out;
}

}  // namespace livedrp::mpi
