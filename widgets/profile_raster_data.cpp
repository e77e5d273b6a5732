#include "widgets/profile_raster_data.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace livedrp::widgets {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Bin boundaries half-way between centres; the outer bins are as wide on their open side as on
// the other (a single bin gets width 1, centred).
std::vector<double> edgesOf(const std::vector<double>& centres) {
  std::vector<double> edges(centres.size() + 1);
  if (centres.empty()) return {};
  if (centres.size() == 1) return {centres[0] - 0.5, centres[0] + 0.5};
  for (std::size_t bin = 1; bin < centres.size(); ++bin)
    edges[bin] = 0.5 * (centres[bin - 1] + centres[bin]);
  edges.front() = centres.front() - (edges[1] - centres.front());
  edges.back() = centres.back() + (centres.back() - edges[centres.size() - 1]);
  return edges;
}

}  // namespace

ProfileRasterData::ProfileRasterData(std::size_t capacity)
    : capacity_(std::max<std::size_t>(1, capacity)) {}

std::size_t ProfileRasterData::capacity() const {
  if (centres_.empty()) return capacity_;
  return std::clamp<std::size_t>(kMaxValues / centres_.size(), 1, capacity_);
}

bool ProfileRasterData::appendRow(const std::vector<double>& centres,
                                  const std::vector<double>& values) {
  const bool same_bins = centres == centres_;
  if (!same_bins) {
    rows_.clear();
    centres_ = centres;
    edges_ = edgesOf(centres_);
  }
  Row row{values, {}};
  row.values.resize(centres_.size(), kNaN);
  row.range = rangeOf(row.values);
  rows_.push_back(std::move(row));
  while (rows_.size() > capacity()) rows_.pop_front();
  updateRange();
  return same_bins;
}

void ProfileRasterData::clear() {
  rows_.clear();
  centres_.clear();
  edges_.clear();
  range_ = QwtInterval();
}

void ProfileRasterData::setLogIntensity(bool on) {
  if (on == log_) return;
  log_ = on;
  for (Row& row : rows_) row.range = rangeOf(row.values);
  updateRange();
}

double ProfileRasterData::shown(double intensity) const {
  if (!log_) return intensity;
  return intensity > 0 ? std::log10(intensity) : kNaN;
}

QwtInterval ProfileRasterData::rangeOf(const std::vector<double>& values) const {
  double low = std::numeric_limits<double>::infinity();
  double high = -low;
  for (const double intensity : values) {
    const double value = shown(intensity);
    if (!std::isfinite(value)) continue;
    low = std::min(low, value);
    high = std::max(high, value);
  }
  return low <= high ? QwtInterval(low, high) : QwtInterval();
}

void ProfileRasterData::updateRange() {
  range_ = QwtInterval();
  for (const Row& row : rows_) {
    if (!row.range.isValid()) continue;
    range_ = range_.isValid() ? range_ | row.range : row.range;
  }
}

QwtInterval ProfileRasterData::interval(Qt::Axis axis) const {
  switch (axis) {
    case Qt::XAxis:
      return edges_.empty() ? QwtInterval() : QwtInterval(edges_.front(), edges_.back());
    case Qt::YAxis:
      return rows_.empty() ? QwtInterval() : QwtInterval(0.0, double(rows_.size()));
    case Qt::ZAxis:
      // A colour scale needs some width: a constant image is centred in one.
      if (range_.isValid() && range_.width() == 0)
        return QwtInterval(range_.minValue() - 0.5, range_.maxValue() + 0.5);
      return range_;
  }
  return QwtInterval();
}

double ProfileRasterData::value(double x, double y) const {
  if (rows_.empty() || !(y >= 0) || y >= double(rows_.size())) return kNaN;
  if (!(x >= edges_.front()) || x > edges_.back()) return kNaN;
  // The bin whose [edge, next edge) holds x; the last edge belongs to the last bin.
  const auto upper = std::upper_bound(edges_.begin(), edges_.end(), x);
  const std::size_t bin =
      std::min<std::size_t>(std::size_t(upper - edges_.begin()) - 1, centres_.size() - 1);
  return shown(row(std::size_t(y))[bin]);
}

}  // namespace livedrp::widgets
