#pragma once
// The "Gain modes" dock: per detector segment, a stacked bar of the fraction of its pixels in
// each gain mode (the `image` message's gain occupancy of that event's raw data), with a legend
// naming the modes as the detector does ("bad" last). A segment whose pixels leave the expected
// mode, or turn bad, shows at a glance. Until an image with occupancy arrives it says why
// there is nothing to show.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <QColor>
#include <QPointer>
#include <QString>
#include <QWidget>

#include "protocol/peaks_topic.hpp"
#include "widgets/image_raster_data.hpp"

class QLabel;
class QStackedWidget;
class QwtPlot;
class QwtPlotMultiBarChart;

namespace livedrp::widgets {

class PeakFindingModel;
class RefreshCoalescer;

class GainOccupancyView : public QWidget {
  Q_OBJECT

 public:
  explicit GainOccupancyView(PeakFindingModel* model, QWidget* parent = nullptr);

  static QString noDataText();
  // The colour of mode `index` of `count` (the last, "bad", is always red).
  static QColor modeColor(std::size_t index, std::size_t count);

  void showOccupancy(const protocol::ImageFrame& image);
  void clear();

  bool showingPlaceholder() const;
  QString placeholderText() const;
  QString summaryText() const;
  const std::vector<std::string>& modes() const { return modes_; }
  QwtPlot* plot() const { return plot_; }
  const QwtPlotMultiBarChart* chart() const { return chart_; }

 private:
  QPointer<PeakFindingModel> model_;
  RefreshCoalescer* coalescer_ = nullptr;
  QStackedWidget* stack_ = nullptr;
  QLabel* placeholder_ = nullptr;
  QLabel* summary_ = nullptr;
  QwtPlot* plot_ = nullptr;
  QwtPlotMultiBarChart* chart_ = nullptr;
  std::vector<std::string> modes_;
};

}  // namespace livedrp::widgets
