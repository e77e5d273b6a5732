#pragma once
// Runs saved configurations one after another on an embedded engine of its own (an EngineHost
// that publishes nothing and forwards its stats), over the same events: every run gets the same
// source (detector), event count, rate, simulator seed and pool. Each run's stats intervals and
// summary go into a widgets::ComparisonModel. A configuration that fails (refused by the engine,
// or faulting) gets its error in its row, and the comparison goes on with the next one.
#include <cstdint>
#include <string>
#include <vector>

#include <QObject>
#include <QString>

#include "exec/engine.hpp"
#include "widgets/protocol_metatypes.hpp"

namespace livedrp::widgets {
class ComparisonModel;
}

namespace livedrp::app {

class EngineHost;

struct ComparisonEntry {
  QString name;
  EngineConfig config;
  QString load_error;  // not empty: the saved file could not be read; the row shows why
};

struct ComparisonSettings {
  std::string source = "sim:epix10ka2m";  // the detector every run simulates
  std::uint64_t events = 200;
  double rate_hz = 0;             // 0 = as fast as possible: what a throughput comparison wants
  std::uint64_t seed = EngineConfig{}.seed;
  int simulator_pool = EngineConfig{}.simulator_pool;
};

class ComparisonRunner : public QObject {
  Q_OBJECT

 public:
  explicit ComparisonRunner(widgets::ComparisonModel* model, QObject* parent = nullptr);
  ~ComparisonRunner() override;

  // The configuration `entry` runs as in this comparison (settings applied, nothing published).
  static EngineConfig runConfig(const EngineConfig& saved, const ComparisonSettings& settings,
                                std::int64_t run);

  // Clears the model and starts the first run. False while a comparison is going.
  bool start(const std::vector<ComparisonEntry>& entries, const ComparisonSettings& settings);
  // Stops the current run (drained) and marks the rest cancelled.
  void cancel();
  bool isRunning() const { return running_; }
  int currentIndex() const { return current_; }
  EngineHost* host() const { return host_; }

 signals:
  void progress(QString text);
  void finished();

 private:
  void next();
  void conclude(const QString& status_message);

  widgets::ComparisonModel* model_;
  EngineHost* host_;
  std::vector<ComparisonEntry> entries_;
  ComparisonSettings settings_;
  int current_ = -1;
  bool running_ = false;
  bool cancelled_ = false;
  bool in_run_ = false;
  bool has_summary_ = false;
  protocol::StatsPayload summary_;
  QString summary_error_;
};

}  // namespace livedrp::app
