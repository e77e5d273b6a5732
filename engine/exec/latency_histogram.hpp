#pragma once
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>

namespace livedrp {

// Latencies of a whole run in constant memory: geometric bins, each 1% wider than the one below,
// from 1 us to about 10^8 us (100 s). A quantile read from it is the upper edge of its bin, so it
// is never below the exact quantile and at most 1% above it (for latencies inside the range).
// Latencies under 1 us fall in the first bin, over the range in the last; the maximum is exact.
class LatencyHistogram {
 public:
  static constexpr double kLowestUs = 1.0;
  static constexpr double kGrowth = 1.01;
  static constexpr std::size_t kBins = 1852;  // kGrowth^kBins ~ 1e8

  void add(double latency_us) {
    if (!(latency_us == latency_us)) return;  // NaN: no time to count
    ++bins_[bin_of(latency_us)];
    ++count_;
    if (latency_us > max_us_) max_us_ = latency_us;
  }
  std::uint64_t count() const { return count_; }
  double max_us() const { return count_ ? max_us_ : std::numeric_limits<double>::quiet_NaN(); }
  // The smallest bin edge below which at least fraction `q` of the latencies lie; NaN when empty.
  double quantile_us(double q) const {
    if (count_ == 0) return std::numeric_limits<double>::quiet_NaN();
    const double wanted = std::ceil(q * double(count_));
    std::uint64_t seen = 0;
    for (std::size_t b = 0; b < kBins; ++b) {
      seen += bins_[b];
      if (double(seen) >= wanted && seen > 0) {
        if (b == kBins - 1) return max_us_;  // the overflow bin has no upper edge
        const double edge = upper_edge_us(b);
        return edge < max_us_ ? edge : max_us_;
      }
    }
    return max_us_;
  }
  // Many engines' latencies as one (engine/mpi merges the ranks' histograms): `count` more
  // latencies in `bin` (below kBins), and a maximum that may be above the one so far.
  const std::array<std::uint64_t, kBins>& bins() const { return bins_; }
  void add_to_bin(std::size_t bin, std::uint64_t count) {
    bins_[bin] += count;
    count_ += count;
  }
  void raise_max(double max_us) {
    if (max_us > max_us_) max_us_ = max_us;
  }
  static double upper_edge_us(std::size_t bin) {
    return kLowestUs * std::pow(kGrowth, double(bin + 1));
  }

 private:
  static std::size_t bin_of(double latency_us) {
    if (latency_us <= kLowestUs) return 0;
    const double index = std::floor(std::log(latency_us / kLowestUs) / std::log(kGrowth));
    if (index >= double(kBins - 1)) return kBins - 1;
    return std::size_t(index);
  }
  std::array<std::uint64_t, kBins> bins_{};
  std::uint64_t count_ = 0;
  double max_us_ = -std::numeric_limits<double>::infinity();
};

}  // namespace livedrp
