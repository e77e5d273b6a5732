#include "widgets/latency_bars.hpp"

#include <algorithm>
#include <cmath>

#include <QDateTime>
#include <QFontMetrics>
#include <QPainter>

#include "widgets/stats_model.hpp"

namespace livedrp::widgets {

namespace {

constexpr int kLegendRows = 1;
constexpr int kRowHeight = 14;
constexpr int kRowGap = 3;
constexpr int kLabelWidth = 70;

double positive(double us) {
  return std::isfinite(us) && us > 0 ? us : 0.0;
}

// A scale a little above `us` that reads well: 1, 2 or 5 times a power of ten.
double niceScale(double us) {
  if (!(us > 0)) return 1.0;
  const double decade = std::pow(10.0, std::floor(std::log10(us)));
  for (double step : {1.0, 2.0, 5.0, 10.0})
    if (step * decade >= us) return step * decade;
  return 10 * decade;
}

}  // namespace

double LatencyRow::total_us() const {
  double total = 0;
  for (const LatencySegment& segment : segments) total += segment.us;
  return total;
}

QColor latencySegmentColour(const QString& name) {
  if (name == QStringLiteral("calibrate")) return QColor(0x1f, 0x77, 0xb4);
  if (name == QStringLiteral("peak")) return QColor(0xd6, 0x27, 0x28);
  if (name == QStringLiteral("compress")) return QColor(0x2c, 0xa0, 0x2c);
  if (name == QStringLiteral("integrate")) return QColor(0x94, 0x67, 0xbd);
  if (name == QStringLiteral("wait")) return QColor(0xbb, 0xbb, 0xbb);
  if (name == QStringLiteral("to this window")) return QColor(0xff, 0x7f, 0x0e);
  // Other stages (a test's, a new one): a colour of their name, stable between runs.
  return QColor::fromHsv(int(qHash(name) % 360), 160, 200);
}

std::vector<LatencyRow> latencyRows(const std::vector<protocol::RecentEvent>& events,
                                    std::int64_t arrival_ns) {
  std::vector<LatencyRow> rows;
  for (const protocol::RecentEvent& event : events) {
    LatencyRow row;
    row.sequence = event.sequence;
    double stages_us = 0;
    for (const auto& [name, us] : event.stage_us) {
      const QString label = QString::fromStdString(name);
      row.segments.push_back({label, positive(us), latencySegmentColour(label)});
      stages_us += positive(us);
    }
    const double latency = positive(event.latency_us);
    row.segments.push_back(
        {QStringLiteral("wait"), positive(latency - stages_us), latencySegmentColour("wait")});
    const double to_window = double(arrival_ns - event.source_time_ns) / 1e3 - latency;
    row.segments.push_back({QStringLiteral("to this window"), positive(to_window),
                            latencySegmentColour(QStringLiteral("to this window"))});
    rows.push_back(std::move(row));
  }
  return rows;
}

LatencyBars::LatencyBars(StatsModel* model, QWidget* parent) : QWidget(parent), model_(model) {
  setObjectName(QStringLiteral("latencyBars"));
  setToolTip(
      tr("The newest events: each stage's time on its lane, the time waiting (queues, "
         "reorder, launches) and from the result to this window"));
  if (model) {
    connect(model, &StatsModel::updated, this, [this] {
      if (!model_ || !model_->hasStats()) return;
      const auto& events = model_->latestStats().recent_events;
      if (events.empty() || events.back().sequence == newest_sequence_) return;
      setEvents(events, QDateTime::currentMSecsSinceEpoch() * 1'000'000);
    });
  }
}

void LatencyBars::setEvents(const std::vector<protocol::RecentEvent>& events,
                            std::int64_t arrival_ns) {
  rows_ = latencyRows(events, arrival_ns);
  newest_sequence_ = events.empty() ? 0 : events.back().sequence;
  double longest = 0;
  for (const LatencyRow& row : rows_) longest = std::max(longest, row.total_us());
  scale_us_ = niceScale(longest);
  updateGeometry();
  update();
}

QRect LatencyBars::barArea() const {
  const int top = kLegendRows * (kRowHeight + kRowGap) + kRowGap;
  return QRect(kLabelWidth, top, std::max(1, width() - kLabelWidth - 8),
               std::max(1, height() - top - kRowHeight));
}

QRect LatencyBars::segmentRect(int row, int segment) const {
  if (row < 0 || row >= int(rows_.size()) || scale_us_ <= 0) return {};
  const LatencyRow& r = rows_[std::size_t(row)];
  if (segment < 0 || segment >= int(r.segments.size())) return {};
  const QRect area = barArea();
  double before = 0;
  for (int k = 0; k < segment; ++k) before += r.segments[std::size_t(k)].us;
  const int x0 = area.left() + int(std::lround(area.width() * before / scale_us_));
  const int x1 =
      area.left() +
      int(std::lround(area.width() * (before + r.segments[std::size_t(segment)].us) / scale_us_));
  const int y = area.top() + row * (kRowHeight + kRowGap);
  return QRect(x0, y, std::max(0, x1 - x0), kRowHeight);
}

QSize LatencyBars::sizeHint() const {
  const int rows = std::max<int>(4, int(rows_.size()));
  return QSize(420, (kLegendRows + rows + 1) * (kRowHeight + kRowGap) + kRowHeight);
}

QSize LatencyBars::minimumSizeHint() const {
  return QSize(240, 3 * (kRowHeight + kRowGap));
}

void LatencyBars::paintEvent(QPaintEvent*) {
  QPainter painter(this);
  painter.fillRect(rect(), palette().base());
  painter.setPen(palette().text().color());
  if (rows_.empty()) {
    painter.drawText(rect(), Qt::AlignCenter,
                     tr("per-event latency: waiting for stats with recent events"));
    return;
  }
  // Legend: the segments of the newest row, in order.
  int x = 4;
  const QFontMetrics metrics(font());
  for (const LatencySegment& segment : rows_.back().segments) {
    painter.fillRect(QRect(x, kRowGap, 10, 10), segment.colour);
    x += 14;
    painter.drawText(x, kRowGap + 10, segment.name);
    x += metrics.horizontalAdvance(segment.name) + 10;
  }
  for (int r = 0; r < int(rows_.size()); ++r) {
    const QRect first = segmentRect(r, 0);
    painter.setPen(palette().text().color());
    painter.drawText(QRect(0, first.top(), kLabelWidth - 4, kRowHeight),
                     Qt::AlignRight | Qt::AlignVCenter,
                     QStringLiteral("#%1").arg(rows_[std::size_t(r)].sequence));
    for (int k = 0; k < int(rows_[std::size_t(r)].segments.size()); ++k)
      painter.fillRect(segmentRect(r, k), rows_[std::size_t(r)].segments[std::size_t(k)].colour);
  }
  const QRect area = barArea();
  const QString scale = scale_us_ >= 5000 ? tr("%1 ms").arg(scale_us_ / 1000.0, 0, 'g', 4)
                                          : tr("%1 µs").arg(scale_us_, 0, 'g', 4);
  painter.drawText(QRect(area.left(), height() - kRowHeight, area.width(), kRowHeight),
                   Qt::AlignRight | Qt::AlignVCenter, scale);
}

}  // namespace livedrp::widgets
