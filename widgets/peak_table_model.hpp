#pragma once
// The latest event's peak list as a table: one row per listed peak, columns segment, fs, ss,
// intensity, pixels, max, sigma, SNR. Display and sort roles hold the numbers themselves, so a
// QSortFilterProxyModel sorts numerically. Qt::UserRole on any cell gives the row's index in the
// list as received (what the image overlay numbers its circles by).
#include <cstddef>

#include <QAbstractTableModel>

#include "protocol/peaks_topic.hpp"

namespace livedrp::widgets {

class PeakTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  enum Column { Segment, Fs, Ss, Intensity, Pixels, Max, Sigma, Snr, ColumnCount };
  static constexpr int kPeakIndexRole = Qt::UserRole;

  explicit PeakTableModel(QObject* parent = nullptr);

  void setPeaks(const protocol::EventPeaks& peaks);
  void clear();
  bool hasPeaks() const { return has_peaks_; }
  const protocol::EventPeaks& peaks() const { return peaks_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  protocol::EventPeaks peaks_;
  bool has_peaks_ = false;
};

}  // namespace livedrp::widgets
