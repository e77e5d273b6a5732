#include "stages/compress/compression_book.hpp"

#include <limits>

namespace livedrp::stages {

void CompressionBook::add_timed(const EventHeader& header, const std::any& result, double us) {
  (void)header;
  const auto& size = std::any_cast<const CompressedSize&>(result);
  for (Sums* sums : {&interval_, &total_}) {
    sums->bytes_in += size.bytes_in;
    sums->bytes_out += size.bytes_out;
    sums->us += us;
  }
  if (size.bytes_out > 0)
    ++ratio_histogram_[protocol::ratio_histogram_bin(double(size.bytes_in) /
                                                     double(size.bytes_out))];
}

protocol::CompressionStats CompressionBook::block(const Sums& sums) const {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  protocol::CompressionStats block;
  block.codec = settings_.codec;
  block.error_bound = settings_.codec == "lossy" ? settings_.error_bound : 0.0;
  block.interval_bytes_in = sums.bytes_in;
  block.interval_bytes_out = sums.bytes_out;
  block.total_bytes_in = total_.bytes_in;
  block.total_bytes_out = total_.bytes_out;
  block.interval_ratio = sums.bytes_out > 0 ? double(sums.bytes_in) / double(sums.bytes_out) : nan;
  block.gbps = sums.us > 0 ? double(sums.bytes_in) / (sums.us * 1e-6) / 1e9 : nan;
  return block;
}

void CompressionBook::fill_stats(protocol::StatsPayload& stats, bool whole_run) {
  if (whole_run) {
    stats.compression = block(total_);
    return;
  }
  protocol::CompressionStats interval = block(interval_);
  interval.ratio_histogram = ratio_histogram_;
  stats.compression = interval;
  interval_ = {};
  ratio_histogram_.fill(0);
}

}  // namespace livedrp::stages
