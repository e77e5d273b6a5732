#include "widgets/peak_table_model.hpp"

namespace livedrp::widgets {

PeakTableModel::PeakTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void PeakTableModel::setPeaks(const protocol::EventPeaks& peaks) {
  beginResetModel();
  peaks_ = peaks;
  has_peaks_ = true;
  endResetModel();
}

void PeakTableModel::clear() {
  beginResetModel();
  peaks_ = protocol::EventPeaks();
  has_peaks_ = false;
  endResetModel();
}

int PeakTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(peaks_.peaks.size());
}

int PeakTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : ColumnCount;
}

QVariant PeakTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount() || index.column() >= ColumnCount) return {};
  const protocol::PeakRow& peak = peaks_.peaks[std::size_t(index.row())];
  if (role == kPeakIndexRole) return index.row();
  if (role == Qt::TextAlignmentRole) return int(Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole && role != Qt::EditRole) return {};
  switch (Column(index.column())) {
    case Segment:
      return peak.segment;
    case Fs:
      return double(peak.fs);
    case Ss:
      return double(peak.ss);
    case Intensity:
      return double(peak.intensity);
    case Pixels:
      return peak.num_pixels;
    case Max:
      return double(peak.max_value);
    case Sigma:
      return double(peak.sigma);
    case Snr:
      return double(peak.snr);
    case ColumnCount:
      break;
  }
  return {};
}

QVariant PeakTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section;
  switch (Column(section)) {
    case Segment:
      return tr("segment");
    case Fs:
      return tr("fs");
    case Ss:
      return tr("ss");
    case Intensity:
      return tr("intensity");
    case Pixels:
      return tr("pixels");
    case Max:
      return tr("max");
    case Sigma:
      return tr("sigma");
    case Snr:
      return tr("SNR");
    case ColumnCount:
      break;
  }
  return {};
}

}  // namespace livedrp::widgets
