#pragma once
// The engine-side book of live compression (stage contract, stages/stage.hpp): bytes in and
// out and codec time per stats interval and over the run, and the interval's histogram of
// per-event ratios; it fills `stats.compression` (the protocol's own block), and has no topic.
#include <array>
#include <cstdint>
#include <string>

#include "stages/stage.hpp"

namespace livedrp::stages {

// The result an event carries for this book.
struct CompressedSize {
  std::uint64_t bytes_in = 0;   // the codec's input: raw words (lossless) or float32 (lossy)
  std::uint64_t bytes_out = 0;  // its stream
};

struct CompressionBookSettings {
  std::string codec;       // "lossless" or "lossy"
  double error_bound = 0;  // 0 for lossless
};

class CompressionBook final : public StageBook {
 public:
  explicit CompressionBook(CompressionBookSettings settings) : settings_(std::move(settings)) {}

  // Without a time, the event counts for the ratio but not for the GB/s.
  void add(const EventHeader& header, const std::any& result) override {
    add_timed(header, result, 0);
  }
  void add_timed(const EventHeader& header, const std::any& result, double us) override;
  std::vector<protocol::Message> publish(bool last) override { return {}; }
  nlohmann::json stats_block(bool whole_run) override { return nullptr; }
  // stats.compression for the interval (then the next one starts), or for the whole run: the
  // summary's interval is the run, and its ratio histogram is empty (ratios are binned per
  // interval only).
  void fill_stats(protocol::StatsPayload& stats, bool whole_run) override;

 private:
  struct Sums {
    std::uint64_t bytes_in = 0, bytes_out = 0;
    double us = 0;
  };
  protocol::CompressionStats block(const Sums& sums) const;

  CompressionBookSettings settings_;
  Sums interval_, total_;
  std::array<std::uint64_t, protocol::kRatioHistogramBins> ratio_histogram_{};
};

}  // namespace livedrp::stages
