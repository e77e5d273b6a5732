#pragma once
// The results of a comparison: the same events run through several stream configurations one after
// another. Each run keeps the series its `stats` messages gave (rate, input GB/s, latency p50/p99
// against run time), its summary, and its error when it failed. The figures of the table (and of
// the CSV/JSON export) are computed here, so the view, the export and the tests agree.
#include <cstdint>
#include <vector>

#include <QObject>
#include <QString>
#include <QStringList>

#include <nlohmann/json.hpp>

#include "protocol/topics.hpp"

namespace livedrp::widgets {

struct ComparisonSample {
  double time_s = 0;
  double event_rate_hz = 0;
  double input_gbps = 0;
  double latency_p50_us = 0;  // NaN when no event left in that interval
  double latency_p99_us = 0;
};

// One row of the table.
struct ComparisonFigures {
  std::uint64_t events_processed = 0;
  std::uint64_t events_dropped = 0;
  double mean_rate_hz = 0;     // processed events / run time (the run's summary)
  double mean_gbps = 0;        // raw input bytes / run time
  double latency_p50_us = 0;   // median of the intervals' p50; NaN when none
  double latency_p99_us = 0;   // worst interval's p99; NaN when none
  double ratio_to_first = 0;   // mean rate / the first row's mean rate; NaN when not comparable
};

struct ComparisonRun {
  enum class State { Pending, Running, Finished, Failed };
  QString name;         // the saved configuration's name
  QString description;  // describe(runtime), e.g. "4 streams, graph, K=1, all segments"
  nlohmann::json config = nlohmann::json::object();  // the configuration as run
  State state = State::Pending;
  QString error;
  std::vector<ComparisonSample> samples;
  protocol::StatsPayload summary;
  bool has_summary = false;

  QString label() const;  // "name (description)": the legend and the first column
};

class ComparisonModel : public QObject {
  Q_OBJECT

 public:
  // Columns of the table and of the CSV export, in order.
  static const QStringList& columns();

  explicit ComparisonModel(QObject* parent = nullptr);

  void clear();
  int addRun(const QString& name, const QString& description, const nlohmann::json& config);
  void setRunning(int index);
  // A stats payload of run `index`; repeats (same or earlier run time) are ignored.
  void addStats(int index, const protocol::StatsPayload& stats);
  // The run ended: its summary (cumulative counts, rates over the run) and error ("" = finished).
  void finish(int index, const protocol::StatsPayload& summary, const QString& error);
  // The run could not start (bad configuration, backend error).
  void fail(int index, const QString& error);

  int runCount() const { return int(runs_.size()); }
  const ComparisonRun& run(int index) const { return runs_.at(std::size_t(index)); }
  ComparisonFigures figures(int index) const;
  static QString stateText(ComparisonRun::State state);
  // The table's cell texts (as shown and exported), one list per run, in columns() order.
  QStringList rowTexts(int index) const;

  QString toCsv() const;            // header line, then one line per run
  nlohmann::json toJson() const;    // {"schema":"livedrp","kind":"comparison","runs":[...]}

 signals:
  void changed();

 private:
  std::vector<ComparisonRun> runs_;
};

}  // namespace livedrp::widgets
