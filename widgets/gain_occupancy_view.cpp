#include "widgets/gain_occupancy_view.hpp"

#include <algorithm>

#include <QLabel>
#include <QStackedWidget>
#include <QVBoxLayout>

#include <qwt_column_symbol.h>
#include <qwt_legend.h>
#include <qwt_plot.h>
#include <qwt_plot_canvas.h>
#include <qwt_plot_multi_barchart.h>
#include <qwt_text.h>

#include "widgets/peak_finding_model.hpp"
#include "widgets/refresh_coalescer.hpp"

namespace livedrp::widgets {
namespace {
constexpr int kPlaceholderPage = 0;
constexpr int kDataPage = 1;
}  // namespace

QString GainOccupancyView::noDataText() {
  return tr(
      "no gain-mode occupancy yet: it comes with the `image` messages of detectors whose "
      "raw data carries gain modes");
}

QColor GainOccupancyView::modeColor(std::size_t index, std::size_t count) {
  if (count > 0 && index + 1 == count) return QColor(0xd6, 0x27, 0x28);  // bad: red
  // Qualitative colours told apart easily (Tableau 10 without its red).
  static const QColor colors[] = {
      QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c),
      QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2),
      QColor(0x7f, 0x7f, 0x7f), QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf)};
  return colors[index % std::size(colors)];
}

GainOccupancyView::GainOccupancyView(PeakFindingModel* model, QWidget* parent)
    : QWidget(parent), model_(model), coalescer_(new RefreshCoalescer(this)) {
  setObjectName(QStringLiteral("gainOccupancyView"));
  placeholder_ = new QLabel(noDataText());
  placeholder_->setObjectName(QStringLiteral("gainOccupancyPlaceholder"));
  placeholder_->setAlignment(Qt::AlignCenter);
  placeholder_->setWordWrap(true);
  summary_ = new QLabel;
  summary_->setObjectName(QStringLiteral("gainOccupancySummary"));
  summary_->setWordWrap(true);

  plot_ = new QwtPlot;
  plot_->setObjectName(QStringLiteral("gainOccupancyPlot"));
  // Expanding, not QwtPlot's MinimumExpanding: its size hint (room for every tick label) would be
  // the smallest the dock could get, and the layouts show this beside others.
  plot_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  plot_->setAutoReplot(false);
  plot_->setCanvasBackground(Qt::white);
  plot_->setAxisTitle(QwtAxis::XBottom, tr("segment"));
  plot_->setAxisTitle(QwtAxis::YLeft, tr("pixels (%)"));
  plot_->setAxisScale(QwtAxis::YLeft, 0, 100);
  chart_ = new QwtPlotMultiBarChart(tr("gain modes"));
  chart_->setStyle(QwtPlotMultiBarChart::Stacked);
  chart_->setLayoutPolicy(QwtPlotMultiBarChart::AutoAdjustSamples);
  chart_->setSpacing(4);
  chart_->attach(plot_);
  plot_->insertLegend(new QwtLegend, QwtPlot::RightLegend);

  auto* data_page = new QWidget;
  auto* data_layout = new QVBoxLayout(data_page);
  data_layout->setContentsMargins(0, 0, 0, 0);
  data_layout->addWidget(summary_);
  data_layout->addWidget(plot_, 1);
  stack_ = new QStackedWidget;
  stack_->insertWidget(kPlaceholderPage, placeholder_);
  stack_->insertWidget(kDataPage, data_page);
  auto* layout = new QVBoxLayout(this);
  layout->addWidget(stack_);
  stack_->setCurrentIndex(kPlaceholderPage);

  connect(coalescer_, &RefreshCoalescer::refresh, this, [this] {
    if (isVisible()) plot_->replot();
  });
  if (model) {
    connect(model, &PeakFindingModel::imageReceived, this, [this](const ImageFramePtr& image) {
      if (image) showOccupancy(*image);
    });
    connect(model, &PeakFindingModel::cleared, this, &GainOccupancyView::clear);
  }
}

void GainOccupancyView::showOccupancy(const protocol::ImageFrame& image) {
  const std::size_t modes = image.gain_modes.size();
  if (modes == 0 || image.segments == 0 || image.gain_occupancy.size() != image.segments * modes) {
    if (!showingPlaceholder()) return;  // keep the last occupancy shown
    placeholder_->setText(tr("no gain-mode occupancy: event #%1's image carries none (the "
                             "detector's raw data has no gain modes)")
                              .arg(image.sequence));
    return;
  }
  if (image.gain_modes != modes_) {
    modes_ = image.gain_modes;
    QList<QwtText> titles;
    for (std::size_t mode = 0; mode < modes; ++mode) {
      titles.push_back(QwtText(QString::fromStdString(modes_[mode])));
      auto* symbol = new QwtColumnSymbol(QwtColumnSymbol::Box);
      symbol->setLineWidth(0);
      symbol->setFrameStyle(QwtColumnSymbol::NoFrame);
      symbol->setPalette(QPalette(modeColor(mode, modes)));
      chart_->setSymbol(int(mode), symbol);
    }
    chart_->setBarTitles(titles);
  }
  QVector<QwtSetSample> samples;
  samples.reserve(qsizetype(image.segments));
  std::size_t worst_segment = 0;
  double worst_bad = -1;
  for (std::size_t segment = 0; segment < image.segments; ++segment) {
    QVector<double> set;
    for (std::size_t mode = 0; mode < modes; ++mode)
      set.push_back(100.0 * image.gain_occupancy[segment * modes + mode]);
    if (set.back() > worst_bad) {
      worst_bad = set.back();
      worst_segment = segment;
    }
    samples.push_back(QwtSetSample(double(segment), set));
  }
  chart_->setSamples(samples);
  plot_->setAxisScale(QwtAxis::XBottom, -0.5, double(image.segments) - 0.5,
                      image.segments > 20 ? 0 : 1);
  summary_->setText(tr("event #%1 · %2 segments · most bad pixels: segment %3, %4 %")
                        .arg(image.sequence)
                        .arg(image.segments)
                        .arg(worst_segment)
                        .arg(worst_bad, 0, 'f', 2));
  stack_->setCurrentIndex(kDataPage);
  coalescer_->request();
}

void GainOccupancyView::clear() {
  chart_->setSamples(QVector<QwtSetSample>());
  summary_->clear();
  placeholder_->setText(noDataText());
  stack_->setCurrentIndex(kPlaceholderPage);
  coalescer_->request();
}

bool GainOccupancyView::showingPlaceholder() const {
  return stack_->currentIndex() == kPlaceholderPage;
}
QString GainOccupancyView::placeholderText() const {
  return placeholder_->text();
}
QString GainOccupancyView::summaryText() const {
  return summary_->text();
}

}  // namespace livedrp::widgets
