#include "widgets/fidelity_view.hpp"

#include <cmath>

#include <QGridLayout>
#include <QLabel>
#include <QVBoxLayout>
#include <QVector>

#include <qwt_axis.h>
#include <qwt_plot.h>
#include <qwt_plot_canvas.h>
#include <qwt_plot_curve.h>
#include <qwt_plot_grid.h>
#include <qwt_plot_marker.h>

#include "widgets/number_format.hpp"
#include "widgets/radial_unit_text.hpp"
#include "widgets/refresh_coalescer.hpp"

namespace livedrp::widgets {

namespace {

const QString kNotAvailable = QStringLiteral("n/a");

QColor differenceColor() {
  return QColor(0xd6, 0x27, 0x28);  // red: a cost
}

}  // namespace

QString FidelityView::percentText(double fraction) {
  if (std::isnan(fraction)) return kNotAvailable;
  return QStringLiteral("%1 %").arg(fraction * 100.0, 0, 'g', 3);
}

QString FidelityView::shareText(double value) {
  if (std::isnan(value)) return kNotAvailable;
  return QString::number(value, 'f', 3);
}

QString FidelityView::pixelsText(double pixels) {
  if (std::isnan(pixels)) return kNotAvailable;
  return QStringLiteral("%1 px").arg(pixels, 0, 'f', 2);
}

QString FidelityView::valueInUnitText(double value) {
  // Five digits: a largest error just under the bound (0.99998 for 1) must not read as the bound.
  return QString::number(value, 'g', 5);
}

FidelityView::FidelityView(QWidget* parent)
    : QWidget(parent), coalescer_(new RefreshCoalescer(this)) {
  setObjectName(QStringLiteral("fidelityView"));
  summary_ = new QLabel(this);
  summary_->setObjectName(QStringLiteral("fidelitySummary"));
  summary_->setWordWrap(true);

  // Three columns of name/value pairs: the numbers fit in a few lines, so that the dock (a tab
  // in every layout) does not raise the window's minimum height.
  auto* numbers = new QGridLayout;
  numbers->setHorizontalSpacing(12);
  numbers->setVerticalSpacing(2);
  const auto value = [&](const char* field, const QString& title, int row, int column) {
    numbers->addWidget(new QLabel(title + QLatin1Char(':'), this), row, 2 * column);
    numbers->addWidget(addValue(QString::fromLatin1(field)), row, 2 * column + 1);
  };
  value("recall", tr("recall"), 0, 0);
  value("precision", tr("precision"), 0, 1);
  value("max_abs_relative", tr("profile max |Δ|"), 0, 2);
  value("kept", tr("peaks kept"), 1, 0);
  value("lost", tr("lost"), 1, 1);
  value("mean_abs_relative", tr("profile mean |Δ|"), 1, 2);
  value("added", tr("added"), 2, 0);
  value("mean_shift_px", tr("shift mean"), 2, 1);
  value("rms_relative", tr("profile rms Δ"), 2, 2);
  value("max_shift_px", tr("shift max"), 3, 0);
  value("max_pixel_error", tr("pixel error max"), 3, 1);
  value("error_bound", tr("bound"), 3, 2);
  value("ratio", tr("ratio"), 4, 0);
  value("samples", tr("samples"), 4, 1);
  value("skipped", tr("skipped"), 4, 2);

  plot_ = new QwtPlot(this);
  plot_->setObjectName(QStringLiteral("fidelityPlot"));
  plot_->setWindowTitle(tr("profile difference"));  // its name in the export menus
  plot_->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Expanding);
  plot_->setMinimumHeight(120);
  plot_->setAutoReplot(false);
  plot_->setCanvasBackground(Qt::white);
  if (auto* canvas = qobject_cast<QwtPlotCanvas*>(plot_->canvas())) {
    canvas->setFrameStyle(QFrame::Box | QFrame::Plain);
    canvas->setLineWidth(1);
  }
  auto* grid = new QwtPlotGrid;
  grid->setMajorPen(QColor(0xdd, 0xdd, 0xdd), 1.0, Qt::DotLine);
  grid->attach(plot_);
  auto* zero = new QwtPlotMarker;  // no difference: where a perfect codec's curve lies
  zero->setLineStyle(QwtPlotMarker::HLine);
  zero->setLinePen(QColor(0x88, 0x88, 0x88), 1.0, Qt::DashLine);
  zero->setYValue(0.0);
  zero->attach(plot_);
  plot_->setAxisTitle(QwtAxis::YLeft, tr("Δ / |I| (%)"));  // short: the plot is a few lines high
  relative_curve_ = new QwtPlotCurve(tr("(decompressed - original) / |original|"));
  relative_curve_->setPen(differenceColor(), 1.5);
  relative_curve_->setRenderHint(QwtPlotItem::RenderAntialiased, true);
  relative_curve_->attach(plot_);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(summary_);
  layout->addLayout(numbers);
  layout->addWidget(plot_, 1);

  connect(coalescer_, &RefreshCoalescer::refresh, this, &FidelityView::replotIfVisible);
  redraw();
}

QLabel* FidelityView::addValue(const QString& field) {
  auto* label = new QLabel(kNotAvailable, this);
  label->setObjectName(QStringLiteral("fidelity_") + field);
  label->setTextInteractionFlags(Qt::TextSelectableByMouse);
  values_[field] = label;
  return label;
}

bool FidelityView::apply(const protocol::Message& message) {
  if (message.topic != protocol::kTopicFidelity) return false;
  protocol::FidelityReport report;
  try {
    report = protocol::fidelity_from_message(message);
  } catch (const protocol::ProtocolError& error) {
    ++rejected_;
    last_rejection_ = QString::fromUtf8(error.what());
    emit rejected(rejected_, last_rejection_);
    return false;
  }
  showReport(report, message.run);
  return true;
}

void FidelityView::apply(const MessageBatch& batch) {
  // Newest first: only the newest valid report is shown, the older ones of the batch are stale.
  for (auto it = batch.rbegin(); it != batch.rend(); ++it)
    if (*it && (*it)->topic == protocol::kTopicFidelity && apply(**it)) return;
}

void FidelityView::showReport(const protocol::FidelityReport& report, std::int64_t run) {
  report_ = report;
  run_ = run;
  ++reports_;
  redraw();
  emit reportShown();
}

void FidelityView::clear() {
  report_ = protocol::FidelityReport();
  reports_ = 0;
  run_ = 0;
  redraw();
}

QString FidelityView::valueText(const QString& field) const {
  const auto it = values_.find(field);
  return it == values_.end() ? QString() : it->second->text();
}

void FidelityView::redraw() {
  const protocol::FidelityReport& r = report_;
  const auto set = [this](const char* field, const QString& text) {
    values_.at(QString::fromLatin1(field))->setText(text);
  };
  for (auto& [field, label] : values_) label->setText(kNotAvailable);
  QVector<double> x, y;
  if (reports_ == 0) {
    summary_->setText(
        tr("No fidelity sample yet: the engine samples events when fidelity.enabled is true and "
           "compression is on (CPU backend, or CUDA with runtime.source host)."));
  } else {
    const double ratio =
        r.stream_bytes ? double(r.uncompressed_bytes) / double(r.stream_bytes) : std::nan("");
    summary_->setText(
        tr("Run %1, event %2: %3 codec, a stream of %4 bytes for %5, evaluated in %6 ms")
            .arg(run_)
            .arg(r.sequence)
            .arg(QString::fromStdString(r.codec))
            .arg(formatCount(r.stream_bytes))
            .arg(formatCount(r.uncompressed_bytes))
            .arg(r.evaluation_ms, 0, 'f', 0));
    set("error_bound", valueInUnitText(r.error_bound));
    set("max_pixel_error", valueInUnitText(r.max_pixel_error));
    set("ratio", std::isnan(ratio) ? kNotAvailable : QString::number(ratio, 'f', 2));
    set("samples", formatCount(r.samples));
    set("skipped", formatCount(r.skipped));
    if (r.has_profile) {
      set("max_abs_relative", percentText(r.max_abs_relative));
      set("mean_abs_relative", percentText(r.mean_abs_relative));
      set("rms_relative", percentText(r.rms_relative));
      for (std::size_t bin = 0; bin < r.relative.size(); ++bin) {
        if (std::isnan(r.relative[bin])) continue;  // a bin not compared is a gap, not a zero
        x.push_back(r.centres[bin]);
        y.push_back(r.relative[bin] * 100.0);
      }
      plot_->setAxisTitle(QwtAxis::XBottom, radialAxisTitle(r.unit));
    }
    if (r.has_peaks) {
      set("recall", shareText(r.recall));
      set("precision", shareText(r.precision));
      set("kept", formatCount(r.kept));
      set("lost", formatCount(r.lost));
      set("added", formatCount(r.added));
      set("mean_shift_px", pixelsText(r.mean_shift_px));
      set("max_shift_px", pixelsText(r.max_shift_px));
    }
  }
  relative_curve_->setSamples(x, y);
  coalescer_->request();
}

void FidelityView::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  coalescer_->request();
}

void FidelityView::replotIfVisible() {
  if (!isVisible()) return;
  plot_->replot();
  ++replots_;
}

}  // namespace livedrp::widgets
