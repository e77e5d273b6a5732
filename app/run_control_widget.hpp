#pragma once
// Run control for the embedded engine: Start/Stop (as actions, shared with the toolbar), source,
// backend and rate. The fields configure the next start; they are locked while a run is active.
// Below them, the files the embedded engine's live writers (config.write) wrote, run by run.
#include <optional>
#include <string>
#include <vector>

#include <QWidget>

#include "exec/engine.hpp"
#include "exec/write_segments.hpp"

class QAction;
class QComboBox;
class QDoubleSpinBox;
class QLabel;

namespace livedrp::app {

class RunControlWidget : public QWidget {
  Q_OBJECT

 public:
  explicit RunControlWidget(QWidget* parent = nullptr);

  QAction* startAction() const { return start_; }
  QAction* stopAction() const { return stop_; }
  QComboBox* sourceCombo() const { return source_; }
  QComboBox* backendCombo() const { return backend_; }
  // The engine's detector for a live stream (stream.detector): a built-in name or a description
  // file; empty: the source's own (an sls stream's default, a Dectris start message's). Enabled
  // only while the source is a stream.
  QComboBox* streamDetectorCombo() const { return stream_detector_; }
  QDoubleSpinBox* rateSpin() const { return rate_; }

  // Shows `config`'s source, backend, rate and stream detector in the fields.
  void setConfig(const EngineConfig& config);
  // `base` with the fields' source, backend and rate, its shipped geometry following the source
  // (analysis_defaults.hpp).
  EngineConfig config(const EngineConfig& base) const;

  // Embedded: Start/Stop follow `active`. Attached to a remote engine: everything disabled and
  // the endpoint shown instead.
  void setRunActive(bool active);
  void setAttached(const QString& endpoint);
  void setEndpoint(const QString& endpoint);
  // Attached: shows what the remote engine reports it runs (its `status`), not local settings.
  void showRemoteRun(const QString& source, const QString& backend, std::optional<double> rate_hz);
  // The "Files" row: every run's writers and their files (EngineHost::writeSegments()), newest
  // last; hidden while there are none.
  void showWriters(const std::vector<WriteSegment>& segments);
  QLabel* writtenFilesLabel() const { return written_; }
  // One line for the Log: a run's writers as they start (`ended` false: the files created) or
  // as they end (what each wrote, dropped and failed, and its files).
  static QString writersLine(const WriteSegment& segment, bool ended);

 signals:
  void startRequested();
  void stopRequested();

 private:
  QAction* start_;
  QAction* stop_;
  QComboBox* source_;
  QComboBox* backend_;
  QComboBox* stream_detector_;
  QDoubleSpinBox* rate_;
  QLabel* endpoint_;
  QLabel* written_;
  QLabel* written_title_;
  bool attached_ = false;
  bool active_ = false;
  void followStreamSource();  // the stream detector field is enabled for stream sources only
};

}  // namespace livedrp::app
