#pragma once
// The waterfall's data: the last `capacity` radial profiles as rows of a raster. x is the radial
// coordinate (the profile's bin centres; a bin spans half-way to its neighbours), y is the row's
// age in updates: row 0 is the newest and covers y in [0, 1), row 1 the one before, and so on.
// A profile on other bins (a different unit or binning) cannot share the image: it starts over.
#include <cstddef>
#include <deque>
#include <vector>

#include <qwt_interval.h>
#include <qwt_raster_data.h>

namespace livedrp::widgets {

class ProfileRasterData : public QwtRasterData {
 public:
  // Five minutes of profiles at the engine's few per second.
  static constexpr std::size_t kDefaultCapacity = 1200;
  // At most this many values are kept (32 MiB): profiles of many bins keep fewer rows.
  static constexpr std::size_t kMaxValues = std::size_t(1) << 22;

  explicit ProfileRasterData(std::size_t capacity = kDefaultCapacity);

  // Adds the newest row; drops the oldest beyond capacity. `centres` must be strictly
  // increasing and as long as `values` (the protocol guarantees both). Returns false when the
  // history was restarted because the bins changed.
  bool appendRow(const std::vector<double>& centres, const std::vector<double>& values);
  void clear();

  // Log intensity: value() returns log10 of the intensity (NaN for intensities <= 0, which a log
  // scale cannot show) and the z interval is that of the logs.
  void setLogIntensity(bool on);
  bool logIntensity() const { return log_; }

  // Rows kept: the capacity asked for, fewer when the bins are so many that kMaxValues binds.
  std::size_t capacity() const;
  std::size_t rowCount() const { return rows_.size(); }
  std::size_t binCount() const { return centres_.size(); }
  const std::vector<double>& centres() const { return centres_; }
  // Row by age: 0 = newest. The stored intensities, as received (no log).
  const std::vector<double>& row(std::size_t age) const {
    return rows_[rows_.size() - 1 - age].values;
  }

  // QwtRasterData. NaN outside the data and for bins without pixels: drawn transparent.
  QwtInterval interval(Qt::Axis axis) const override;
  double value(double x, double y) const override;

 private:
  struct Row {
    std::vector<double> values;  // as received
    QwtInterval range;           // of shown(values): invalid when none is finite
  };

  double shown(double intensity) const;
  QwtInterval rangeOf(const std::vector<double>& values) const;
  // The range over every row from the rows' own ranges: appending costs O(rows), not O(values).
  void updateRange();

  std::size_t capacity_;
  bool log_ = false;
  std::vector<double> centres_;
  std::vector<double> edges_;  // bin boundaries, centres_.size() + 1 of them
  std::deque<Row> rows_;       // oldest first
  QwtInterval range_;          // of shown() over every row; invalid when no finite value
};

}  // namespace livedrp::widgets
