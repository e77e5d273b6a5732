#include "widgets/comparison_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "widgets/number_format.hpp"

namespace livedrp::widgets {
namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

QString csvField(const QString& text) {
  if (!text.contains(QLatin1Char(',')) && !text.contains(QLatin1Char('"')) &&
      !text.contains(QLatin1Char('\n'))) {
    return text;
  }
  QString quoted = text;
  quoted.replace(QLatin1String("\""), QLatin1String("\"\""));
  return QLatin1Char('"') + quoted + QLatin1Char('"');
}

QString number(double value, int decimals) {
  return std::isfinite(value) ? QString::number(value, 'f', decimals) : QString();
}

nlohmann::json jsonNumber(double value) {
  return std::isfinite(value) ? nlohmann::json(value) : nlohmann::json(nullptr);
}
}  // namespace

QString ComparisonRun::label() const {
  if (description.isEmpty() || description == name) return name;
  return QStringLiteral("%1 (%2)").arg(name, description);
}

const QStringList& ComparisonModel::columns() {
  static const QStringList columns{
      QStringLiteral("configuration"),  QStringLiteral("status"),
      QStringLiteral("events processed"), QStringLiteral("events dropped"),
      QStringLiteral("mean rate (Hz)"), QStringLiteral("mean input (GB/s)"),
      QStringLiteral("latency p50 (us)"), QStringLiteral("latency p99 (us)"),
      QStringLiteral("rate ratio to first")};
  return columns;
}

ComparisonModel::ComparisonModel(QObject* parent) : QObject(parent) {}

void ComparisonModel::clear() {
  runs_.clear();
  emit changed();
}

int ComparisonModel::addRun(const QString& name, const QString& description,
                            const nlohmann::json& config) {
  ComparisonRun run;
  run.name = name;
  run.description = description;
  run.config = config;
  runs_.push_back(std::move(run));
  emit changed();
  return runCount() - 1;
}

void ComparisonModel::setRunning(int index) {
  runs_.at(std::size_t(index)).state = ComparisonRun::State::Running;
  emit changed();
}

void ComparisonModel::addStats(int index, const protocol::StatsPayload& stats) {
  ComparisonRun& run = runs_.at(std::size_t(index));
  if (!run.samples.empty() && stats.elapsed_s <= run.samples.back().time_s) return;
  run.samples.push_back({stats.elapsed_s, stats.event_rate_hz, stats.input_gbps,
                         stats.latency_p50_us, stats.latency_p99_us});
  emit changed();
}

void ComparisonModel::finish(int index, const protocol::StatsPayload& summary, const QString& error) {
  ComparisonRun& run = runs_.at(std::size_t(index));
  run.summary = summary;
  run.has_summary = true;
  run.error = error;
  run.state = error.isEmpty() ? ComparisonRun::State::Finished : ComparisonRun::State::Failed;
  emit changed();
}

void ComparisonModel::fail(int index, const QString& error) {
  ComparisonRun& run = runs_.at(std::size_t(index));
  run.error = error;
  run.state = ComparisonRun::State::Failed;
  emit changed();
}

ComparisonFigures ComparisonModel::figures(int index) const {
  const ComparisonRun& run = runs_.at(std::size_t(index));
  ComparisonFigures f;
  f.latency_p50_us = f.latency_p99_us = f.ratio_to_first = kNaN;
  if (run.has_summary) {
    f.events_processed = run.summary.events_processed;
    f.events_dropped = run.summary.events_dropped;
    f.mean_rate_hz = run.summary.event_rate_hz;
    f.mean_gbps = run.summary.input_gbps;
  } else if (!run.samples.empty()) {
    f.mean_rate_hz = kNaN;
    f.mean_gbps = kNaN;
  }
  std::vector<double> p50;
  for (const ComparisonSample& s : run.samples) {
    if (std::isfinite(s.latency_p50_us)) p50.push_back(s.latency_p50_us);
    if (std::isfinite(s.latency_p99_us)) {
      f.latency_p99_us = std::isfinite(f.latency_p99_us) ? std::max(f.latency_p99_us, s.latency_p99_us)
                                                         : s.latency_p99_us;
    }
  }
  if (!p50.empty()) {
    std::sort(p50.begin(), p50.end());
    f.latency_p50_us = p50[p50.size() / 2];
  }
  if (index > 0 && run.has_summary) {
    const ComparisonRun& first = runs_.front();
    if (first.has_summary && first.summary.event_rate_hz > 0) {
      f.ratio_to_first = run.summary.event_rate_hz / first.summary.event_rate_hz;
    }
  } else if (index == 0 && run.has_summary && run.summary.event_rate_hz > 0) {
    f.ratio_to_first = 1.0;
  }
  return f;
}

QString ComparisonModel::stateText(ComparisonRun::State state) {
  switch (state) {
    case ComparisonRun::State::Pending: return QStringLiteral("pending");
    case ComparisonRun::State::Running: return QStringLiteral("running");
    case ComparisonRun::State::Finished: return QStringLiteral("finished");
    case ComparisonRun::State::Failed: return QStringLiteral("failed");
  }
  return {};
}

QStringList ComparisonModel::rowTexts(int index) const {
  const ComparisonRun& run = runs_.at(std::size_t(index));
  const ComparisonFigures f = figures(index);
  QString status = stateText(run.state);
  if (!run.error.isEmpty()) status += QStringLiteral(": ") + run.error;
  const bool counted = run.has_summary;
  return {run.label(),
          status,
          counted ? QString::number(f.events_processed) : QString(),
          counted ? QString::number(f.events_dropped) : QString(),
          counted ? number(f.mean_rate_hz, 1) : QString(),
          counted ? number(f.mean_gbps, 3) : QString(),
          number(f.latency_p50_us, 1),
          number(f.latency_p99_us, 1),
          number(f.ratio_to_first, 2)};
}

QString ComparisonModel::toCsv() const {
  QStringList lines;
  QStringList header;
  for (const QString& column : columns()) header << csvField(column);
  lines << header.join(QLatin1Char(','));
  for (int i = 0; i < runCount(); ++i) {
    QStringList fields;
    for (const QString& text : rowTexts(i)) fields << csvField(text);
    lines << fields.join(QLatin1Char(','));
  }
  return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

nlohmann::json ComparisonModel::toJson() const {
  nlohmann::json runs = nlohmann::json::array();
  for (int i = 0; i < runCount(); ++i) {
    const ComparisonRun& run = runs_[std::size_t(i)];
    const ComparisonFigures f = figures(i);
    nlohmann::json series = nlohmann::json::array();
    for (const ComparisonSample& s : run.samples) {
      series.push_back({{"time_s", s.time_s},
                        {"event_rate_hz", s.event_rate_hz},
                        {"input_gbps", s.input_gbps},
                        {"latency_p50_us", jsonNumber(s.latency_p50_us)},
                        {"latency_p99_us", jsonNumber(s.latency_p99_us)}});
    }
    runs.push_back({{"name", run.name.toStdString()},
                    {"description", run.description.toStdString()},
                    {"status", stateText(run.state).toStdString()},
                    {"error", run.error.toStdString()},
                    {"events_processed", f.events_processed},
                    {"events_dropped", f.events_dropped},
                    {"mean_rate_hz", jsonNumber(run.has_summary ? f.mean_rate_hz : kNaN)},
                    {"mean_input_gbps", jsonNumber(run.has_summary ? f.mean_gbps : kNaN)},
                    {"latency_p50_us", jsonNumber(f.latency_p50_us)},
                    {"latency_p99_us", jsonNumber(f.latency_p99_us)},
                    {"rate_ratio_to_first", jsonNumber(f.ratio_to_first)},
                    {"config", run.config},
                    {"series", std::move(series)}});
  }
  return {{"schema", "livedrp"}, {"kind", "comparison"}, {"runs", std::move(runs)}};
}

}  // namespace livedrp::widgets
